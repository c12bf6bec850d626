// Felix's pure calculation path at scale, without nft: the JavaScript part of felix.bench.mjs's
// full sync, repeated in one process, no root, no namespace. The same resources (resources.mjs).
// As there, a first full sync is kept alive and the changes run on it (each kind --changes times,
// done and undone: onUpdate, flush, render), then the timed rounds. Each round, on a fresh graph
// and renderer:
//
// - graph: `CalcGraph.onUpdate` of every resource, in-sync, then `flush()` (the DataplaneDiff);
// - render: `IncrementalRenderer.onUpdate(diff)` and `render()` (every section, both families);
// - wall time and the process's CPU time of each (CPU time moves less with the machine's load;
//   run with `--single-threaded-gc` so the collector's helper threads do not add to it);
// - the JS heap the new graph and renderer hold (after a forced collection with
//   `node --expose-gc`; without it the figure includes garbage), and the ruleset's size (tables,
//   chains, rules, sets) so two builds can be checked to render the same amount.
//
// `--compare DIR,…`: other checkouts (their `@calico-ts/felix` and its dependencies built) run in
// the same process, each with its own modules; every round syncs each build once, the order
// rotating, so machine load falls on all alike. The first sync of each (cold code) is reported
// apart; the rounds' figures, what felix.bench.mjs's full-sync rounds measure, are medians.
// Reported, never asserted.
//
//   node --expose-gc --single-threaded-gc bench/felix/felix-js.bench.mjs [--endpoints 300]
//        [--policies 200] [--rules 40] [--changes 40] [--rounds 5] [--compare DIR,…] [--json yes]
//
// e.g. against the commit before the Felix redesign:
//   git worktree add /tmp/felix-old 8f13559 && (cd /tmp/felix-old && pnpm install --frozen-lockfile
//   --prefer-offline && pnpm exec turbo run build --filter=@calico-ts/felix...)
//   node --expose-gc --single-threaded-gc bench/felix/felix-js.bench.mjs --rounds 10 --compare /tmp/felix-old
// `--json yes` prints one JSON line of the figures; to profile, `node --cpu-prof --cpu-prof-dir D`.
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import * as here from '@calico-ts/felix';
import { benchResources, HOST } from './resources.mjs';

const { values: args } = parseArgs({
  options: {
    endpoints: { type: 'string', default: '300' },
    policies: { type: 'string', default: '200' },
    rules: { type: 'string', default: '40' },
    changes: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '5' },
    compare: { type: 'string', default: '' },
    json: { type: 'string', default: 'no' },
  },
});
const E = Number(args.endpoints);
const P = Number(args.policies);
const R = Number(args.rules);
const CHANGES = Number(args.changes);
const ROUNDS = Number(args.rounds);
if (!(ROUNDS >= 1)) throw new Error('--rounds: at least 1');
const { resources, changeKinds } = benchResources(E, P, R);

function median(xs) {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function heapMiB() {
  globalThis.gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** Tables, chains, rules, sets and maps of a desired ruleset (whatever its object shapes). */
function size(desired) {
  const n = { tables: 0, chains: 0, rules: 0, sets: 0, maps: 0 };
  for (const t of desired.tables) {
    n.tables++;
    for (const c of Object.values(t.chains)) {
      n.chains++;
      n.rules += c.rules.length;
    }
    n.sets += Object.keys(t.sets).length;
    n.maps += Object.keys(t.maps).length;
  }
  return n;
}

function cpuMs(a, b) {
  return (b.user + b.system - a.user - a.system) / 1000;
}

/** One full sync on a fresh graph and renderer of build `F`. */
function sync(F) {
  const res = resources();
  const heap0 = heapMiB();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const graph = new F.CalcGraph({ hostname: HOST });
  for (const r of res) graph.onUpdate({ kind: 'set', resource: r });
  graph.onUpdate({ kind: 'in-sync' });
  const diff = graph.flush();
  const t1 = performance.now();
  const c1 = process.cpuUsage();
  const renderer = new F.IncrementalRenderer(F.DEFAULT_RULES_CONFIG);
  renderer.onUpdate(diff);
  renderer.render();
  const t2 = performance.now();
  const c2 = process.cpuUsage();
  const heap = heapMiB() - heap0;
  const ms = { graph: t1 - t0, render: t2 - t1, graphCpu: cpuMs(c0, c1), renderCpu: cpuMs(c1, c2), heap };
  return { graph, renderer, ms };
}

/** Each kind of change, done and undone CHANGES times, on a first sync's graph and renderer. */
function changes(s) {
  const t0 = performance.now();
  for (const make of Object.values(changeKinds)) {
    for (let j = 0; j < CHANGES; j++) {
      for (const batch of make(j)) {
        for (const u of batch) s.graph.onUpdate(u);
        s.renderer.onUpdate(s.graph.flush());
        s.renderer.render();
      }
    }
  }
  return performance.now() - t0;
}

const builds = [{ name: 'this checkout', F: here }];
for (const dir of args.compare.split(',').filter((d) => d !== '')) {
  const path = resolve(dir, 'packages/felix/dist/index.js');
  try {
    builds.push({ name: dir, F: await import(path) });
  } catch (err) {
    throw new Error(
      `--compare ${dir}: cannot load ${path} (is @calico-ts/felix built there?): ${err.message}`,
    );
  }
}
for (const b of builds) {
  b.first = sync(b.F);
  b.changesMs = changes(b.first);
  b.rounds = [];
}
for (let i = 0; i < ROUNDS; i++) {
  for (let j = 0; j < builds.length; j++) {
    const b = builds[(i + j) % builds.length];
    b.rounds.push(sync(b.F).ms);
  }
}
const KEYS = ['graph', 'render', 'graphCpu', 'renderCpu', 'heap'];
const figures = {
  endpoints: E,
  policies: P,
  rulesPerPolicy: R,
  builds: builds.map((b) => ({
    name: b.name,
    cold: b.first.ms,
    changesMs: b.changesMs,
    rounds: Object.fromEntries(KEYS.map((k) => [k, median(b.rounds.map((r) => r[k]))])),
    size: size(b.first.renderer.desired()),
  })),
  load: loadavg()[0],
};
if (args.json === 'yes') {
  process.stdout.write(`${JSON.stringify(figures)}\n`);
} else {
  const f = (x) => x.toFixed(1);
  const s = figures.builds[0].size;
  console.log(
    `felix (JS only): ${E} endpoints, ${P} policies, ${R} rules each; ${s.tables} tables, ${s.chains} chains, ${s.rules} rules, ${s.sets} sets, ${s.maps} maps; ${CHANGES} changes per kind; ${ROUNDS} rounds; ${cpus().length} CPUs; load ${f(figures.load)}${globalThis.gc ? '' : ' (no --expose-gc: heap includes garbage)'}\n`,
  );
  console.log(
    '| build | sync | graph ms (CPU) | render ms (CPU) | JS heap held (MiB) | chains / rules / sets | changes ms |',
  );
  console.log(
    '| ----- | ---- | -------------: | --------------: | -----------------: | --------------------: | ---------: |',
  );
  for (const b of figures.builds) {
    const z = `${b.size.chains} / ${b.size.rules} / ${b.size.sets}`;
    const c = b.cold;
    const r = b.rounds;
    console.log(
      `| ${b.name} | first (cold) | ${f(c.graph)} (${f(c.graphCpu)}) | ${f(c.render)} (${f(c.renderCpu)}) | ${f(c.heap)} | ${z} | ${f(b.changesMs)} |`,
    );
    console.log(
      `| ${b.name} | median of ${ROUNDS} | ${f(r.graph)} (${f(r.graphCpu)}) | ${f(r.render)} (${f(r.renderCpu)}) | ${f(r.heap)} | | |`,
    );
  }
}
