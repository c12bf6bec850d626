// Felix's policy pipeline at scale, against `nft` loading the same ruleset, in one run, in a
// network namespace this bench creates (root; deleted at the end, also on failure):
//
// - full sync: datastore-shaped resources (E local WorkloadEndpoints, P GlobalNetworkPolicies of R
//   rules each, with selectors, ports and nets) fed through the real CalcGraph → renderRuleset →
//   NftablesDataplane.apply (libnftables in the namespace: read back, diff, one transaction), from
//   the first update to the kernel programmed. Reference: `nft -j -f` of the identical JSON
//   document the dataplane sent, into the same namespace flushed. Each round flushes the
//   namespace's ruleset before each side and alternates which side goes first. Goal ≤ 1.3×.
// - one policy change at that scale (one rule added to one policy) through the same pipeline
//   (onUpdate → flush → state → renderRuleset → apply), against the full sync. Goal ≤ 5%.
// - memory: the process's RSS growth from before building the state to after the first full sync,
//   in MiB per 1,000 endpoints (run with `node --expose-gc` to collect garbage before each reading).
//
// The caliXXXX interfaces are not created: the renderer and the dataplane only name them in rules.
// Reported, never asserted (a busy machine is not a failure).
//
//   node [--expose-gc] bench/felix/felix.bench.mjs [--endpoints 1000] [--policies 500] [--rules 40] [--rounds 1] [--out file.json]
// At the default scale one round (a warm-up, then both sides and the change) takes about 8 min
// here: nearly all of it in libnftables and the kernel, on both sides.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CalcGraph, DEFAULT_RULES_CONFIG, NftablesDataplane, renderRuleset } from '@calico-ts/felix';
import { NftContext } from '@calico-ts/nftables';

const { values: args } = parseArgs({
  options: {
    endpoints: { type: 'string', default: '1000' },
    policies: { type: 'string', default: '500' },
    rules: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '1' },
    out: { type: 'string' },
  },
});
const E = Number(args.endpoints);
const P = Number(args.policies);
const R = Number(args.rules);
const ROUNDS = Number(args.rounds);
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'felix.json');
const HOST = 'bench-node';
const V3 = 'projectcalico.org/v3';
const APPS = 50;
const ROLES = 10;
const NAMESPACES = 20;

function log(msg) {
  process.stderr.write(`felix bench: ${msg}\n`);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function run(cmd, argv, input) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 1 << 28, input });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${argv.join(' ')} exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).slice(-800)}`,
    );
  return r.stdout;
}

/** A local pod: `cali` + 11 hex characters (the 15-character limit), one IPv4 address. */
function workload(i) {
  const ns = `ns-${i % NAMESPACES}`;
  const name = `${HOST}-k8s-pod--${i}-eth0`;
  return {
    apiVersion: V3,
    kind: 'WorkloadEndpoint',
    metadata: {
      name,
      namespace: ns,
      labels: {
        app: `app-${i % APPS}`,
        role: `r${i % ROLES}`,
        env: i % 3 === 0 ? 'prod' : 'staging',
        'projectcalico.org/namespace': ns,
        'projectcalico.org/orchestrator': 'k8s',
      },
    },
    spec: {
      node: HOST,
      orchestrator: 'k8s',
      pod: `pod-${i}`,
      endpoint: 'eth0',
      ipNetworks: [`10.65.${i >> 8}.${i & 0xff}/32`],
      interfaceName: `cali${i.toString(16).padStart(11, '0')}`,
      profiles: [`kns.${ns}`],
    },
  };
}

function nsProfile(k) {
  return {
    apiVersion: V3,
    kind: 'Profile',
    metadata: { name: `kns.ns-${k}` },
    spec: {
      labelsToApply: { 'pcns.projectcalico.org/name': `ns-${k}` },
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
    },
  };
}

/** Rule k of a policy p: four shapes in turn (selector + ports, nets + ports, deny nets, selector). */
function rule(p, k) {
  switch (k % 4) {
    case 0:
      return {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: `role == 'r${(p + k) % ROLES}'` },
        destination: { ports: [80 + (k % 50), `${8000 + k}:${8010 + k}`] },
      };
    case 1:
      return {
        action: 'Allow',
        protocol: 'UDP',
        destination: { nets: [`10.${(p % 200) + 1}.${k}.0/24`], ports: [53, 5353] },
      };
    case 2:
      return { action: 'Deny', source: { nets: [`198.18.${p & 0xff}.${k}/32`, `198.19.${k}.0/24`] } };
    default:
      return {
        action: 'Allow',
        protocol: 'TCP',
        destination: { selector: `app == 'app-${(p + k) % APPS}'`, ports: [443] },
      };
  }
}

/** Policy p applies to the endpoints of one app (E / APPS of them); R rules, half each way. */
function policy(p, extraRule = false) {
  const half = R >> 1;
  const ingress = Array.from({ length: half }, (_, k) => rule(p, 2 * k));
  const egress = Array.from({ length: R - half }, (_, k) => rule(p, 2 * k + 1));
  if (extraRule) ingress.push({ action: 'Allow', protocol: 'TCP', destination: { ports: [9999] } });
  return {
    apiVersion: V3,
    kind: 'GlobalNetworkPolicy',
    metadata: { name: `default.gnp-${String(p).padStart(4, '0')}` },
    spec: {
      tier: 'default',
      order: 100 + p,
      selector: `app == 'app-${p % APPS}' && env in {'prod', 'staging'}`,
      types: ['Ingress', 'Egress'],
      ingress,
      egress,
    },
  };
}

function resources() {
  const out = [
    {
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'default-ipv4-ippool' },
      spec: { cidr: '10.65.0.0/16', natOutgoing: true },
    },
  ];
  for (let k = 0; k < NAMESPACES; k++) out.push(nsProfile(k));
  for (let i = 0; i < E; i++) out.push(workload(i));
  for (let p = 0; p < P; p++) out.push(policy(p));
  return out;
}

/** An NftClient that passes everything to libnftables and keeps the text of the last batch. */
class Recording {
  constructor(inner) {
    this.inner = inner;
    this.lastText = undefined;
  }
  run(commands, opts) {
    this.lastText = typeof commands === 'string' ? commands : JSON.stringify({ nftables: commands });
    return this.inner.run(commands, opts);
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

/** Full sync: resources → calc graph → render → apply, into the (flushed) namespace. */
async function fullSync(ctx, res) {
  const t0 = performance.now();
  const graph = new CalcGraph({ hostname: HOST });
  for (const r of res) graph.onUpdate({ kind: 'set', resource: r });
  graph.onUpdate({ kind: 'in-sync' });
  graph.flush();
  const desired = renderRuleset(graph.state(), DEFAULT_RULES_CONFIG);
  const dp = new NftablesDataplane({ nft: ctx });
  const applied = await dp.apply(desired);
  return { ms: performance.now() - t0, graph, dp, applied };
}

/** One rule added to policy p, through the same pipeline. */
async function policyChange(graph, dp, p) {
  const t0 = performance.now();
  graph.onUpdate({ kind: 'set', resource: policy(p, true) });
  graph.flush();
  const desired = renderRuleset(graph.state(), DEFAULT_RULES_CONFIG);
  const applied = await dp.apply(desired);
  return { ms: performance.now() - t0, applied };
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
  const nftIn = (argv) => run('nsenter', [`--net=/run/netns/${ns}`, 'nft', ...argv]);
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
    ctx = new Recording(raw);

    // Memory, and warm-up: RSS before the state exists, then one full sync.
    const rss0 = rssMiB();
    const heap0 = process.memoryUsage().heapUsed / 2 ** 20;
    let res = resources();
    const first = await fullSync(ctx, res);
    const rss1 = rssMiB();
    const heap1 = process.memoryUsage().heapUsed / 2 ** 20;
    const docFile = join(dir, 'ruleset.json');
    const doc = ctx.lastText;
    if (doc === undefined) throw new Error('the dataplane sent no batch');
    await writeFile(docFile, doc);
    const parsed = JSON.parse(doc).nftables;
    const nftRules = parsed.filter((c) => c.add?.rule || c.insert?.rule).length;
    const nftCommands = parsed.length;
    const dsRules = res
      .filter((r) => r.kind === 'GlobalNetworkPolicy')
      .reduce((n, r) => n + r.spec.ingress.length + r.spec.egress.length, 0);
    const activePolicies = Object.keys(first.graph.state().policies).length;
    const firstChange = await policyChange(first.graph, first.dp, 0);
    log(
      `warm-up: full sync ${first.ms.toFixed(0)} ms (${first.applied.commands} commands), change ${firstChange.ms.toFixed(1)} ms (${firstChange.applied.commands} commands); RSS ${rss0.toFixed(0)} → ${rss1.toFixed(0)} MiB`,
    );
    res = undefined;

    const samples = { full: [], change: [], nft: [] };
    const changeCommands = [];
    for (let r = 0; r < ROUNDS; r++) {
      const oursFirst = r % 2 === 0;
      for (const side of oursFirst ? ['ours', 'nft'] : ['nft', 'ours']) {
        nftIn(['flush', 'ruleset']);
        if (side === 'nft') {
          const t0 = performance.now();
          nftIn(['-j', '-f', docFile]);
          samples.nft.push(performance.now() - t0);
        } else {
          const s = await fullSync(ctx, resources());
          samples.full.push(s.ms);
          const c = await policyChange(s.graph, s.dp, (r * 7 + 3) % P);
          samples.change.push(c.ms);
          changeCommands.push(c.applied.commands);
        }
      }
    }

    const full = median(samples.full);
    const ref = median(samples.nft);
    const change = median(samples.change);
    const perK = ((rss1 - rss0) / E) * 1000;
    const rows = [
      {
        measure: 'full sync: calc + render + apply',
        ms: full,
        refMs: ref,
        ref: '`nft -j -f` same JSON',
        ratio: full / ref,
        goal: '≤ 1.3×',
      },
      {
        measure: 'one rule added to one policy',
        ms: change,
        refMs: full,
        ref: 'our full sync',
        ratio: change / full,
        goal: '≤ 0.05×',
      },
    ];

    console.log(
      `felix: ${E} endpoints, ${P} policies, ${dsRules} rules (${nftRules} nft rules, ${nftCommands} commands in the full batch); rounds ${ROUNDS}; ${cpus().length} CPUs; load ${loadavg()[0].toFixed(2)}\n`,
    );
    console.log('| measure | ms (median) | reference ms | ratio | goal |');
    console.log('| --- | ---: | ---: | ---: | ---: |');
    for (const row of rows) {
      console.log(
        `| ${row.measure} | ${row.ms.toFixed(1)} | ${row.refMs.toFixed(1)} (${row.ref}) | ${row.ratio.toFixed(3)} | ${row.goal} |`,
      );
    }
    console.log(
      `\nmemory: RSS ${rss0.toFixed(1)} → ${rss1.toFixed(1)} MiB over the first full sync = ${perK.toFixed(1)} MiB per 1,000 endpoints; of which JS heap ${heap0.toFixed(1)} → ${heap1.toFixed(1)} MiB (the rest: libnftables in its worker, buffers) (${globalThis.gc ? 'gc forced' : 'no forced gc; run with --expose-gc for steadier figures'})`,
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
          node: process.version,
          cpus: cpus().length,
          loadavg1: Number(loadavg()[0].toFixed(2)),
          rows: rows.map((x) => ({
            ...x,
            ms: Number(x.ms.toFixed(1)),
            refMs: Number(x.refMs.toFixed(1)),
            ratio: Number(x.ratio.toFixed(4)),
          })),
          changeCommands,
          memory: {
            rssBeforeMiB: Number(rss0.toFixed(1)),
            rssAfterMiB: Number(rss1.toFixed(1)),
            heapUsedBeforeMiB: Number(heap0.toFixed(1)),
            heapUsedAfterMiB: Number(heap1.toFixed(1)),
            mibPer1000Endpoints: Number(perK.toFixed(2)),
            gcForced: Boolean(globalThis.gc),
          },
          samplesMs: Object.fromEntries(
            Object.entries(samples).map(([k, v]) => [k, v.map((x) => Number(x.toFixed(1)))]),
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
