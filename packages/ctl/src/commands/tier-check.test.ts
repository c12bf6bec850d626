/**
 * calicoctl refuses a policy in a tier that does not exist, as upstream's client does, and says
 * which tier; once the Tier is there the same file is accepted.
 */
import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';

const POLICY = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: block-bad}
spec:
  tier: security
  selector: all()
  ingress: [{action: Deny, source: {nets: [198.18.9.0/24]}}]
`;

const TIER = `apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100}
`;

describe('a policy in a missing tier', () => {
  test('create and apply fail with the tier named, exit 1, nothing written; with the Tier it is accepted', async () => {
    const h = harness();
    const why =
      'GlobalNetworkPolicy "block-bad" was not written: spec.tier: tier "security" does not exist; ' +
      'create the Tier before policies in it';
    expect(await h.run('create -f -', { stdin: POLICY })).toEqual({
      code: 1,
      stdout: '',
      stderr: `Failed to create 'GlobalNetworkPolicy' resource: [${why}]\n`,
    });
    expect(await h.run('apply -f -', { stdin: POLICY })).toEqual({
      code: 1,
      stdout: '',
      stderr: `Failed to apply 'GlobalNetworkPolicy' resource: [${why}]\n`,
    });
    // The client initialises the cluster (ClusterInformation, the well-known tiers); no policy.
    expect(Object.keys(await h.dump()).filter((k) => k.includes('policies'))).toEqual([]);
    expect(Object.keys(await h.dump()).filter((k) => k.includes('/tiers/'))).toEqual([
      '/calico/resources/v3/projectcalico.org/tiers/default',
      '/calico/resources/v3/projectcalico.org/tiers/kube-admin',
      '/calico/resources/v3/projectcalico.org/tiers/kube-baseline',
    ]);

    expect((await h.run('apply -f -', { stdin: `${TIER}---\n${POLICY}` })).code).toBe(0);
    expect((await h.run('get globalnetworkpolicy block-bad -o yaml')).stdout).toMatch(/tier: security/);
  });
});
