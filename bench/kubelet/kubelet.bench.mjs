// The lab as a real cluster (`lab up --kubelet`): what users of a Kubernetes cluster with Calico
// measure, each against a reference taken in the same run on the same machine.
//
// - bring-up: `lab up --kubelet` (3 nodes, Calico from its manifest) until the DaemonSet is ready
//   and every Node Ready;
// - pod start: a Deployment of --pods replicas, from `kubectl create` to every pod Ready;
// - the seed guides' shapes on pods kubelet made: ping RTT and iperf3 TCP throughput from a pod on
//   n1 to a pod on n2 against the same between the nodes n1 and n2 (the machine's ping and iperf3
//   run in the pod's network namespace, entered through its container's process, so both sides use
//   one tool); `ab` from a pod against the Deployment's ClusterIP Service (kube-proxy, nftables)
//   against the same pods' addresses directly;
// - churn: --cycles of scaling the Deployment 0 → --churn-pods → 0, kube-apiserver restarted once
//   in the middle of a cycle; every address seen is checked for duplicates among the pods alive at
//   once, and after the last cycle no WorkloadEndpoint of the Deployment may be left and
//   `calicoctl ipam check` must find no problem.
//
// Reported, never asserted. The lab is removed at the end, also on failure.
//
//   node bench/kubelet/kubelet.bench.mjs [--pods 30] [--cycles 3] [--churn-pods 60] [--seconds 3]
//                                        [--out file.json]
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '30' },
    cycles: { type: 'string', default: '3' },
    'churn-pods': { type: 'string', default: '60' },
    seconds: { type: 'string', default: '3' },
    out: { type: 'string' },
  },
});
const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const LAB = join(ROOT, 'apps', 'lab', 'scripts', 'lab.mjs');
const OUT = args.out ?? join(HERE, '..', 'results', 'kubelet.json');
const PODS = Number(args.pods);
const CYCLES = Number(args.cycles);
const CHURN_PODS = Number(args['churn-pods']);
const SECONDS = Number(args.seconds);
const IMAGE = 'calico-ts/httpd:v0.1.0';

const log = (msg) => process.stderr.write(`kubelet bench: ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function run(cmd, argv, what = `${cmd} ${argv.join(' ')}`) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0)
    throw new Error(`${what} exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).slice(-800)}`);
  return r.stdout;
}

const name = `bk${Math.random().toString(16).slice(2, 6)}`;
let stateDir = '';
const lab = (...a) =>
  run(process.execPath, [LAB, '--name', name, '--state-dir', stateDir, ...a], `lab ${a.join(' ')}`);
const kubectl = (...a) => lab('kubectl', ...a);
const json = (...a) => JSON.parse(kubectl(...a, '-o', 'json'));
const netns = (node) => `${name}-${node}`;

async function until(what, f, withinMs = 300_000) {
  const end = Date.now() + withinMs;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${withinMs / 1000} s`);
    await sleep(250);
  }
}

/** The main process of a pod's (only) container, found in its node's cgroup root. */
function podPid(pod) {
  const id = pod.status.containerStatuses[0].containerID.replace(/^containerd:\/\//, '');
  const root = `/sys/fs/cgroup/pids/calico-lab-${name}-${pod.spec.nodeName}`;
  const found = run('find', [root, '-type', 'd', '-name', id]).trim().split('\n')[0];
  if (!found) throw new Error(`no cgroup for container ${id} of ${pod.metadata.name}`);
  const pids = readFileSync(join(found, 'cgroup.procs'), 'utf8').trim().split('\n').map(Number);
  return Math.min(...pids);
}

function ping(enter, ip, count = 200) {
  const out = run('nsenter', [...enter, 'ping', '-q', '-c', String(count), '-i', '0.002', ip]);
  const m = /= [\d.]+\/([\d.]+)\//.exec(out);
  return Number(m[1]);
}

/** iperf3 TCP Mbit/s from `client` (nsenter args) to `server` at `ip`, in one run of SECONDS. */
async function iperf(server, client, ip) {
  const s = spawn('nsenter', [...server, 'iperf3', '-s', '-1', '-p', '5201'], { stdio: 'ignore' });
  await sleep(300);
  try {
    const out = run('nsenter', [...client, 'iperf3', '-c', ip, '-p', '5201', '-t', String(SECONDS), '-J']);
    return JSON.parse(out).end.sum_received.bits_per_second / 1e6;
  } finally {
    s.kill();
  }
}

/** `ab` from the client pod: requests per second. */
function ab(target, n = 2000) {
  const out = kubectl('exec', 'client', '--', 'ab', '-q', '-n', String(n), '-c', '8', `http://${target}/`);
  return Number(/Requests per second:\s+([\d.]+)/.exec(out)[1]);
}

const results = { machine: { load: loadavg()[0] } };
const dir = await mkdtemp(join(tmpdir(), 'calico-bench-kubelet-'));
stateDir = join(dir, 'state');
try {
  let t0 = performance.now();
  lab('up', '--kubelet', '--nodes', '3');
  results.upSeconds = (performance.now() - t0) / 1000;
  log(`lab up --kubelet (3 nodes, manifest): ${results.upSeconds.toFixed(1)} s`);

  t0 = performance.now();
  kubectl('create', 'deployment', 'web', `--image=${IMAGE}`, `--replicas=${PODS}`);
  kubectl('rollout', 'status', 'deployment/web', '--timeout=600s');
  results.podStart = { pods: PODS, seconds: (performance.now() - t0) / 1000 };
  results.podStart.podsPerSecond = PODS / results.podStart.seconds;
  log(
    `${PODS} pods Ready in ${results.podStart.seconds.toFixed(1)} s (${results.podStart.podsPerSecond.toFixed(2)}/s)`,
  );
  kubectl('run', 'client', `--image=${IMAGE}`);
  kubectl('wait', '--for=condition=Ready', 'pod/client', '--timeout=120s');
  kubectl('expose', 'deployment', 'web', '--port=80');

  // One pod on n1, one on n2, and the nodes under them.
  const pods = json('get', 'pods', '-l', 'app=web').items;
  const a = pods.find((p) => p.spec.nodeName === 'n1');
  const b = pods.find((p) => p.spec.nodeName === 'n2');
  const podA = ['-t', String(podPid(a)), '-n'];
  const podB = ['-t', String(podPid(b)), '-n'];
  const nodeA = [`--net=/run/netns/${netns('n1')}`];
  const nodeB = [`--net=/run/netns/${netns('n2')}`];
  const nodeIp = (n) => json('get', 'node', n).status.addresses.find((x) => x.type === 'InternalIP').address;
  const ipB = nodeIp('n2');
  const rounds = [];
  for (let i = 0; i < 5; i++) {
    rounds.push({
      podRtt: ping(podA, b.status.podIP),
      nodeRtt: ping(nodeA, ipB),
      podMbps: await iperf(podB, podA, b.status.podIP),
      nodeMbps: await iperf(nodeB, nodeA, ipB),
    });
  }
  results.path = {
    rounds,
    pingRatio: median(rounds.map((r) => r.nodeRtt / r.podRtt)),
    throughputRatio: median(rounds.map((r) => r.podMbps / r.nodeMbps)),
  };
  log(
    `pod/node: RTT ratio ${results.path.pingRatio.toFixed(2)} (node RTT / pod RTT), ` +
      `throughput ratio ${results.path.throughputRatio.toFixed(2)}`,
  );
  const svc = json('get', 'service', 'web').spec.clusterIP;
  const abRounds = [];
  for (let i = 0; i < 3; i++) abRounds.push({ service: ab(svc), pod: ab(b.status.podIP) });
  results.ab = { rounds: abRounds, ratio: median(abRounds.map((r) => r.service / r.pod)) };
  log(`ab: Service / pod requests per second ${results.ab.ratio.toFixed(2)}`);

  // Churn: 0 → CHURN_PODS → 0, CYCLES times; the API server restarted in the middle of one.
  kubectl('delete', 'service', 'web');
  kubectl('scale', 'deployment', 'web', '--replicas=0');
  await until('web at 0', () => (json('get', 'pods', '-l', 'app=web').items.length === 0 ? true : undefined));
  const churn = { cycles: [], duplicates: 0 };
  for (let c = 0; c < CYCLES; c++) {
    t0 = performance.now();
    kubectl('scale', 'deployment', 'web', `--replicas=${CHURN_PODS}`);
    let restarted = false;
    const seenDup = new Set();
    await until(`cycle ${c + 1}: ${CHURN_PODS} Running`, async () => {
      if (c === Math.floor(CYCLES / 2) && !restarted) {
        // kube-apiserver restarted mid-cycle, with pods still being made.
        restarted = true;
        const t = performance.now();
        lab('restart', 'kube-apiserver');
        log(
          `cycle ${c + 1}: kube-apiserver restarted (${((performance.now() - t) / 1000).toFixed(1)} s to /readyz)`,
        );
      }
      const items = json('get', 'pods', '-l', 'app=web').items.filter((p) => p.status.podIP);
      const byIp = new Map();
      for (const p of items) {
        if (byIp.has(p.status.podIP) && byIp.get(p.status.podIP) !== p.metadata.name)
          seenDup.add(p.status.podIP);
        byIp.set(p.status.podIP, p.metadata.name);
      }
      const ready = items.filter((p) =>
        p.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
      );
      return ready.length === CHURN_PODS ? true : undefined;
    });
    const up = (performance.now() - t0) / 1000;
    kubectl('scale', 'deployment', 'web', '--replicas=0');
    await until(`cycle ${c + 1}: 0 pods`, () =>
      json('get', 'pods', '-l', 'app=web').items.length === 0 ? true : undefined,
    );
    churn.duplicates += seenDup.size;
    churn.cycles.push({
      upSeconds: up,
      totalSeconds: (performance.now() - t0) / 1000,
      duplicates: seenDup.size,
    });
    log(
      `cycle ${c + 1}: ${CHURN_PODS} Running in ${up.toFixed(1)} s, 0 again in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  }
  const weps = lab('calicoctl', 'get', 'workloadendpoints', '-n', 'default').trim().split('\n').slice(1);
  const check = lab('calicoctl', 'ipam', 'check');
  churn.workloadEndpointsLeft = weps.filter((l) => l.includes('web-')).length;
  churn.ipamCheck = /Check complete; found (\d+) problems/.exec(check)?.[1];
  results.churn = churn;
  log(
    `churn: ${CYCLES} cycles of 0 → ${CHURN_PODS} → 0, ${churn.duplicates} duplicate addresses, ` +
      `${churn.workloadEndpointsLeft} WorkloadEndpoints left, ipam check found ${churn.ipamCheck} problems`,
  );
} finally {
  if (existsSync(join(stateDir, 'state.json')))
    spawnSync(process.execPath, [LAB, '--name', name, '--state-dir', stateDir, 'down'], { stdio: 'ignore' });
  await rm(dir, { recursive: true, force: true });
}
await mkdir(dirname(OUT), { recursive: true });
await writeFile(OUT, `${JSON.stringify(results, null, 2)}\n`);
const r = results;
console.log(`| measure | value | reference | ratio |
| --- | --- | --- | --- |
| lab up --kubelet, 3 nodes | ${r.upSeconds.toFixed(1)} s | | |
| ${r.podStart.pods} pods to Ready | ${r.podStart.seconds.toFixed(1)} s | | ${r.podStart.podsPerSecond.toFixed(2)} pods/s |
| ping RTT n1 pod → n2 pod | ${median(r.path.rounds.map((x) => x.podRtt)).toFixed(3)} ms | node → node ${median(r.path.rounds.map((x) => x.nodeRtt)).toFixed(3)} ms | ${r.path.pingRatio.toFixed(2)} |
| iperf3 TCP n1 pod → n2 pod | ${median(r.path.rounds.map((x) => x.podMbps)).toFixed(0)} Mbit/s | node → node ${median(r.path.rounds.map((x) => x.nodeMbps)).toFixed(0)} Mbit/s | ${r.path.throughputRatio.toFixed(2)} |
| ab via ClusterIP Service | ${median(r.ab.rounds.map((x) => x.service)).toFixed(0)} req/s | pod address ${median(r.ab.rounds.map((x) => x.pod)).toFixed(0)} req/s | ${r.ab.ratio.toFixed(2)} |
| churn ${CYCLES} × 0 → ${CHURN_PODS} → 0 (API server restarted once) | ${r.churn.duplicates} duplicates, ${r.churn.workloadEndpointsLeft} endpoints left, ${r.churn.ipamCheck} IPAM problems | | |
`);
