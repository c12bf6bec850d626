/**
 * The typed client on the Kubernetes datastore, against a real kube-apiserver with the CRDs from
 * deploy/crds installed: the same contract suite etcd and memory pass (IpamStore's contract on
 * this backend: packages/ipam/src/store/ipam-store.int.test.ts), what kubectl
 * shows of what we wrote (upstream's stored shape), a watch across an API server restart, and a
 * 410 Gone turned into a resync. Racing IPAM allocations on this backend: packages/ipam.
 */

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { WorkloadEndpoint } from '@calico-ts/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKVStore } from '../factory.js';
import type { KVStore } from '../kv/kv-store.js';
import { KVDatastore } from '../kv-datastore.js';
import {
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startKubeApiServer,
} from '../testing/index.js';
import {
  datastoreContract,
  describeEvent,
  ipPool,
  networkSet,
  take,
  uniqueName,
} from '../testing-internal/datastore-contract.js';
import { locateKey, restPath } from './kv-mapping.js';
import { ENDPOINT_SLICES_PREFIX, SERVICES_PREFIX } from './object-keys.js';

const run = promisify(execFile);
const REPO = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const CRDS = join(REPO, 'deploy/crds/calico-crds.yaml');

const missing = missingKubePrerequisites({ crds: CRDS });
if (missing.length > 0) {
  describe('Kubernetes datastore', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

async function kubectl(api: KubeApiServer, args: string[]): Promise<string> {
  const { stdout } = await run(findKubectl()!, ['--kubeconfig', api.kubeconfigPath, ...args], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

async function kubectlStdin(api: KubeApiServer, args: string[], input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      findKubectl()!,
      ['--kubeconfig', api.kubeconfigPath, ...args],
      (err, stdout, stderr) =>
        err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    );
    child.stdin!.end(input);
  });
}

async function installCrds(api: KubeApiServer): Promise<void> {
  await kubectl(api, ['apply', '--server-side', '-f', CRDS]);
  await kubectl(api, ['wait', '--for', 'condition=established', '--timeout', '60s', 'crd', '--all']);
}

/**
 * The store as a component would open it. The contract suites put resources in fresh namespaces,
 * which a cluster would already have: the test creates each one the first time the API server
 * says it is missing, as an administrator would, and retries.
 */
async function kubeStore(api: KubeApiServer): Promise<KVStore> {
  const store = await createKVStore({
    datastoreType: 'kubernetes',
    etcdEndpoints: [],
    kubeconfig: api.kubeconfigPath,
  });
  const missingNs = /namespace "([^"]+)" does not exist/;
  const withNamespace =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      try {
        return await f(...a);
      } catch (e) {
        const m = missingNs.exec((e as Error).message);
        if (!m) throw e;
        await kubectl(api, ['create', 'namespace', m[1]!]).catch(() => '');
        return f(...a);
      }
    };
  return {
    get: (k) => store.get(k),
    list: (p) => store.list(p),
    readAll: (r) => store.readAll(r),
    update: (k, v, r) => store.update(k, v, r),
    delete: (k, r) => store.delete(k, r),
    watch: (p, o) => store.watch(p, o),
    revision: () => store.revision(),
    close: () => store.close(),
    create: withNamespace((k: string, v: string) => store.create(k, v)),
    put: withNamespace((k: string, v: string) => store.put(k, v)),
    writeAll: withNamespace((w: Parameters<KVStore['writeAll']>[0]) => store.writeAll(w)),
  };
}

describe.skipIf(missing.length > 0)('Kubernetes datastore on a real kube-apiserver', () => {
  // The watch cache is off so that compacting the API server's etcd makes old resourceVersions
  // answer 410 Gone, as the contract's compaction case needs. The restart test below runs on a
  // second server with the cache on.
  let api: KubeApiServer;
  let kv: KVStore;
  let ds: KVDatastore;
  beforeAll(async () => {
    api = await startKubeApiServer({ extraArgs: ['--watch-cache=false'] });
    await installCrds(api);
    kv = await kubeStore(api);
    ds = new KVDatastore(kv, { backend: 'kubernetes' });
  }, 120_000);
  afterAll(async () => {
    await ds?.close();
    await api?.stop();
  });

  datastoreContract(
    'KVDatastore over KubeKVStore',
    {
      datastore: () => ds,
      newClient: async () => new KVDatastore(await kubeStore(api), { backend: 'kubernetes' }),
      kv: () => kv,
      compact: (r) => api.etcd.compact(r),
      // A spec that is not an object: the CRD's schema refuses it, or, if the schema let it
      // through, the client must report it as undecodable.
      writeUndecodable: async (namespace, name) => {
        const body = JSON.stringify({
          apiVersion: 'crd.projectcalico.org/v1',
          kind: 'NetworkSet',
          metadata: { name, namespace },
          spec: 'not an object',
        });
        await kubectl(api, ['create', 'namespace', namespace]).catch(() => '');
        try {
          await kubectlStdin(api, ['create', '-f', '-'], body);
          return 'stored';
        } catch (e) {
          expect((e as Error).message).toMatch(/spec: Invalid value: "string"/);
          return 'refused';
        }
      },
    },
    { increments: 20 },
  );

  it('stores an IPPool as upstream does: kubectl shows crd.projectcalico.org/v1 with the v3 spec', async () => {
    const name = uniqueName('pool');
    const created = await ds.create(
      ipPool(name, '198.19.192.0/20', { natOutgoing: true, vxlanMode: 'Always' }),
    );
    const out = JSON.parse(await kubectl(api, ['get', 'ippools.crd.projectcalico.org', name, '-o', 'json']));
    expect(out.apiVersion).toBe('crd.projectcalico.org/v1');
    expect(out.kind).toBe('IPPool');
    expect(out.spec).toEqual({
      cidr: '198.19.192.0/20',
      vxlanMode: 'Always',
      ipipMode: 'Never',
      natOutgoing: true,
      blockSize: 26,
      nodeSelector: 'all()',
      allowedUses: ['Workload', 'Tunnel'],
      assignmentMode: 'Automatic',
    });
    expect(JSON.parse(out.metadata.annotations['projectcalico.org/metadata'])).toEqual({
      uid: created.metadata.uid,
      creationTimestamp: created.metadata.creationTimestamp,
    });
    expect(created.metadata.resourceVersion).toBe(out.metadata.resourceVersion);
  });

  it('reads an IPPool written by kubectl in upstream shape', async () => {
    const name = uniqueName('kpool');
    const doc = {
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'IPPool',
      metadata: { name },
      spec: { cidr: '198.19.224.0/20', ipipMode: 'Always', natOutgoing: true, nodeSelector: 'all()' },
    };
    await kubectlStdin(api, ['create', '-f', '-'], JSON.stringify(doc));
    const pool = await ds.get('IPPool', name);
    expect(pool.spec).toMatchObject({
      cidr: '198.19.224.0/20',
      ipipMode: 'Always',
      natOutgoing: true,
      blockSize: 26,
    });
    expect(pool.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a watch from a revision older than the API server keeps answers 410, and becomes a resync', async () => {
    const ns = uniqueName('old');
    await ds.create(networkSet('x', ns));
    await api.etcd.compact(await kv.revision());
    const ac = new AbortController();
    const it = ds
      .watch('NetworkSet', { namespace: ns, revision: '2', signal: ac.signal })
      [Symbol.asyncIterator]();
    const first = await take(it, (e) => e.length >= 1);
    ac.abort();
    expect(first.map(describeEvent)).toEqual(['resync [x]']);
  });

  it('a resync of a prefix over several collections holds every collection’s keys', async () => {
    // `/calico/ipam/v2/` spans ipamblocks, blockaffinities, ipamhandles and ipamconfigs; a consumer
    // replaces all it holds for the prefix on a resync, so one collection's list alone would lose
    // the others' records.
    const handle = `/calico/ipam/v2/handle/${uniqueName('resync')}`;
    await kv.put(handle, JSON.stringify({ block: { '198.19.40.0/26': 1 } }));
    await kv.put(
      '/calico/ipam/v2/config',
      JSON.stringify({ strict_affinity: false, auto_allocate_blocks: true }),
    );
    await api.etcd.compact(await kv.revision());
    const ac = new AbortController();
    const first = await kv
      .watch('/calico/ipam/v2/', { fromRevision: '2', signal: ac.signal })
      [Symbol.asyncIterator]()
      .next();
    ac.abort();
    const msg = first.value as { kind: string; list?: { kvs: { key: string }[] } };
    expect(msg.kind).toBe('resync');
    const keys = msg.list!.kvs.map((k) => k.key);
    expect(keys).toContain(handle);
    expect(keys).toContain('/calico/ipam/v2/config');
  });

  it('refuses records that have no place in Kubernetes with a clear error', async () => {
    await expect(kv.put('/calico/felix/v2/no-region/host/n1/status', '{}')).rejects.toThrowError(
      expect.objectContaining({
        code: 'unsupported',
        message: expect.stringContaining('no place in the Kubernetes datastore'),
      }),
    );
    const loc = locateKey('/calico/ipam/v2/config');
    expect(restPath(loc.collection)).toBe('/apis/crd.projectcalico.org/v1/ipamconfigs');
  });

  it('says which CRD is missing, never lists it as empty, and tells a missing namespace apart', async () => {
    await kubectl(api, ['delete', 'crd', 'ipreservations.crd.projectcalico.org']);
    const listed = await errorOfP(ds.list('IPReservation'));
    expect(listed.code).toBe('config');
    expect(listed.message).toMatch(
      /does not serve ipreservations\.crd\.projectcalico\.org; install Calico's CRDs/,
    );
    const created = await errorOfP(
      ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPReservation',
        metadata: { name: 'r1' },
        spec: { reservedCIDRs: ['198.19.250.0/24'] },
      }),
    );
    expect(created.code).toBe('config');
    // A store without the test's namespace provisioning, as a component has it.
    const plain = new KVDatastore(
      await createKVStore({ datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: api.kubeconfigPath }),
      { backend: 'kubernetes' },
    );
    const noNs = await errorOfP(plain.create(networkSet('x', uniqueName('absent'))));
    await plain.close();
    expect(noNs.code).toBe('invalid');
    expect(noNs.message).toMatch(/namespace "absent-[^"]+" does not exist/);
  });
});

describe.skipIf(missing.length > 0)('Kubernetes datastore without Calico CRDs (kubernetesOnly)', () => {
  let api: KubeApiServer;
  beforeAll(async () => {
    // No CRDs at all: a cluster installed from calico-etcd.yaml.
    api = await startKubeApiServer();
  }, 120_000);
  afterAll(async () => {
    await api?.stop();
  });

  it("lists and watches Kubernetes' own objects and what derives from them; the default store refuses", async () => {
    const ns = uniqueName('np');
    await kubectl(api, ['create', 'namespace', ns]);
    await kubectlStdin(
      api,
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'deny', namespace: ns },
        spec: { podSelector: {}, policyTypes: ['Ingress'] },
      }),
    );
    const cfg = { datastoreType: 'kubernetes' as const, etcdEndpoints: [], kubeconfig: api.kubeconfigPath };
    const only = await createKVStore(cfg, { kubernetesOnly: true });
    const full = await createKVStore(cfg);
    try {
      const prefix = `/calico/resources/v3/projectcalico.org/networkpolicies/${ns}/`;
      const listed = await only.list(prefix);
      expect(listed.kvs.map((kv) => kv.key)).toEqual([`${prefix}knp.default.deny`]);
      expect(BigInt(listed.revision)).toBeGreaterThan(0n);
      expect(BigInt(await only.revision())).toBeGreaterThan(0n);
      // The default store reads the CRD NetworkPolicies under the same prefix, and says they are missing.
      await expect(full.list(prefix)).rejects.toThrowError(
        expect.objectContaining({
          code: 'config',
          message: expect.stringMatching(/does not serve networkpolicies\.crd\.projectcalico\.org/),
        }),
      );
      // A watch from the list sees the next change to the Kubernetes policy.
      const ac = new AbortController();
      const it = only
        .watch(prefix, { fromRevision: String(BigInt(listed.revision) + 1n), signal: ac.signal })
        [Symbol.asyncIterator]();
      await kubectl(api, ['delete', 'networkpolicy', '-n', ns, 'deny']);
      const next = await it.next();
      ac.abort();
      expect(JSON.stringify(next.value)).toContain('knp.default.deny');
    } finally {
      await only.close();
      await full.close();
    }
  });
});

describe.skipIf(missing.length > 0)('Kubernetes datastore across an API server restart', () => {
  let api: KubeApiServer;
  beforeAll(async () => {
    api = await startKubeApiServer();
    await installCrds(api);
  }, 120_000);
  afterAll(async () => {
    await api?.stop();
  });

  it('a watch misses nothing written while the API server was down or just back', async () => {
    const kv = await kubeStore(api);
    const ds = new KVDatastore(kv, { backend: 'kubernetes' });
    const ns = uniqueName('rs');
    const start = await ds.list('NetworkSet', { namespace: ns });
    const ac = new AbortController();
    const it = ds
      .watch('NetworkSet', { namespace: ns, revision: start.revision, signal: ac.signal })
      [Symbol.asyncIterator]();
    await ds.create(networkSet('before', ns));
    const seenBefore = await take(it, (e) => e.some((x) => x.kind === 'added'));
    await api.restart();
    // Written by another client right after the restart, before our watch has reconnected.
    const other = new KVDatastore(await kubeStore(api), { backend: 'kubernetes' });
    await other.create(networkSet('during', ns));
    await other.create(networkSet('after', ns));
    // What the watch tells: each name either as an added event or inside a resync (a restarted
    // API server may have forgotten the revision the watch stood at: 410, then a full list).
    const names = (events: typeof seenBefore) => {
      const out = new Set<string>();
      for (const e of events) {
        if (e.kind === 'added') out.add(e.resource.metadata.name);
        if (e.kind === 'resync') for (const r of e.items) out.add(r.metadata.name);
      }
      return out;
    };
    const rest = await take(it, (e) => names(e).has('during') && names(e).has('after'), 60_000);
    ac.abort();
    expect(seenBefore.filter((e) => e.kind === 'added').map(describeEvent)).toEqual(['added before']);
    expect([...names(rest)].sort()).toEqual(expect.arrayContaining(['after', 'during']));
    const kinds = rest.map((e) => e.kind);
    expect(kinds).toContain('reconnected');
    // Never a silent gap: either every add arrived as an event, or a resync replaced the state.
    if (!kinds.includes('resync')) expect(rest.filter((e) => e.kind === 'added').length).toBe(2);
    await other.close();
    await ds.close();
  }, 120_000);
});

describe.skipIf(missing.length > 0)('Kubernetes datastore: what it derives from Kubernetes objects', () => {
  let api: KubeApiServer;
  let ds: KVDatastore;
  const apply = (doc: object) => kubectlStdin(api, ['apply', '-f', '-'], JSON.stringify(doc));
  const getJson = async (args: string[]) => JSON.parse(await kubectl(api, ['get', ...args, '-o', 'json']));
  beforeAll(async () => {
    api = await startKubeApiServer();
    await installCrds(api);
    ds = new KVDatastore(await kubeStore(api), { backend: 'kubernetes' });
  }, 120_000);
  afterAll(async () => {
    await ds?.close();
    await api?.stop();
  });

  it('a Kubernetes Node is the Calico Node: reads its annotations, writes them back, cannot be created here', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'kn-1',
        labels: { zone: 'a' },
        annotations: { 'projectcalico.org/ASNumber': '64513' },
      },
    });
    const node = await ds.get('Node', 'kn-1');
    expect(node.spec).toMatchObject({
      bgp: { asNumber: 64513 },
      orchRefs: [{ nodeName: 'kn-1', orchestrator: 'k8s' }],
    });
    expect(node.metadata.labels).toEqual({ zone: 'a' });
    const updated = await ds.update({
      ...node,
      metadata: { ...node.metadata, labels: { ...node.metadata.labels, 'calico-only': 'yes' } },
      spec: {
        ...node.spec,
        bgp: { ...node.spec.bgp, ipv4Address: '198.18.0.21/24' },
        ipv4VXLANTunnelAddr: '198.19.7.0',
        vxlanTunnelMACAddr: '66:d3:b7:2e:6f:11',
      },
    });
    expect(updated.spec.bgp?.ipv4Address).toBe('198.18.0.21/24');
    const k8s = await getJson(['node', 'kn-1']);
    expect(k8s.metadata.annotations).toMatchObject({
      'projectcalico.org/IPv4Address': '198.18.0.21/24',
      'projectcalico.org/ASNumber': '64513',
      'projectcalico.org/IPv4VXLANTunnelAddr': '198.19.7.0',
      'projectcalico.org/VXLANTunnelMACAddr': '66:d3:b7:2e:6f:11',
      'projectcalico.org/labels': '{"calico-only":"yes"}',
    });
    expect(k8s.metadata.labels).toEqual({ zone: 'a' });
    expect((await ds.get('Node', 'kn-1')).metadata.labels).toEqual({ zone: 'a', 'calico-only': 'yes' });
    // A stale write loses, as on etcd.
    expect((await errorOfP(ds.update(node))).code).toBe('conflict');
    const noNode = await errorOfP(ds.create({ ...node, metadata: { name: 'kn-none' } }));
    expect(noNode.code).toBe('not-found');
    expect((noNode as { cause?: Error }).cause?.message).toMatch(
      /the Kubernetes Node kn-none does not exist/,
    );
    expect((await errorOfP(ds.delete('Node', 'kn-1'))).message).toMatch(/kubectl delete node kn-1/);
  });

  it('a Pod with the CNI annotations is a WorkloadEndpoint; writing one annotates the Pod, deleting clears it', async () => {
    await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'a' } } });
    await apply({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'api', namespace: 'shop', labels: { tier: 'x' } },
    });
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-1', namespace: 'shop', labels: { app: 'web' } },
      spec: {
        nodeName: 'kn-1',
        serviceAccountName: 'api',
        containers: [
          { name: 'c', image: 'none', ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }] },
        ],
      },
    });
    const wepName = 'kn--1-k8s-web--1-eth0';
    expect((await ds.list('WorkloadEndpoint', { namespace: 'shop' })).items).toEqual([]);
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: wepName, namespace: 'shop' },
      spec: {
        orchestrator: 'k8s',
        node: 'kn-1',
        pod: 'web-1',
        endpoint: 'eth0',
        containerID: 'abc123',
        ipNetworks: ['198.19.7.5/32'],
        interfaceName: 'cali0123456789a',
        profiles: ['kns.shop'],
      },
    });
    // What the datastore holds is derived from the Pod: its labels, service account and ports.
    const created = await ds.get('WorkloadEndpoint', wepName, { namespace: 'shop' });
    expect(created.metadata.labels).toEqual({
      app: 'web',
      'projectcalico.org/namespace': 'shop',
      'projectcalico.org/orchestrator': 'k8s',
      'projectcalico.org/serviceaccount': 'api',
    });
    expect(created.spec).toMatchObject({
      node: 'kn-1',
      pod: 'web-1',
      containerID: 'abc123',
      ipNetworks: ['198.19.7.5/32'],
      profiles: ['kns.shop', 'ksa.shop.api'],
      serviceAccountName: 'api',
      ports: [{ name: 'http', protocol: 'TCP', port: 8080, hostPort: 0, hostIP: '' }],
    });
    const pod = await getJson(['pod', 'web-1', '-n', 'shop']);
    expect(pod.metadata.annotations).toMatchObject({
      'cni.projectcalico.org/podIP': '198.19.7.5/32',
      'cni.projectcalico.org/podIPs': '198.19.7.5/32',
      'cni.projectcalico.org/containerID': 'abc123',
    });
    expect(
      (await ds.list('WorkloadEndpoint', { namespace: 'shop' })).items.map((w) => w.metadata.name),
    ).toEqual([wepName]);
    await ds.delete('WorkloadEndpoint', wepName, { namespace: 'shop' });
    const after = await getJson(['pod', 'web-1', '-n', 'shop']);
    expect(after.metadata.annotations?.['cni.projectcalico.org/podIP']).toBeUndefined();
    expect((await errorOfP(ds.get('WorkloadEndpoint', wepName, { namespace: 'shop' }))).code).toBe(
      'not-found',
    );
  });

  it('a Pod’s endpoint is named on the host with the interface prefix the reader was opened with', async () => {
    await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'eks' } });
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-1', namespace: 'eks' },
      spec: { nodeName: 'kn-1', containers: [{ name: 'c', image: 'none' }] },
    });
    // Another CNI networked it: the API server has the pod's address, Calico wrote nothing.
    const pod = await getJson(['pod', 'web-1', '-n', 'eks']);
    await kubectlStdin(
      api,
      ['replace', '--subresource=status', '-f', '-'],
      JSON.stringify({
        ...pod,
        status: { phase: 'Running', podIP: '198.19.7.20', podIPs: [{ ip: '198.19.7.20' }] },
      }),
    );
    const eni = new KVDatastore(
      await createKVStore(
        { datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: api.kubeconfigPath },
        { interfacePrefix: 'eni,cali' },
      ),
      { backend: 'kubernetes' },
    );
    try {
      const hash = createHash('sha1').update('eks.web-1').digest('hex').slice(0, 11);
      const listed = (await eni.list('WorkloadEndpoint', { namespace: 'eks' })).items;
      expect(listed.map((w) => [w.spec.interfaceName, w.spec.ipNetworks])).toEqual([
        [`eni${hash}`, ['198.19.7.20/32']],
      ]);
      // The default reader names it as upstream does without FELIX_INTERFACEPREFIX.
      expect(
        (await ds.list('WorkloadEndpoint', { namespace: 'eks' })).items.map((w) => w.spec.interfaceName),
      ).toEqual([`cali${hash}`]);
    } finally {
      await eni.close();
    }
  });

  it('a Pod read just before a write stands in for the write’s own read; a copy gone stale never overwrites', async () => {
    await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'a' } } });
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-2', namespace: 'shop' },
      spec: { nodeName: 'kn-1', containers: [{ name: 'c', image: 'none' }] },
    });
    const name = 'kn--1-k8s-web--2-eth0';
    const wep = (ip: string): WorkloadEndpoint => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name, namespace: 'shop' },
      spec: {
        orchestrator: 'k8s',
        node: 'kn-1',
        pod: 'web-2',
        endpoint: 'eth0',
        ipNetworks: [`${ip}/32`],
        interfaceName: 'cali0123456789b',
        profiles: ['kns.shop'],
      },
    });
    const mine = new KVDatastore(await kubeStore(api), { backend: 'kubernetes' });
    try {
      // Read (nothing yet), then another client makes the endpoint: the create must not win.
      expect((await errorOfP(mine.get('WorkloadEndpoint', name, { namespace: 'shop' }))).code).toBe(
        'not-found',
      );
      await ds.create(wep('198.19.7.10'));
      expect((await errorOfP(mine.create(wep('198.19.7.11')))).code).toBe('already-exists');
      // Read, then someone else changes the Pod: the update on that revision is a conflict, and
      // their change stays.
      const read = await mine.get('WorkloadEndpoint', name, { namespace: 'shop' });
      await kubectl(api, ['annotate', 'pod', 'web-2', '-n', 'shop', 'other=change']);
      const stale = await errorOfP(
        mine.update({ ...read, spec: { ...read.spec, ipNetworks: ['198.19.7.12/32'] } }),
      );
      expect(stale.code).toBe('conflict');
      const pod = await getJson(['pod', 'web-2', '-n', 'shop']);
      expect(pod.metadata.annotations).toMatchObject({
        other: 'change',
        'cni.projectcalico.org/podIP': '198.19.7.10/32',
      });
      // Read, write at once: written.
      const fresh = await mine.get('WorkloadEndpoint', name, { namespace: 'shop' });
      const moved = await mine.update({ ...fresh, spec: { ...fresh.spec, ipNetworks: ['198.19.7.13/32'] } });
      expect(moved.spec.ipNetworks).toEqual(['198.19.7.13/32']);
      // Read, someone else clears it, delete: not-found rather than clearing what is not there.
      const again = await mine.get('WorkloadEndpoint', name, { namespace: 'shop' });
      await ds.delete('WorkloadEndpoint', name, { namespace: 'shop' });
      expect(
        (
          await errorOfP(
            mine.delete('WorkloadEndpoint', name, {
              namespace: 'shop',
              resourceVersion: again.metadata.resourceVersion,
            }),
          )
        ).code,
      ).toBe('not-found');
    } finally {
      await mine.close();
    }
  });

  it('refuses a WorkloadEndpoint its Pod does not match, and leaves the Pod untouched', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'elsewhere', namespace: 'shop' },
      spec: { nodeName: 'kn-2', containers: [{ name: 'c', image: 'none' }] },
    });
    const refused = await errorOfP(
      ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: { name: 'kn--1-k8s-elsewhere-eth0', namespace: 'shop' },
        spec: {
          orchestrator: 'k8s',
          node: 'kn-1',
          pod: 'elsewhere',
          endpoint: 'eth0',
          ipNetworks: ['198.19.7.9/32'],
        },
      }),
    );
    expect(refused.code).toBe('invalid');
    expect(refused.message).toMatch(/does not match this record/);
    const pod = await getJson(['pod', 'elsewhere', '-n', 'shop']);
    expect(pod.metadata.annotations?.['cni.projectcalico.org/podIP']).toBeUndefined();
  });

  it('Namespaces and ServiceAccounts are the kns.* and ksa.* profiles, read-only', async () => {
    const kns = await ds.get('Profile', 'kns.shop');
    expect(kns.spec).toEqual({
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
      labelsToApply: {
        'pcns.team': 'a',
        'pcns.projectcalico.org/name': 'shop',
        'pcns.kubernetes.io/metadata.name': 'shop',
      },
    });
    const ksa = await ds.get('Profile', 'ksa.shop.api');
    expect(ksa.spec.labelsToApply).toEqual({ 'pcsa.tier': 'x', 'pcsa.projectcalico.org/name': 'api' });
    const names = (await ds.list('Profile')).items.map((p) => p.metadata.name);
    expect(names).toEqual(
      expect.arrayContaining(['kns.shop', 'ksa.shop.api', 'kns.default', 'projectcalico-default-allow']),
    );
    const refused = await errorOfP(
      ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'Profile',
        metadata: { name: 'mine' },
        spec: {},
      }),
    );
    expect(refused.code).toBe('unsupported');
  });

  it('Services and EndpointSlices are read as they are, for policy services matches, and followed by a watch', async () => {
    const kv = await kubeStore(api);
    await apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'dns', namespace: 'shop' },
      spec: { clusterIP: '198.18.128.53', ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] },
    });
    const listed = await kv.list(SERVICES_PREFIX);
    expect(listed.kvs.map((x) => x.key)).toEqual(
      ['/kubernetes/services/default/kubernetes', '/kubernetes/services/shop/dns'].filter((k) =>
        listed.kvs.some((x) => x.key === k),
      ),
    );
    const dns = JSON.parse(listed.kvs.find((x) => x.key === '/kubernetes/services/shop/dns')!.value);
    expect(dns).toMatchObject({
      kind: 'Service',
      spec: { clusterIP: '198.18.128.53', ports: [{ port: 53, protocol: 'UDP' }] },
    });
    const ac = new AbortController();
    const from = String(BigInt(await kv.revision()) + 1n);
    const it = kv
      .watch(ENDPOINT_SLICES_PREFIX, { fromRevision: from, signal: ac.signal })
      [Symbol.asyncIterator]();
    await apply({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'dns-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'dns' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['198.19.7.9'] }],
      ports: [{ name: 'dns', port: 5353, protocol: 'UDP' }],
    });
    const msg = await it.next();
    ac.abort();
    expect(msg.value).toMatchObject({
      kind: 'events',
      events: [{ kind: 'put', kv: { key: '/kubernetes/endpointslices/shop/dns-1' } }],
    });
    await expect(kv.put('/kubernetes/services/shop/x', '{}')).rejects.toThrowError(
      expect.objectContaining({ code: 'unsupported' }),
    );
    await kv.close();
  });

  it('Kubernetes NetworkPolicies show as knp.default.* NetworkPolicies beside Calico ones, read-only', async () => {
    await apply({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'deny-all', namespace: 'shop' },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    });
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'allow-web', namespace: 'shop' },
      spec: { selector: "app == 'web'", ingress: [{ action: 'Allow' }] },
    });
    const list = await ds.list('NetworkPolicy', { namespace: 'shop' });
    expect(list.items.map((p) => p.metadata.name).sort()).toEqual(['allow-web', 'knp.default.deny-all']);
    const knp = list.items.find((p) => p.metadata.name === 'knp.default.deny-all')!;
    expect(knp.spec).toMatchObject({
      order: 1000,
      selector: "projectcalico.org/orchestrator == 'k8s'",
      types: ['Ingress'],
    });
    expect(
      (await errorOfP(ds.delete('NetworkPolicy', 'knp.default.deny-all', { namespace: 'shop' }))).code,
    ).toBe('unsupported');
  });
});

async function errorOfP(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error('expected the call to fail');
}
