/**
 * Where calicoctl and upstream calicoctl v3.32.1 were seen to differ on one etcd, each case with
 * upstream's behaviour (and its message) as the expectation: the default tier stored into a policy
 * that names none, a BGPPeer naming a missing BGPFilter, YAML 1.1 scalars in string fields, and a
 * file whose first document is only a comment.
 */
import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';

const GNP_KEY = '/calico/resources/v3/projectcalico.org/globalnetworkpolicies/allow-web';
const NP_KEY = '/calico/resources/v3/projectcalico.org/networkpolicies/prod/allow-web';

describe('the default tier', () => {
  test('a policy created without a tier is stored with spec.tier: default; get prints NAME TIER', async () => {
    const h = harness();
    const docs = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-web}
spec: {selector: app == 'web', ingress: [{action: Allow}]}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: allow-web, namespace: prod}
spec: {selector: app == 'web', ingress: [{action: Allow}]}
`;
    expect((await h.run('create -f -', { stdin: docs })).code).toBe(0);
    const dump = await h.dump();
    // Upstream's value: the tier first, in Go field order.
    expect(JSON.parse(dump[GNP_KEY]!).spec).toEqual({
      tier: 'default',
      ingress: [{ action: 'Allow' }],
      selector: "app == 'web'",
      types: ['Ingress'],
    });
    expect(dump[GNP_KEY]).toMatch(/^\{"kind":"GlobalNetworkPolicy".*"spec":\{"tier":"default","ingress"/);
    expect(JSON.parse(dump[NP_KEY]!).spec.tier).toBe('default');
    expect((await h.run('get networkpolicy allow-web -n prod -o yaml')).stdout).toMatch(
      /\n {2}tier: default\n/,
    );
    expect(await h.run('get globalnetworkpolicies')).toEqual({
      code: 0,
      stdout: 'NAME        TIER      \nallow-web   default   \n\n',
      stderr: '',
    });
    expect((await h.run('get globalnetworkpolicies -o wide')).stdout).toBe(
      "NAME        TIER      ORDER   SELECTOR       \nallow-web   default   <nil>   app == 'web'   \n\n",
    );
  });
});

describe('a BGPPeer naming a BGPFilter', () => {
  const PEER = `apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: rack-tor}
spec: {peerIP: 198.18.0.9, asNumber: 64513, filters: [export-only, no-default]}
`;
  const FILTER = (name: string) => `apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: ${name}}
spec: {exportV4: [{action: Accept, matchOperator: In, cidr: 198.19.0.0/16}]}
`;

  test('is refused with upstream message while a filter is missing; nothing is written', async () => {
    const h = harness();
    expect((await h.run('create -f -', { stdin: FILTER('no-default') })).code).toBe(0);
    const why =
      `BGPPeer "rack-tor" was not written: spec.filters: error with field BGPPeer.Spec.Filters = ` +
      `'[export-only]' (BGPFilter(s) not found)`;
    for (const verb of ['create', 'apply']) {
      expect(await h.run(`${verb} -f -`, { stdin: PEER })).toEqual({
        code: 1,
        stdout: '',
        stderr: `Failed to ${verb} 'BGPPeer' resource: [${why}]\n`,
      });
    }
    expect(Object.keys(await h.dump()).filter((k) => k.includes('/bgppeers/'))).toEqual([]);

    expect((await h.run('create -f -', { stdin: `${FILTER('export-only')}---\n${PEER}` })).code).toBe(0);
    // An update that names a missing filter is refused too, and the stored peer is unchanged.
    const before = (await h.dump())['/calico/resources/v3/projectcalico.org/bgppeers/rack-tor'];
    const changed = PEER.replace('[export-only, no-default]', '[gone]');
    const r = await h.run('apply -f -', { stdin: changed });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error with field BGPPeer.Spec.Filters = '[gone]' (BGPFilter(s) not found)");
    expect((await h.dump())['/calico/resources/v3/projectcalico.org/bgppeers/rack-tor']).toBe(before);
  });
});

describe('YAML 1.1 scalars in string fields', () => {
  test('x: y is stored as "true", as upstream stores it, with a warning that says to quote it', async () => {
    const h = harness();
    const set = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata:
  name: edge
  labels: {x: y, quoted: "y", zone: 010, ratio: 1.50, on-call: off}
spec: {nets: [198.18.7.0/24]}
`;
    const r = await h.run('apply -f -', { stdin: set });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      'document 1 of stdin: warning: metadata.labels.x is stored as "true": the unquoted value is a YAML 1.1 boolean',
    );
    expect(r.stderr).toContain('quote it to store it as written');
    const stored = JSON.parse(
      (await h.dump())['/calico/resources/v3/projectcalico.org/globalnetworksets/edge']!,
    );
    expect(stored.metadata.labels).toEqual({
      x: 'true',
      quoted: 'y',
      zone: '8',
      ratio: '1.5',
      'on-call': 'false',
    });
    // A boolean field takes the YAML 1.1 boolean as a boolean.
    const pool = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: p}
spec: {cidr: 198.19.0.0/16, natOutgoing: yes}
`;
    const p = await h.run('apply -f -', { stdin: pool });
    expect(p).toMatchObject({ code: 0, stderr: '' });
    expect(
      JSON.parse((await h.dump())['/calico/resources/v3/projectcalico.org/ippools/p']!).spec.natOutgoing,
    ).toBe(true);
  });
});

describe('a file whose first document is only a comment', () => {
  test('is refused as upstream refuses it (unknown resource type () and/or version ()); nothing is written', async () => {
    const h = harness();
    h.files['policy.yaml'] = `# Policies for the web tier
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-web}
spec: {selector: app == 'web'}
`;
    for (const verb of ['create', 'apply', 'replace']) {
      expect(await h.run(`${verb} -f policy.yaml`)).toEqual({
        code: 1,
        stdout: '',
        stderr:
          "Failed to execute command: policy.yaml: document 1 is empty (only comments or blank lines between '---' lines): " +
          'unknown resource type () and/or version (); remove the empty document or put its comments inside the next ' +
          'one (after its --- line)\n',
      });
    }
    expect(Object.keys(await h.dump()).filter((k) => k.includes('policies'))).toEqual([]);
    // The comment inside the document, after its --- line, is fine.
    h.files['policy.yaml'] = `---\n# Policies for the web tier\n${h.files['policy.yaml'].split('---\n')[1]}`;
    expect((await h.run('apply -f policy.yaml')).code).toBe(0);
  });
});
