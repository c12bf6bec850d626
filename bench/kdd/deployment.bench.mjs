// A Deployment's pods to Ready on a real cluster (`lab up --kubelet`, Calico from calico.yaml on
// the Kubernetes datastore), against the same cluster's nodes on the reference `bridge` +
// `host-local` CNI, in one run on one lab.
//
// Each round creates a Deployment of --replicas pods (the lab's httpd image, an HTTP readiness
// probe on port 80 every second, so Ready means kubelet reached the pod over its network) and
// times from the create request to the watch event that shows the last of them Ready; then the
// Deployment is deleted and the round waits until its pods are gone.
//
// The two sides share everything but the CNI: the same API server, scheduler, kubelets,
// containerd, image and Deployment. Each node's containerd reads the lowest-sorted configuration
// in its /etc/cni/net.d (`max_conf_num = 1`) and watches the directory, so
//
//   side A (Calico)  the node's net.d as install-cni left it: 10-calico.conflist (the calico
//                    plugin, Calico IPAM, the manifest's chain), Felix programming each endpoint;
//   side B (bridge)  05-ref-bridge.conflist written beside it: Debian's reference `bridge`
//                    (isGateway, no masquerade) with `host-local` on a range of the node's own
//                    (198.18.(160+X).0/24, outside Calico's pool and the lab's other ranges), its
//                    state in the bench's directory; removed again for side A.
//
// calico-node keeps running during side B (it is the same cluster); its agents see no endpoint of
// side B's pods. Every pod's address is checked against its side's range, so a round a node ran on
// the wrong configuration fails the bench rather than counting. Sides alternate A B, B A, ... so
// drift in the machine's load falls on both; one untimed warm-up round of each side goes first.
// API requests during each timed part are counted from kube-apiserver's `apiserver_request_total`
// (everything the cluster asked for while the pods came up: kubelets, calico-node, controllers).
//
// Reported, never asserted. The lab is removed at the end, also on failure (unless --state-dir
// names a lab that was already up: then it is used and left as it was found).
//
//   node bench/kdd/deployment.bench.mjs [--replicas 30] [--rounds 3] [--nodes 3] [--out file.json]
//                                       [--name NAME --state-dir DIR]   (an existing --kubelet lab)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AppsV1Api, CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';

const { values: args } = parseArgs({
  options: {
    replicas: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '3' },
    nodes: { type: 'string', default: '3' },
    out: { type: 'string' },
    name: { type: 'string' },
    'state-dir': { type: 'string' },
    inside: { type: 'boolean', default: false },
  },
});
const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const LAB = join(ROOT, 'apps', 'lab', 'scripts', 'lab.mjs');
const OUT = args.out ?? join(HERE, '..', 'results', 'deployment.json');
const REPLICAS = Number(args.replicas);
const ROUNDS = Number(args.rounds);
const NODES = Number(args.nodes);
for (const [k, v] of Object.entries({ replicas: REPLICAS, rounds: ROUNDS, nodes: NODES }))
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${k}: want a whole number ≥ 1, got ${args[k]}`);
if (Boolean(args.name) !== Boolean(args['state-dir']))
  throw new Error('--name and --state-dir go together (an existing lab), or neither');
const IMAGE = 'calico-ts/httpd:v0.1.0';
const NS = 'deploy-bench';
const REF_CONFLIST = '05-ref-bridge.conflist';
const REF_BRIDGE = 'refbr0';
const REF_PLUGINS = ['bridge', 'host-local', 'loopback'];
const REF_PLUGIN_DIR = '/usr/lib/cni';
const refSubnet = (i) => `198.18.${160 + i}.0/24`;
const inRef = (ip) => /^198\.18\.1[6-9]\d\./.test(ip);
const inCalico = (ip) => ip.startsWith('198.19.');

const log = (msg) => process.stderr.write(`deployment bench: ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const reuse = Boolean(args['state-dir']);
const name = args.name ?? `dp${Math.random().toString(16).slice(2, 6)}`;
const dir = await mkdtemp(join(tmpdir(), 'calico-bench-deployment-'));
const stateDir = args['state-dir'] ?? join(dir, 'state');

function lab(...a) {
  const r = spawnSync(process.execPath, [LAB, '--name', name, '--state-dir', stateDir, ...a], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`lab ${a.join(' ')} exited ${r.status ?? r.signal}`);
  return r.stdout;
}

/** Each node's net.d and CNI bin directory as the machine sees them (bound into the node). */
function nodeDirs() {
  const nodesDir = join(stateDir, 'nodes');
  const out = [];
  for (const node of readdirSync(nodesDir).sort()) {
    const host = join(nodesDir, node, 'k8s', 'host');
    const netD = join(host, 'etc-cni-net.d');
    const binDir = join(host, 'opt-cni-bin');
    if (!existsSync(netD) || !existsSync(binDir))
      throw new Error(`${node}: no ${netD} or ${binDir}: is this a --kubelet lab?`);
    out.push({ node, netD, binDir });
  }
  if (out.length === 0) throw new Error(`no nodes under ${nodesDir}`);
  return out;
}

/** The admin kubeconfig the lab writes for `lab kubectl`. */
function adminKubeconfig() {
  const f = join(stateDir, 'kubeconfig');
  if (!existsSync(f)) throw new Error(`no admin kubeconfig at ${f}: is the lab up?`);
  return f;
}

/** kube-apiserver's request counters, summed by verb and resource. */
async function requestCounts(kc) {
  const url = new URL(kc.getCurrentCluster().server);
  const opts = { host: url.hostname, port: url.port, path: '/metrics', method: 'GET', headers: {} };
  await kc.applyToHTTPSOptions(opts);
  const text = await new Promise((resolve, reject) => {
    const req = request(opts, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(Buffer.concat(chunks).toString('utf8'))
          : reject(new Error(`GET /metrics: ${res.statusCode}`)),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  const out = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = /[{,]verb="([^"]*)"/.exec(line)?.[1];
    const resource = /[{,]resource="([^"]*)"/.exec(line)?.[1];
    const sub = /[{,]subresource="([^"]*)"/.exec(line)?.[1];
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!verb || !resource || !Number.isFinite(value)) continue;
    const k = `${verb} ${resource}${sub ? `/${sub}` : ''}`;
    out[k] = (out[k] ?? 0) + value;
  }
  return out;
}

function countsBetween(before, after) {
  const per = {};
  let total = 0;
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d > 0 && !k.startsWith('GET metrics')) {
      per[k] = d;
      total += d;
    }
  }
  return { total, per: Object.fromEntries(Object.entries(per).sort((a, b) => b[1] - a[1])) };
}

/** Puts side B's configuration on every node (or takes it away for side A). */
async function useSide(side, nodes) {
  for (const [i, n] of nodes.entries()) {
    const path = join(n.netD, REF_CONFLIST);
    if (side === 'calico') {
      await rm(path, { force: true });
      // The bridge outlives its pods; left there, calico-node's first-found autodetection would
      // take its address for the node's the next time it starts.
      spawnSync('ip', ['-n', `${name}-${n.node}`, 'link', 'del', REF_BRIDGE], { stdio: 'ignore' });
      continue;
    }
    const conf = {
      cniVersion: '1.0.0',
      name: 'ref-bridge',
      plugins: [
        {
          type: 'bridge',
          bridge: REF_BRIDGE,
          isGateway: true,
          ipMasq: false,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: refSubnet(i + 1) }]],
            dataDir: join(dir, 'host-local', n.node),
          },
        },
      ],
    };
    // Written aside and renamed in: containerd never reads half a file (`.tmp` is no CNI name).
    await writeFile(`${path}.tmp`, `${JSON.stringify(conf, null, 2)}\n`);
    await rename(`${path}.tmp`, path);
  }
  // containerd reloads net.d on the directory's change; the addresses below prove it did.
  await sleep(3000);
}

/** Pods of the Deployment by name → { ready, ip }, kept current by a watch. */
function watchPods(kc, selector, onChange) {
  const pods = new Map();
  const w = new Watch(kc);
  const aborted = w.watch(
    `/api/v1/namespaces/${NS}/pods`,
    { labelSelector: selector },
    (type, pod) => {
      if (type === 'DELETED') pods.delete(pod.metadata.name);
      else if (type === 'ADDED' || type === 'MODIFIED')
        pods.set(pod.metadata.name, {
          ready: Boolean(pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
          ip: pod.status?.podIP,
          node: pod.spec?.nodeName,
        });
      onChange(pods);
    },
    (err) => {
      if (err && err.name !== 'AbortError') log(`watch ended: ${err.message ?? err}`);
    },
  );
  return { pods, stop: async () => (await aborted).abort() };
}

function deployment(dname) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: dname, namespace: NS },
    spec: {
      replicas: REPLICAS,
      selector: { matchLabels: { app: dname } },
      template: {
        metadata: { labels: { app: dname } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'httpd',
              image: IMAGE,
              imagePullPolicy: 'IfNotPresent',
              ports: [{ containerPort: 80 }],
              readinessProbe: { httpGet: { path: '/', port: 80 }, periodSeconds: 1, failureThreshold: 1 },
            },
          ],
        },
      },
    },
  };
}

let seq = 0;
/** One round: create, time to all Ready, delete, wait for the pods to be gone. */
async function round(kc, apps, side) {
  const dname = `d${side === 'calico' ? 'a' : 'b'}${++seq}`;
  const selector = `app=${dname}`;
  let done;
  const allReady = new Promise((r) => {
    done = r;
  });
  let t1;
  const w = watchPods(kc, selector, (pods) => {
    if (t1 !== undefined) return;
    let ready = 0;
    for (const p of pods.values()) if (p.ready) ready++;
    if (ready >= REPLICAS) {
      t1 = performance.now();
      done();
    }
  });
  await sleep(500); // the watch is open before the create
  const load = loadavg()[0];
  const before = await requestCounts(kc);
  const t0 = performance.now();
  await apps.createNamespacedDeployment({ namespace: NS, body: deployment(dname) });
  const timeout = setTimeout(() => done(), 600_000);
  await allReady;
  clearTimeout(timeout);
  if (t1 === undefined) throw new Error(`${dname}: not all ${REPLICAS} pods Ready within 600 s`);
  const requests = countsBetween(before, await requestCounts(kc));
  const seconds = (t1 - t0) / 1000;
  const wrong = [...w.pods.entries()].filter(([, p]) => !(side === 'calico' ? inCalico : inRef)(p.ip ?? ''));
  if (wrong.length > 0)
    throw new Error(
      `${dname} (${side}): pods with an address not of their side: ${wrong.map(([n, p]) => `${n} ${p.ip} on ${p.node}`).join(', ')}`,
    );
  const perNode = {};
  for (const p of w.pods.values()) perNode[p.node] = (perNode[p.node] ?? 0) + 1;

  const d0 = performance.now();
  await apps.deleteNamespacedDeployment({ name: dname, namespace: NS });
  const end = Date.now() + 300_000;
  while (w.pods.size > 0) {
    if (Date.now() > end) throw new Error(`${dname}: pods still there 300 s after the delete`);
    await sleep(200);
  }
  const deleteSeconds = (performance.now() - d0) / 1000;
  await w.stop();
  log(
    `${side.padEnd(6)} ${dname}: ${REPLICAS} Ready in ${seconds.toFixed(2)} s, gone in ${deleteSeconds.toFixed(1)} s, ` +
      `${requests.total} API requests, load ${load.toFixed(1)}, per node ${JSON.stringify(perNode)}`,
  );
  return {
    side,
    deployment: dname,
    seconds,
    deleteSeconds,
    load,
    requests: requests.total,
    requestsPer: requests.per,
    perNode,
  };
}

if (!args.inside) {
  // The API server is reachable only from the lab's etcd namespace: the rounds run in a child
  // there (`nsenter --net`, as `lab kubectl` does); this process brings the lab up and down.
  let status = 1;
  try {
    if (!reuse) {
      const t = performance.now();
      lab('up', '--kubelet', '--nodes', String(NODES));
      log(`lab up --kubelet (${NODES} nodes, manifest): ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
    const state = JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8'));
    const etcdNetns = state.plan?.etcdNetns;
    if (!etcdNetns) throw new Error(`${stateDir}/state.json names no etcd namespace`);
    const child = spawnSync(
      'nsenter',
      [
        `--net=/run/netns/${etcdNetns}`,
        process.execPath,
        fileURLToPath(import.meta.url),
        '--inside',
        ...['--name', name, '--state-dir', stateDir, '--out', OUT],
        ...['--replicas', String(REPLICAS), '--rounds', String(ROUNDS), '--nodes', String(NODES)],
      ],
      { stdio: 'inherit' },
    );
    status = child.status ?? 1;
  } finally {
    if (!reuse && existsSync(join(stateDir, 'state.json')))
      spawnSync(process.execPath, [LAB, '--name', name, '--state-dir', stateDir, 'down'], {
        stdio: 'ignore',
      });
    await rm(dir, { recursive: true, force: true });
  }
  process.exit(status);
}

const results = { replicas: REPLICAS, rounds: ROUNDS, nodes: NODES, machine: { loadStart: loadavg() } };
let failed;
const nodes = nodeDirs();
try {
  for (const n of nodes)
    for (const p of REF_PLUGINS) {
      const target = join(n.binDir, p);
      if (!existsSync(target)) await symlink(join(REF_PLUGIN_DIR, p), target);
    }
  const kc = new KubeConfig();
  kc.loadFromFile(adminKubeconfig());
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } }).catch((e) => {
    if (e.code !== 409) throw e;
  });

  const order = [];
  for (let r = 0; r < ROUNDS; r++) order.push(...(r % 2 === 0 ? ['calico', 'bridge'] : ['bridge', 'calico']));
  results.warmup = [];
  for (const side of ['calico', 'bridge']) {
    await useSide(side, nodes);
    results.warmup.push(await round(kc, apps, side));
  }
  results.timed = [];
  let current = 'bridge';
  for (const side of order) {
    if (side !== current) await useSide(side, nodes);
    current = side;
    results.timed.push(await round(kc, apps, side));
  }
  await core.deleteNamespace({ name: NS });
} catch (e) {
  failed = e;
} finally {
  await useSide('calico', nodes).catch(() => {});
  await rm(dir, { recursive: true, force: true });
}
if (failed) throw failed;
results.machine.loadEnd = loadavg();

const side = (s) => results.timed.filter((r) => r.side === s);
const summary = (s) => ({
  p50: median(side(s).map((r) => r.seconds)),
  min: Math.min(...side(s).map((r) => r.seconds)),
  max: Math.max(...side(s).map((r) => r.seconds)),
  requests: median(side(s).map((r) => r.requests)),
  load: median(side(s).map((r) => r.load)),
});
results.calico = summary('calico');
results.bridge = summary('bridge');
results.ratio = results.calico.p50 / results.bridge.p50;
// Paired: each Calico round against the bridge round next to it.
results.pairedRatio = median(
  Array.from({ length: ROUNDS }, (_, r) => {
    const pair = results.timed.slice(2 * r, 2 * r + 2);
    const a = pair.find((x) => x.side === 'calico');
    const b = pair.find((x) => x.side === 'bridge');
    return a.seconds / b.seconds;
  }),
);
await mkdir(dirname(OUT), { recursive: true });
await writeFile(OUT, `${JSON.stringify(results, null, 2)}\n`);
const f = (x) => x.toFixed(2);
const c = results.calico;
const b = results.bridge;
console.log(`| ${REPLICAS}-replica Deployment to all Ready (${ROUNDS} rounds a side, ${NODES} nodes) | p50 | min–max | API requests (p50) | load (p50) |
| --- | --- | --- | --- | --- |
| Calico (calico.yaml, Kubernetes datastore) | ${f(c.p50)} s | ${f(c.min)}–${f(c.max)} s | ${c.requests} | ${f(c.load)} |
| reference bridge + host-local | ${f(b.p50)} s | ${f(b.min)}–${f(b.max)} s | ${b.requests} | ${f(b.load)} |
| ratio Calico / bridge | ${f(results.ratio)} (paired ${f(results.pairedRatio)}) | | | |
`);
