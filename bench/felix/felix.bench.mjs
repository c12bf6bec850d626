// Felix's policy pipeline at scale, against `nft` loading the same ruleset, in one run, in a
// network namespace this bench creates (root; deleted at the end, also on failure):
//
// - full sync: datastore-shaped resources (E local WorkloadEndpoints, P GlobalNetworkPolicies of R
//   rules each, with selectors, ports and nets) fed through the real CalcGraph → IncrementalRenderer
//   → NftablesDataplane.apply (libnftables in the namespace: read back, diff, one transaction),
//   from the first update to the kernel programmed. References, into the same namespace flushed:
//   `nft -j -f` of the identical JSON document the dataplane sent, and `nft -f` of the same ruleset
//   as nft text (`nft list ruleset` of it). Rounds alternate which side goes first. Goal ≤ 1.1× of
//   the faster reference.
// - changes at that scale, each kind --changes times through the steady-state pipeline (onUpdate →
//   flush → render the touched sections → apply just those objects): a rule added to / removed
//   from one policy, a profile rule, a pod added, a pod removed, a label change that moves a pod
//   into rules' IP sets, a network set's nets (IP set members), an IP pool. Median and p99 of the
//   time and the median nftables command count per kind. Each change starts when the previous
//   one's libnftables cache warm-up is done (edits arriving apart, as from calicoctl); the warm-up
//   is reported beside it. References for the policy change, on the same state: `nft -j -f` of
//   the very same commands (the change's transaction), and `nft -f` of the same change as text
//   (each chain it flushed, refilled with its rules, and the rules it appended, as `nft list chain`
//   prints them).
// - memory: RSS and JS heap before building the state and after the first full sync (run with
//   `node --expose-gc` to collect garbage before each reading); the rest of RSS is native memory,
//   mostly libnftables in its worker thread.
//
// The caliXXXX interfaces are not created: the renderer and the dataplane only name them in rules.
// Reported, never asserted (a busy machine is not a failure).
//
//   node [--expose-gc] bench/felix/felix.bench.mjs [--endpoints 1000] [--policies 500] [--rules 40]
//        [--rounds 1] [--changes 40] [--text yes|no] [--family-contexts 2|1] [--out file.json]
//
// `--family-contexts 2` (the default, as Felix runs with IPv6 support) gives the dataplane a
// libnftables context per family, whose transactions run at once; `1` runs both families' commands
// in one. The references are single `nft` processes either way, and the changes' JSON reference
// is both families' commands in one document.
// `--text no` leaves out the nft-text references (at 1,000 endpoints `nft list ruleset` alone
// takes minutes); `--rounds 0` leaves out the full-sync comparison.
//
// The JavaScript part of the full sync alone (graph, render; no nft, no root), repeated and side by
// side with other builds in one process: felix-js.bench.mjs (its header says how to run it).
// The resources and changes of both are in resources.mjs.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CalcGraph, DEFAULT_RULES_CONFIG, IncrementalRenderer, NftablesDataplane } from '@calico-ts/felix';
import { NftContext, Transaction } from '@calico-ts/nftables';
import { benchResources, HOST } from './resources.mjs';

const { values: args } = parseArgs({
  options: {
    endpoints: { type: 'string', default: '1000' },
    policies: { type: 'string', default: '500' },
    rules: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '1' },
    changes: { type: 'string', default: '40' },
    // `no`: no nft-text references (listing a large ruleset or chain as text takes minutes).
    text: { type: 'string', default: 'yes' },
    // 2: the dataplane runs each family's transaction in its own libnftables context, as Felix
    // does with IPv6 support; 1: one context for both.
    'family-contexts': { type: 'string', default: '2' },
    out: { type: 'string' },
  },
});
const E = Number(args.endpoints);
const P = Number(args.policies);
const R = Number(args.rules);
const ROUNDS = Number(args.rounds);
const CHANGES = Number(args.changes);
const TEXT = args.text !== 'no';
const FAMILY_CONTEXTS = Number(args['family-contexts']);
if (FAMILY_CONTEXTS !== 1 && FAMILY_CONTEXTS !== 2) throw new Error('--family-contexts: 1 or 2');
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'felix.json');
const { resources, changeKinds: CHANGE_KINDS } = benchResources(E, P, R);

function log(msg) {
  process.stderr.write(`felix bench: ${msg}\n`);
}

function median(xs) {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The nearest-rank percentile. */
function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

function run(cmd, argv, input) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 1 << 28, input });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${argv.join(' ')} exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).slice(-800)}`,
    );
  return r.stdout;
}

/** An NftClient that passes everything to libnftables and keeps the text of the last batch. */
class Recording {
  constructor(inner) {
    this.inner = inner;
    this.lastText = undefined;
    /** Time spent in `run` (the worker's libnftables call and the messages to and fro). */
    this.runMs = 0;
    /** Of that, the time inside libnftables (parse, evaluate, cache, the kernel's commit). */
    this.libMs = 0;
  }
  run(commands, opts) {
    // A Transaction makes its document once; the client sends the same text.
    this.lastText =
      typeof commands === 'string'
        ? commands
        : commands instanceof Transaction
          ? commands.document()
          : JSON.stringify({ nftables: commands });
    const t0 = performance.now();
    return this.inner
      .run(commands, opts)
      .then((r) => {
        this.libMs += r.runMs ?? 0;
        return r;
      })
      .finally(() => {
        this.runMs += performance.now() - t0;
      });
  }
  memoryUsage() {
    return this.inner.memoryUsage();
  }
  ruleHandles(family, table, chain) {
    return this.inner.ruleHandles(family, table, chain);
  }
  warmCache(tables) {
    return this.inner.warmCache(tables);
  }
  listRuleset() {
    return this.inner.listRuleset();
  }
  listTable(family, name) {
    return this.inner.listTable(family, name);
  }
  close() {
    return this.inner.close();
  }
}

/**
 * The dataplane's clients: one Recording, or (`--family-contexts 2`) one per family, which the
 * dataplane runs at once. Read as one: the last batch as one document of both families' commands
 * (what a single context would have run), and the time of the slower client.
 */
class Clients {
  constructor(ip, ip6) {
    this.ip = ip;
    this.ip6 = ip6;
  }
  get all() {
    return this.ip6 ? [this.ip, this.ip6] : [this.ip];
  }
  dataplaneOptions() {
    return this.ip6 ? { nft: this.ip, nftIp6: this.ip6 } : { nft: this.ip };
  }
  get lastText() {
    const texts = this.all.map((c) => c.lastText).filter((t) => t !== undefined);
    if (texts.length <= 1) return texts[0];
    const [first, ...rest] = texts.map((t) => JSON.parse(t).nftables);
    return JSON.stringify({ nftables: [...first, ...rest.flatMap((d) => d.filter((c) => !c.metainfo))] });
  }
  set lastText(v) {
    for (const c of this.all) c.lastText = v;
  }
  get runMs() {
    return Math.max(...this.all.map((c) => c.runMs));
  }
  set runMs(v) {
    for (const c of this.all) c.runMs = v;
  }
  get libMs() {
    return Math.max(...this.all.map((c) => c.libMs));
  }
  set libMs(v) {
    for (const c of this.all) c.libMs = v;
  }
  async memoryUsage() {
    const all = await Promise.all(this.all.map((c) => c.memoryUsage()));
    // malloc is the process's, the same figure from each worker; the workers' heaps add up.
    return {
      workerHeapUsed: all.reduce((n, m) => n + (m.workerHeapUsed ?? 0), 0),
      mallocInUse: all[0].mallocInUse,
    };
  }
  warmCache(tables) {
    const ip6 = tables.filter((t) => t.family === 'ip6');
    if (!this.ip6) return this.ip.warmCache(tables);
    return Promise.all([
      this.ip.warmCache(tables.filter((t) => t.family !== 'ip6')),
      ip6.length > 0 ? this.ip6.warmCache(ip6) : undefined,
    ]);
  }
  close() {
    return Promise.all(this.all.map((c) => c.close()));
  }
}

/** Full sync: resources → calc graph → render → apply, into the (flushed) namespace. */
async function fullSync(ctx, res) {
  ctx.runMs = 0;
  ctx.libMs = 0;
  const t0 = performance.now();
  const graph = new CalcGraph({ hostname: HOST });
  for (const r of res) graph.onUpdate({ kind: 'set', resource: r });
  graph.onUpdate({ kind: 'in-sync' });
  const renderer = new IncrementalRenderer(DEFAULT_RULES_CONFIG);
  const update = graph.flush();
  const t1 = performance.now();
  renderer.onUpdate(update);
  const change = renderer.render();
  const t2 = performance.now();
  const dp = new NftablesDataplane(ctx.dataplaneOptions());
  const applied = await dp.apply(renderer.desired(), change);
  const t3 = performance.now();
  // Where a full sync's time goes: the calculation graph, the renderer, and the dataplane's apply,
  // which is its read-back, diff and JSON (`applyJs`), the worker's messages and libnftables
  // (parse, evaluate, the kernel's commit: `libnftables`).
  const phases = {
    calc: t1 - t0,
    render: t2 - t1,
    applyJs: t3 - t2 - ctx.runMs,
    messages: ctx.runMs - ctx.libMs,
    libnftables: ctx.libMs,
  };
  return { ms: t3 - t0, phases, graph, renderer, dp, applied, nft: ctx };
}

/**
 * One batch of datastore updates through the steady-state pipeline, timed from the first update to
 * the kernel's commit. It starts once the dataplane is settled (the previous change's cache
 * warm-up done, as when edits arrive apart); the warm-up that follows it is timed separately.
 */
async function change(s, updates) {
  await s.dp.settled();
  const nft = s.nft;
  const t0 = performance.now();
  nft.runMs = 0;
  nft.libMs = 0;
  for (const u of updates) s.graph.onUpdate(u);
  s.renderer.onUpdate(s.graph.flush());
  const applied = await s.dp.apply(s.renderer.desired(), s.renderer.render());
  const ms = performance.now() - t0;
  const nftMs = nft.runMs;
  const libMs = nft.libMs;
  await s.dp.settled();
  return {
    ms,
    nftMs,
    libMs,
    warmMs: performance.now() - t0 - ms,
    commands: applied.commands,
    mode: applied.mode,
  };
}

/** The chains a transaction writes: family, name, whether it flushes them, rules it adds. */
function touchedChains(docText) {
  const out = new Map();
  const at = (family, name) => {
    const k = `${family} ${name}`;
    if (!out.has(k)) out.set(k, { family, name, flushed: false, added: 0 });
    return out.get(k);
  };
  for (const c of JSON.parse(docText).nftables) {
    if (c.flush?.chain) at(c.flush.chain.family, c.flush.chain.name).flushed = true;
    if (c.add?.rule) at(c.add.rule.family, c.add.rule.chain).added++;
  }
  return [...out.values()];
}

/**
 * Undoes a transaction that appended rules (the one-rule change), through `nft`: deletes, by
 * handle, the rules it appended at the end of each chain. The dataplane's own undo deletes by
 * handles it read then, which a replay of the change has replaced.
 */
async function undoAppend(nft, docText) {
  const cmds = [];
  for (const c of touchedChains(docText)) {
    if (c.flushed || c.added === 0) continue;
    const rules = await nft.ruleHandles(c.family, 'calico', c.name);
    for (const r of rules.slice(rules.length - c.added))
      cmds.push({ delete: { rule: { family: c.family, table: 'calico', chain: c.name, handle: r.handle } } });
  }
  if (cmds.length > 0) await nft.run(cmds);
}

const rssMiB = () => {
  globalThis.gc?.();
  return process.memoryUsage().rss / 2 ** 20;
};

async function main() {
  if (process.getuid?.() !== 0) {
    console.log('felix bench: needs root (network namespaces); skipped');
    return;
  }
  const missing = ['ip', 'nft', 'nsenter'].filter(
    (c) => spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0,
  );
  if (missing.length > 0) {
    console.log(`felix bench: missing ${missing.join(', ')}; skipped`);
    return;
  }
  const started = new Date();
  const ns = `fbench-${randomBytes(4).toString('hex')}`;
  const dir = await mkdtemp(join(tmpdir(), 'felix-bench-'));
  const nftIn = (argv, input) => run('nsenter', [`--net=/run/netns/${ns}`, 'nft', ...argv], input);
  let ctx;
  // A signal (Ctrl-C, a timeout) skips `finally`: delete the namespace and the files then too.
  const onSignal = (sig) => {
    spawnSync('ip', ['netns', 'del', ns]);
    spawnSync('rm', ['-rf', dir]);
    log(`${sig}: deleted ${ns}`);
    process.exit(130);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.once(sig, onSignal);
  try {
    run('ip', ['netns', 'add', ns]);
    const raw = await NftContext.open({ netns: ns });
    const raw6 = FAMILY_CONTEXTS === 2 ? await NftContext.open({ netns: ns }) : undefined;
    ctx = new Clients(new Recording(raw), raw6 ? new Recording(raw6) : undefined);

    // Memory, and warm-up: RSS before the state exists, then one full sync.
    const rss0 = rssMiB();
    const heap0 = process.memoryUsage().heapUsed / 2 ** 20;
    const worker0 = await ctx.memoryUsage();
    let res = resources();
    const first = await fullSync(ctx, res);
    await first.dp.settled();
    const rss1 = rssMiB();
    const heap1 = process.memoryUsage().heapUsed / 2 ** 20;
    const worker1 = await ctx.memoryUsage();
    const mib = (b) => (b === undefined ? Number.NaN : b / 2 ** 20);
    const docFile = join(dir, 'ruleset.json');
    const textFile = join(dir, 'ruleset.nft');
    const doc = ctx.lastText;
    if (doc === undefined) throw new Error('the dataplane sent no batch');
    await writeFile(docFile, doc);
    ctx.lastText = undefined;
    // The same ruleset as nft text: what nft itself prints of it, loadable with `nft -f`.
    if (TEXT) await writeFile(textFile, `${nftIn(['list', 'ruleset'])}`);
    const parsed = JSON.parse(doc).nftables;
    const nftRules = parsed.filter((c) => c.add?.rule || c.insert?.rule).length;
    const nftCommands = parsed.length;
    const dsRules = res
      .filter((r) => r.kind === 'GlobalNetworkPolicy')
      .reduce((n, r) => n + r.spec.ingress.length + r.spec.egress.length, 0);
    const activePolicies = first.renderer.counts.policies;
    log(
      `warm-up: full sync ${first.ms.toFixed(0)} ms (${first.applied.commands} commands); RSS ${rss0.toFixed(0)} → ${rss1.toFixed(0)} MiB, heap ${heap0.toFixed(0)} → ${heap1.toFixed(0)} MiB; ${Object.entries(
        first.phases,
      )
        .map(([k, v]) => `${k} ${v.toFixed(0)} ms`)
        .join(', ')}`,
    );
    res = undefined;

    // Changes, on the warm-up's state.
    const changes = {};
    const deltaRef = [];
    const deltaRefText = [];
    // The same one-rule change committed through our own context with a warm cache, as JSON (the
    // transaction the dataplane sent) and as nft text (the same change), each undone after: the
    // kernel's part is the same, so the difference is libnftables' parse and evaluation.
    const ctxJson = [];
    const ctxText = [];
    // The kernel's floor: one rule with a verdict appended, in each family, to a chain nothing
    // jumps to, through the same warm context. Any transaction that adds a rule pays the
    // kernel's validation of every chain reachable from the table's base chains at commit.
    const floorMs = [];
    const tableNames = () => first.dp.programmed.tables.map((t) => ({ family: t.family, name: t.name }));
    const families = tableNames().map((t) => t.family);
    await raw.run(families.map((f) => `add chain ${f} calico bench-floor`).join('\n'));
    await raw.warmCache(tableNames());
    // `nft -f` of the same change as text, from what nft prints of the chains it wrote: a chain
    // flushed and refilled with all its rules, or just the rules appended to it.
    const chainsText = (chains) =>
      chains
        .map(({ family, name, flushed, added }) => {
          const listed = nftIn(['list', 'chain', family, 'calico', name]);
          if (flushed) return `flush chain ${family} calico ${name}\n${listed}`;
          const rules = listed.split('\n').filter((l) => l.startsWith('\t\t'));
          return rules
            .slice(rules.length - added)
            .map((r) => `add rule ${family} calico ${name} ${r.trim()}`)
            .join('\n');
        })
        .join('\n');
    for (const [kind, make] of Object.entries(CHANGE_KINDS)) {
      const ms = [];
      const doMs = [];
      const undoMs = [];
      const warmMs = [];
      const nftMs = [];
      const libMs = [];
      const jsMs = [];
      const doLibMs = [];
      const doJsMs = [];
      const commands = [];
      for (let j = 0; j < CHANGES; j++) {
        const [doIt, undo] = make(j);
        const isPolicy = kind.startsWith('policy') && j < 10;
        ctx.lastText = undefined;
        const c = await change(first, doIt);
        const forward = ctx.lastText;
        const forwardText = TEXT && isPolicy && forward ? chainsText(touchedChains(forward)) : undefined;
        ctx.lastText = undefined;
        const back = await change(first, undo);
        const backward = ctx.lastText;
        ms.push(c.ms, back.ms);
        doMs.push(c.ms);
        undoMs.push(back.ms);
        warmMs.push(c.warmMs, back.warmMs);
        nftMs.push(c.nftMs, back.nftMs);
        libMs.push(c.libMs, back.libMs);
        jsMs.push(c.ms - c.nftMs, back.ms - back.nftMs);
        doLibMs.push(c.libMs);
        doJsMs.push(c.ms - c.nftMs);
        commands.push(c.commands, back.commands);
        if (c.mode !== 'incremental' || back.mode !== 'incremental')
          throw new Error(`${kind}: not incremental`);
        // The reference: nft loading the very same transaction, on the same state, then undoing it.
        if (isPolicy && forward && backward) {
          // Back on the state the change started from, with the cache warm: the change as JSON and
          // as text through the context, each undone, then the floor.
          for (const [into, there] of [[ctxJson, forward], ...(TEXT ? [[ctxText, forwardText]] : [])]) {
            into.push((await raw.run(there)).runMs);
            await undoAppend(raw, forward);
            await raw.warmCache(tableNames());
          }
          floorMs.push(
            (
              await raw.run(
                families
                  .map((f) => `add rule ${f} calico bench-floor meta l4proto tcp tcp dport 9999 accept`)
                  .join('\n'),
              )
            ).runMs,
          );
          await raw.run(families.map((f) => `flush chain ${f} calico bench-floor`).join('\n'));
          await raw.warmCache(tableNames());
          const f = join(dir, 'delta.json');
          const ft = join(dir, 'delta.nft');
          await writeFile(f, forward);
          let t0 = performance.now();
          nftIn(['-j', '-f', f]);
          deltaRef.push(performance.now() - t0);
          await undoAppend(raw, forward);
          if (TEXT) {
            await writeFile(ft, forwardText);
            t0 = performance.now();
            nftIn(['-f', ft]);
            deltaRefText.push(performance.now() - t0);
            await undoAppend(raw, forward);
          }
          // nft moved the kernel's generation: fetch the context's cache again, as after a change.
          await ctx.warmCache(first.dp.programmed.tables.map((t) => ({ family: t.family, name: t.name })));
        }
      }
      changes[kind] = {
        medianMs: median(ms),
        p99Ms: percentile(ms, 99),
        doMedianMs: median(doMs),
        doP99Ms: percentile(doMs, 99),
        undoMedianMs: median(undoMs),
        warmUpMedianMs: median(warmMs),
        nftMedianMs: median(nftMs),
        libnftablesMedianMs: median(libMs),
        jsMedianMs: median(jsMs),
        doLibnftablesMedianMs: median(doLibMs),
        doJsMedianMs: median(doJsMs),
        medianCommands: median(commands),
        maxCommands: Math.max(...commands),
        n: ms.length,
      };
      log(
        `${kind}: median ${median(ms).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms, do ${median(doMs).toFixed(1)} / undo ${median(undoMs).toFixed(1)} ms, ${median(commands)} commands; of it JS ${median(jsMs).toFixed(1)} ms, libnftables + kernel ${median(libMs).toFixed(1)} ms, worker messages ${(median(nftMs) - median(libMs)).toFixed(1)} ms; cache warm-up after it ${median(warmMs).toFixed(1)} ms`,
      );
    }

    await raw.run(families.map((f) => `delete chain ${f} calico bench-floor`).join('\n'));

    const samples = { full: [], fullPhases: [], nftJson: [], nftText: [], dryJson: [], dryText: [] };
    const textDoc = TEXT ? await readFile(textFile, 'utf8') : undefined;
    for (let r = 0; r < ROUNDS; r++) {
      const order = TEXT ? ['ours', 'json', 'text'] : ['ours', 'json'];
      for (let k = 0; k < r % 3; k++) order.push(order.shift());
      for (const side of order) {
        nftIn(['flush', 'ruleset']);
        const t0 = performance.now();
        if (side === 'json') {
          nftIn(['-j', '-f', docFile]);
          samples.nftJson.push(performance.now() - t0);
        } else if (side === 'text') {
          nftIn(['-f', textFile]);
          samples.nftText.push(performance.now() - t0);
        } else {
          const s = await fullSync(ctx, resources());
          samples.full.push(s.ms);
          samples.fullPhases.push(s.phases);
        }
      }
      // libnftables alone, same process, no commit: the full batch as JSON and as text. A dry run
      // leaves what it evaluated in the context's cache; a commit elsewhere (moving the kernel's
      // generation) makes the next call fetch the cache again, from the empty namespace.
      const fresh = () =>
        nftIn(['-f', '-'], 'flush ruleset\nadd table ip bench-gen\ndelete table ip bench-gen\n');
      fresh();
      samples.dryJson.push((await raw.run(doc, { dryRun: true })).runMs);
      if (TEXT) {
        fresh();
        samples.dryText.push((await raw.run(textDoc, { dryRun: true })).runMs);
      }
    }

    const full = median(samples.full);
    const refJson = median(samples.nftJson);
    const refText = median(samples.nftText);
    const perK = ((rss1 - rss0) / E) * 1000;
    const policyKind = changes['policy: one rule added / removed'];
    const rows = [
      {
        measure: 'full sync: calc + render + apply',
        ms: full,
        refMs: refJson,
        ref: '`nft -j -f` same JSON',
        ratio: full / refJson,
        goal: '≤ 1.1× of the faster',
      },
      {
        measure: 'full sync: calc + render + apply',
        ms: full,
        refMs: refText,
        ref: '`nft -f` same ruleset as text',
        ratio: full / refText,
        goal: '≤ 1.1× of the faster',
      },
      {
        measure: 'one rule added to one policy',
        ms: policyKind.doMedianMs,
        refMs: median(deltaRef),
        ref: '`nft -j -f` of the same transaction',
        ratio: policyKind.doMedianMs / median(deltaRef),
        goal: '≤ 20 ms; ≤ 2×',
      },
      {
        measure: 'one rule added to one policy',
        ms: policyKind.doMedianMs,
        refMs: median(deltaRefText),
        ref: '`nft -f` of the changed chains as text',
        ratio: policyKind.doMedianMs / median(deltaRefText),
        goal: '≤ 20 ms; ≤ 2×',
      },
    ];

    console.log(
      `felix: ${E} endpoints, ${P} policies, ${dsRules} rules (${nftRules} nft rules, ${nftCommands} commands in the full batch); rounds ${ROUNDS}; ${FAMILY_CONTEXTS} libnftables context${FAMILY_CONTEXTS === 2 ? 's (one per family)' : ''}; ${CHANGES} changes per kind, each done and undone; ${cpus().length} CPUs; load ${loadavg()[0].toFixed(2)}\n`,
    );
    console.log('| measure | ms (median) | reference ms | ratio | goal |');
    console.log('| --- | ---: | ---: | ---: | ---: |');
    for (const row of rows) {
      console.log(
        `| ${row.measure} | ${row.ms.toFixed(1)} | ${row.refMs.toFixed(1)} (${row.ref}) | ${row.ratio.toFixed(3)} | ${row.goal} |`,
      );
    }
    console.log(
      '\n| change (done / undone) | median ms | p99 ms | median ms done / undone | of which libnftables, median ms | nft commands (median / max) | cache warm-up after it, median ms (off the critical path) |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const [kind, c] of Object.entries(changes)) {
      console.log(
        `| ${kind} | ${c.medianMs.toFixed(1)} | ${c.p99Ms.toFixed(1)} | ${c.doMedianMs.toFixed(1)} / ${c.undoMedianMs.toFixed(1)} | ${c.nftMedianMs.toFixed(1)} | ${c.medianCommands} / ${c.maxCommands} | ${c.warmUpMedianMs.toFixed(1)} |`,
      );
    }
    const pk = policyKind;
    console.log(
      `\none rule added to one policy, where the time goes (medians): JS (calc, render, diff, JSON) ${pk.doJsMedianMs.toFixed(1)} ms; libnftables + kernel ${pk.doLibnftablesMedianMs.toFixed(1)} ms; worker messages the rest. Of libnftables' part: the same change committed through the same context ${median(ctxJson).toFixed(1)} ms as JSON, ${median(ctxText).toFixed(1)} ms as nft text; the kernel's floor for any rule added (one verdict rule per family into a chain nothing jumps to) ${median(floorMs).toFixed(1)} ms.`,
    );
    console.log(
      `full sync, libnftables alone (dry run, no commit, same process): JSON ${median(samples.dryJson).toFixed(0)} ms, nft text ${median(samples.dryText).toFixed(0)} ms`,
    );
    if (samples.fullPhases.length > 0) {
      const phase = (k) => median(samples.fullPhases.map((p) => p[k])).toFixed(0);
      console.log(
        `full sync, where the time goes (medians): calculation graph ${phase('calc')} ms, render ${phase('render')} ms, dataplane read-back + diff + JSON ${phase('applyJs')} ms, worker messages ${phase('messages')} ms, libnftables + kernel ${phase('libnftables')} ms`,
      );
    }
    console.log(
      `\nmemory: RSS ${rss0.toFixed(1)} → ${rss1.toFixed(1)} MiB over the first full sync = ${perK.toFixed(1)} MiB per 1,000 endpoints; JS heap ${heap0.toFixed(1)} → ${heap1.toFixed(1)} MiB; native (RSS − heap, mostly libnftables in its worker) ${(rss0 - heap0).toFixed(1)} → ${(rss1 - heap1).toFixed(1)} MiB (${globalThis.gc ? 'gc forced' : 'no forced gc; run with --expose-gc for steadier figures'}); nftables worker's JS heap ${mib(worker0.workerHeapUsed).toFixed(1)} → ${mib(worker1.workerHeapUsed).toFixed(1)} MiB; malloc in use, whole process (libnftables' cache and parse trees, Node's buffers) ${mib(worker0.mallocInUse).toFixed(1)} → ${mib(worker1.mallocInUse).toFixed(1)} MiB`,
    );

    await mkdir(dirname(OUT), { recursive: true });
    await writeFile(
      OUT,
      `${JSON.stringify(
        {
          bench: 'felix',
          started: started.toISOString(),
          endpoints: E,
          policies: P,
          rulesPerPolicy: R,
          datastoreRules: dsRules,
          activePolicies,
          nftRules,
          nftCommands,
          rounds: ROUNDS,
          familyContexts: FAMILY_CONTEXTS,
          changesPerKind: CHANGES,
          node: process.version,
          cpus: cpus().length,
          loadavg1: Number(loadavg()[0].toFixed(2)),
          rows: rows.map((x) => ({
            ...x,
            ms: Number(x.ms.toFixed(1)),
            refMs: Number(x.refMs.toFixed(1)),
            ratio: Number(x.ratio.toFixed(4)),
          })),
          changes,
          memory: {
            rssBeforeMiB: Number(rss0.toFixed(1)),
            rssAfterMiB: Number(rss1.toFixed(1)),
            heapUsedBeforeMiB: Number(heap0.toFixed(1)),
            heapUsedAfterMiB: Number(heap1.toFixed(1)),
            mibPer1000Endpoints: Number(perK.toFixed(2)),
            workerHeapUsedBeforeMiB: Number(mib(worker0.workerHeapUsed).toFixed(1)),
            workerHeapUsedAfterMiB: Number(mib(worker1.workerHeapUsed).toFixed(1)),
            mallocInUseBeforeMiB: Number(mib(worker0.mallocInUse).toFixed(1)),
            mallocInUseAfterMiB: Number(mib(worker1.mallocInUse).toFixed(1)),
            gcForced: Boolean(globalThis.gc),
          },
          samplesMs: Object.fromEntries(
            Object.entries({
              ...samples,
              policyDeltaNftJson: deltaRef,
              policyDeltaNftText: deltaRefText,
              policyDeltaContextJson: ctxJson,
              policyDeltaContextText: ctxText,
              kernelFloorOneRule: floorMs,
            }).map(([k, v]) => [
              k,
              v.map((x) =>
                typeof x === 'number'
                  ? Number(x.toFixed(1))
                  : Object.fromEntries(Object.entries(x).map(([p, ms]) => [p, Number(ms.toFixed(1))])),
              ),
            ]),
          ),
        },
        null,
        2,
      )}\n`,
    );
    log(`wrote ${OUT}`);
  } finally {
    await ctx?.close().catch(() => {});
    spawnSync('ip', ['netns', 'del', ns]);
    await rm(dir, { recursive: true, force: true });
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.off(sig, onSignal);
  }
}

await main();
