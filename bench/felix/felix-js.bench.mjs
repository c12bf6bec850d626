// Felix's pure calculation path at scale, without nft: the JavaScript part of felix.bench.mjs's
// full sync, repeated in one process, no root, no namespace. The same resources (resources.mjs).
// As there, a first full sync is kept alive and the changes run on it (each kind --changes times,
// done and undone: onUpdate, flush, render), then the timed rounds. Each round, on a fresh graph
// and renderer:
//
// - graph: `CalcGraph.onUpdate` of every resource, in-sync, then `flush()` (the DataplaneDiff);
// - render: `IncrementalRenderer.onUpdate(diff)` and `render()` (every section, both families);
// - the JS heap with that graph and renderer alive (after a forced collection with
//   `node --expose-gc`; without it the figure includes garbage), and the ruleset's size (tables,
//   chains, rules, sets) so two builds can be checked to render the same amount.
//
// The first sync (a cold process) is reported apart; the rounds' figures, what felix.bench.mjs's
// full-sync rounds measure, are medians. Reported, never asserted.
//
//   node --expose-gc bench/felix/felix-js.bench.mjs [--endpoints 300] [--policies 200] [--rules 40]
//        [--changes 40] [--rounds 5] [--json yes]
//
// `--json yes` prints one JSON line of the figures (for a script comparing two builds). To compare
// with another commit, copy this file and resources.mjs into that checkout's bench/felix (its
// `@calico-ts/felix` built) and run both in alternation; to profile, add `--cpu-prof`
// (`node --cpu-prof --cpu-prof-dir DIR ...`).
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { CalcGraph, DEFAULT_RULES_CONFIG, IncrementalRenderer } from '@calico-ts/felix';
import { benchResources, HOST } from './resources.mjs';

const { values: args } = parseArgs({
  options: {
    endpoints: { type: 'string', default: '300' },
    policies: { type: 'string', default: '200' },
    rules: { type: 'string', default: '40' },
    changes: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '5' },
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

function sync() {
  const res = resources();
  const heap0 = heapMiB();
  const t0 = performance.now();
  const graph = new CalcGraph({ hostname: HOST });
  for (const r of res) graph.onUpdate({ kind: 'set', resource: r });
  graph.onUpdate({ kind: 'in-sync' });
  const diff = graph.flush();
  const t1 = performance.now();
  const renderer = new IncrementalRenderer(DEFAULT_RULES_CONFIG);
  renderer.onUpdate(diff);
  renderer.render();
  const t2 = performance.now();
  const heap = heapMiB() - heap0;
  return { graph, renderer, ms: { graph: t1 - t0, render: t2 - t1, heap } };
}

/** Each kind of change, done and undone CHANGES times, on the first sync's graph and renderer. */
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

const first = sync();
const changesMs = changes(first);
const rounds = [];
for (let i = 0; i < ROUNDS; i++) rounds.push(sync().ms);
const figures = {
  endpoints: E,
  policies: P,
  rulesPerPolicy: R,
  cold: first.ms,
  changesMs,
  rounds: {
    graph: median(rounds.map((r) => r.graph)),
    render: median(rounds.map((r) => r.render)),
    heap: median(rounds.map((r) => r.heap)),
  },
  size: size(first.renderer.desired()),
  load: loadavg()[0],
};
if (args.json === 'yes') {
  process.stdout.write(`${JSON.stringify(figures)}\n`);
} else {
  const f = (x) => x.toFixed(1);
  const s = figures.size;
  console.log(
    `felix (JS only): ${E} endpoints, ${P} policies, ${R} rules each; ${s.tables} tables, ${s.chains} chains, ${s.rules} rules, ${s.sets} sets, ${s.maps} maps; ${CHANGES} changes per kind (${f(changesMs)} ms); ${ROUNDS} rounds; ${cpus().length} CPUs; load ${f(figures.load)}${globalThis.gc ? '' : ' (no --expose-gc: heap includes garbage)'}\n`,
  );
  console.log('|                           | graph (ms) | render (ms) | JS heap held (MiB) |');
  console.log('| ------------------------- | ---------: | ----------: | -----------------: |');
  console.log(
    `| first sync (cold)         | ${f(figures.cold.graph)} | ${f(figures.cold.render)} | ${f(figures.cold.heap)} |`,
  );
  console.log(
    `| full sync, median of ${ROUNDS} | ${f(figures.rounds.graph)} | ${f(figures.rounds.render)} | ${f(figures.rounds.heap)} |`,
  );
}
