import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Resource } from '@calico-ts/api';
import { createKVStore, KVDatastore } from '@calico-ts/datastore';
import {
  type EtcdServer,
  type KubeApiServer,
  missingKubePrerequisites,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { calicoctlExecutable } from './testing-internal/executable.js';
import { CRDS, installCrds, kubectl } from './testing-internal/kube.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '../../..');

const missing = missingKubePrerequisites({ root: true, crds: CRDS });
if (missing.length > 0) {
  describe('calicoctl on the Kubernetes datastore', () => {
    test.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const EXE = calicoctlExecutable();

type Obj = Record<string, unknown>;

/** A Kubernetes Node as the kubelet would register it (labels and addresses), plus annotations. */
function kubeNode(name: string, ip: string, annotations: Record<string, string> = {}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name }, annotations },
    status: { addresses: [{ type: 'InternalIP', address: ip }] },
  });
}

/** The typed client and IPAM over a datastore, as the other components open them. */
async function clients(
  cfg: Parameters<typeof createKVStore>[0],
): Promise<{ ds: KVDatastore; ipam: IpamClient }> {
  const kv = await createKVStore(cfg);
  const ds = new KVDatastore(kv, { backend: cfg.datastoreType });
  return { ds, ipam: new IpamClient(ds, new IpamStore(kv)) };
}

function kdd(api: KubeApiServer) {
  return clients({ datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: api.kubeconfigPath });
}

/** The items of a `get -o yaml` list without what each datastore assigns (uid, revision, time). */
function comparable(yamlText: string): Obj[] {
  const doc = parseYaml(yamlText) as Obj;
  const items = (doc.items as Obj[] | undefined) ?? [doc];
  return items.map((r) => {
    const meta = { ...(r.metadata as Obj) };
    delete meta.uid;
    delete meta.resourceVersion;
    delete meta.creationTimestamp;
    return { ...r, metadata: meta };
  });
}

beforeAll(async () => {
  if (missing.length === 0) await EXE.ensureBuilt();
}, 120_000);

describe.skipIf(missing.length > 0)(`${EXE.name} on the Kubernetes datastore`, () => {
  let api: KubeApiServer;
  let dir: string;
  let cfg: string;
  const ctl = (...args: string[]) => EXE.run([...args, '-c', cfg]);
  const ctlIn = (stdin: string, ...args: string[]) => EXE.run([...args, '-c', cfg], { stdin });

  beforeAll(async () => {
    api = await startKubeApiServer();
    await installCrds(api);
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-kdd-int-'));
    cfg = join(dir, 'calicoctl.cfg');
    await writeFile(
      cfg,
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: kubernetes\n  kubeconfig: ${api.kubeconfigPath}\n`,
    );
    await kubectl(api, ['create', 'namespace', 'prod']);
  }, 120_000);
  afterAll(async () => {
    await api?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('selected by calicoctl.cfg, by DATASTORE_TYPE and KUBECONFIG, and by default from $HOME/.kube/config', async () => {
    const pool =
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: sel}\nspec: {cidr: 203.0.113.0/24}\n';
    expect(await ctlIn(pool, 'create', '-f', '-')).toEqual({
      code: 0,
      stdout: "Successfully created 1 'IPPool' resource(s)\n",
      stderr: '',
    });
    const table = 'NAME   CIDR             SELECTOR   \nsel    203.0.113.0/24   all()      \n\n';
    expect(await ctl('get', 'ippools')).toEqual({ code: 0, stdout: table, stderr: '' });
    const byEnv = await EXE.run(['get', 'ippools'], {
      env: { DATASTORE_TYPE: 'kubernetes', KUBECONFIG: api.kubeconfigPath },
    });
    expect(byEnv).toEqual({ code: 0, stdout: table, stderr: '' });
    // No etcd endpoints anywhere: kubernetes, with $HOME/.kube/config (when the machine has no
    // /etc/calico/calicoctl.cfg of its own, which would be read first).
    if (!existsSync('/etc/calico/calicoctl.cfg')) {
      const home = join(dir, 'home');
      await mkdir(join(home, '.kube'), { recursive: true });
      await writeFile(join(home, '.kube', 'config'), await readFile(api.kubeconfigPath, 'utf8'));
      expect(await EXE.run(['get', 'ippools'], { env: { HOME: home } })).toEqual({
        code: 0,
        stdout: table,
        stderr: '',
      });
    }
    expect(await ctl('get', 'ippools', '--context', 'no-such-context')).toEqual({
      code: 1,
      stdout: '',
      stderr: `Failed to create Calico API client: kubeconfig ${api.kubeconfigPath} has no context no-such-context\n`,
    });
    if (EXE.name === 'bin/calicoctl') {
      // The Node bundle reads kubeconfigs itself and leaves @kubernetes/client-node out (5 MB that
      // Node would parse at every start); a credential plugin, which needs it, is refused clearly.
      const execConfig = join(dir, 'exec-kubeconfig');
      await writeFile(
        execConfig,
        `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: '${api.url}'}}]\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/false}}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
      );
      expect(await EXE.run(['get', 'ippools'], { env: { KUBECONFIG: execConfig } })).toEqual({
        code: 1,
        stdout: '',
        stderr: expect.stringMatching(
          /^Failed to create Calico API client: kubeconfig \S+exec-kubeconfig uses exec or auth-provider credentials, which need @kubernetes\/client-node, and it cannot be loaded here: /,
        ),
      });
    }
    const stored = JSON.parse(
      await kubectl(api, ['get', 'ippools.crd.projectcalico.org', 'sel', '-o', 'json']),
    );
    expect(stored.spec).toMatchObject({ cidr: '203.0.113.0/24', ipipMode: 'Never', vxlanMode: 'Never' });
    expect(await ctl('delete', 'ippool', 'sel')).toEqual({
      code: 0,
      stdout: "Successfully deleted 1 'IPPool' resource(s)\n",
      stderr: '',
    });
    expect((await ctl('get', 'ippools')).stdout).toBe('NAME   CIDR   SELECTOR   \n\n');
  });

  test('apply, get and delete of IPPool, GlobalNetworkPolicy and NetworkPolicy', async () => {
    const docs = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 198.18.0.0/24, blockSize: 26, vxlanMode: Always, natOutgoing: true}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-dns}
spec:
  selector: all()
  types: [Egress]
  egress: [{action: Allow, protocol: UDP, destination: {ports: [53]}}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web, namespace: prod}
spec:
  selector: app == 'web'
  ingress: [{action: Allow, protocol: TCP, destination: {ports: [80]}}]
`;
    expect(await ctlIn(docs, 'apply', '-f', '-')).toEqual({
      code: 0,
      stdout: 'Successfully applied 3 resource(s)\n',
      stderr: '',
    });
    expect(await ctl('get', 'ippools', '-o', 'wide')).toEqual({
      code: 0,
      stdout:
        'NAME     CIDR            NAT    IPIPMODE   VXLANMODE   DISABLED   DISABLEBGPEXPORT   SELECTOR   \npool-a   198.18.0.0/24   true   Never      Always      false      false              all()      \n\n',
      stderr: '',
    });
    expect(await ctl('get', 'globalnetworkpolicies')).toEqual({
      code: 0,
      stdout: 'NAME        TIER      \nallow-dns   default   \n\n',
      stderr: '',
    });
    const np = await ctl('get', 'networkpolicy', 'web', '-n', 'prod', '-o', 'yaml');
    expect(np.code).toBe(0);
    expect(parseYaml(np.stdout)).toMatchObject({
      kind: 'NetworkPolicy',
      metadata: { name: 'web', namespace: 'prod' },
      spec: { selector: "app == 'web'", types: ['Ingress'] },
    });
    // What Kubernetes holds: the CRD object of the same name and namespace.
    const crd = JSON.parse(
      await kubectl(api, ['get', 'networkpolicies.crd.projectcalico.org', 'web', '-n', 'prod', '-o', 'json']),
    );
    expect(crd.spec.selector).toBe("app == 'web'");
    // Re-applying the same documents writes nothing.
    expect((await ctlIn(docs, 'apply', '-f', '-')).code).toBe(0);

    const elsewhere = docs.split('---\n')[2]!.replace('namespace: prod', 'namespace: nowhere');
    expect(await ctlIn(elsewhere, 'create', '-f', '-')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Failed to create \'NetworkPolicy\' resource: [NetworkPolicy(nowhere/web): namespace "nowhere" does not exist (in the Kubernetes datastore a namespaced resource needs its namespace)]\n',
    });
    expect(await ctlIn(docs, 'delete', '-f', '-')).toEqual({
      code: 0,
      stdout: 'Successfully deleted 3 resource(s)\n',
      stderr: '',
    });
    expect(await kubectl(api, ['get', 'networkpolicies.crd.projectcalico.org', '-A', '-o', 'name'])).toBe('');
    expect((await ctl('get', 'networkpolicy', 'web', '-n', 'prod')).stderr).toBe(
      'resource does not exist: NetworkPolicy(prod/web) with error: <nil>\n',
    );
  });

  test("upstream's staged-policy and KubeControllersConfiguration examples: applied, stored as their CRDs, read back, deleted", async () => {
    const example = (name: string) =>
      readFile(join(REPO, 'packages/ctl/src/testing-internal/upstream-examples', `${name}.yaml`), 'utf8');
    await kubectl(api, ['create', 'namespace', 'production']);
    const tier =
      'apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: internal-access}\nspec: {order: 100}\n';
    expect((await ctlIn(tier, 'apply', '-f', '-')).code).toBe(0);
    const staged: [string, string, string, string[]][] = [
      ['stagednetworkpolicy', 'StagedNetworkPolicy', 'stagednetworkpolicies', ['-n', 'production']],
      ['stagedglobalnetworkpolicy', 'StagedGlobalNetworkPolicy', 'stagedglobalnetworkpolicies', []],
      [
        'stagedkubernetesnetworkpolicy',
        'StagedKubernetesNetworkPolicy',
        'stagedkubernetesnetworkpolicies',
        ['-n', 'default'],
      ],
    ];
    for (const [file, kind, plural, ns] of staged) {
      const doc = await example(file);
      expect(await ctlIn(doc, 'apply', '-f', '-')).toEqual({
        code: 0,
        stdout: `Successfully applied 1 '${kind}' resource(s)\n`,
        stderr: '',
      });
      const name = (parseYaml(doc) as { metadata: { name: string } }).metadata.name;
      const got = await ctl('get', kind, name, ...ns, '-o', 'yaml');
      expect(got.code).toBe(0);
      // Read back: the example's spec whole (its ports and selectors as written).
      const back = parseYaml(got.stdout) as { kind: string; spec: Obj };
      expect(back.kind).toBe(kind);
      expect(back.spec).toEqual((parseYaml(doc) as { spec: Obj }).spec);
      // What Kubernetes holds: the CRD object of the same name, with the same spec.
      const crd = JSON.parse(
        await kubectl(api, ['get', `${plural}.crd.projectcalico.org`, name, ...ns, '-o', 'json']),
      );
      expect(crd.spec).toEqual(back.spec);
      expect((await ctlIn(doc, 'delete', '-f', '-')).code).toBe(0);
      expect(await kubectl(api, ['get', `${plural}.crd.projectcalico.org`, '-A', '-o', 'name'])).toBe('');
    }
    const kcc = await ctlIn(await example('kubecontrollersconfiguration'), 'apply', '-f', '-');
    expect(kcc).toEqual({
      code: 0,
      stdout: "Successfully applied 1 'KubeControllersConfiguration' resource(s)\n",
      stderr:
        'document 1 of stdin: warning: spec.controllers.loadbalancer is read as spec.controllers.loadBalancer, its canonical spelling in projectcalico.org/v3\n',
    });
    const kccBack = parseYaml(
      (await ctl('get', 'kubecontrollersconfiguration', 'default', '-o', 'yaml')).stdout,
    ) as {
      spec: { controllers: Obj };
    };
    expect(kccBack.spec.controllers.loadBalancer).toEqual({ assignIPs: 'AllServices' });
    expect(kccBack.spec.controllers.node).toMatchObject({
      reconcilerPeriod: '5m0s',
      leakGracePeriod: '15m0s',
      hostEndpoint: { templates: [{ generateName: 'custom-host-endpoint', interfacePattern: 'eth0|eth1' }] },
    });
    expect((await ctl('delete', 'tier', 'internal-access')).code).toBe(0);
  });

  test('nodes are the Kubernetes Nodes: get -o wide and -o yaml, label and patch; never created or deleted', async () => {
    await kubectl(
      api,
      ['apply', '-f', '-'],
      [
        kubeNode('kdd-node-1', '10.0.0.1', {
          'projectcalico.org/IPv4Address': '198.18.1.1/24',
          'projectcalico.org/ASNumber': '64512',
        }),
        kubeNode('kdd-node-2', '10.0.0.2', { 'projectcalico.org/IPv4VXLANTunnelAddr': '198.18.2.1' }),
      ].join('\n'),
    );
    expect(await ctl('get', 'nodes', '-o', 'wide')).toEqual({
      code: 0,
      stdout:
        'NAME         ASN     IPV4            IPV6   \nkdd-node-1   64512   198.18.1.1/24          \nkdd-node-2                                  \n\n',
      stderr: '',
    });
    const yaml = await ctl('get', 'node', 'kdd-node-1', '-o', 'yaml');
    expect(yaml.code).toBe(0);
    expect(parseYaml(yaml.stdout)).toMatchObject({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: 'kdd-node-1', labels: { 'kubernetes.io/hostname': 'kdd-node-1' } },
      spec: {
        bgp: { ipv4Address: '198.18.1.1/24', asNumber: 64512 },
        orchRefs: [{ nodeName: 'kdd-node-1', orchestrator: 'k8s' }],
        addresses: [
          { address: '198.18.1.1/24', type: 'CalicoNodeIP' },
          { address: '10.0.0.1', type: 'InternalIP' },
        ],
      },
    });
    expect(await ctl('label', 'node', 'kdd-node-2', 'rack=r1')).toEqual({
      code: 0,
      stdout: 'Successfully set label rack on node kdd-node-2\n',
      stderr: '',
    });
    expect(
      await ctl('patch', 'node', 'kdd-node-2', '-p', '{"spec":{"bgp":{"ipv4Address":"198.18.1.2/24"}}}'),
    ).toEqual({ code: 0, stdout: "Successfully patched 1 'Node' resource\n", stderr: '' });
    const k8s = JSON.parse(await kubectl(api, ['get', 'node', 'kdd-node-2', '-o', 'json']));
    expect(k8s.metadata.annotations).toMatchObject({
      'projectcalico.org/IPv4Address': '198.18.1.2/24',
      'projectcalico.org/IPv4VXLANTunnelAddr': '198.18.2.1',
      'projectcalico.org/labels': '{"rack":"r1"}',
    });
    expect(await ctl('delete', 'node', 'kdd-node-2')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Failed to delete 'Node' resource: operation delete is not supported on Node(kdd-node-2) in the Kubernetes datastore: delete the Kubernetes Node with kubectl (kubectl delete node kdd-node-2)\n\n",
    });
    expect(await kubectl(api, ['get', 'node', 'kdd-node-2', '-o', 'name'])).toBe('node/kdd-node-2\n');
    const newNode = 'apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: kdd-node-3}\nspec: {}\n';
    expect(await ctlIn(newNode, 'create', '-f', '-')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Failed to create 'Node' resource: [operation create is not supported on Node(kdd-node-3) in the Kubernetes datastore: a Calico Node there is the Kubernetes Node of the same name, which the kubelet registers; once it exists, set its Calico fields with apply, replace, patch or label]\n",
    });
    expect(await ctlIn(newNode, 'apply', '-f', '-')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Failed to apply 'Node' resource: [resource does not exist: Node(kdd-node-3) with error: <nil> (in the Kubernetes datastore a Calico Node is the Kubernetes Node of the same name; kubectl get nodes lists them)]\n",
    });
  });

  test('workload endpoints are Pods, profiles are Namespaces and ServiceAccounts', async () => {
    await kubectl(
      api,
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'web-1',
          namespace: 'prod',
          labels: { app: 'web' },
          annotations: {
            'cni.projectcalico.org/podIP': '198.18.0.5/32',
            'cni.projectcalico.org/podIPs': '198.18.0.5/32',
            'cni.projectcalico.org/containerID': 'c0ffee',
          },
        },
        spec: { nodeName: 'kdd-node-1', containers: [{ name: 'c', image: 'busybox' }] },
      }),
    );
    const iface = `cali${createHash('sha1').update('prod.web-1').digest('hex').slice(0, 11)}`;
    expect(await ctl('get', 'workloadendpoints', '-A')).toEqual({
      code: 0,
      stdout: `NAMESPACE   WORKLOAD   NODE         NETWORKS        INTERFACE         \nprod        web-1      kdd-node-1   198.18.0.5/32   ${iface}   \n\n`,
      stderr: '',
    });
    const wep = parseYaml(
      (await ctl('get', 'wep', 'kdd--node--1-k8s-web--1-eth0', '-n', 'prod', '-o', 'yaml')).stdout,
    );
    expect(wep).toMatchObject({
      kind: 'WorkloadEndpoint',
      metadata: { labels: { app: 'web', 'projectcalico.org/namespace': 'prod' } },
      spec: { pod: 'web-1', containerID: 'c0ffee', profiles: ['kns.prod', 'ksa.prod.default'] },
    });
    const profiles = await ctl('get', 'profiles');
    expect(profiles.code).toBe(0);
    expect(profiles.stdout).toContain('\nkns.prod ');
    expect(profiles.stdout).toContain('\nprojectcalico-default-allow ');
    expect(await ctl('label', 'profile', 'kns.prod', 'team=a')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'failed to update profile kns.prod, label not changed: operation not supported on Profile(kns.prod): profiles are derived from Namespaces (kns.*) and ServiceAccounts (ksa.*) in the Kubernetes datastore; change those instead\n',
    });
    const profile = 'apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: mine}\nspec: {}\n';
    expect(await ctlIn(profile, 'apply', '-f', '-')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Failed to apply 'Profile' resource: [operation apply is not supported on Profile(mine) in the Kubernetes datastore: profiles there are derived from Namespaces (kns.<namespace>) and ServiceAccounts (ksa.<namespace>.<serviceaccount>); change those with kubectl]\n",
    });
  });

  test('ipam show, check and release over the IPAM CRDs', async () => {
    const pool =
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: ipam-pool}\nspec: {cidr: 198.19.0.0/24, blockSize: 26}\n';
    expect((await ctlIn(pool, 'apply', '-f', '-')).code).toBe(0);
    const { ds, ipam } = await kdd(api);
    let addresses: string[];
    try {
      const got = await ipam.autoAssign({
        num4: 3,
        num6: 0,
        handleId: 'k8s-pod-network.c1',
        hostname: 'kdd-node-1',
        attrs: { node: 'kdd-node-1', namespace: 'prod', pod: 'web-1' },
        ipv4Pools: ['ipam-pool'],
      });
      addresses = got.ipv4.map((a) => a.address);
    } finally {
      await ds.close();
    }
    const blocks = JSON.parse(await kubectl(api, ['get', 'ipamblocks.crd.projectcalico.org', '-o', 'json']));
    expect(blocks.items).toHaveLength(1);
    const block = blocks.items[0].spec.cidr as string;
    expect(await ctl('ipam', 'show')).toEqual({
      code: 0,
      stdout: `+----------+---------------+-----------+------------+-----------+
| GROUPING |     CIDR      | IPS TOTAL | IPS IN USE | IPS FREE  |
+----------+---------------+-----------+------------+-----------+
| IP Pool  | 198.19.0.0/24 |       256 | 3 (1%)     | 253 (99%) |
+----------+---------------+-----------+------------+-----------+
`,
      stderr: '',
    });
    const showBlocks = await ctl('ipam', 'show', '--show-blocks');
    expect(showBlocks.stdout).toContain(
      `| Block    | ${block.padEnd(13)} |        64 | 3 (5%)     | 61 (95%)  |\n`,
    );
    expect(await ctl('ipam', 'show', `--ip=${addresses[1]}`)).toEqual({
      code: 0,
      stdout: `IP ${addresses[1]} is in use\nHandle ID: k8s-pod-network.c1\nActive Owner Attributes:\n  namespace: prod\n  node: kdd-node-1\n  pod: web-1\n`,
      stderr: '',
    });
    // The Pod web-1 claims 198.18.0.5 and kdd-node-2 the VXLAN tunnel address 198.18.2.1 (both
    // outside every pool); the three allocated addresses have no endpoint.
    const check = await ctl('ipam', 'check');
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('Found 3 IPs that are allocated in IPAM but not actually in use.\n');
    expect(check.stdout).toContain('Found 2 in-use IPs that are not in active IP pools.\n');
    expect(await ctl('ipam', 'release', `--ip=${addresses[2]}`)).toEqual({
      code: 0,
      stdout: `Successfully released IP address ${addresses[2]}\n`,
      stderr: '',
    });
    expect((await ctl('ipam', 'show')).stdout).toContain(
      '| IP Pool  | 198.19.0.0/24 |       256 | 2 (1%)     | 254 (99%) |\n',
    );
  });

  test('version shows the cluster version from ClusterInformation; lock and unlock', async () => {
    const { ds } = await kdd(api);
    try {
      const ci = await ds.get('ClusterInformation', 'default');
      await ds.update({ ...ci, spec: { ...ci.spec, calicoVersion: 'v3.32.1', clusterType: 'k8s,bgp,kdd' } });
    } finally {
      await ds.close();
    }
    const version = await ctl('version');
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(
      /^Client Version: {4}v3\.32\.1\nGit commit: {8}\S+\nCluster Version: {3}v3\.32\.1\nCluster Type: {6}k8s,bgp,kdd\n$/,
    );
    expect(await ctl('datastore', 'migrate', 'lock')).toEqual({
      code: 0,
      stdout: 'Datastore locked.\n',
      stderr: '',
    });
    const locked = JSON.parse(
      await kubectl(api, ['get', 'clusterinformations.crd.projectcalico.org', 'default', '-o', 'json']),
    );
    expect(locked.spec.datastoreReady).toBe(false);
    expect(await ctl('datastore', 'migrate', 'unlock')).toEqual({
      code: 0,
      stdout: 'Datastore unlocked.\n',
      stderr: '',
    });
    // As upstream: the migration goes from etcd to Kubernetes, not back.
    expect(await ctl('datastore', 'migrate', 'export')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'invalid datastore type: kubernetes to export from for datastore migration. Datastore type must be etcdv3\n',
    });
  });
});

/** What the migration carries: every kind the Kubernetes datastore holds as a CRD. */
const ETCD_RESOURCES = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 198.18.0.0/24, blockSize: 26, ipipMode: CrossSubnet, natOutgoing: true}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-b, labels: {zone: b}}
spec: {cidr: 198.19.0.0/16, vxlanMode: Always}
---
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100, defaultAction: Deny}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: security.block-bad}
spec:
  tier: security
  order: 10
  selector: all()
  types: [Ingress]
  ingress: [{action: Deny, source: {selector: "role == 'bad'"}}, {action: Pass}]
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-dns}
spec:
  selector: all()
  types: [Egress]
  egress: [{action: Allow, protocol: UDP, destination: {ports: [53]}}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web, namespace: prod, labels: {app: web}}
spec:
  selector: app == 'web'
  ingress: [{action: Allow, protocol: TCP, destination: {ports: [80, 443]}}]
---
apiVersion: projectcalico.org/v3
kind: NetworkSet
metadata: {name: partners, namespace: prod}
spec: {nets: [198.51.100.0/24]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: bad-nets, labels: {role: bad}}
spec: {nets: [203.0.113.0/24]}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer-global}
spec: {peerIP: 198.18.0.250, asNumber: 64513}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer-node-b}
spec: {node: node-b, peerIP: 198.18.0.251, asNumber: 64514}
---
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec: {asNumber: 64512, nodeToNodeMeshEnabled: false, logSeverityScreen: Info}
---
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {logSeverityScreen: Warning, reportingInterval: 0s}
---
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: node.node-a}
spec: {logSeverityScreen: Debug}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node-a-eth0, labels: {role: host}}
spec: {node: node-a, interfaceName: eth0, expectedIPs: [198.18.0.11]}
---
apiVersion: projectcalico.org/v3
kind: IPReservation
metadata: {name: reserved}
spec: {reservedCIDRs: [198.18.0.250/31]}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-a, labels: {rack: r1}}
spec:
  bgp: {ipv4Address: 198.18.0.11/24, asNumber: 64600, ipv4IPIPTunnelAddr: 198.18.0.193}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-b, labels: {rack: r2}}
spec:
  bgp: {ipv4Address: 198.18.0.12/24}
  ipv4VXLANTunnelAddr: 198.19.0.1
  vxlanTunnelMACAddr: "66:8f:1a:2b:3c:4d"
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-gone}
spec:
  bgp: {ipv4Address: 198.18.0.13/24}
---
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: kns.prod}
spec: {ingress: [{action: Allow}], egress: [{action: Allow}], labelsToApply: {pcns.projectcalico.org/name: prod}}
---
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: legacy}
spec: {labelsToApply: {legacy: "true"}}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node--a-k8s-web--1-eth0, namespace: prod}
spec:
  node: node-a
  orchestrator: k8s
  pod: web-1
  endpoint: eth0
  interfaceName: cali0123456789a
  ipNetworks: [198.18.0.194/32]
  profiles: [kns.prod]
`;

/** The kinds compared after the import, as `get` names them (`-A` for the namespaced ones). */
const COMPARED = [
  'ippools',
  'tiers',
  'globalnetworkpolicies',
  'networkpolicies',
  'networksets',
  'globalnetworksets',
  'bgppeers',
  'bgpconfigurations',
  'felixconfigurations',
  'hostendpoints',
  'ipreservations',
  'kubecontrollersconfigurations',
  'bgpfilters',
  'clusterinformations',
];

describe.skipIf(missing.length > 0)(`${EXE.name} datastore migrate: etcd to the Kubernetes datastore`, () => {
  let etcd: EtcdServer;
  let api: KubeApiServer;
  let dir: string;
  let etcdCfg: string;
  let kddCfg: string;
  const onEtcd = (...args: string[]) => EXE.run([...args, '-c', etcdCfg]);
  const onKdd = (...args: string[]) => EXE.run([...args, '-c', kddCfg]);

  beforeAll(async () => {
    [etcd, api] = await Promise.all([startEtcd(), startKubeApiServer()]);
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-migrate-int-'));
    etcdCfg = join(dir, 'etcd.cfg');
    kddCfg = join(dir, 'kdd.cfg');
    await writeFile(
      etcdCfg,
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: ${etcd.clientUrl}\n`,
    );
    await writeFile(
      kddCfg,
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: kubernetes\n  kubeconfig: ${api.kubeconfigPath}\n`,
    );
  }, 120_000);
  afterAll(async () => {
    await Promise.all([etcd?.stop(), api?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('lock, export, import into a cluster with the CRDs, unlock: every resource and allocation carries over', async () => {
    // The etcd cluster: resources through calicoctl, a Kubernetes NetworkPolicy as kube-controllers
    // mirrors it, addresses through IPAM.
    expect(await EXE.run(['apply', '-f', '-', '-c', etcdCfg], { stdin: ETCD_RESOURCES })).toEqual({
      code: 0,
      stdout: 'Successfully applied 21 resource(s)\n',
      stderr: '',
    });
    const source = await clients({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints });
    const assigned: string[] = [];
    try {
      await source.ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'NetworkPolicy',
        metadata: { name: 'knp.default.deny-all', namespace: 'prod' },
        spec: { selector: "projectcalico.org/orchestrator == 'k8s'", types: ['Ingress'] },
      } as unknown as Resource & { kind: 'NetworkPolicy' });
      for (const [node, n, handle, pool] of [
        ['node-a', 3, 'k8s-pod-network.c1', 'pool-a'],
        ['node-b', 1, 'vxlan-tunnel-addr-node-b', 'pool-b'],
        ['node-gone', 2, 'k8s-pod-network.c2', 'pool-a'],
      ] as const) {
        const got = await source.ipam.autoAssign({
          num4: n,
          num6: 0,
          handleId: handle,
          hostname: node,
          attrs: { node, namespace: 'prod', pod: `pod-on-${node}` },
          ipv4Pools: [pool],
        });
        assigned.push(...got.ipv4.map((a) => a.address));
      }
    } finally {
      await source.ds.close();
    }
    expect(await onEtcd('ipam', 'configure', '--strictaffinity=true')).toMatchObject({ code: 0 });

    expect(await onEtcd('datastore', 'migrate', 'lock')).toEqual({
      code: 0,
      stdout: 'Datastore locked.\n',
      stderr: '',
    });
    const exported = await onEtcd('datastore', 'migrate', 'export');
    expect(exported.code).toBe(0);
    const file = join(dir, 'etcd-data');
    await writeFile(file, exported.stdout);

    // The Kubernetes cluster: no CRDs yet, so nothing can be imported.
    expect(await onKdd('datastore', 'migrate', 'import', '-f', file)).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(
        'The Kubernetes API server does not serve the Calico CRDs (crd.projectcalico.org/v1): install them first (kubectl apply -f calico-crds.yaml); nothing was written.\n',
      ),
    });
    const pool =
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: early}\nspec: {cidr: 198.20.0.0/24}\n';
    expect(await EXE.run(['create', '-f', '-', '-c', kddCfg], { stdin: pool })).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Failed to create 'IPPool' resource: [cannot create IPPool(early): the Kubernetes API server does not serve ippools.crd.projectcalico.org; install the Calico CRDs first (kubectl apply -f calico-crds.yaml)]\n",
    });
    await installCrds(api);
    // The namespace of the namespaced resources must exist first.
    expect(await onKdd('datastore', 'migrate', 'import', '-f', file)).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(
        'Failed to import v3 resources: namespace(s) prod do not exist in Kubernetes; create them (kubectl create namespace prod) and import again; nothing was imported.\n',
      ),
    });
    await kubectl(api, ['create', 'namespace', 'prod']);
    await kubectl(
      api,
      ['apply', '-f', '-'],
      [kubeNode('node-a', '10.0.0.1'), kubeNode('node-b', '10.0.0.2')].join('\n'),
    );

    // 15 resources of CRD kinds, the 3 tiers calicoctl created on etcd, 2 Nodes; IPAM: 3 blocks,
    // their 3 affinities, 3 handles and the configuration.
    const imported = await onKdd('datastore', 'migrate', 'import', '-f', file);
    expect(imported).toMatchObject({
      code: 0,
      stdout:
        'Successfully applied 20 resource(s)\nImporting IPAM resources\nSuccessfully applied 10 IPAM resource(s)\nDatastore information successfully imported. Please refer to the datastore migration documentation for next steps.\n',
    });
    for (const line of [
      'Not importing 1 WorkloadEndpoint(s) (in the Kubernetes datastore they are the Pods): prod/node--a-k8s-web--1-eth0\n',
      'Not importing 1 Profile(s) (derived from Namespaces and ServiceAccounts in the Kubernetes datastore): kns.prod\n',
      'Not importing 1 Profile(s) (the Kubernetes datastore holds no Profiles besides those derived from Namespaces and ServiceAccounts): legacy\n',
      'Not importing 1 NetworkPolicy(s) (they come from Kubernetes NetworkPolicies): prod/knp.default.deny-all\n',
      '[WARNING] Node node-gone: there is no Kubernetes Node of that name; skipped (in the Kubernetes datastore a Calico Node is the Kubernetes Node)\n',
      'Importing IPPool resources... 2\n',
      'Writing the Calico fields of Nodes onto their Kubernetes Nodes... 2\n',
      'Imported 10 IPAM record(s)\n',
    ]) {
      expect(imported.stderr).toContain(line);
    }

    // Every CRD kind as each side shows it, less what each datastore assigns itself.
    let compared = 0;
    for (const kind of COMPARED) {
      const all = kind === 'networkpolicies' || kind === 'networksets' ? ['-A'] : [];
      const [a, b] = await Promise.all([
        onEtcd('get', kind, ...all, '-o', 'yaml'),
        onKdd('get', kind, ...all, '-o', 'yaml'),
      ]);
      expect({ kind, code: b.code, stderr: b.stderr }).toEqual({ kind, code: 0, stderr: '' });
      const fromEtcd = comparable(a.stdout).filter(
        (r) => !String((r.metadata as Obj).name).startsWith('knp.'),
      );
      expect({ kind, items: comparable(b.stdout) }).toEqual({ kind, items: fromEtcd });
      compared += fromEtcd.length;
    }
    // The 15 resources of ETCD_RESOURCES' CRD kinds, the 3 default tiers, ClusterInformation.
    expect(compared).toBe(19);
    // Nodes: the Calico fields on the Kubernetes Nodes.
    for (const name of ['node-a', 'node-b']) {
      const [a, b] = await Promise.all([
        onEtcd('get', 'node', name, '-o', 'yaml'),
        onKdd('get', 'node', name, '-o', 'yaml'),
      ]);
      const etcdNode = parseYaml(a.stdout) as { metadata: Obj; spec: Obj };
      const kddNode = parseYaml(b.stdout) as { metadata: Obj; spec: Obj };
      const calicoFields = (spec: Obj) => {
        const { bgp, ipv4VXLANTunnelAddr, vxlanTunnelMACAddr } = spec;
        return { bgp, ipv4VXLANTunnelAddr, vxlanTunnelMACAddr };
      };
      expect(calicoFields(kddNode.spec)).toEqual(calicoFields(etcdNode.spec));
      expect(kddNode.metadata.labels).toEqual({
        ...(etcdNode.metadata.labels as Obj),
        'kubernetes.io/hostname': name,
      });
    }
    expect((await onKdd('get', 'nodes', '-o', 'wide')).stdout).toBe(
      'NAME     ASN       IPV4             IPV6   \nnode-a   64600     198.18.0.11/24          \nnode-b   (64512)   198.18.0.12/24          \n\n',
    );
    // IPAM: the same blocks, allocations, owners and configuration.
    for (const args of [
      ['--show-blocks'],
      ['--show-configuration'],
      ...assigned.map((ip) => [`--ip=${ip}`]),
    ]) {
      const [a, b] = await Promise.all([onEtcd('ipam', 'show', ...args), onKdd('ipam', 'show', ...args)]);
      expect(b).toEqual(a);
      expect(b.code).toBe(0);
    }
    // The cluster keeps its identity; the Kubernetes datastore stays locked until unlocked.
    const [ciEtcd, ciKdd] = await Promise.all([
      onEtcd('get', 'clusterinformation', 'default', '-o', 'yaml'),
      onKdd('get', 'clusterinformation', 'default', '-o', 'yaml'),
    ]);
    expect((parseYaml(ciKdd.stdout) as Obj).spec).toEqual((parseYaml(ciEtcd.stdout) as Obj).spec);
    expect((parseYaml(ciKdd.stdout) as { spec: Obj }).spec.datastoreReady).toBe(false);
    expect(await onKdd('datastore', 'migrate', 'unlock')).toEqual({
      code: 0,
      stdout: 'Datastore unlocked.\n',
      stderr: '',
    });

    // A second import finds the first one's data.
    const again = await onKdd('datastore', 'migrate', 'import', '-f', file);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^Checking the Kubernetes datastore\.\.\.\nDatastore already has Calico resources: IPPool pool-a, pool-b; .*nothing was written\.\n$/,
    );
  }, 180_000);
});
