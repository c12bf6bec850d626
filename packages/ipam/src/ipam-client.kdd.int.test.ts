/**
 * IpamClient on the Kubernetes datastore (IPAMBlock, BlockAffinity, IPAMHandle CRDs on a real
 * kube-apiserver): 1,000 allocations racing from 8 allocators, each with its own KVStore from
 * `createKVStore`, as separate CNI invocations on four nodes would be. Nothing handed out twice,
 * no update lost (every handle holds exactly the address its request got, and `check()` agrees),
 * then every handle released concurrently and nothing of IPAM left, as kubectl shows it.
 *
 * The same workload runs on etcd in the same test run, and both timings are printed (never
 * asserted: a shared machine is too noisy for that).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { type ClientConfig, createKVStore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import { parseJsonExact } from '@calico-ts/datastore/internal';
import {
  type EtcdServer,
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignedIP } from './client/types.js';
import { IpamClient } from './ipam-client.js';
import { IpamStore } from './store/ipam-store.js';

const REPO = join(import.meta.dirname, '../../..');
const CRDS = join(REPO, 'deploy/crds/calico-crds.yaml');

const missing = missingKubePrerequisites({ crds: CRDS });
if (missing.length > 0) {
  describe('IPAM on the Kubernetes datastore', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const ALLOCATORS = 8;
const ALLOCATIONS = 1_000;
/**
 * Requests each allocator has outstanding at once: 1, as one CNI invocation after another (the
 * host IPAM lock serialises a node's invocations). CALICO_TEST_IPAM_IN_FLIGHT raises it, to see
 * how throughput falls as more writers race for the same blocks.
 */
const IN_FLIGHT = Number(process.env.CALICO_TEST_IPAM_IN_FLIGHT ?? 1);
const HOSTS = ['kdd-node-1', 'kdd-node-2', 'kdd-node-3', 'kdd-node-4'];
const POOL = '198.19.0.0/16';

interface Request {
  handle: string;
  host: string;
  allocator: number;
}

/**
 * Request i goes to allocator i % 8 for host (i / 8) % 4: every allocator serves every host, and
 * the allocators, moving in step, tend to be on the same host at the same moment: all 8 race for
 * that host's block (the worst case for compare-and-swap), and for its next block when it fills.
 */
const requests: Request[] = Array.from({ length: ALLOCATIONS }, (_, i) => ({
  handle: `k8s-pod-network.race-${String(i).padStart(4, '0')}`,
  host: HOSTS[Math.floor(i / ALLOCATORS) % HOSTS.length]!,
  allocator: i % ALLOCATORS,
}));

interface Allocator {
  kv: KVStore;
  client: IpamClient;
}

/** What the allocations did, for the report and the checks. */
interface RaceOutcome {
  got: Map<string, AssignedIP>;
  allocateMs: number;
  releaseMs?: number;
}

/** One allocator: its own connection, typed client and IPAM client, as a CNI invocation has. */
async function openAllocator(cfg: ClientConfig): Promise<Allocator> {
  const kv = await createKVStore(cfg);
  const backend = cfg.datastoreType === 'kubernetes' ? 'kubernetes' : 'etcdv3';
  return { kv, client: new IpamClient(new KVDatastore(kv, { backend }), new IpamStore(kv)) };
}

/**
 * Each allocator works through its share of the requests with `IN_FLIGHT` of them outstanding at a
 * time, all allocators at once.
 */
async function eachAllocator<T>(
  allocators: Allocator[],
  f: (a: Allocator, r: Request) => Promise<T>,
): Promise<Map<string, T>> {
  const out = new Map<string, T>();
  await Promise.all(
    allocators.map(async (a, i) => {
      const mine = requests.filter((r) => r.allocator === i);
      let next = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < mine.length) {
            const r = mine[next++]!;
            out.set(r.handle, await f(a, r));
          }
        }),
      );
    }),
  );
  return out;
}

async function allocateAll(allocators: Allocator[]): Promise<RaceOutcome> {
  const t0 = performance.now();
  const got = await eachAllocator(allocators, async (a, r) => {
    const res = await a.client.autoAssign({
      num4: 1,
      num6: 0,
      handleId: r.handle,
      hostname: r.host,
      attrs: {
        node: r.host,
        namespace: 'default',
        pod: r.handle,
        timestamp: '2026-01-02 03:04:05 +0000 UTC',
      },
    });
    expect(res.ipv4, r.handle).toHaveLength(1);
    return res.ipv4[0]!;
  });
  return { got, allocateMs: performance.now() - t0 };
}

/** Every handle released, each by the allocator that made it, as concurrently as allocating. */
async function releaseAll(allocators: Allocator[], outcome: RaceOutcome): Promise<void> {
  const t0 = performance.now();
  const released = await eachAllocator(allocators, (a, r) => a.client.releaseByHandle(r.handle));
  outcome.releaseMs = performance.now() - t0;
  for (const r of requests) {
    expect(released.get(r.handle)?.released, r.handle).toEqual([outcome.got.get(r.handle)!.address]);
  }
}

/** The address of ordinal `i` in a block `a.b.c.d/n`. */
function addressIn(blockCidr: string, i: number): string {
  const o = blockCidr.split('/')[0]!.split('.').map(Number);
  const v = ((o[0]! << 24) | (o[1]! << 16) | (o[2]! << 8) | o[3]!) + i;
  return [24, 16, 8, 0].map((s) => (v >>> s) & 255).join('.');
}

/**
 * The allocations as the blocks record them: handle → addresses, and every address once. Also
 * checks each handle record counts exactly its allocations in each block.
 */
async function assertRecordsMatch(store: IpamStore, outcome: RaceOutcome): Promise<void> {
  const blocks = (await store.listBlocks()).items;
  const byHandle = new Map<string, string[]>();
  const perBlock = new Map<string, Map<string, number>>();
  for (const { value: b } of blocks) {
    b.allocations.forEach((attr, ordinal) => {
      if (attr === null) return;
      const handle = b.attributes[attr]?.handle_id;
      expect(handle, `${b.cidr} ordinal ${ordinal}`).toBeTruthy();
      const list = byHandle.get(handle!) ?? [];
      list.push(addressIn(b.cidr, ordinal));
      byHandle.set(handle!, list);
      const counts = perBlock.get(handle!) ?? new Map<string, number>();
      counts.set(b.cidr, (counts.get(b.cidr) ?? 0) + 1);
      perBlock.set(handle!, counts);
    });
  }
  expect(byHandle.size).toBe(ALLOCATIONS);
  for (const r of requests) {
    const ip = outcome.got.get(r.handle)!;
    expect(byHandle.get(r.handle), r.handle).toEqual([ip.address]);
    // Each address came from a block affine to the host it was asked for (no borrowing needed).
    const block = blocks.find((b) => b.value.cidr === ip.block)!;
    expect(block.value.affinity, r.handle).toBe(`host:${r.host}`);
  }
  const handles = (await store.listHandles()).items;
  expect(handles).toHaveLength(ALLOCATIONS);
  for (const h of handles) {
    expect(h.value.block, h.value.handleId).toEqual(Object.fromEntries(perBlock.get(h.value.handleId)!));
  }
}

function assertDistinct(outcome: RaceOutcome): void {
  const addresses = [...outcome.got.values()].map((ip) => ip.address);
  expect(addresses).toHaveLength(ALLOCATIONS);
  expect(new Set(addresses).size).toBe(ALLOCATIONS);
  for (const ip of outcome.got.values()) {
    expect(ip.prefixLength).toBe(26);
    expect(ip.address.startsWith('198.19.')).toBe(true);
  }
}

function rate(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s, ${Math.round((ALLOCATIONS * 1000) / ms)}/s`;
}

describe.skipIf(missing.length > 0)('IPAM on the Kubernetes datastore, racing', () => {
  let api: KubeApiServer;
  let etcd: EtcdServer;
  let kubeCfg: ClientConfig;
  let etcdCfg: ClientConfig;
  const opened: KVStore[] = [];
  let kdd: RaceOutcome | undefined;
  let onEtcd: RaceOutcome | undefined;
  let kddAllocators: Allocator[] = [];
  let etcdAllocators: Allocator[] = [];
  let kddAdmin: { client: IpamClient; store: IpamStore };

  /** kubectl against the test's API server; `input` goes to its stdin. Rejects with its stderr. */
  function kubectl(args: string[], input = ''): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        findKubectl()!,
        ['--kubeconfig', api.kubeconfigPath, ...args],
        { maxBuffer: 64 * 1024 * 1024 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
      );
      child.stdin!.end(input);
    });
  }

  async function kubectlNames(resource: string): Promise<string[]> {
    const out = JSON.parse(await kubectl(['get', resource, '-o', 'json'])) as {
      items: { metadata: { name: string } }[];
    };
    return out.items.map((i) => i.metadata.name);
  }

  async function open(cfg: ClientConfig): Promise<Allocator[]> {
    const all = await Promise.all(Array.from({ length: ALLOCATORS }, () => openAllocator(cfg)));
    opened.push(...all.map((a) => a.kv));
    return all;
  }

  async function seedPool(kv: KVStore, backend: 'kubernetes' | 'etcdv3'): Promise<void> {
    await new KVDatastore(kv, { backend }).create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'default-ipv4-ippool' },
      spec: { cidr: POOL, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', nodeSelector: 'all()' },
    });
  }

  beforeAll(async () => {
    // Both at once; whichever started is stopped in afterAll even when the other failed.
    const [a, e] = await Promise.allSettled([startKubeApiServer(), startEtcd()]);
    if (a.status === 'fulfilled') api = a.value;
    if (e.status === 'fulfilled') etcd = e.value;
    if (a.status === 'rejected') throw a.reason;
    if (e.status === 'rejected') throw e.reason;
    await kubectl(['apply', '--server-side', '-f', CRDS]);
    await kubectl(['wait', '--for', 'condition=established', '--timeout', '60s', 'crd', '--all']);
    // The Calico Nodes of the Kubernetes datastore are the Kubernetes Nodes: kubelet would have
    // registered them.
    for (const h of HOSTS) {
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: h } }),
      );
    }
    kubeCfg = { datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: api.kubeconfigPath };
    etcdCfg = { datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints };
    kddAllocators = await open(kubeCfg);
    etcdAllocators = await open(etcdCfg);
    const kv = kddAllocators[0]!.kv;
    kddAdmin = {
      client: new IpamClient(new KVDatastore(kv, { backend: 'kubernetes' }), new IpamStore(kv)),
      store: new IpamStore(kv),
    };
    await seedPool(kv, 'kubernetes');
    const ekv = etcdAllocators[0]!.kv;
    const eds = new KVDatastore(ekv, { backend: 'etcdv3' });
    for (const h of HOSTS) {
      await eds.create({ apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: h }, spec: {} });
    }
    await seedPool(ekv, 'etcdv3');
  }, 120_000);

  afterAll(async () => {
    if (kdd || onEtcd) {
      const line = (name: string, o: RaceOutcome | undefined) =>
        o
          ? `${name}: allocate ${rate(o.allocateMs)}${o.releaseMs !== undefined ? `; release ${rate(o.releaseMs)}` : ''}`
          : `${name}: not run`;
      process.stdout.write(
        `\n${ALLOCATIONS} IPAM allocations from ${ALLOCATORS} allocators over ${HOSTS.length} hosts\n` +
          `  ${line('Kubernetes datastore', kdd)}\n  ${line('etcd', onEtcd)}\n` +
          (kdd && onEtcd
            ? `  KDD/etcd wall time: ${(kdd.allocateMs / onEtcd.allocateMs).toFixed(1)}x\n`
            : ''),
      );
    }
    await Promise.all(opened.map((kv) => kv.close().catch(() => undefined)));
    await Promise.all([api?.stop(), etcd?.stop()]);
  }, 60_000);

  it(`gives ${ALLOCATIONS} racing requests distinct addresses, each recorded under its own handle`, async () => {
    kdd = await allocateAll(kddAllocators);
    assertDistinct(kdd);
    await assertRecordsMatch(kddAdmin.store, kdd);
    const report = await kddAdmin.client.check();
    expect(report.ok, JSON.stringify(report)).toBe(true);
    expect(report.summary.allocations).toBe(ALLOCATIONS);
    expect(report.summary.handles).toBe(ALLOCATIONS);
    expect(report.summary.blocks).toBe(report.summary.affinities);
    // What kubectl shows: one IPAMHandle per request, named as upstream names it (lower-cased
    // handle), and one confirmed BlockAffinity per IPAMBlock, each host with at least the 4 blocks
    // its 250 addresses need.
    const handles = await kubectlNames('ipamhandles.crd.projectcalico.org');
    expect(handles.sort()).toEqual(requests.map((r) => r.handle).sort());
    const blocks = JSON.parse(await kubectl(['get', 'ipamblocks.crd.projectcalico.org', '-o', 'json'])) as {
      items: { metadata: { name: string }; spec: { cidr: string; affinity: string } }[];
    };
    const affinities = JSON.parse(
      await kubectl(['get', 'blockaffinities.crd.projectcalico.org', '-o', 'json']),
    ) as { items: { metadata: { name: string }; spec: { node: string; cidr: string; state: string } }[] };
    expect(affinities.items.map((a) => `host:${a.spec.node} ${a.spec.cidr}`).sort()).toEqual(
      blocks.items.map((b) => `${b.spec.affinity} ${b.spec.cidr}`).sort(),
    );
    expect(affinities.items.every((a) => a.spec.state === 'confirmed')).toBe(true);
    for (const h of HOSTS) {
      expect(affinities.items.filter((a) => a.spec.node === h).length, h).toBeGreaterThanOrEqual(4);
    }
  }, 300_000);

  it('releasing every handle concurrently leaves no allocation and no handle; then no IPAM object at all', async () => {
    expect(kdd?.got.size).toBe(ALLOCATIONS);
    await releaseAll(kddAllocators, kdd!);
    expect(await kubectlNames('ipamhandles.crd.projectcalico.org')).toEqual([]);
    for (const { value: b } of (await kddAdmin.store.listBlocks()).items) {
      expect(
        b.allocations.every((a) => a === null),
        b.cidr,
      ).toBe(true);
      expect(b.attributes).toEqual([]);
    }
    const report = await kddAdmin.client.check();
    expect(report.ok, JSON.stringify(report)).toBe(true);
    expect(report.summary.allocations).toBe(0);
    expect(report.summary.handles).toBe(0);
    for (const h of HOSTS) await kddAdmin.client.releaseHostAffinities(h);
    for (const r of ['ipamblocks', 'blockaffinities', 'ipamhandles']) {
      expect(await kubectlNames(`${r}.crd.projectcalico.org`), r).toEqual([]);
    }
  }, 300_000);

  it('the same workload on etcd, for comparison: the same guarantees', async () => {
    onEtcd = await allocateAll(etcdAllocators);
    assertDistinct(onEtcd);
    const store = new IpamStore(etcdAllocators[0]!.kv);
    await assertRecordsMatch(store, onEtcd);
    const report = await etcdAllocators[0]!.client.check();
    expect(report.ok, JSON.stringify(report)).toBe(true);
    expect(report.summary.allocations).toBe(ALLOCATIONS);
    await releaseAll(etcdAllocators, onEtcd);
    expect((await store.listHandles()).items).toEqual([]);
    const r = await etcd.etcdctl(['get', '--prefix', '/calico/ipam/v2/handle/', '--keys-only']);
    expect(r.stdout.trim()).toBe('');
    // Every block value is back to empty.
    const blocks = await etcd.etcdctl([
      'get',
      '--prefix',
      '/calico/ipam/v2/assignment/',
      '--print-value-only',
    ]);
    for (const text of blocks.stdout.split('\n').filter((l) => l.trim() !== '')) {
      const b = parseJsonExact(text) as { allocations: unknown[] };
      expect(b.allocations.every((a) => a === null)).toBe(true);
    }
  }, 300_000);
});
