// Typed datastore client vs the raw etcd3 client doing the same work, on one private etcd, in one
// run. Reports ops/s and the ratio typed/raw; never asserts (a slow machine is not a failure).
//
//   create: typed `ds.create(obj)`            raw: txn(version(key) == 0) put JSON, else get
//   get:    typed `ds.get(kind, name)`         raw: get key, JSON.parse the value
//   update: typed `ds.update(obj with RV)`     raw: txn(mod_revision(key) == rv) put JSON, else get
//
// Raw stores the same JSON bytes the typed client writes (the objects are fully specified, so
// defaulting adds nothing). Work is split into rounds that alternate typed/raw (order flipped every
// round) so drift in machine load falls on both sides; the median of the per-round ratios is
// reported beside the overall one, and this process's CPU per operation shows the client's own cost
// apart from etcd's. Usage:
//   node bench/datastore/datastore.bench.mjs [--n 2000] [--concurrency 16] [--rounds 8] [--warmup 300]
//     [--kinds GlobalNetworkSet,HostEndpoint,IPPool] [--out file.json]
// IPPool is not in the default set: its create lists every pool to check for overlaps (as
// upstream's client does), so with the thousands of pools made here it measures that list, not
// the client; each pool gets its own CIDR (IPv6 ULA /64s, records only).
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createDatastore } from '@calico-ts/datastore';
import { startEtcd } from '@calico-ts/datastore/testing';
import { Etcd3 } from 'etcd3';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '300' },
    kinds: { type: 'string', default: 'GlobalNetworkSet,HostEndpoint' },
    // `typed` or `raw` alone, for profiling one side: node --cpu-prof … --sides typed
    sides: { type: 'string', default: 'typed,raw' },
    out: { type: 'string' },
  },
});
const N = Number(args.n);
const CONCURRENCY = Number(args.concurrency);
const ROUNDS = Number(args.rounds);
const WARMUP = Number(args.warmup);
const KINDS = args.kinds.split(',');
const SIDES = args.sides.split(',');
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'datastore.json');

const PLURAL = { GlobalNetworkSet: 'globalnetworksets', HostEndpoint: 'hostendpoints', IPPool: 'ippools' };

/** A distinct number per resource name, so no two pools' CIDRs overlap (whichever side wrote them). */
const poolIndex = new Map();
function indexOf(name) {
  if (!poolIndex.has(name)) poolIndex.set(name, poolIndex.size);
  return poolIndex.get(name);
}
const keyOf = (kind, name) => `/calico/resources/v3/projectcalico.org/${PLURAL[kind]}/${name}`;

/** A fully specified object of `kind` number `i`, generation `gen` (update changes the spec). */
function makeResource(kind, name, i, gen) {
  const a = (i >> 8) & 0xff;
  const b = i & 0xff;
  if (kind === 'GlobalNetworkSet') {
    return {
      apiVersion: 'projectcalico.org/v3',
      kind,
      metadata: { name, labels: { app: 'bench', tier: `t${i % 7}` } },
      spec: { nets: [`198.18.${a}.${b}/32`, `198.19.${a}.${b}/32`].slice(0, 1 + (gen % 2)) },
    };
  }
  if (kind === 'HostEndpoint') {
    return {
      apiVersion: 'projectcalico.org/v3',
      kind,
      metadata: { name, labels: { app: 'bench', tier: `t${i % 7}` } },
      spec: {
        node: `node-${i % 50}`,
        interfaceName: `eth${gen % 2}`,
        expectedIPs: [`198.18.${a}.${b}`],
        profiles: ['bench'],
      },
    };
  }
  // IPPool: every field upstream stores given (false booleans are not stored), so defaulting
  // changes nothing and the raw bytes equal the typed ones in size.
  return {
    apiVersion: 'projectcalico.org/v3',
    kind,
    metadata: { name, labels: { app: 'bench' } },
    spec: {
      cidr: `fd00:${(indexOf(name) >> 16).toString(16)}:${(indexOf(name) & 0xffff).toString(16)}::/64`,
      vxlanMode: gen % 2 === 0 ? 'Never' : 'Always',
      ipipMode: 'Never',
      natOutgoing: true,
      blockSize: 122,
      nodeSelector: 'all()',
      allowedUses: ['Workload', 'Tunnel'],
      assignmentMode: 'Automatic',
    },
  };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : Number(((s[m - 1] + s[m]) / 2).toFixed(3));
}

/** Run `count` operations with `CONCURRENCY` in flight; returns elapsed ms. */
async function runPool(count, op) {
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < count) {
      const i = next++;
      await op(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, worker));
  return performance.now() - t0;
}

function makeSides(ds, raw) {
  const typedObjs = new Map(); // name → last object returned (carries resourceVersion)
  const rawRevs = new Map(); // key → mod revision of our last write

  const typed = {
    create: (kind, name, i) => ds.create(makeResource(kind, name, i, 0)).then((o) => typedObjs.set(name, o)),
    get: (kind, name) => ds.get(kind, name),
    update: (kind, name, i, gen) => {
      const prev = typedObjs.get(name);
      const next = makeResource(kind, name, i, gen);
      return ds
        .update({ ...prev, metadata: { ...prev.metadata, labels: next.metadata.labels }, spec: next.spec })
        .then((o) => typedObjs.set(name, o));
    },
  };

  const stored = (kind, name, i, gen, meta) => {
    const o = makeResource(kind, name, i, gen);
    o.metadata = { ...o.metadata, ...meta };
    return JSON.stringify(o);
  };
  const rawMeta = new Map(); // key → {uid, creationTimestamp}
  const rawSide = {
    create: async (kind, name, i) => {
      const key = keyOf(kind, name);
      const meta = { uid: randomUUID(), creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
      const value = stored(kind, name, i, 0, meta);
      const res = await raw
        .if(key, 'Version', '==', 0)
        .then(raw.put(key).value(value))
        .else(raw.get(key))
        .commit();
      if (!res.succeeded) throw new Error(`raw create: ${key} exists`);
      rawMeta.set(key, meta);
      rawRevs.set(key, res.header.revision);
      return JSON.parse(value);
    },
    get: async (kind, name) => {
      const res = await raw.get(keyOf(kind, name)).exec();
      const kv = res.kvs[0];
      if (!kv) throw new Error('raw get: not found');
      const obj = JSON.parse(kv.value.toString());
      obj.metadata.resourceVersion = kv.mod_revision;
      return obj;
    },
    update: async (kind, name, i, gen) => {
      const key = keyOf(kind, name);
      const value = stored(kind, name, i, gen, rawMeta.get(key));
      const res = await raw
        .if(key, 'Mod', '==', rawRevs.get(key))
        .then(raw.put(key).value(value))
        .else(raw.get(key))
        .commit();
      if (!res.succeeded) throw new Error(`raw update: ${key} conflict`);
      rawRevs.set(key, res.header.revision);
      return JSON.parse(value);
    },
  };
  return { typed, raw: rawSide };
}

async function main() {
  const started = new Date();
  console.error(
    `datastore bench: n=${N} concurrency=${CONCURRENCY} rounds=${ROUNDS} kinds=${KINDS.join(',')}`,
  );
  const etcd = await startEtcd();
  const raw = new Etcd3({ hosts: etcd.endpoints });
  const ds = await createDatastore({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints });
  const rows = [];
  try {
    const sides = Object.fromEntries(
      Object.entries(makeSides(ds, raw)).filter(([side]) => SIDES.includes(side)),
    );

    // Warm-up: both clients, every op, on names outside the measured set.
    for (const kind of KINDS) {
      for (const [side, impl] of Object.entries(sides)) {
        const name = (i) => `warm-${side}-${String(i).padStart(6, '0')}`;
        await runPool(WARMUP, (i) => impl.create(kind, name(i), i));
        await runPool(WARMUP, (i) => impl.get(kind, name(i)));
        await runPool(WARMUP, (i) => impl.update(kind, name(i), i, 1));
      }
    }

    for (const kind of KINDS) {
      const perRound = Math.ceil(N / ROUNDS);
      // Same name length on both sides, so keys and values are the same size.
      const name = (side, i) => `${side === 'typed' ? 'typ' : 'raw'}-${String(i).padStart(6, '0')}`;
      for (const op of ['create', 'get', 'update']) {
        const ms = { typed: 0, raw: 0 };
        const cpuUs = { typed: 0, raw: 0 };
        const rounds = [];
        for (let r = 0; r < ROUNDS; r++) {
          const base = r * perRound;
          const count = Math.min(perRound, N - base);
          if (count <= 0) break;
          const order = (r % 2 === 0 ? ['typed', 'raw'] : ['raw', 'typed']).filter((side) => sides[side]);
          const round = {};
          for (const side of order) {
            const impl = sides[side];
            const cpu0 = process.cpuUsage();
            const elapsed = await runPool(count, (j) => {
              const i = base + j;
              return impl[op](kind, name(side, i), i, 2 + r);
            });
            const cpu = process.cpuUsage(cpu0);
            ms[side] += elapsed;
            cpuUs[side] += cpu.user + cpu.system;
            round[side] = Math.round((count / elapsed) * 1000);
          }
          round.ratio = round.typed && round.raw ? Number((round.typed / round.raw).toFixed(3)) : null;
          rounds.push(round);
        }
        const typedOps = ms.typed ? (N / ms.typed) * 1000 : null;
        const rawOps = ms.raw ? (N / ms.raw) * 1000 : null;
        const both = typedOps !== null && rawOps !== null;
        const row = {
          kind,
          op,
          typedOpsPerSec: typedOps && Math.round(typedOps),
          rawOpsPerSec: rawOps && Math.round(rawOps),
          ratio: both ? Number((typedOps / rawOps).toFixed(3)) : null,
          medianRoundRatio: both ? median(rounds.map((x) => x.ratio)) : null,
          // This process's CPU per operation (the client's own cost; etcd runs in its own process).
          typedClientCpuUsPerOp: typedOps && Math.round(cpuUs.typed / N),
          rawClientCpuUsPerOp: rawOps && Math.round(cpuUs.raw / N),
          rounds,
        };
        rows.push(row);
        console.error(
          `  ${kind} ${op}: typed ${row.typedOpsPerSec}/s raw ${row.rawOpsPerSec}/s ratio ${row.ratio} ` +
            `(median round ${row.medianRoundRatio}; client CPU ${row.typedClientCpuUsPerOp} vs ${row.rawClientCpuUsPerOp} µs/op)`,
        );
      }
    }

    // The two sides must have written the same bytes (modulo uid and timestamp).
    const sizes = {};
    for (const kind of SIDES.length === 2 ? KINDS : []) {
      const t = await raw.get(keyOf(kind, 'typ-000000')).string();
      const r = await raw.get(keyOf(kind, 'raw-000000')).string();
      sizes[kind] = { typedValueBytes: t?.length ?? 0, rawValueBytes: r?.length ?? 0 };
    }

    const result = {
      bench: 'datastore',
      description: 'typed @calico-ts/datastore client vs raw etcd3 client, same etcd, same run',
      date: started.toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      n: N,
      concurrency: CONCURRENCY,
      rounds: ROUNDS,
      warmup: WARMUP,
      sides: SIDES,
      loadAverage: loadavg(),
      valueSizes: sizes,
      rows,
    };
    await mkdir(dirname(OUT), { recursive: true });
    await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);

    console.log(`## datastore: typed client vs raw etcd3 (n=${N}, ${CONCURRENCY} in flight)\n`);
    console.log(
      '| kind | op | typed ops/s | raw ops/s | ratio | median round ratio | client CPU µs/op typed / raw |',
    );
    console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
    for (const r of rows) {
      const f = (x, digits) => (x === null ? '-' : digits === undefined ? String(x) : x.toFixed(digits));
      console.log(
        `| ${r.kind} | ${r.op} | ${f(r.typedOpsPerSec)} | ${f(r.rawOpsPerSec)} | ${f(r.ratio, 2)} | ` +
          `${f(r.medianRoundRatio, 2)} | ${f(r.typedClientCpuUsPerOp)} / ${f(r.rawClientCpuUsPerOp)} |`,
      );
    }
    console.log(`\nJSON: ${OUT}`);
  } finally {
    await ds.close();
    raw.close();
    await etcd.stop();
  }
}

await main();
