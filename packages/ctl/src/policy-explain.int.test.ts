/**
 * `calicoctl policy explain` on real datastores: a private etcd, where the resources are stored as
 * calicoctl wrote them, and a real kube-apiserver, where pods, namespaces and Kubernetes
 * NetworkPolicies reach the explainer through the Kubernetes datastore's conversion (pods as
 * WorkloadEndpoints, namespaces as kns. profiles, NetworkPolicies as knp.default.* policies).
 * Each test asserts on the lines a user reads.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type EtcdServer,
  etcdAvailable,
  type KubeApiServer,
  missingKubePrerequisites,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { calicoctlExecutable } from './testing-internal/executable.js';
import { CRDS, installCrds, kubectl } from './testing-internal/kube.js';

const EXE = calicoctlExecutable();

/** The verdict block: from `verdict:` to the first blank line. */
function verdictLines(stdout: string): string[] {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => l.startsWith('verdict: '));
  const end = lines.indexOf('', at);
  return lines.slice(at, end);
}

const ETCD_WORLD = `
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: kns.shop}
spec:
  ingress: [{action: Allow}]
  egress: [{action: Allow}]
  labelsToApply: {pcns.projectcalico.org/name: shop, pcns.team: red}
---
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 10, defaultAction: Deny}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node1-k8s-web-eth0, namespace: shop, labels: {app: web}}
spec: {node: node1, orchestrator: k8s, pod: web, endpoint: eth0, interfaceName: cali1, ipNetworks: [198.19.0.1/32], profiles: [kns.shop]}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node1-k8s-db-eth0, namespace: shop, labels: {app: db}}
spec: {node: node1, orchestrator: k8s, pod: db, endpoint: eth0, interfaceName: cali2, ipNetworks: [198.19.0.2/32], profiles: [kns.shop], ports: [{name: pg, protocol: TCP, port: 5432}]}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-eth0, labels: {role: node}}
spec: {node: node1, interfaceName: eth0, expectedIPs: [198.18.0.10], profiles: [projectcalico-default-allow]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: pass-red}
spec:
  tier: security
  order: 10
  selector: all()
  namespaceSelector: team == 'red'
  types: [Ingress]
  ingress:
  - action: Pass
    source: {namespaceSelector: team == 'red'}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: node-ssh}
spec:
  tier: security
  selector: role == 'node'
  types: [Ingress]
  ingress:
  - action: Allow
    protocol: TCP
    destination: {ports: [22]}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: db-in, namespace: shop}
spec:
  selector: app == 'db'
  ingress:
  - action: Allow
    protocol: TCP
    source: {selector: app == 'web'}
    destination: {ports: [pg]}
---
apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: db-in, namespace: shop}
spec:
  stagedAction: Delete
`;

beforeAll(async () => {
  await EXE.ensureBuilt();
}, 120_000);

if (!etcdAvailable()) {
  describe('calicoctl policy explain against etcd', () => {
    test.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error('missing prerequisite: etcd');
    });
  });
}

describe.runIf(etcdAvailable())(`${EXE.name} policy explain against etcd`, () => {
  let etcd: EtcdServer;
  let dir: string;
  let cfg: string;
  const ctl = (args: string[], stdin?: string) =>
    EXE.run([...args, '-c', cfg], stdin === undefined ? {} : { stdin });

  beforeAll(async () => {
    etcd = await startEtcd();
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-explain-int-'));
    cfg = join(dir, 'calicoctl.cfg');
    await writeFile(
      cfg,
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: ${etcd.endpoints.join(',')}\n`,
    );
    const applied = await ctl(['apply', '-f', '-'], ETCD_WORLD);
    expect(applied).toEqual({ code: 0, stdout: 'Successfully applied 9 resource(s)\n', stderr: '' });
  }, 60_000);
  afterAll(async () => {
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('pod to pod: a Pass in the security tier, the allow in default; with the staged Delete the profile decides', async () => {
    const r = await ctl(['policy', 'explain', '--from', 'shop/web', '--to', 'shop/db', '--port', '5432']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe('tcp 198.19.0.1:32768 → 198.19.0.2:5432');
    expect(verdictLines(r.stdout)).toEqual([
      'verdict: ALLOWED',
      '  egress of shop/node1-k8s-web-eth0: allow (no policy applies; profile kns.shop egress[0] Allow)',
      '  ingress of shop/node1-k8s-db-eth0: allow (tier default: NetworkPolicy shop/db-in ingress[0] Allow)',
      '  with the staged policies committed: ALLOWED',
    ]);
    expect(r.stdout).toContain(
      "      ingress[0] Pass   match: source.namespaceSelector team == 'red' ✓ (labels of namespace shop {projectcalico.org/name=shop, team=red})\n" +
        '    → Pass by GlobalNetworkPolicy pass-red ingress[0]\n',
    );
    expect(r.stdout).toContain(
      '  with the staged policies committed (StagedNetworkPolicy shop/db-in (Delete)): allow\n',
    );
    // Without db-in no policy of the default tier selects db: the Pass leads to the profiles.
    expect(r.stdout).toContain(
      '    decided: allow (passed (tier security: GlobalNetworkPolicy pass-red ingress[0] Pass), so profiles decide; profile kns.shop ingress[0] Allow)\n',
    );
    // The wrong port: the named port pg is 5432 on db.
    const wrong = await ctl(['policy', 'explain', '--from', 'shop/web', '--to', 'shop/db', '--port', '5433']);
    expect(verdictLines(wrong.stdout)[2]).toBe(
      '  ingress of shop/node1-k8s-db-eth0: deny (end of tier default: no policy allowed or passed (defaultAction Deny))',
    );
    expect(wrong.stdout).toContain(
      'destination.ports pg ✗ (port 5433; shop/node1-k8s-db-eth0 declares tcp pg=5432)',
    );
  });

  test('host endpoint and outside address: ssh allowed, anything else ends the security tier', async () => {
    const ssh = await ctl([
      'policy',
      'explain',
      '--from-ip',
      '192.0.2.9',
      '--to-hep',
      'node1-eth0',
      '--port',
      '22',
    ]);
    expect(verdictLines(ssh.stdout)).toEqual([
      'verdict: ALLOWED',
      '  egress: the source is no endpoint, nothing to apply',
      '  ingress of hostendpoint/node1-eth0: allow (tier security: GlobalNetworkPolicy node-ssh ingress[0] Allow)',
    ]);
    const other = await ctl([
      'policy',
      'explain',
      '--from-ip',
      '192.0.2.9',
      '--to-hep',
      'node1-eth0',
      '--port',
      '80',
      '-o',
      'json',
    ]);
    const j = JSON.parse(other.stdout);
    expect([j.allowed, j.ingress.decision]).toEqual([false, { kind: 'end-of-tier', tier: 'security' }]);
    // The host's own egress: no policy, its profile projectcalico-default-allow (served by name).
    const out = await ctl([
      'policy',
      'explain',
      '--from-hep',
      'node1-eth0',
      '--to-ip',
      '192.0.2.9',
      '--port',
      '443',
    ]);
    expect(verdictLines(out.stdout)[1]).toBe(
      '  egress of hostendpoint/node1-eth0: allow (no policy applies; profile projectcalico-default-allow egress[0] Allow)',
    );
  });

  test('bad input: an unknown pod, a missing host endpoint', async () => {
    expect(
      await ctl(['policy', 'explain', '--from', 'shop/ghost', '--to', 'shop/db', '--port', '1']),
    ).toEqual({
      code: 1,
      stdout: '',
      stderr: '--from: pod shop/ghost not found (no WorkloadEndpoint in namespace shop for pod ghost)\n',
    });
    expect(await ctl(['policy', 'explain', '--from', 'shop/web', '--to-hep', 'nope', '--port', '1'])).toEqual(
      {
        code: 1,
        stdout: '',
        stderr: '--to-hep: HostEndpoint nope not found\n',
      },
    );
  });
});

const kubeMissing = missingKubePrerequisites({ root: true, crds: CRDS });
if (kubeMissing.length > 0) {
  describe('calicoctl policy explain on the Kubernetes datastore', () => {
    test.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${kubeMissing.join(', ')}`);
    });
  });
}

function pod(namespace: string, name: string, ip: string, labels: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels,
      annotations: { 'cni.projectcalico.org/podIP': `${ip}/32`, 'cni.projectcalico.org/podIPs': `${ip}/32` },
    },
    spec: { nodeName: 'kdd-node-1', containers: [{ name: 'c', image: 'busybox' }] },
  });
}

describe.skipIf(kubeMissing.length > 0)(`${EXE.name} policy explain on the Kubernetes datastore`, () => {
  let api: KubeApiServer;
  let dir: string;
  let cfg: string;
  const ctl = (args: string[], stdin?: string) =>
    EXE.run([...args, '-c', cfg], stdin === undefined ? {} : { stdin });

  beforeAll(async () => {
    api = await startKubeApiServer();
    await installCrds(api);
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-explain-kdd-'));
    cfg = join(dir, 'calicoctl.cfg');
    await writeFile(
      cfg,
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: kubernetes\n  kubeconfig: ${api.kubeconfigPath}\n`,
    );
    await kubectl(api, ['create', 'namespace', 'shop']);
    await kubectl(api, ['create', 'namespace', 'bank']);
    await kubectl(api, ['label', 'namespace', 'bank', 'team=blue']);
    for (const p of [
      pod('shop', 'web', '198.19.7.1', { app: 'web' }),
      pod('shop', 'db', '198.19.7.2', { app: 'db' }),
      pod('bank', 'api', '198.19.7.3', { app: 'api' }),
    ]) {
      await kubectl(api, ['apply', '-f', '-'], p);
    }
    const policies = [
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'db-deny-all', namespace: 'shop' },
        spec: { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'] },
      },
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'db-allow-web', namespace: 'shop' },
        spec: {
          podSelector: { matchLabels: { app: 'db' } },
          policyTypes: ['Ingress'],
          ingress: [
            {
              from: [{ podSelector: { matchLabels: { app: 'web' } } }],
              ports: [{ protocol: 'TCP', port: 5432 }],
            },
          ],
        },
      },
    ];
    for (const p of policies) await kubectl(api, ['apply', '-f', '-'], JSON.stringify(p));
    // Staged: let the blue namespaces in instead of web.
    const staged = `apiVersion: projectcalico.org/v3
kind: StagedKubernetesNetworkPolicy
metadata: {name: db-allow-web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: db}}
  policyTypes: [Ingress]
  ingress:
  - from: [{namespaceSelector: {matchLabels: {team: blue}}}]
    ports: [{protocol: TCP, port: 5432}]
`;
    expect(await ctl(['apply', '-f', '-'], staged)).toMatchObject({ code: 0, stderr: '' });
  }, 120_000);
  afterAll(async () => {
    await api?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('Kubernetes NetworkPolicies: web allowed by the allow rule, bank denied by the tier default; staged the other way round', async () => {
    const web = await ctl(['policy', 'explain', '--from', 'shop/web', '--to', 'shop/db', '--port', '5432']);
    expect(web.stderr).toBe('');
    expect(verdictLines(web.stdout)).toEqual([
      'verdict: ALLOWED',
      '  egress of shop/kdd--node--1-k8s-web-eth0: allow (no policy applies; profile kns.shop egress[0] Allow)',
      '  ingress of shop/kdd--node--1-k8s-db-eth0: allow (tier default: NetworkPolicy shop/knp.default.db-allow-web ingress[0] Allow)',
      '  with the staged policies committed: DENIED',
    ]);
    const bank = await ctl(['policy', 'explain', '--from', 'bank/api', '--to', 'shop/db', '--port', '5432']);
    expect(verdictLines(bank.stdout)).toEqual([
      'verdict: DENIED',
      '  egress of bank/kdd--node--1-k8s-api-eth0: allow (no policy applies; profile kns.bank egress[0] Allow)',
      '  ingress of shop/kdd--node--1-k8s-db-eth0: deny (end of tier default: no policy allowed or passed (defaultAction Deny))',
      '  with the staged policies committed: ALLOWED',
    ]);
    expect(bank.stdout).toContain(
      '  with the staged policies committed (StagedKubernetesNetworkPolicy shop/knp.default.db-allow-web (Set)): allow\n',
    );
    // A pod that does not exist, by the name the user gave.
    expect(
      await ctl(['policy', 'explain', '--from', 'bank/nope', '--to', 'shop/db', '--port', '5432']),
    ).toEqual({
      code: 1,
      stdout: '',
      stderr: '--from: pod bank/nope not found (no WorkloadEndpoint in namespace bank for pod nope)\n',
    });
  });
});
