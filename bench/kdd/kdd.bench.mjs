// The Kubernetes datastore's typed client (`createDatastore({ datastoreType: 'kubernetes' })`)
// against the raw `@kubernetes/client-node` CustomObjectsApi doing the same work, on one real
// kube-apiserver (startKubeApiServer: its own etcd, CRDs from deploy/crds), in one run. Reports
// ops/s and the ratio typed/raw; never asserts (a slow machine is not a failure).
//
//   create:  typed `ds.create(v3 GlobalNetworkSet)`  raw: createClusterCustomObject(crd v1 object)
//   get:     typed `ds.get(kind, name)`               raw: getClusterCustomObject
//   list:    typed `ds.list(kind)`                    raw: listClusterCustomObject (one unpaged call)
//   start:   a fresh `node` that imports the client, opens it on the kubeconfig and does one get
//
// Raw writes the object the typed client writes (same name length, labels, spec, and the
// `projectcalico.org/metadata` annotation with uid and creationTimestamp), so the API server does
// the same work for both. Three sides:
//   typed   @calico-ts/datastore (node:https, one keep-alive agent, reads the kubeconfig itself)
//   raw     client-node as shipped: KubeConfig + makeApiClient(CustomObjectsApi). It makes a new
//           https.Agent for every request, so every request opens a new TLS connection.
//   raw-ka  the same client-node calls with one shared keep-alive agent put in by a middleware:
//           client-node at its best, to tell the connection cost from the rest.
// Creates and gets: each side creates N objects one at a time and N with `--concurrency` in
// flight, then gets each of them, split over `--rounds` rounds; every round runs every side in
// turn, the order rotated, so drift in machine load falls on all of them. Lists: the collection
// then holds exactly N objects and each side lists it `--lists` times, one list per side at a time,
// the order rotated. Reported: the median per-round (per-list) rate, the median of the per-round
// ratios, and this process's CPU per operation (the client's own cost; kube-apiserver and etcd
// run in their own processes, on the same CPUs). Start: a fresh `node` per run for each client,
// rotated, with the bare runtime as the floor; wall time and the child's peak RSS.
//   node bench/kdd/kdd.bench.mjs [--n 500] [--concurrency 16] [--rounds 5] [--lists 20]
//     [--warmup 100] [--starts 7] [--sides typed,raw,raw-ka] [--out file.json]
// To profile one side: node --cpu-prof bench/kdd/kdd.bench.mjs --sides typed --starts 0
import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { createDatastore } from '@calico-ts/datastore';
import { findKubectl, startKubeApiServer } from '@calico-ts/datastore/testing';
import { CustomObjectsApi, KubeConfig, Observable } from '@kubernetes/client-node';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '5' },
    lists: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '100' },
    // Fresh-process runs per start variant (0 to skip).
    starts: { type: 'string', default: '7' },
    sides: { type: 'string', default: 'typed,raw,raw-ka' },
    out: { type: 'string' },
  },
});
const N = Number(args.n);
const CONCURRENCY = Number(args.concurrency);
const ROUNDS = Number(args.rounds);
const LISTS = Number(args.lists);
const WARMUP = Number(args.warmup);
const STARTS = Number(args.starts);
const SIDES = args.sides.split(',');
const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..', '..');
const CRDS = join(REPO, 'deploy', 'crds', 'calico-crds.yaml');
const OUT = args.out ?? join(HERE, '..', 'results', 'kdd.json');
const TARGET = 0.8;

const KIND = 'GlobalNetworkSet';
const GROUP = 'crd.projectcalico.org';
const VERSION = 'v1';
const PLURAL = 'globalnetworksets';
const LABEL = 'bench=kdd';
/** Three letters per side, so names (and so objects) are the same size on every side. */
const TAG = { typed: 'typ', raw: 'raw', 'raw-ka': 'rka', lst: 'lst' };

const log = (msg) => console.error(`kdd bench: ${msg}`);

function median(xs) {
  const s = xs.filter((x) => x !== null && x !== undefined).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Run `count` operations with `conc` in flight; returns elapsed ms. */
async function runPool(count, conc, op) {
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < count) await op(next++);
  };
  await Promise.all(Array.from({ length: Math.min(conc, count) }, worker));
  return performance.now() - t0;
}

/** The v3 GlobalNetworkSet number `i`, as a caller of the typed client writes it. */
function networkSet(name, i) {
  const a = (i >> 8) & 0xff;
  const b = i & 0xff;
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: KIND,
    metadata: { name, labels: { bench: 'kdd', tier: `t${i % 7}` } },
    spec: { nets: [`198.18.${a}.${b}/32`, `198.19.${a}.${b}/32`] },
  };
}

/** The crd.projectcalico.org/v1 object the typed client stores for `networkSet(name, i)`. */
function crdObject(name, i) {
  const v3 = networkSet(name, i);
  const stamp = { uid: randomUUID(), creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: KIND,
    metadata: {
      name,
      labels: v3.metadata.labels,
      annotations: { 'projectcalico.org/metadata': JSON.stringify(stamp) },
    },
    spec: v3.spec,
  };
}

function rawSide(api, options) {
  return {
    create: (name, i) =>
      api.createClusterCustomObject(
        { group: GROUP, version: VERSION, plural: PLURAL, body: crdObject(name, i) },
        options,
      ),
    get: (name) =>
      api.getClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name }, options),
    list: async () =>
      (await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }, options)).items
        .length,
  };
}

function makeSides(ds, api, sharedAgent) {
  // Replaces the fresh agent client-node's auth step sets on each request (same TLS options).
  // The object-parameter API takes observable-style middleware (client-node's own Observable).
  const keepAlive = {
    middleware: [
      {
        pre: (ctx) => {
          ctx.setAgent(sharedAgent);
          return new Observable(Promise.resolve(ctx));
        },
        post: (res) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
  const all = {
    typed: {
      create: (name, i) => ds.create(networkSet(name, i)),
      get: (name) => ds.get(KIND, name),
      list: async () => (await ds.list(KIND)).items.length,
    },
    raw: rawSide(api, undefined),
    'raw-ka': rawSide(api, keepAlive),
  };
  return Object.fromEntries(SIDES.map((s) => [s, all[s]]));
}

async function kubectl(kubeconfig, argv) {
  const bin = findKubectl();
  if (!bin) throw new Error('kubectl not found (set CALICO_TEST_KUBECTL_BIN or put kubectl on PATH)');
  const { stdout } = await promisify(execFile)(bin, ['--kubeconfig', kubeconfig, ...argv], {
    maxBuffer: 1 << 26,
  });
  return stdout;
}

/** Delete every object this bench made (one deletecollection call). */
async function deleteAll(api) {
  await api.deleteCollectionClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: PLURAL,
    labelSelector: LABEL,
  });
}

// ---- start cost: a fresh node per run -----------------------------------------------------------

/**
 * A child's script: `body` sets `readyMs`; the child then prints it with its own peak RSS, VmHWM
 * of its fresh address space. (`resourceUsage().maxRSS` will not do: Linux keeps ru_maxrss across
 * execve, so a child spawned by this large process would report ours.)
 */
const childScript = (body) => `
  import { readFileSync } from 'node:fs';
  let readyMs;
  ${body}
  const hwm = /VmHWM:\\s*(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  console.log(JSON.stringify({ readyMs, maxRssKb: hwm ? Number(hwm) : process.resourceUsage().maxRSS }));`;

/** Each variant: import, open, one get (`readyMs` then), exit. */
const START_SCRIPTS = {
  // The runtime alone: the floor under both clients.
  'node (floor)': childScript('readyMs = performance.now();'),
  typed: childScript(`
    const { createDatastore } = await import('@calico-ts/datastore');
    const ds = await createDatastore({ datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: process.env.KC });
    await ds.get('GlobalNetworkSet', process.env.NAME);
    readyMs = performance.now();
    await ds.close();`),
  raw: childScript(`
    const { KubeConfig, CustomObjectsApi } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromFile(process.env.KC);
    const api = kc.makeApiClient(CustomObjectsApi);
    await api.getClusterCustomObject({ group: 'crd.projectcalico.org', version: 'v1', plural: 'globalnetworksets', name: process.env.NAME });
    readyMs = performance.now();`),
};

function startOnce(variant, env) {
  const t0 = performance.now();
  // cwd: bench/kdd, so the child resolves packages from bench/node_modules.
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', START_SCRIPTS[variant]], {
    cwd: HERE,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  const wallMs = performance.now() - t0;
  if (r.status !== 0)
    throw new Error(`start ${variant}: exit ${r.status ?? r.signal}: ${r.stderr.slice(0, 500)}`);
  const rep = JSON.parse(r.stdout.trim().split('\n').pop());
  return { wallMs, readyMs: rep.readyMs, maxRssKb: rep.maxRssKb };
}

function measureStarts(kubeconfig, name) {
  const variants = Object.keys(START_SCRIPTS);
  const runs = Object.fromEntries(variants.map((v) => [v, []]));
  const env = { KC: kubeconfig, NAME: name };
  // One untimed run each (disk cache), then rounds in rotated order.
  for (const v of variants) startOnce(v, env);
  for (let r = 0; r < STARTS; r++) {
    for (let k = 0; k < variants.length; k++) {
      const v = variants[(k + r) % variants.length];
      runs[v].push(startOnce(v, env));
    }
    log(`start cost: run ${r + 1}/${STARTS}`);
  }
  return variants.map((v) => ({
    variant: v,
    wallMs: Math.round(median(runs[v].map((x) => x.wallMs))),
    readyMs: Math.round(median(runs[v].map((x) => x.readyMs))),
    peakRssMb: round(median(runs[v].map((x) => x.maxRssKb)) / 1024, 1),
    runs: runs[v].map((x) => ({
      wallMs: Math.round(x.wallMs),
      readyMs: Math.round(x.readyMs),
      peakRssKb: x.maxRssKb,
    })),
  }));
}

// ---- main ---------------------------------------------------------------------------------------

const OPS = [
  { op: 'create', mode: 'sequential' },
  { op: 'create', mode: `${CONCURRENCY} in flight` },
  { op: 'get', mode: 'sequential' },
  { op: 'get', mode: `${CONCURRENCY} in flight` },
  { op: 'list', mode: 'sequential' },
];

async function main() {
  const started = new Date();
  const loadStart = loadavg().map((x) => round(x, 2));
  log(`n=${N} concurrency=${CONCURRENCY} rounds=${ROUNDS} lists=${LISTS} sides=${SIDES.join(',')}`);
  let apiServer;
  let ds;
  let sharedAgent;
  // Once, whoever comes first: the signal handler or main's `finally`.
  let cleaning;
  const cleanup = () => {
    cleaning ??= (async () => {
      sharedAgent?.destroy();
      await ds?.close().catch(() => undefined);
      await apiServer?.stop();
    })();
    return cleaning;
  };
  const onSignal = (sig) => {
    interrupted = true;
    log(`${sig}: stopping the API server`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const t0 = performance.now();
    apiServer = await startKubeApiServer();
    await kubectl(apiServer.kubeconfigPath, ['apply', '--server-side', '-f', CRDS]);
    await kubectl(apiServer.kubeconfigPath, [
      'wait',
      '--for',
      'condition=established',
      '--timeout',
      '60s',
      'crd',
      '--all',
    ]);
    log(
      `kube-apiserver ${apiServer.url} ready with the CRDs in ${((performance.now() - t0) / 1000).toFixed(1)}s`,
    );

    const kc = new KubeConfig();
    kc.loadFromFile(apiServer.kubeconfigPath);
    const api = kc.makeApiClient(CustomObjectsApi);
    sharedAgent = new Agent({
      keepAlive: true,
      maxSockets: CONCURRENCY,
      ca: apiServer.caPem,
      cert: apiServer.clientCertPem,
      key: apiServer.clientKeyPem,
    });
    ds = await createDatastore({
      datastoreType: 'kubernetes',
      etcdEndpoints: [],
      kubeconfig: apiServer.kubeconfigPath,
    });
    const sides = makeSides(ds, api, sharedAgent);
    const sideNames = Object.keys(sides);

    // Warm-up: every side, every op, on names outside the measured set.
    for (const [side, impl] of Object.entries(sides)) {
      const name = (i) => `${TAG[side]}-warm-${String(i).padStart(5, '0')}`;
      await runPool(WARMUP, CONCURRENCY, (i) => impl.create(name(i), i));
      await runPool(WARMUP, CONCURRENCY, (i) => impl.get(name(i)));
      for (let k = 0; k < 3; k++) await impl.list();
    }
    await deleteAll(api);
    log(`warmed up (${WARMUP} creates and gets per side)`);

    // perOp[opIndex][side] → per-round { opsPerSec, cpuUsPerOp }
    const perOp = OPS.map(() => Object.fromEntries(sideNames.map((s) => [s, []])));
    /** Every side in turn (order rotated by round) runs `count` ops of `opIndex`. */
    const measure = async (r, opIndex, count, conc, fn) => {
      for (let k = 0; k < sideNames.length; k++) {
        const side = sideNames[(k + r) % sideNames.length];
        const cpu0 = process.cpuUsage();
        const ms = await runPool(count, conc, (i) => fn(sides[side], side, i));
        const cpu = process.cpuUsage(cpu0);
        perOp[opIndex][side].push({
          opsPerSec: (count / ms) * 1000,
          cpuUsPerOp: (cpu.user + cpu.system) / count,
        });
      }
    };
    const roundLine = (r, opIndexes) =>
      opIndexes
        .map((k) => {
          const o = OPS[k];
          const by = sideNames.map((s) => round(perOp[k][s][r].opsPerSec, o.op === 'list' ? 1 : 0)).join('/');
          return `${o.op}${o.mode === 'sequential' ? '' : '∥'} ${by}`;
        })
        .join(', ');

    // Creates and gets: N objects per side and mode, split over the rounds.
    const perRound = Math.ceil(N / ROUNDS);
    const name = (side, mode, i) => `${TAG[side]}-${mode}-${String(i).padStart(5, '0')}`;
    for (let r = 0; r < ROUNDS; r++) {
      const base = r * perRound;
      const count = Math.min(perRound, N - base);
      if (count <= 0) break;
      await measure(r, 0, count, 1, (impl, side, j) => impl.create(name(side, 's', base + j), base + j));
      await measure(r, 1, count, CONCURRENCY, (impl, side, j) =>
        impl.create(name(side, 'c', base + j), base + j),
      );
      await measure(r, 2, count, 1, (impl, side, j) => impl.get(name(side, 's', base + j)));
      await measure(r, 3, count, CONCURRENCY, (impl, side, j) => impl.get(name(side, 'c', base + j)));
      log(`create/get round ${r + 1}/${ROUNDS}, ops/s ${sideNames.join('/')}: ${roundLine(r, [0, 1, 2, 3])}`);
    }
    const objectBytes = await storedSizes(api, sideNames, (s) => name(s, 's', 0));
    await deleteAll(api);

    // Lists: the collection holds exactly N objects (written once, by the typed client).
    await runPool(N, CONCURRENCY, (i) => ds.create(networkSet(name('lst', 'l', i), i)));
    // One list per side at a time, order rotated every time: a list is long enough to time alone,
    // and the finer the interleaving, the more evenly drift in machine load falls on the sides.
    const listItems = [];
    for (let l = 0; l < LISTS; l++) {
      await measure(l, 4, 1, 1, async (impl) => {
        listItems.push(await impl.list());
      });
      if ((l + 1) % 5 === 0 || l + 1 === LISTS) log(`lists ${l + 1}/${LISTS}`);
    }
    await deleteAll(api);

    const rows = OPS.map((o, k) => {
      const row = { op: o.op, mode: o.mode, count: o.op === 'list' ? LISTS : N };
      if (o.op === 'list') row.itemsPerList = median(listItems);
      for (const s of sideNames) {
        row[s] = {
          opsPerSec: round(median(perOp[k][s].map((x) => x.opsPerSec)), o.op === 'list' ? 1 : 0),
          clientCpuUsPerOp: Math.round(median(perOp[k][s].map((x) => x.cpuUsPerOp))),
          rounds: perOp[k][s].map((x) => round(x.opsPerSec, 1)),
        };
      }
      for (const ref of ['raw', 'raw-ka']) {
        if (!sides.typed || !sides[ref]) continue;
        const ratio = row.typed.opsPerSec / row[ref].opsPerSec;
        const perRound = perOp[k].typed.map((x, i) => x.opsPerSec / perOp[k][ref][i].opsPerSec);
        row[`typedOver_${ref}`] = {
          ratio: round(ratio, 3),
          medianRoundRatio: round(median(perRound), 3),
          met: ratio >= TARGET,
        };
      }
      return row;
    });

    let starts = [];
    if (STARTS > 0) {
      await ds.create(networkSet('start-probe', 0));
      starts = measureStarts(apiServer.kubeconfigPath, 'start-probe');
      await deleteAll(api);
    }

    const result = {
      bench: 'kdd',
      description:
        'Kubernetes datastore typed client vs raw @kubernetes/client-node CustomObjectsApi, same kube-apiserver, same run',
      date: started.toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      n: N,
      concurrency: CONCURRENCY,
      rounds: ROUNDS,
      lists: LISTS,
      warmup: WARMUP,
      sides: sideNames,
      target: TARGET,
      loadAverage: { start: loadStart, end: loadavg().map((x) => round(x, 2)) },
      objectBytes,
      rows,
      starts,
    };
    await mkdir(dirname(OUT), { recursive: true });
    await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
    printTables(result);
    console.log(`\nJSON: ${OUT}`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await cleanup();
  }
}

function round(x, digits) {
  return x === null ? null : Number(x.toFixed(digits));
}

/** Bytes of each side's stored object (as the API server returns it), to show they match. */
async function storedSizes(api, sideNames, name) {
  const out = {};
  for (const s of sideNames) {
    const o = await api.getClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      name: name(s),
    });
    // Fields the API server sets differ only in value; compare what the client wrote.
    out[s] = JSON.stringify({
      labels: o.metadata.labels,
      annotations: o.metadata.annotations,
      spec: o.spec,
    }).length;
  }
  return out;
}

function printTables(res) {
  const sideNames = res.sides;
  const f = (x) => (x === null || x === undefined ? '-' : String(x));
  const refs = ['raw', 'raw-ka'].filter((s) => sideNames.includes(s) && sideNames.includes('typed'));
  console.log(
    `## kdd: typed Kubernetes datastore client vs @kubernetes/client-node (n=${res.n}, ${res.rounds} rounds, medians)\n`,
  );
  const head = [
    'op',
    'mode',
    ...sideNames.map((s) => `${s} ops/s`),
    ...refs.map((s) => `typed/${s}`),
    ...refs.map((s) => `median round typed/${s}`),
    `client CPU µs/op ${sideNames.join(' / ')}`,
  ];
  console.log(`| ${head.join(' | ')} |`);
  console.log(
    `| --- | --- | ${head
      .slice(2)
      .map(() => '---:')
      .join(' | ')} |`,
  );
  for (const r of res.rows) {
    const op = r.op === 'list' ? `list (${r.itemsPerList} items)` : r.op;
    const cells = [
      op,
      r.mode,
      ...sideNames.map((s) => f(r[s].opsPerSec)),
      ...refs.map((s) => {
        const x = r[`typedOver_${s}`];
        return `${x.ratio.toFixed(2)} ${x.met ? '✓' : '✗'}`;
      }),
      ...refs.map((s) => r[`typedOver_${s}`].medianRoundRatio.toFixed(2)),
      sideNames.map((s) => f(r[s].clientCpuUsPerOp)).join(' / '),
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
  for (const ref of refs) {
    const missed = res.rows.filter((r) => !r[`typedOver_${ref}`].met);
    console.log(
      `\ntyped/${ref} ≥ ${res.target}: ${missed.length === 0 ? 'met on every row' : `not met on ${missed.map((r) => `${r.op} (${r.mode})`).join(', ')}`}`,
    );
  }
  if (res.objectBytes) {
    console.log(
      `stored object bytes (labels, annotations, spec): ${Object.entries(res.objectBytes)
        .map(([s, b]) => `${s} ${b}`)
        .join(', ')}`,
    );
  }
  if (res.starts.length > 0) {
    const raw = res.starts.find((s) => s.variant === 'raw');
    console.log('\n### start: a fresh `node` imports the client, opens it, does one get (medians)\n');
    console.log('| variant | wall ms | done at ms | peak RSS MB | wall / raw | RSS / raw |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
    for (const s of res.starts) {
      const vs = (x, y) => (raw ? (x / y).toFixed(2) : '-');
      console.log(
        `| ${s.variant} | ${s.wallMs} | ${s.readyMs} | ${s.peakRssMb} | ${vs(s.wallMs, raw?.wallMs)} | ${vs(s.peakRssMb, raw?.peakRssMb)} |`,
      );
    }
  }
  console.log(
    `\nload average at start / end: ${res.loadAverage.start.join(' ')} / ${res.loadAverage.end.join(' ')} (${res.cpus} CPUs)`,
  );
}

/** Set by a signal: the requests then failing against the stopped API server are not news. */
let interrupted = false;
try {
  await main();
} catch (e) {
  if (!interrupted) throw e;
}
