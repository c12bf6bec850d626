import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';
import { kddExistingData, planKddImport } from './import-kdd.js';

const r = (kind: string, name: string, namespace?: string, spec: object = {}) => ({
  apiVersion: 'projectcalico.org/v3',
  kind,
  metadata: namespace ? { name, namespace } : { name },
  spec,
});

describe('planKddImport', () => {
  test('CRD kinds are written, Nodes matched by name, derived and unplaceable data left out', () => {
    const plan = planKddImport(
      {
        resources: [
          r('IPPool', 'p'),
          r('Tier', 'security'),
          r('NetworkPolicy', 'web', 'prod'),
          r('NetworkPolicy', 'knp.default.deny', 'prod'),
          r('NetworkSet', 'nets', 'staging'),
          r('Node', 'n1'),
          r('Node', 'gone'),
          r('Profile', 'kns.prod'),
          r('Profile', 'ksa.prod.default'),
          r('Profile', 'projectcalico-default-allow'),
          r('Profile', 'legacy'),
          r('WorkloadEndpoint', 'n1-k8s-web-eth0', 'prod'),
        ],
        clusterInfo: r('ClusterInformation', 'default'),
        kvs: [
          { key: '/calico/ipam/v2/config', value: '{}' },
          { key: '/calico/ipam/v2/handle/h', value: '{}' },
          { key: '/calico/v1/legacy', value: 'x' },
        ],
      },
      { nodes: new Set(['n1']), namespaces: new Set(['prod']) },
    );
    expect(plan.resources.map((x) => (x.metadata as { name: string }).name)).toEqual([
      'p',
      'security',
      'web',
      'nets',
    ]);
    expect(plan.nodes.map((x) => (x.metadata as { name: string }).name)).toEqual(['n1']);
    expect(plan.missingNodes).toEqual(['gone']);
    expect(plan.missingNamespaces).toEqual(['staging']);
    expect(plan.skipped).toEqual([
      {
        what: 'NetworkPolicy',
        why: 'they come from Kubernetes NetworkPolicies',
        names: ['prod/knp.default.deny'],
      },
      {
        what: 'Profile',
        why: 'derived from Namespaces and ServiceAccounts in the Kubernetes datastore',
        names: ['kns.prod', 'ksa.prod.default'],
      },
      {
        what: 'Profile',
        why: 'the Kubernetes datastore holds no Profiles besides those derived from Namespaces and ServiceAccounts',
        names: ['legacy'],
      },
      {
        what: 'WorkloadEndpoint',
        why: 'in the Kubernetes datastore they are the Pods',
        names: ['prod/n1-k8s-web-eth0'],
      },
    ]);
    expect(plan.ipam.map((kv) => kv.key)).toEqual(['/calico/ipam/v2/config', '/calico/ipam/v2/handle/h']);
    expect(plan.otherKeys).toEqual(['/calico/v1/legacy']);
  });
});

describe('kddExistingData', () => {
  test('what calicoctl creates itself and Kubernetes NetworkPolicies do not count', () => {
    expect(
      kddExistingData(
        [
          {
            kind: 'ClusterInformation',
            items: [r('ClusterInformation', 'default', undefined, { datastoreReady: true })],
          },
          {
            kind: 'Tier',
            items: [
              r('Tier', 'default', undefined, { order: 1_000_000, defaultAction: 'Deny' }),
              r('Tier', 'kube-admin', undefined, { order: 1_000, defaultAction: 'Pass' }),
              r('Tier', 'kube-baseline', undefined, { order: 10_000_000, defaultAction: 'Pass' }),
            ],
          },
          { kind: 'NetworkPolicy', items: [r('NetworkPolicy', 'knp.default.x', 'a')] },
          { kind: 'IPPool', items: [] },
        ],
        [],
      ),
    ).toBeUndefined();
  });

  test('anything else is named, a changed default tier included', () => {
    expect(
      kddExistingData(
        [
          { kind: 'Tier', items: [r('Tier', 'default', undefined, { order: 5, defaultAction: 'Deny' })] },
          { kind: 'IPPool', items: ['a', 'b', 'c', 'd'].map((n) => r('IPPool', n)) },
          { kind: 'NetworkPolicy', items: [r('NetworkPolicy', 'web', 'prod')] },
        ],
        ['/calico/ipam/v2/config'],
      ),
    ).toBe(
      'Tier default; IPPool a, b, c, … (4); NetworkPolicy prod/web; 1 IPAM record(s), e.g. /calico/ipam/v2/config',
    );
  });
});

describe('datastore migrate import into the Kubernetes datastore', () => {
  const RESOURCES = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 198.19.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web, namespace: prod}
spec: {selector: app == 'web', ingress: [{action: Allow}]}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1, labels: {rack: r1}}
spec: {bgp: {ipv4Address: 198.18.0.1/24}}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-2}
spec: {bgp: {ipv4Address: 198.18.0.2/24}}
---
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: kns.prod}
spec: {labelsToApply: {pcns.projectcalico.org/name: prod}}
`;

  /** A target whose Kubernetes has Node node-1 and Namespace prod (their Calico views, in memory). */
  async function target() {
    const dst = harness({ backend: 'kubernetes' });
    await dst.datastore.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: 'node-1' },
      spec: {},
    } as never);
    await dst.datastore.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: 'kns.prod' },
      spec: {},
    } as never);
    return dst;
  }

  async function exported(): Promise<string> {
    const src = harness();
    await src.run('apply -f -', { stdin: RESOURCES });
    await src.store.put(
      '/calico/ipam/v2/handle/k8s-pod-network.abc',
      '{"block":{"198.19.0.0/26":1},"deleted":false}',
    );
    await src.run('datastore migrate lock');
    const exp = await src.run('datastore migrate export');
    expect(exp.code).toBe(0);
    return exp.stdout;
  }

  test('writes what Kubernetes holds, says what it leaves out, and leaves the datastore locked', async () => {
    const dst = await target();
    dst.files['/e'] = await exported();
    const imp = await dst.run('datastore migrate import -f /e');
    expect(imp).toEqual({
      code: 0,
      stdout:
        'Successfully applied 6 resource(s)\nImporting IPAM resources\nSuccessfully applied 1 IPAM resource(s)\nDatastore information successfully imported. Please refer to the datastore migration documentation for next steps.\n',
      stderr:
        'Checking the Kubernetes datastore...\n' +
        'Not importing 1 Profile(s) (derived from Namespaces and ServiceAccounts in the Kubernetes datastore): kns.prod\n' +
        '[WARNING] Node node-2: there is no Kubernetes Node of that name; skipped (in the Kubernetes datastore a Calico Node is the Kubernetes Node)\n' +
        'Locked the Kubernetes datastore (datastoreReady: false) for the import.\n' +
        'Importing IPPool resources... 1\n' +
        'Importing Tier resources... 3\n' +
        'Importing NetworkPolicy resources... 1\n' +
        'Writing the Calico fields of Nodes onto their Kubernetes Nodes... 1\n' +
        'Imported 1 IPAM record(s)\n' +
        'The Kubernetes datastore stays locked: run `calicoctl datastore migrate unlock` against it once Calico runs on it.\n',
    });
    const node = await dst.datastore.get('Node', 'node-1');
    expect(node.metadata.labels).toEqual({ rack: 'r1' });
    expect(node.spec.bgp).toEqual({ ipv4Address: '198.18.0.1/24' });
    await expect(dst.datastore.get('Node', 'node-2')).rejects.toThrow(/not found/);
    const ci = await dst.datastore.get('ClusterInformation', 'default');
    expect(ci.spec.datastoreReady).toBe(false);
    expect((await dst.store.get('/calico/ipam/v2/handle/k8s-pod-network.abc'))?.value).toBe(
      '{"block":{"198.19.0.0/26":1},"deleted":false}',
    );

    // Again: the first import's data is there now.
    const again = await dst.run('datastore migrate import -f /e');
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      'Checking the Kubernetes datastore...\nDatastore already has Calico resources: IPPool pool-a; NetworkPolicy prod/web; 1 IPAM record(s), e.g. /calico/ipam/v2/handle/k8s-pod-network.abc. Import needs a Kubernetes datastore without Calico data (besides the ClusterInformation and default tiers calicoctl creates): delete those resources first; nothing was written.\n',
    );
  });

  test('a missing namespace stops the import before any resource is written', async () => {
    const dst = harness({ backend: 'kubernetes' });
    dst.files['/e'] = await exported();
    const imp = await dst.run('datastore migrate import -f /e');
    expect(imp.code).toBe(1);
    expect(imp.stderr).toContain(
      'Failed to import v3 resources: namespace(s) prod do not exist in Kubernetes; create them (kubectl create namespace prod) and import again; nothing was imported.\n',
    );
    expect((await dst.datastore.list('IPPool')).items).toEqual([]);
  });
});

describe('commands on the Kubernetes datastore', () => {
  test('delete node is refused before anything of the node is cleaned up', async () => {
    const h = harness({ backend: 'kubernetes' });
    await h.datastore.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: {},
    } as never);
    await h.datastore.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'BGPPeer',
      metadata: { name: 'p1' },
      spec: { node: 'n1', peerIP: '198.18.0.9', asNumber: 64513 },
    } as never);
    const before = await h.dump();
    expect(await h.run('delete node n1')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Failed to delete 'Node' resource: operation delete is not supported on Node(n1) in the Kubernetes datastore: delete the Kubernetes Node with kubectl (kubectl delete node n1)\n\n",
    });
    expect(await h.dump()).toEqual(before);
  });

  test('a Node is not created and a Profile not written; other kinds are', async () => {
    const h = harness({ backend: 'kubernetes' });
    const r1 = await h.run('create -f -', {
      stdin: 'apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: n2}\nspec: {}\n',
    });
    expect(r1.code).toBe(1);
    expect(r1.stderr).toContain('operation create is not supported on Node(n2) in the Kubernetes datastore');
    const r2 = await h.run('apply -f -', {
      stdin: 'apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: n2}\nspec: {}\n',
    });
    expect(r2.stderr).toBe(
      "Failed to apply 'Node' resource: [resource does not exist: Node(n2) with error: <nil> (in the Kubernetes datastore a Calico Node is the Kubernetes Node of the same name; kubectl get nodes lists them)]\n",
    );
    const r3 = await h.run('replace -f -', {
      stdin: 'apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: kns.a}\nspec: {}\n',
    });
    expect(r3.stderr).toMatch(
      /^Failed to replace 'Profile' resource: operation replace is not supported on Profile\(kns\.a\)/,
    );
    expect(
      (
        await h.run('apply -f -', {
          stdin:
            'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 198.19.0.0/16}\n',
        })
      ).code,
    ).toBe(0);
  });
});
