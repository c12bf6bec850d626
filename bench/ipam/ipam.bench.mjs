// IPAM allocation throughput: IpamClient.autoAssign (one IPv4 address per call, a handle of its
// own, as one CNI ADD asks) from 8 concurrent allocators, one per host, each with its own etcd
// connection, against raw etcd compare-and-swap transactions (get, then `txn if mod_revision == X
// then put`) from 8 concurrent loops on the same private etcd, in the same run. Both sides use the
// same etcd client stack (`--transport`): http2 (default; the KVStore the CNI plugin and its
// service use, a get and an update per CAS) or etcd3 (the etcd3 package, grpc-js). An allocation is several such round trips (read the affinity and block, CAS the block,
// CAS the handle), so the ratio says how close IPAM gets to the datastore's own write rate.
// Allocated addresses are counted and duplicates reported (must be 0). Reported, never asserted.
//
//   node bench/ipam/ipam.bench.mjs [--allocations 2000] [--allocators 8] [--cas-seconds 3] [--out file.json]
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createKVStore, isDatastoreError, KVDatastore } from '@calico-ts/datastore';
import { startEtcd } from '@calico-ts/datastore/testing';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { Etcd3 } from 'etcd3';

const { values: args } = parseArgs({
  options: {
    allocations: { type: 'string', default: '2000' },
    allocators: { type: 'string', default: '8' },
    'cas-seconds': { type: 'string', default: '3' },
    transport: { type: 'string', default: 'http2' },
    out: { type: 'string' },
  },
});
const ALLOCATIONS = Number(args.allocations);
const ALLOCATORS = Number(args.allocators);
const CAS_MS = Number(args['cas-seconds']) * 1000;
const TRANSPORT = args.transport;
if (TRANSPORT !== 'http2' && TRANSPORT !== 'etcd3') throw new Error('--transport must be http2 or etcd3');
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'ipam.json');
const POOL = '198.19.0.0/16';
const GOAL = 0.5;

function log(msg) {
  process.stderr.write(`ipam bench: ${msg}\n`);
}

function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

/**
 * IpamClient allocations: `ALLOCATORS` hosts, each its own client and etcd connection. `mirror`:
 * each client mirrors its host's assignment environment (`IpamClient.mirrorHost`), as the CNI
 * plugin service does; otherwise each allocation reads it, as a plugin run without the service does.
 */
async function allocate(etcd, { mirror, hosts, first }) {
  const stores = [];
  const clients = [];
  try {
    for (let h = 0; h < ALLOCATORS; h++) {
      const kv = await createKVStore(
        { datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints },
        { transport: TRANSPORT === 'etcd3' ? 'grpc' : 'http2' },
      );
      stores.push(kv);
      const client = new IpamClient(new KVDatastore(kv, { backend: 'etcdv3' }), new IpamStore(kv));
      if (mirror) await client.mirrorHost(`${hosts}-${h}`);
      clients.push(client);
    }
    const addresses = [];
    const latencies = [];
    let errors = 0;
    let firstError;
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      clients.map(async (client, h) => {
        const host = `${hosts}-${h}`;
        while (next < ALLOCATIONS) {
          const i = first + next++;
          const s = performance.now();
          try {
            const res = await client.autoAssign({
              num4: 1,
              num6: 0,
              handleId: `k8s-pod-network.bench-${i}`,
              hostname: host,
              attrs: { node: host, namespace: 'bench', pod: `pod-${i}` },
            });
            latencies.push(performance.now() - s);
            for (const ip of res.ipv4) addresses.push(ip.address);
            if (res.ipv4.length !== 1) errors++;
          } catch (e) {
            errors++;
            firstError ??= e;
          }
        }
      }),
    );
    const ms = performance.now() - t0;
    if (firstError) log(`first allocation error: ${firstError.message ?? firstError}`);
    return { ms, addresses, latencies, errors };
  } finally {
    for (const c of clients) c.close();
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
  }
}

/** Raw CAS: `ALLOCATORS` loops, each its own client and key, for `CAS_MS`; successful txns count. */
async function cas(etcd) {
  return TRANSPORT === 'etcd3' ? casEtcd3(etcd) : casHttp2(etcd);
}

/** A key per loop, as each allocator has a block of its own: no lost races flatter IPAM. */
const casKeys = () => Array.from({ length: ALLOCATORS }, (_, k) => `/bench/cas/${k}`);

/** Runs `one(k)` (one get + CAS; true when it won) in `ALLOCATORS` loops until the deadline. */
async function casLoops(one) {
  let ok = 0;
  let lost = 0;
  const latencies = [];
  const t0 = performance.now();
  const deadline = t0 + CAS_MS;
  await Promise.all(
    Array.from({ length: ALLOCATORS }, async (_, k) => {
      while (performance.now() < deadline) {
        const s = performance.now();
        const won = await one(k);
        latencies.push(performance.now() - s);
        if (won) ok++;
        else lost++;
      }
    }),
  );
  return { ms: performance.now() - t0, ok, lost, latencies };
}

async function casHttp2(etcd) {
  const stores = [];
  try {
    for (let k = 0; k < ALLOCATORS; k++)
      stores.push(
        await createKVStore(
          { datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints },
          { transport: 'http2' },
        ),
      );
    const keys = casKeys();
    for (const k of keys) await stores[0].put(k, '0');
    return await casLoops(async (k) => {
      const kv = await stores[k].get(keys[k]);
      try {
        await stores[k].update(keys[k], String(Number(kv.value) + 1), kv.modRevision);
        return true;
      } catch (e) {
        if (isDatastoreError(e, 'conflict')) return false;
        throw e;
      }
    });
  } finally {
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
  }
}

async function casEtcd3(etcd) {
  const clients = Array.from({ length: ALLOCATORS }, () => new Etcd3({ hosts: etcd.endpoints }));
  try {
    const keys = casKeys();
    for (const k of keys) await clients[0].put(k).value('0');
    return await casLoops(async (k) => {
      const c = clients[k];
      const key = keys[k];
      const res = await c.get(key).exec();
      const kv = res.kvs[0];
      const txn = await c
        .if(key, 'Mod', '==', kv.mod_revision)
        .then(c.put(key).value(String(Number(kv.value.toString()) + 1)))
        .commit();
      return txn.succeeded;
    });
  } finally {
    for (const c of clients) c.close();
  }
}

async function main() {
  const started = new Date();
  log(`allocations=${ALLOCATIONS} allocators=${ALLOCATORS} cas=${CAS_MS}ms`);
  const etcd = await startEtcd();
  try {
    const kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints });
    try {
      const ds = new KVDatastore(kv, { backend: 'etcdv3' });
      await ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: { name: 'bench-ipv4-ippool' },
        spec: { cidr: POOL, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', nodeSelector: 'all()' },
      });
      for (const hosts of ['bench-node', 'bench-mirrored']) {
        for (let h = 0; h < ALLOCATORS; h++) {
          await ds.create({
            apiVersion: 'projectcalico.org/v3',
            kind: 'Node',
            metadata: { name: `${hosts}-${h}` },
            spec: {},
          });
        }
      }
    } finally {
      await kv.close();
    }

    const c = await cas(etcd);
    const read = await allocate(etcd, { mirror: false, hosts: 'bench-node', first: 0 });
    const mirrored = await allocate(etcd, { mirror: true, hosts: 'bench-mirrored', first: ALLOCATIONS });
    const addresses = [...read.addresses, ...mirrored.addresses];
    const seen = new Set();
    let duplicates = 0;
    for (const ip of addresses) {
      if (seen.has(ip)) duplicates++;
      seen.add(ip);
    }
    const casPerSec = (c.ok / c.ms) * 1000;
    const allocRow = (side, a) => {
      const perSec = (a.addresses.length / a.ms) * 1000;
      return {
        side: `${side} × ${ALLOCATORS} (${TRANSPORT})`,
        opsPerSec: Number(perSec.toFixed(0)),
        p50Ms: Number(percentile(a.latencies, 50).toFixed(2)),
        p99Ms: Number(percentile(a.latencies, 99).toFixed(2)),
        ratio: Number((perSec / casPerSec).toFixed(3)),
        done: a.addresses.length,
        failed: a.errors,
      };
    };

    const rows = [
      allocRow('IpamClient.autoAssign, host mirrored (plugin service)', mirrored),
      allocRow('IpamClient.autoAssign, environment read each time (direct run)', read),
      {
        side: `etcd get + txn CAS × ${ALLOCATORS} (${TRANSPORT})`,
        opsPerSec: Number(casPerSec.toFixed(0)),
        p50Ms: Number(percentile(c.latencies, 50).toFixed(2)),
        p99Ms: Number(percentile(c.latencies, 99).toFixed(2)),
        ratio: 1,
        done: c.ok,
        failed: c.lost,
      },
    ];

    console.log(
      `allocations: ${ALLOCATIONS} over ${ALLOCATORS} hosts/allocators; pool ${POOL} /26 blocks; ${cpus().length} CPUs; load ${loadavg()[0].toFixed(2)}\n`,
    );
    console.log('| side | ops/s | p50 ms | p99 ms | × raw CAS | done | failed / lost CAS |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const r of rows) {
      console.log(
        `| ${r.side} | ${r.opsPerSec} | ${r.p50Ms} | ${r.p99Ms} | ${r.ratio} | ${r.done} | ${r.failed} |`,
      );
    }
    console.log(
      `\naddresses allocated: ${addresses.length}, distinct: ${seen.size}, duplicates: ${duplicates} (must be 0)`,
    );
    console.log(
      `goal: allocations/s ≥ ${GOAL} × raw CAS transactions/s (the plugin service's configuration: host mirrored)`,
    );

    await mkdir(dirname(OUT), { recursive: true });
    await writeFile(
      OUT,
      `${JSON.stringify(
        {
          bench: 'ipam',
          started: started.toISOString(),
          allocations: ALLOCATIONS,
          allocators: ALLOCATORS,
          casMs: CAS_MS,
          transport: TRANSPORT,
          node: process.version,
          cpus: cpus().length,
          loadavg1: Number(loadavg()[0].toFixed(2)),
          addresses: addresses.length,
          distinct: seen.size,
          duplicates,
          rows,
        },
        null,
        2,
      )}\n`,
    );
    log(`wrote ${OUT}`);
  } finally {
    await etcd.stop();
  }
}

await main();
