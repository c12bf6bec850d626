// The Kubernetes datastore's typed client (`createDatastore({ datastoreType: 'kubernetes' })`)
// against the raw `@kubernetes/client-node` CustomObjectsApi doing the same work, on one real
// kube-apiserver (startKubeApiServer: its own etcd, CRDs from deploy/crds), in one run. Reports
// ops/s and the ratio typed/raw; never asserts (a slow machine is not a failure).
//
//   create:  typed `ds.create(v3 GlobalNetworkSet)`  raw: createClusterCustomObject(crd v1 object)
//   get:     typed `ds.get(kind, name)`               raw: getClusterCustomObject
//   list:    typed `ds.list(kind)`                    raw: listClusterCustomObject (one unpaged call);
//                                                     raw-ka: pages of 500 (`limit`, `continue`) as
//                                                     the typed client and upstream's informers ask
//   start:   a fresh `node` that imports the client, opens it on the kubeconfig and does one get
//
// Raw writes the object the typed client writes (same name length, labels, spec, and the
// `projectcalico.org/metadata` annotation with uid and creationTimestamp), so the API server does
// the same work for both. Three sides:
//   typed   @calico-ts/datastore (node:https, one keep-alive agent, reads the kubeconfig itself)
//   raw     client-node as shipped: KubeConfig + makeApiClient(CustomObjectsApi). It makes a new
//           https.Agent for every request, so every request opens a new TLS connection.
//   raw-ka  the same client-node calls with one shared keep-alive agent put in by a middleware,
//           which also asks for `Accept-Encoding: identity`: client-node at its best, to tell the
//           connection cost from the rest. (As shipped it asks for gzip, and kube-apiserver then
//           compresses every list over 128 KB: on loopback that costs both ends CPU and saves
//           nothing; the typed client asks for no compression.) It lists in pages of 500, as the
//           typed client does: a paged list costs kube-apiserver about 12% more CPU than one
//           unpaged call (measured here), so only like for like tells the clients apart.
// Creates and gets: each side creates N objects one at a time and N with `--concurrency` in
// flight, then gets each of them, split over `--rounds` rounds; every round runs every side in
// turn, each round in another of the sides' orders (all of them over 6 rounds for 3 sides), with
// a pause after each side, so neither drift in machine load nor what a side leaves the API
// server to finish (`raw`'s closed connections) falls on one side more than another. Lists: the
// collection then holds exactly N objects and each side lists it `--lists` times, one list per
// side at a time, the orders taken in turn likewise. Many short rounds, not a few long ones:
// other work on this machine comes and goes in bursts, and two sides run back to back see the same
// burst. Reported: the median per-round (per-list) rate, the median of the per-round ratios (what
// a row is judged on: typed at least as fast, 1.0), this process's CPU per operation (the client's
// own cost; kube-apiserver and etcd run in their own processes, on the same CPUs), and the API
// requests each operation made (kube-apiserver's `apiserver_request_total`, read around a small
// untimed pass of each side after the timed ones). Start: a fresh `node` per run for each client, rotated, with the bare runtime as
// the floor; wall time and the child's peak RSS. IPAM (ipam-rows.mjs): allocations per second
// from 1, 8 and 32 allocators against raw compare-and-swap on ipamblocks, on the same server.
//   node bench/kdd/kdd.bench.mjs [--n 1500] [--concurrency 16] [--rounds 30] [--lists 30]
//     [--warmup 100] [--settle-ms 100] [--starts 7] [--sides typed,raw,raw-ka]
//     [--ipam-allocators 1,8,32] [--ipam-rounds 2] [--ipam-seconds 5] [--no-client]
//     [--out file.json]
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
import { measureIpam, printIpam } from './ipam-rows.mjs';
import { apiRequestCounts, kubeRest, requestsPer } from './kube-cluster.mjs';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '1500' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '30' },
    lists: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '100' },
    'settle-ms': { type: 'string', default: '100' },
    'ipam-allocators': { type: 'string', default: '1,8,32' },
    'ipam-rounds': { type: 'string', default: '2' },
    // 0 leaves the IPAM rows out.
    'ipam-seconds': { type: 'string', default: '5' },
    // The IPAM rows alone.
    'no-client': { type: 'boolean', default: false },
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
const SETTLE_MS = Number(args['settle-ms']);
const IPAM_COUNTS = args['ipam-allocators'].split(',').map(Number);
const IPAM_ROUNDS = Number(args['ipam-rounds']);
const IPAM_SECONDS = Number(args['ipam-seconds']);
const CLIENT = !args['no-client'];
const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..', '..');
const CRDS = join(REPO, 'deploy', 'crds', 'calico-crds.yaml');
const OUT = args.out ?? join(HERE, '..', 'results', 'kdd.json');
/** Issue 30: the typed client at least as fast as client-node with a keep-alive agent. */
const TARGET = 1;

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

/** A page of a list, as upstream's informers and the typed client ask for. */
const PAGE = 500;

function rawSide(api, options, paged) {
  return {
    create: (name, i) =>
      api.createClusterCustomObject(
        { group: GROUP, version: VERSION, plural: PLURAL, body: crdObject(name, i) },
        options,
      ),
    get: (name) =>
      api.getClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name }, options),
    list: paged
      ? async () => {
          // Page by page, as the typed client lists: the same requests for the API server.
          let n = 0;
          let cont;
          do {
            const page = await api.listClusterCustomObject(
              {
                group: GROUP,
                version: VERSION,
                plural: PLURAL,
                limit: PAGE,
                ...(cont ? { _continue: cont } : {}),
              },
              options,
            );
            n += page.items.length;
            cont = page.metadata?.continue || undefined;
          } while (cont);
          return n;
        }
      : async () =>
          (await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }, options))
            .items.length,
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
          ctx.setHeaderParam('Accept-Encoding', 'identity');
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
    raw: rawSide(api, undefined, false),
    'raw-ka': rawSide(api, keepAlive, true),
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
    const rest = kubeRest(apiServer, 4);
    let client = { rows: [], sides: [] };
    let ipam;
    try {
      if (CLIENT) client = await measureClient({ ds, api, sharedAgent, rest });
      if (IPAM_SECONDS > 0) {
        ipam = await measureIpam(apiServer, ds, {
          counts: IPAM_COUNTS,
          rounds: IPAM_ROUNDS,
          seconds: IPAM_SECONDS,
          log,
        });
      }
    } finally {
      rest.close();
    }

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
      settleMs: SETTLE_MS,
      sides: client.sides,
      target: TARGET,
      loadAverage: { start: loadStart, end: loadavg().map((x) => round(x, 2)) },
      objectBytes: client.objectBytes,
      rows: client.rows,
      ipam,
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

/** The typed client against client-node, per verb (the table's rows). */
async function measureClient({ ds, api, sharedAgent, rest }) {
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

  // perOp[opIndex][side] → per-round { opsPerSec, cpuUsPerOp }.
  const perOp = OPS.map(() => Object.fromEntries(sideNames.map((s) => [s, []])));
  const orders = permutations(sideNames);
  /** Every side in turn (round r in the r-th of the sides' orders) runs `count` ops of `opIndex`. */
  const measure = async (r, opIndex, count, conc, fn) => {
    for (const side of orders[r % orders.length]) {
      const cpu0 = process.cpuUsage();
      const ms = await runPool(count, conc, (i) => fn(sides[side], side, i));
      const cpu = process.cpuUsage(cpu0);
      perOp[opIndex][side].push({
        opsPerSec: (count / ms) * 1000,
        cpuUsPerOp: (cpu.user + cpu.system) / count,
      });
      // What the side left the API server to finish (closed connections, its GC) is not the
      // next side's to pay for.
      await sleep(SETTLE_MS);
    }
  };
  // requests[opIndex][side]: API requests per op, from a pass of its own after the timed ones
  // (reading /metrics costs the API server more than an op: never inside a timed part).
  const requests = OPS.map(() => ({}));
  const countRequests = async (opIndex, count, fn) => {
    for (const side of sideNames) {
      const before = await apiRequestCounts(rest);
      await runPool(count, 1, (i) => fn(sides[side], side, i));
      const after = await apiRequestCounts(rest);
      requests[opIndex][side] = requestsPer(withoutMetrics(before), withoutMetrics(after), count);
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
  const COUNTED = 20;
  await countRequests(0, COUNTED, (impl, side, j) => impl.create(name(side, 'q', j), j));
  requests[1] = requests[0];
  await countRequests(2, COUNTED, (impl, side, j) => impl.get(name(side, 'q', j)));
  requests[3] = requests[2];
  await deleteAll(api);

  // Lists: the collection holds exactly N objects (written once, by the typed client).
  await runPool(N, CONCURRENCY, (i) => ds.create(networkSet(name('lst', 'l', i), i)));
  // One list per side at a time, the order changed every time: a list is long enough to time alone,
  // and the finer the interleaving, the more evenly drift in machine load falls on the sides.
  const listItems = [];
  for (let l = 0; l < LISTS; l++) {
    await measure(l, 4, 1, 1, async (impl) => {
      listItems.push(await impl.list());
    });
    if ((l + 1) % 5 === 0 || l + 1 === LISTS) log(`lists ${l + 1}/${LISTS}`);
  }
  await countRequests(4, 2, (impl) => impl.list());
  await deleteAll(api);

  const rows = OPS.map((o, k) => {
    const row = { op: o.op, mode: o.mode, count: o.op === 'list' ? LISTS : N };
    if (o.op === 'list') row.itemsPerList = median(listItems);
    for (const s of sideNames) {
      row[s] = {
        opsPerSec: round(median(perOp[k][s].map((x) => x.opsPerSec)), o.op === 'list' ? 1 : 0),
        clientCpuUsPerOp: Math.round(median(perOp[k][s].map((x) => x.cpuUsPerOp))),
        rounds: perOp[k][s].map((x) => round(x.opsPerSec, 1)),
        requestsPerOp: requests[k][s],
      };
    }
    for (const ref of ['raw', 'raw-ka']) {
      if (!sides.typed || !sides[ref]) continue;
      const ratio = row.typed.opsPerSec / row[ref].opsPerSec;
      const perRound = perOp[k].typed.map((x, i) => x.opsPerSec / perOp[k][ref][i].opsPerSec);
      // Judged on the median of the rounds' ratios: each round runs the sides back to back, so
      // its ratio is the least touched by what else the machine does meanwhile.
      const paired = median(perRound);
      row[`typedOver_${ref}`] = {
        ratio: round(ratio, 3),
        medianRoundRatio: round(paired, 3),
        met: paired >= TARGET,
      };
    }
    return row;
  });

  return { rows, sides: sideNames, objectBytes };
}

/** Every order of `xs` (6 for 3 sides): each side runs first, second and last equally often. */
function permutations(xs) {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
}

/** Request counters without the `/metrics` reads this bench makes around each side. */
function withoutMetrics(counts) {
  return Object.fromEntries(Object.entries(counts).filter(([k]) => !k.startsWith('GET metrics')));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

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

/** `1 (GET globalnetworksets)`: the total, and the verbs when there is more than one. */
function requestsText(per) {
  // Less than one request in 200 operations is the API server's own background, not the side's.
  const entries = Object.entries(per ?? {}).filter(([, v]) => v > 0);
  const total = entries.reduce((a, [, v]) => a + v, 0);
  const t = Number(total.toFixed(2));
  return entries.length === 1
    ? `${t} ${entries[0][0]}`
    : `${t} (${entries.map(([k, v]) => `${k} ${v}`).join(', ')})`;
}

function printTables(res) {
  if (res.rows.length > 0) printClient(res);
  if (res.ipam) printIpam(res.ipam);
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

function printClient(res) {
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
    `API requests/op ${sideNames.join(' / ')}`,
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
        return x.ratio.toFixed(2);
      }),
      ...refs.map((s) => {
        const x = r[`typedOver_${s}`];
        return `${x.medianRoundRatio.toFixed(2)} ${x.met ? '✓' : '✗'}`;
      }),
      sideNames.map((s) => f(r[s].clientCpuUsPerOp)).join(' / '),
      sideNames.map((s) => requestsText(r[s].requestsPerOp)).join(' / '),
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
  for (const ref of refs) {
    const missed = res.rows.filter((r) => !r[`typedOver_${ref}`].met);
    console.log(
      `\nmedian round typed/${ref} ≥ ${res.target}: ${missed.length === 0 ? 'met on every row' : `not met on ${missed.map((r) => `${r.op} (${r.mode})`).join(', ')}`}`,
    );
  }
  if (res.objectBytes) {
    console.log(
      `stored object bytes (labels, annotations, spec): ${Object.entries(res.objectBytes)
        .map(([s, b]) => `${s} ${b}`)
        .join(', ')}`,
    );
  }
}

/** Set by a signal: the requests then failing against the stopped API server are not news. */
let interrupted = false;
try {
  await main();
} catch (e) {
  if (!interrupted) throw e;
}
