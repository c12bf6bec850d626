// IPAM on the Kubernetes datastore against raw compare-and-swap on ipamblocks with
// @kubernetes/client-node, on the API server the caller started (kdd.bench.mjs: one run, one API
// server). For each allocator count (1, 8, 32 by default) and round, both sides run for the same
// time, one after the other, the order alternating by round:
//
//   ipam  N allocators, one per host (a Kubernetes Node each), each its own KVStore, IpamClient
//         and IpamStore, its host mirrored (`mirrorHost`, as the CNI plugin service does), one
//         autoAssign at a time (one IPv4 address, a handle of its own, as one CNI ADD asks).
//         After the timed part every handle is released by its allocator (timed too: release/s),
//         then the records are checked: every address handed out once, no handle left.
//   raw   N loops, each with an IPAMBlock object of its own (no lost races flatter IPAM), each
//         iteration a GET and a PUT with its resourceVersion (replaceClusterCustomObject) that
//         allocates the next address of the block the way IPAM's write does (allocation,
//         attribute, sequence number), the block emptied again when full; client-node with one
//         keep-alive agent (a socket per loop) and `Accept-Encoding: identity`: at its best.
//
// Each side's API requests are counted from kube-apiserver's own `apiserver_request_total`, read
// before and after it runs, and printed per allocation. Reported, never asserted.
import { Agent } from 'node:https';
import { performance } from 'node:perf_hooks';
import { createKVStore, KVDatastore } from '@calico-ts/datastore';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { CustomObjectsApi, KubeConfig, Observable } from '@kubernetes/client-node';
import { apiRequestCounts, kubeRest, median, requestsPer, round } from './kube-cluster.mjs';

const GROUP = 'crd.projectcalico.org';
const VERSION = 'v1';
const POOL = '198.19.0.0/16';
const BLOCK_SIZE = 64;
const TARGET = 0.8;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs `one(k)` in `n` loops until `ms` has passed; each loop finishes the op it is in. */
async function loops(n, ms, one) {
  let ok = 0;
  let failed = 0;
  let firstError;
  const t0 = performance.now();
  const deadline = t0 + ms;
  await Promise.all(
    Array.from({ length: n }, async (_, k) => {
      while (performance.now() < deadline) {
        try {
          if (await one(k)) ok++;
          else failed++;
        } catch (e) {
          failed++;
          firstError ??= e;
        }
      }
    }),
  );
  return { ok, failed, firstError, ms: performance.now() - t0 };
}

/** The total of a requestsPer map, and the map without its small change (`/metrics` reads). */
function requestSummary(per) {
  // Less than one request in 200 operations is the API server's own background, not the side's.
  const kept = Object.fromEntries(
    Object.entries(per).filter(([k, v]) => !k.startsWith('GET metrics') && v > 0),
  );
  return {
    total: round(
      Object.values(kept).reduce((a, b) => a + b, 0),
      2,
    ),
    byVerb: kept,
  };
}

// ---- raw: client-node get + replace on one IPAMBlock per loop ----------------------------------

function rawBlockObject(k) {
  const c = `198.18.${k}.0/26`;
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'IPAMBlock',
    metadata: { name: `raw-cas-${k}`, labels: { bench: 'kdd-ipam' } },
    spec: emptySpec(c),
  };
}

function emptySpec(cidr) {
  return {
    cidr,
    affinity: 'host:raw',
    allocations: Array.from({ length: BLOCK_SIZE }, () => null),
    unallocated: Array.from({ length: BLOCK_SIZE }, (_, i) => i),
    attributes: [],
    sequenceNumber: 1757000000000000000,
    sequenceNumberForAllocation: {},
    deleted: false,
    strictAffinity: false,
  };
}

/** The next address of the block allocated as IPAM records it; the block emptied when full. */
function allocateRaw(obj, i) {
  let s = obj.spec;
  if (!s.unallocated?.length) s = obj.spec = emptySpec(s.cidr);
  const ordinal = s.unallocated.shift();
  s.allocations[ordinal] = s.attributes.length;
  s.attributes.push({
    handle_id: `k8s-pod-network.raw-${i}`,
    secondary: {
      namespace: 'bench',
      node: 'raw',
      pod: `pod-${i}`,
      timestamp: '2026-01-02 03:04:05 +0000 UTC',
    },
  });
  s.sequenceNumber += 1;
  s.sequenceNumberForAllocation = { ...s.sequenceNumberForAllocation, [String(ordinal)]: s.sequenceNumber };
  return obj;
}

export async function rawCasRun(apiServer, n) {
  const kc = new KubeConfig();
  kc.loadFromFile(apiServer.kubeconfigPath);
  const api = kc.makeApiClient(CustomObjectsApi);
  const agent = new Agent({
    keepAlive: true,
    maxSockets: n,
    ca: apiServer.caPem,
    cert: apiServer.clientCertPem,
    key: apiServer.clientKeyPem,
  });
  const options = {
    middleware: [
      {
        pre: (ctx) => {
          ctx.setAgent(agent);
          ctx.setHeaderParam('Accept-Encoding', 'identity');
          return new Observable(Promise.resolve(ctx));
        },
        post: (res) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
  const where = { group: GROUP, version: VERSION, plural: 'ipamblocks' };
  try {
    for (let k = 0; k < n; k++) {
      await api.deleteClusterCustomObject({ ...where, name: `raw-cas-${k}` }, options).catch(() => undefined);
      await api.createClusterCustomObject({ ...where, body: rawBlockObject(k) }, options);
    }
  } catch (e) {
    agent.destroy();
    throw e;
  }
  let i = 0;
  /** One get + compare-and-swap of loop k's block; false when it lost (it never should). */
  const one = async (k) => {
    const name = `raw-cas-${k}`;
    const obj = await api.getClusterCustomObject({ ...where, name }, options);
    try {
      await api.replaceClusterCustomObject({ ...where, name, body: allocateRaw(obj, i++) }, options);
      return true;
    } catch (e) {
      if (e?.code === 409) return false;
      throw e;
    }
  };
  return { one, close: () => agent.destroy() };
}

// ---- ipam: IpamClient allocators on mirrored hosts ---------------------------------------------

async function openAllocators(kubeconfig, hosts) {
  const cfg = { datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig };
  const out = [];
  try {
    for (const host of hosts) {
      const kv = await createKVStore(cfg);
      const client = new IpamClient(new KVDatastore(kv, { backend: 'kubernetes' }), new IpamStore(kv));
      out.push({ kv, client, host });
      await client.mirrorHost(host);
    }
    return out;
  } catch (e) {
    await closeAllocators(out);
    throw e;
  }
}

async function closeAllocators(allocators) {
  for (const a of allocators) a.client.close();
  await Promise.all(allocators.map((a) => a.kv.close().catch(() => undefined)));
}

/** Nodes for `count` hosts, the pool, and what else an allocation needs; idempotent. */
export async function seedIpam(apiServer, ds, count) {
  const rest = kubeRest(apiServer, 4);
  try {
    for (let h = 0; h < count; h++) {
      await rest
        .call('POST', '/api/v1/nodes', {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: `ipam-node-${h}`, labels: { 'kubernetes.io/hostname': `ipam-node-${h}` } },
        })
        .catch((e) => {
          if (!/409/.test(e.message)) throw e;
        });
    }
  } finally {
    rest.close();
  }
  await ds
    .create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'bench-ipam-pool' },
      spec: { cidr: POOL, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', nodeSelector: 'all()' },
    })
    .catch((e) => {
      if (e?.code !== 'already-exists') throw e;
    });
}

/** One IPAM side run: allocate for `ms`, then release everything and check the records. */
async function ipamRun(apiServer, rest, n, ms, serial) {
  const hosts = Array.from({ length: n }, (_, h) => `ipam-node-${h}`);
  const allocators = await openAllocators(apiServer.kubeconfigPath, hosts);
  const handles = allocators.map(() => []);
  const addresses = [];
  try {
    let i = 0;
    const assignOne = async (k) => {
      const a = allocators[k];
      const handleId = `k8s-pod-network.bench-${serial}-${i++}`;
      const res = await a.client.autoAssign({
        num4: 1,
        num6: 0,
        handleId,
        hostname: a.host,
        attrs: {
          node: a.host,
          namespace: 'bench',
          pod: handleId,
          timestamp: '2026-01-02 03:04:05 +0000 UTC',
        },
      });
      handles[k].push(handleId);
      for (const ip of res.ipv4) addresses.push(ip.address);
      return res.ipv4.length === 1;
    };
    // Untimed, one each: an allocator's first claims its host's block (or reads it), which a
    // long-running one did long ago.
    await Promise.all(allocators.map((_, k) => assignOne(k)));
    const warm = i;
    const before = await apiRequestCounts(rest);
    const cpu0 = process.cpuUsage();
    const alloc = await loops(n, ms, assignOne);
    const cpu = process.cpuUsage(cpu0);
    const after = await apiRequestCounts(rest);
    // Release: every allocator its own handles, as its node's DELs would.
    const t0 = performance.now();
    let releaseFailed = 0;
    await Promise.all(
      allocators.map(async (a, k) => {
        for (const h of handles[k]) {
          const r = await a.client.releaseByHandle(h).catch(() => undefined);
          if (r?.released.length !== 1) releaseFailed++;
        }
      }),
    );
    const releaseMs = performance.now() - t0;
    const afterRelease = await apiRequestCounts(rest);
    const left = await rest.call('GET', `/apis/${GROUP}/${VERSION}/ipamhandles?limit=1`);
    const released = handles.reduce((s, h) => s + h.length, 0);
    return {
      ok: alloc.ok,
      failed: alloc.failed,
      firstError: alloc.firstError?.message,
      opsPerSec: (alloc.ok / alloc.ms) * 1000,
      cpuUsPerOp: (cpu.user + cpu.system) / Math.max(1, alloc.ok),
      duplicates: addresses.length - new Set(addresses).size,
      warm,
      requests: requestSummary(requestsPer(before, after, Math.max(1, alloc.ok))),
      release: {
        count: released,
        failed: releaseFailed,
        perSec: (released / releaseMs) * 1000,
        requests: requestSummary(requestsPer(after, afterRelease, Math.max(1, released))),
      },
      handlesLeft: left.items.length,
    };
  } finally {
    await closeAllocators(allocators);
  }
}

/** Every row: for each allocator count, `rounds` rounds of raw and ipam, order alternating. */
export async function measureIpam(apiServer, ds, { counts, rounds, seconds, log }) {
  await seedIpam(apiServer, ds, Math.max(...counts));
  const rest = kubeRest(apiServer, 4);
  const ms = seconds * 1000;
  const rows = [];
  let serial = 0;
  try {
    for (const n of counts) {
      const per = { raw: [], ipam: [] };
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? ['raw', 'ipam'] : ['ipam', 'raw'];
        for (const side of order) {
          await sleep(300);
          if (side === 'raw') {
            const raw = await rawCasRun(apiServer, n);
            let res;
            let before;
            let after;
            try {
              before = await apiRequestCounts(rest);
              const cpu0 = process.cpuUsage();
              res = await loops(n, ms, raw.one);
              const cpu = process.cpuUsage(cpu0);
              res.cpuUsPerOp = (cpu.user + cpu.system) / Math.max(1, res.ok);
              after = await apiRequestCounts(rest);
            } finally {
              raw.close();
            }
            per.raw.push({
              ok: res.ok,
              lost: res.failed,
              firstError: res.firstError?.message,
              opsPerSec: (res.ok / res.ms) * 1000,
              cpuUsPerOp: res.cpuUsPerOp,
              requests: requestSummary(requestsPer(before, after, Math.max(1, res.ok))),
            });
          } else {
            per.ipam.push(await ipamRun(apiServer, rest, n, ms, serial++));
          }
          const last = per[side].at(-1);
          log(
            `ipam n=${n} round ${r + 1}/${rounds} ${side}: ${round(last.opsPerSec, 1)}/s, ${last.requests.total} requests and ${Math.round(last.cpuUsPerOp)} µs client CPU each${last.firstError ? ` (first error: ${last.firstError})` : ''}`,
          );
        }
      }
      const ratios = per.ipam.map((x, i) => x.opsPerSec / per.raw[i].opsPerSec);
      const ipamRate = median(per.ipam.map((x) => x.opsPerSec));
      const rawRate = median(per.raw.map((x) => x.opsPerSec));
      rows.push({
        allocators: n,
        ipam: {
          opsPerSec: round(ipamRate, 1),
          rounds: per.ipam.map((x) => round(x.opsPerSec, 1)),
          allocations: per.ipam.reduce((s, x) => s + x.ok, 0),
          failed: per.ipam.reduce((s, x) => s + x.failed, 0),
          duplicates: per.ipam.reduce((s, x) => s + x.duplicates, 0),
          handlesLeft: Math.max(...per.ipam.map((x) => x.handlesLeft)),
          requestsPerAllocation: per.ipam.at(-1).requests,
          clientCpuUsPerOp: Math.round(median(per.ipam.map((x) => x.cpuUsPerOp))),
          release: {
            perSec: round(median(per.ipam.map((x) => x.release.perSec)), 1),
            failed: per.ipam.reduce((s, x) => s + x.release.failed, 0),
            requestsPerRelease: per.ipam.at(-1).release.requests,
          },
        },
        raw: {
          opsPerSec: round(rawRate, 1),
          rounds: per.raw.map((x) => round(x.opsPerSec, 1)),
          lost: per.raw.reduce((s, x) => s + x.lost, 0),
          requestsPerCas: per.raw.at(-1).requests,
          clientCpuUsPerOp: Math.round(median(per.raw.map((x) => x.cpuUsPerOp))),
        },
        ratio: round(ipamRate / rawRate, 3),
        medianRoundRatio: round(median(ratios), 3),
        roundRatios: ratios.map((x) => round(x, 3)),
      });
    }
  } finally {
    rest.close();
  }
  return { target: TARGET, seconds, rounds, rows };
}

export function printIpam(res) {
  const fmtReq = (r) =>
    `${r.total} (${Object.entries(r.byVerb)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')})`;
  console.log(
    `\n### IPAM on the Kubernetes datastore vs raw compare-and-swap on ipamblocks with client-node (${res.rounds} rounds of ${res.seconds} s, medians)\n`,
  );
  console.log(
    '| allocators | IPAM allocations/s | raw CAS/s | IPAM/raw | median round | requests per allocation | requests per raw CAS | client CPU µs/op IPAM / raw | release/s | requests per release | duplicates | handles left |',
  );
  console.log('| ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | --- | ---: | ---: |');
  for (const r of res.rows) {
    console.log(
      `| ${r.allocators} | ${r.ipam.opsPerSec} | ${r.raw.opsPerSec} | ${r.ratio.toFixed(2)} ${r.ratio >= res.target ? '✓' : '✗'} | ${r.medianRoundRatio.toFixed(2)} | ${fmtReq(r.ipam.requestsPerAllocation)} | ${fmtReq(r.raw.requestsPerCas)} | ${r.ipam.clientCpuUsPerOp} / ${r.raw.clientCpuUsPerOp} | ${r.ipam.release.perSec} | ${fmtReq(r.ipam.release.requestsPerRelease)} | ${r.ipam.duplicates} | ${r.ipam.handlesLeft} |`,
    );
  }
  const byN = new Map(res.rows.map((r) => [r.allocators, r]));
  if (byN.has(8) && byN.has(32)) {
    const a = byN.get(8).ipam.opsPerSec;
    const b = byN.get(32).ipam.opsPerSec;
    console.log(`\nIPAM 32 allocators / 8: ${(b / a).toFixed(2)} (${b >= a ? 'holds' : 'falls'})`);
  }
  const failed = res.rows.reduce((s, r) => s + r.ipam.failed + r.ipam.release.failed, 0);
  if (failed > 0) console.log(`IPAM operations that failed: ${failed}`);
}
