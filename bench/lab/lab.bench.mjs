// Pod networking against the node network it rides on, on a real lab (root, network namespaces,
// calico-node with Felix and BIRD), in bgp and in vxlan mode — the measurement Calico deployment
// guides describe:
//
// - ping latency and iperf3 TCP throughput from a pod on n1 to a pod on n2, against the same from
//   node n1 to node n2, in the same run, in rounds that measure each side once; a ratio is the
//   median of the ratios within the rounds. Ratios are "as good as the node network" = 1: node
//   RTT / pod RTT, pod throughput / node throughput (aim: ≥ 0.95 in bgp mode, ≥ 0.8 in vxlan mode);
// - the same two measures on a bare path (bare-path.mjs): the lab's shape built from plain Linux,
//   with no Calico program, measured in the same rounds. Its ratio is what this host's kernel
//   allows for that shape, whatever programs it; lab pod against bare pod is what Calico costs;
// - the time from `lab pod create` returning (CNI ADD done, labels written, listener up) until a pod
//   on another node gets its first ping reply from the new pod;
// - the time from starting a pod on a node that has no block yet until its new block is routed in
//   every other node's kernel (BGP in bgp mode, Felix's vxlan.calico routes in vxlan mode).
//
// Reported, never asserted (a busy machine is not a failure). Each mode gets its own lab (own name
// and state directory), removed at the end, also on failure.
//
//   node bench/lab/lab.bench.mjs [--modes bgp,vxlan] [--rounds 5] [--seconds 3]
//                                [--ping-rounds 12] [--pings 200] [--ping-interval 0.001] [--out file.json]
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BarePath } from './bare-path.mjs';

const { values: args } = parseArgs({
  options: {
    modes: { type: 'string', default: 'bgp,vxlan' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '3' },
    'ping-rounds': { type: 'string', default: '12' },
    pings: { type: 'string', default: '200' },
    'ping-interval': { type: 'string', default: '0.001' },
    out: { type: 'string' },
  },
});
const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const LAB = join(ROOT, 'apps', 'lab', 'scripts', 'lab.mjs');
const OUT = args.out ?? join(HERE, '..', 'results', 'lab.json');
const ROUNDS = Number(args.rounds);
const SECONDS = Number(args.seconds);
const PINGS = Number(args.pings);
const PING_ROUNDS = Number(args['ping-rounds']);
const PING_INTERVAL = Number(args['ping-interval']);
/** The last CPU: the pings and, since softirqs run where the packet is sent, the path. */
const PING_CPU = cpus().length - 1;
const GOAL = { bgp: 0.95, vxlan: 0.8 };

function log(msg) {
  process.stderr.write(`lab bench: ${msg}\n`);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Run a command to completion; throws with its output when it fails. */
function run(cmd, argv, what = `${cmd} ${argv.join(' ')}`) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0)
    throw new Error(`${what} exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).slice(-800)}`);
  return r.stdout;
}

class Lab {
  constructor(mode, stateDir) {
    this.mode = mode;
    this.name = `bl${mode[0]}${Math.random().toString(16).slice(2, 6)}`;
    this.stateDir = stateDir;
  }
  cli(...argv) {
    return run(
      process.execPath,
      [LAB, '--name', this.name, '--state-dir', this.stateDir, ...argv],
      `lab ${argv.join(' ')}`,
    );
  }
  status() {
    return JSON.parse(this.cli('status', '-o', 'json'));
  }
}

/**
 * RTT in ms of `PINGS` pings from netns `from` to `ip`: the mean of the middle half of the
 * packets' times. Not ping's average: at these microseconds one late wake-up moves an average by
 * more than the path itself costs; and not their median, which ping's 1 µs steps make coarse
 * (8 against 10 µs is 0.80, with nothing between).
 *
 * The pings are `PING_INTERVAL` apart (1 ms) from one CPU (`PING_CPU`), so that they measure the
 * path rather than an idle CPU waking up: 5 ms apart and free to move, the node-to-pod ratio of one
 * bgp lab spread from 0.69 to 1.14 over ten rounds; 1 ms apart on one CPU, from 0.66 to 0.82.
 */
function pingRtt(from, ip) {
  const out = run('taskset', [
    '-c',
    String(PING_CPU),
    'ip',
    'netns',
    'exec',
    from,
    'ping',
    '-n',
    '-c',
    String(PINGS),
    '-i',
    String(PING_INTERVAL),
    '-W',
    '1',
    ip,
  ]);
  const times = [...out.matchAll(/time=([\d.]+) ms/g)].map((m) => Number(m[1]));
  if (times.length < PINGS / 2) throw new Error(`ping ${from} → ${ip}: ${times.length} of ${PINGS} replies`);
  return interquartileMean(times);
}

function interquartileMean(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.slice(Math.floor(s.length / 4), Math.ceil((s.length * 3) / 4));
  return mid.reduce((a, b) => a + b, 0) / mid.length;
}

/** The MTU of `dev` in netns `netns`. */
function mtuOf(netns, dev) {
  return JSON.parse(run('ip', ['-n', netns, '-j', 'link', 'show', dev]))[0].mtu;
}

/** TCP throughput in Gbit/s from netns `from` to an iperf3 server started in netns `to` at `ip`. */
async function iperf(from, to, ip) {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const server = spawn('ip', ['netns', 'exec', to, 'iperf3', '-s', '-1', '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let serverErr = '';
  server.stderr.on('data', (d) => {
    serverErr += d;
  });
  try {
    for (let i = 0; i < 50; i++) {
      const r = spawnSync('ip', ['netns', 'exec', to, 'ss', '-Htln', `sport = :${port}`], {
        encoding: 'utf8',
      });
      if (r.stdout.trim() !== '') break;
      await sleep(20);
    }
    const out = run('ip', [
      'netns',
      'exec',
      from,
      'iperf3',
      '-c',
      ip,
      '-p',
      String(port),
      '-t',
      String(SECONDS),
      '-J',
    ]);
    const bps = JSON.parse(out).end?.sum_received?.bits_per_second;
    if (typeof bps !== 'number')
      throw new Error(`iperf3 ${from} → ${ip}: no result (${serverErr.slice(-300)})`);
    return bps / 1e9;
  } finally {
    if (server.exitCode === null) server.kill('SIGTERM');
  }
}

/** A node's blackhole routes: its own blocks, as its BIRD programs them. */
function blackholes(netns) {
  const routes = JSON.parse(run('ip', ['-n', netns, '-j', 'route', 'show']));
  return new Set(routes.filter((r) => r.type === 'blackhole').map((r) => r.dst));
}

/** Routes to /26 blocks in a node's main table (not the node's own blackholes). */
function blockRoutes(netns) {
  const routes = JSON.parse(run('ip', ['-n', netns, '-j', 'route', 'show']));
  return new Set(routes.filter((r) => /\/26$/.test(r.dst) && r.type !== 'blackhole').map((r) => r.dst));
}

async function measureMode(mode) {
  const stateDir = await mkdtemp(join(tmpdir(), `calico-lab-bench-${mode}-`));
  const lab = new Lab(mode, join(stateDir, 'state'));
  let bare;
  try {
    log(`${mode}: lab up (3 nodes)`);
    lab.cli('up', '--nodes', '3', '--mode', mode);
    lab.cli('ns', 'create', 'bench');
    lab.cli('pod', 'create', 'bench/a', '--node', 'n1');
    lab.cli('pod', 'create', 'bench/b', '--node', 'n2');
    const s = lab.status();
    const node = (n) => s.nodes.find((x) => x.name === n);
    const pod = (n) => s.pods.find((p) => p.id === `bench/${n}`);
    const a = pod('a');
    const b = pod('b');
    if (!a?.netns || !b?.ip) throw new Error(`pods not found in lab status: ${JSON.stringify(s.pods)}`);
    const n1 = node('n1');
    const n2 = node('n2');

    // Assigned before `up()`, so that the `finally` below removes what a failed `up()` made.
    bare = new BarePath(mode, mtuOf(a.netns, 'eth0'));
    bare.up();
    const ends = {
      pod: { from: a.netns, to: b.netns, ip: b.ip },
      node: { from: n1.netns, to: n2.netns, ip: n2.ip },
      barePod: bare.ends.pod,
      bareNode: bare.ends.node,
      ctPod: { ...bare.ends.pod, conntrack: true },
      ctNode: { ...bare.ends.node, conntrack: true },
    };
    /** Pings one side; the bare path's conntrack table is on only for the `ct` sides. */
    const pingSide = (side) => {
      const e = ends[side];
      if (e.conntrack) bare.conntrack(true);
      try {
        return pingRtt(e.from, e.ip);
      } finally {
        if (e.conntrack) bare.conntrack(false);
      }
    };
    log(
      `${mode}: ping (${PING_ROUNDS} rounds) and iperf3 (${ROUNDS} rounds), pod a (n1) → pod b (n2), n1 → n2, and the same on the bare path`,
    );
    for (const side of Object.keys(ends)) pingSide(side); // warm-up: neighbours, conntrack
    const sides = Object.keys(ends);
    // Each round measures every side, in an order rotated from round to round so that no side
    // always runs first or last. This machine's pace drifts by ±15% over seconds, so ratios are
    // taken within each round and their median reported, rather than a ratio of medians.
    const rotated = (r, list = sides) => list.map((_, i) => list[(i + r) % list.length]);
    const ping = Object.fromEntries(sides.map((k) => [k, []]));
    const tput = { pod: [], node: [], barePod: [], bareNode: [] };
    for (let r = 0; r < PING_ROUNDS; r++) {
      for (const side of rotated(r)) ping[side].push(pingSide(side));
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of rotated(r, Object.keys(tput)))
        tput[side].push(await iperf(ends[side].from, ends[side].to, ends[side].ip));
    }
    bare.down();

    // A new pod on n3 (which has no block yet in bgp mode; in vxlan mode its tunnel address already
    // took one at start-up). Measured: the new block routed in n1's and n2's kernels, from the
    // moment n3's own kernel has its blackhole (n3's BIRD has the block: BGP propagation), and from
    // the start of `lab pod create`; and, from `lab pod create` returning, the first reply to a ping
    // from pod b on n2. Polled every few ms, so each figure is good to about ±10 ms.
    log(`${mode}: new pod on n3: block routed elsewhere, first reply`);
    const n3 = node('n3');
    const before = { n1: blockRoutes(n1.netns), n2: blockRoutes(n2.netns), n3: blackholes(n3.netns) };
    const t0 = performance.now();
    const seenAt = {};
    let creating = true;
    const watcher = (async () => {
      while (creating || Object.keys(seenAt).length < (mode === 'bgp' ? 3 : 2)) {
        if (seenAt.n3 === undefined && [...blackholes(n3.netns)].some((d) => !before.n3.has(d)))
          seenAt.n3 = performance.now() - t0;
        for (const n of ['n1', 'n2']) {
          if (seenAt[n] !== undefined) continue;
          if ([...blockRoutes(node(n).netns)].some((d) => !before[n].has(d)))
            seenAt[n] = performance.now() - t0;
        }
        if (performance.now() - t0 > (creating ? 30_000 : createdAtMs() + 5_000)) break;
        await sleep(2);
      }
    })();
    let createdAt = 0;
    const createdAtMs = () => createdAt - t0;
    const created = lab.cli('pod', 'create', 'bench/c', '--node', 'n3');
    createdAt = performance.now();
    creating = false;
    const ip = /: (\d+\.\d+\.\d+\.\d+) /.exec(created)?.[1];
    if (!ip) throw new Error(`no address in: ${created}`);
    let firstReplyMs = null;
    while (performance.now() - createdAt < 10_000) {
      const r = spawnSync('ip', ['netns', 'exec', b.netns, 'ping', '-n', '-c', '1', '-W', '0.2', ip]);
      if (r.status === 0) {
        firstReplyMs = performance.now() - createdAt;
        break;
      }
    }
    await watcher;
    const routedEverywhere =
      seenAt.n1 !== undefined && seenAt.n2 !== undefined ? Math.max(seenAt.n1, seenAt.n2) : null;
    const blockRoutedMs =
      routedEverywhere !== null && seenAt.n3 !== undefined ? routedEverywhere - seenAt.n3 : null;

    const pm = Object.fromEntries(sides.map((k) => [k, median(ping[k])]));
    const tm = Object.fromEntries(Object.keys(tput).map((k) => [k, median(tput[k])]));
    /** The median over rounds of `top[i] / bottom[i]`. */
    const pairedRatio = (top, bottom) => median(top.map((x, i) => x / bottom[i]));
    return {
      mode,
      pingMs: { ...pm, samples: ping },
      pingRatio: pairedRatio(ping.node, ping.pod),
      barePingRatio: pairedRatio(ping.bareNode, ping.barePod),
      podPingAgainstBare: pairedRatio(ping.barePod, ping.pod),
      ctPingRatio: pairedRatio(ping.ctNode, ping.ctPod),
      podPingAgainstCt: pairedRatio(ping.ctPod, ping.pod),
      throughputGbps: { ...tm, samples: tput },
      throughputRatio: pairedRatio(tput.pod, tput.node),
      bareThroughputRatio: pairedRatio(tput.barePod, tput.bareNode),
      podThroughputAgainstBare: pairedRatio(tput.pod, tput.barePod),
      goal: GOAL[mode],
      podCreateCliMs: createdAt - t0,
      firstReplyAfterCreateMs: firstReplyMs,
      newBlockRoutedAfterOwnerMs: blockRoutedMs,
      newBlockRoutedAfterCreateStartMs: routedEverywhere,
    };
  } finally {
    bare?.down();
    if (existsSync(join(lab.stateDir, 'state.json'))) {
      const r = spawnSync(process.execPath, [LAB, '--name', lab.name, '--state-dir', lab.stateDir, 'down'], {
        encoding: 'utf8',
      });
      if (r.status !== 0) log(`lab down failed: ${r.stderr}`);
    }
    await rm(stateDir, { recursive: true, force: true });
  }
}

async function main() {
  if (process.getuid?.() !== 0) {
    console.log('lab bench: needs root (network namespaces); skipped');
    return;
  }
  const missing = ['iperf3', 'ping', 'ss', 'taskset'].filter(
    (c) => spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0,
  );
  if (missing.length > 0) {
    console.log(`lab bench: missing ${missing.join(', ')} (./scripts/setup.sh installs them); skipped`);
    return;
  }
  const started = new Date();
  const results = [];
  for (const mode of args.modes.split(',')) results.push(await measureMode(mode));

  const f = (x, d = 2) => (x === null ? 'n/a' : x.toFixed(d));
  const ms = (x, d = 0) => (x === null ? 'n/a' : `${x.toFixed(d)} ms`);
  console.log(
    `lab: 3 nodes; ping ${PING_ROUNDS} rounds of ${PINGS}, ${PING_INTERVAL * 1000} ms apart on CPU ${PING_CPU}; iperf3 ${ROUNDS} rounds of ${SECONDS} s; ${cpus().length} CPUs; load ${loadavg()[0].toFixed(2)}\n`,
  );
  console.log(
    '| mode | measure | pod → pod (n1 → n2) | node → node | ratio | goal | bare pod → pod | bare node → node | bare ratio | lab pod / bare pod |',
  );
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    const p = r.pingMs;
    const t = r.throughputGbps;
    const us = (x) => f(x * 1000, 2);
    console.log(
      `| ${r.mode} | ping RTT, µs | ${us(p.pod)} | ${us(p.node)} | ${f(r.pingRatio)} | ≥ ${r.goal} | ${us(p.barePod)} | ${us(p.bareNode)} | ${f(r.barePingRatio)} | ${f(r.podPingAgainstBare)} |`,
    );
    console.log(
      `| ${r.mode} | ping RTT, µs, bare + conntrack | ${us(p.pod)} | ${us(p.node)} | ${f(r.pingRatio)} | ≥ ${r.goal} | ${us(p.ctPod)} | ${us(p.ctNode)} | ${f(r.ctPingRatio)} | ${f(r.podPingAgainstCt)} |`,
    );
    console.log(
      `| ${r.mode} | TCP throughput, Gbit/s | ${f(t.pod)} | ${f(t.node)} | ${f(r.throughputRatio)} | ≥ ${r.goal} | ${f(t.barePod)} | ${f(t.bareNode)} | ${f(r.bareThroughputRatio)} | ${f(r.podThroughputAgainstBare)} |`,
    );
  }
  console.log(
    "\n| mode | `lab pod create` on n3 | first reply from n2 after it returned | n3's new block routed on n1 and n2: after its blackhole on n3 | … after the create began |",
  );
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    console.log(
      `| ${r.mode} | ${ms(r.podCreateCliMs, 0)} | ${ms(r.firstReplyAfterCreateMs, 1)} | ${ms(r.newBlockRoutedAfterOwnerMs, 0)} | ${ms(r.newBlockRoutedAfterCreateStartMs, 0)} |`,
    );
  }
  console.log(
    '\nratios: node RTT / pod RTT and pod throughput / node throughput (1 = as good as the node network);',
  );
  for (const line of [
    'bare: the same shape in plain Linux, no Calico program (bench/lab/bare-path.mjs); its ratio is the most any',
    'implementation can reach on this host. "bare + conntrack" adds the least a stateful policy needs: one table',
    'accepting established traffic, which turns connection tracking on. lab pod / bare pod: bare RTT / lab RTT,',
    'lab throughput / bare throughput.',
  ])
    console.log(line);
  console.log(
    'ping RTT: per round the mean of the middle half of the packets, then the median of the rounds; each ratio is',
  );
  console.log('the median of the ratios within each round.');

  await mkdir(dirname(OUT), { recursive: true });
  await writeFile(
    OUT,
    `${JSON.stringify({ bench: 'lab', started: started.toISOString(), rounds: ROUNDS, seconds: SECONDS, pings: PINGS, pingRounds: PING_ROUNDS, cpus: cpus().length, loadavg1: loadavg()[0], results }, null, 2)}\n`,
  );
  log(`wrote ${OUT}`);
}

await main();
