/**
 * Upstream's published examples (the v3.32 reference pages of StagedNetworkPolicy,
 * StagedGlobalNetworkPolicy, StagedKubernetesNetworkPolicy and KubeControllersConfiguration), kept
 * verbatim in testing-internal/upstream-examples/: `calicoctl apply` accepts each one, and
 * `calicoctl get -o yaml` reads it back as upstream prints it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';

const example = (name: string) =>
  readFileSync(join(import.meta.dirname, '../testing-internal/upstream-examples', `${name}.yaml`), 'utf8');

/** The examples' policies live in tier `internal-access`, which upstream requires to exist first. */
const TIER = `apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: internal-access}
spec: {order: 100}
`;

const POLICY_SPEC = `spec:
  egress:
  - action: Allow
  ingress:
  - action: Allow
    destination:
      ports:
      - 6379
    protocol: TCP
    source:
      selector: role == 'frontend'
  selector: role == 'database'
  tier: internal-access
  types:
  - Ingress
  - Egress
`;

describe("upstream's published examples", () => {
  test('StagedNetworkPolicy: applied, read back, listed, deleted', async () => {
    const h = harness();
    expect((await h.run('apply -f -', { stdin: TIER })).code).toBe(0);
    expect(await h.run('apply -f -', { stdin: example('stagednetworkpolicy') })).toEqual({
      code: 0,
      stdout: "Successfully applied 1 'StagedNetworkPolicy' resource(s)\n",
      stderr: '',
    });
    const got = await h.run('get stagednetworkpolicy internal-access.allow-tcp-6379 -n production -o yaml');
    expect(got).toEqual({
      code: 0,
      stdout: `apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata:
  creationTimestamp: "2025-01-02T03:04:05Z"
  labels:
    projectcalico.org/tier: internal-access
  name: internal-access.allow-tcp-6379
  namespace: production
  resourceVersion: "7"
  uid: 00000000-0000-4000-8000-000000000009
${POLICY_SPEC}`,
      stderr: '',
    });
    expect((await h.run('get snp -A')).stdout).toBe(
      'NAMESPACE    NAME                             TIER              \n' +
        'production   internal-access.allow-tcp-6379   internal-access   \n\n',
    );
    expect((await h.run('get spols -n production -o wide')).stdout).toBe(
      'NAMESPACE    NAME                             TIER              ORDER   SELECTOR             \n' +
        "production   internal-access.allow-tcp-6379   internal-access   <nil>   role == 'database'   \n\n",
    );
    // Applying the same document again updates it in place.
    expect((await h.run('apply -f -', { stdin: example('stagednetworkpolicy') })).code).toBe(0);
    expect(await h.run('delete snp internal-access.allow-tcp-6379 -n production')).toEqual({
      code: 0,
      stdout: "Successfully deleted 1 'StagedNetworkPolicy' resource(s)\n",
      stderr: '',
    });
    expect(
      (await h.dump())[
        '/calico/resources/v3/projectcalico.org/stagednetworkpolicies/production/internal-access.allow-tcp-6379'
      ],
    ).toBeUndefined();
  });

  test('StagedGlobalNetworkPolicy: applied, read back, deleted by file', async () => {
    const h = harness();
    await h.run('apply -f -', { stdin: TIER });
    expect((await h.run('apply -f -', { stdin: example('stagedglobalnetworkpolicy') })).stdout).toBe(
      "Successfully applied 1 'StagedGlobalNetworkPolicy' resource(s)\n",
    );
    expect(
      (await h.run('get sgnp internal-access.allow-tcp-6379 -o yaml')).stdout,
    ).toBe(`apiVersion: projectcalico.org/v3
kind: StagedGlobalNetworkPolicy
metadata:
  creationTimestamp: "2025-01-02T03:04:05Z"
  labels:
    projectcalico.org/tier: internal-access
  name: internal-access.allow-tcp-6379
  resourceVersion: "7"
  uid: 00000000-0000-4000-8000-000000000009
${POLICY_SPEC}`);
    expect((await h.run('get stagedglobalnetworkpolicies')).stdout).toBe(
      'NAME                             TIER              \ninternal-access.allow-tcp-6379   internal-access   \n\n',
    );
    h.files['sgnp.yaml'] = example('stagedglobalnetworkpolicy');
    expect((await h.run('delete -f sgnp.yaml')).stdout).toBe(
      "Successfully deleted 1 'StagedGlobalNetworkPolicy' resource(s)\n",
    );
    const gone = await h.run('get sgnp internal-access.allow-tcp-6379');
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain(
      'resource does not exist: StagedGlobalNetworkPolicy(internal-access.allow-tcp-6379)',
    );
  });

  test('StagedKubernetesNetworkPolicy: applied and read back', async () => {
    const h = harness();
    expect((await h.run('apply -f -', { stdin: example('stagedkubernetesnetworkpolicy') })).stdout).toBe(
      "Successfully applied 1 'StagedKubernetesNetworkPolicy' resource(s)\n",
    );
    expect(
      (await h.run('get sknp test-network-policy -o yaml')).stdout,
    ).toBe(`apiVersion: projectcalico.org/v3
kind: StagedKubernetesNetworkPolicy
metadata:
  creationTimestamp: "2025-01-02T03:04:05Z"
  name: test-network-policy
  namespace: default
  resourceVersion: "6"
  uid: 00000000-0000-4000-8000-000000000005
spec:
  egress:
  - ports:
    - port: 5978
      protocol: TCP
    to:
    - ipBlock:
        cidr: 10.0.0.0/24
  ingress:
  - from:
    - ipBlock:
        cidr: 172.17.0.0/16
        except:
        - 172.17.1.0/24
    - namespaceSelector:
        matchLabels:
          project: myproject
    - podSelector:
        matchLabels:
          role: frontend
    ports:
    - port: 6379
      protocol: TCP
  podSelector:
    matchLabels:
      role: db
  policyTypes:
  - Ingress
  - Egress
`);
    expect((await h.run('get sknp -o wide')).stdout).toBe(
      'NAME                  PODSELECTOR                                                                                               \n' +
        'test-network-policy   &LabelSelector{MatchLabels:map[string]string{role: db,},MatchExpressions:[]LabelSelectorRequirement{},}   \n\n',
    );
    expect((await h.run('delete sknp test-network-policy')).code).toBe(0);
  });

  test('KubeControllersConfiguration: `loadbalancer` read as loadBalancer with a warning, read back', async () => {
    const h = harness();
    expect(await h.run('apply -f -', { stdin: example('kubecontrollersconfiguration') })).toEqual({
      code: 0,
      stdout: "Successfully applied 1 'KubeControllersConfiguration' resource(s)\n",
      stderr:
        'document 1 of stdin: warning: spec.controllers.loadbalancer is read as spec.controllers.loadBalancer, its canonical spelling in projectcalico.org/v3\n',
    });
    expect(
      (await h.run('get kubecontrollersconfiguration default -o yaml')).stdout,
    ).toBe(`apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata:
  creationTimestamp: "2025-01-02T03:04:05Z"
  name: default
  resourceVersion: "6"
  uid: 00000000-0000-4000-8000-000000000005
spec:
  controllers:
    loadBalancer:
      assignIPs: AllServices
    namespace:
      reconcilerPeriod: 5m0s
    node:
      hostEndpoint:
        autoCreate: Disabled
        createDefaultHostEndpoint: Enabled
        templates:
        - generateName: custom-host-endpoint
          interfaceCIDRs:
          - 1.2.3.0/24
          interfacePattern: eth0|eth1
          labels:
            key: value
          nodeSelector: has(my-label)
      leakGracePeriod: 15m0s
      reconcilerPeriod: 5m0s
      syncLabels: Enabled
    policy:
      reconcilerPeriod: 5m0s
    serviceAccount:
      reconcilerPeriod: 5m0s
    workloadEndpoint:
      reconcilerPeriod: 5m0s
  etcdV3CompactionPeriod: 10m0s
  healthChecks: Enabled
  logSeverityScreen: Info
  prometheusMetricsPort: 9094
status: {}
`);
  });
});

describe('staged policies and node status requests', () => {
  test('a staged removal carries nothing but its tier: anything else is named in the error', async () => {
    const h = harness();
    const r = await h.run('apply -f -', {
      stdin: `apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: old, namespace: prod}
spec: {stagedAction: Delete, selector: all(), ingress: [{action: Deny}]}
`,
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      'spec.ingress: must not be set when stagedAction is Delete (only stagedAction and tier may be)',
    );
    expect(r.stderr).toContain(
      'spec.selector: must not be set when stagedAction is Delete (only stagedAction and tier may be)',
    );
    const ok = await h.run('apply -f -', {
      stdin: `apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: old, namespace: prod}
spec: {stagedAction: Delete}
`,
    });
    expect(ok.code).toBe(0);
    expect((await h.run('get snp old -n prod -o yaml')).stdout).toContain('spec:\n  stagedAction: Delete\n');
  });

  test('an unknown staged action is refused with the accepted ones', async () => {
    const h = harness();
    const r = await h.run('apply -f -', {
      stdin: `apiVersion: projectcalico.org/v3
kind: StagedGlobalNetworkPolicy
metadata: {name: p}
spec: {stagedAction: Enforce}
`,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('spec.stagedAction: must be one of: Set, Delete, Learn, Ignore');
  });

  test('CalicoNodeStatus: created, listed with its classes, stored with an empty status', async () => {
    const h = harness();
    const r = await h.run('create -f -', {
      stdin: `apiVersion: projectcalico.org/v3
kind: CalicoNodeStatus
metadata: {name: node-1-status}
spec: {node: node-1, classes: [Agent, BGP, Routes], updatePeriodSeconds: 10}
`,
    });
    expect(r).toEqual({
      code: 0,
      stdout: "Successfully created 1 'CalicoNodeStatus' resource(s)\n",
      stderr: '',
    });
    expect((await h.run('get caliconodestatus -o wide')).stdout).toBe(
      `${'NAME'.padEnd(16)}${'NODE'.padEnd(9)}${'CLASSES'.padEnd(19)}\n` +
        `${'node-1-status'.padEnd(16)}${'node-1'.padEnd(9)}${'Agent,BGP,Routes'.padEnd(19)}\n\n`,
    );
    const yaml = (await h.run('get nodestatus node-1-status -o yaml')).stdout;
    expect(yaml).toContain(`spec:
  classes:
  - Agent
  - BGP
  - Routes
  node: node-1
  updatePeriodSeconds: 10
status:
  agent:
    birdV4: {}
    birdV6: {}
  bgp:
    numberEstablishedV4: 0
    numberEstablishedV6: 0
    numberNotEstablishedV4: 0
    numberNotEstablishedV6: 0
  lastUpdated: null
  routes: {}
`);
    expect((await h.run('delete caliconodestatus node-1-status')).code).toBe(0);
  });
});
