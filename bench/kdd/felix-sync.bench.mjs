// Felix from start to in-sync on the Kubernetes datastore, against the same start on an etcd
// datastore holding the same resources, in one run (issue 15). Reported, never asserted.
//
// The cluster: a real kube-apiserver (startKubeApiServer, CRDs from deploy/crds), one Node, NS
// namespaces, P Pods bound to the Node with the CNI plugin's annotations (podIP(s), containerID)
// so each is a WorkloadEndpoint, C Calico NetworkPolicies (written by the typed client) and K
// Kubernetes NetworkPolicies. The etcd side: a private etcd holding every key Felix's resources
// read from the Kubernetes datastore (WorkloadEndpoints, kns./ksa. Profiles, knp.default. policies,
// the Node, the CRD-backed kinds), copied key for key, so both sides hand Felix the same model.
//
// Each start is a fresh `node` running felix-sync-child.mjs: import, open the datastore as
// calico-node does, Syncer (Felix's sources) → CalcGraph (flushed as FelixDaemon does) → in-sync
// → full ruleset rendered (renderRuleset); no kernel (bench/felix measures nftables). Measured:
// ms from the script's start to in-sync and to the ruleset (also counted from when the client was
// open, which leaves out importing the code), and the process's peak RSS. The floor:
// a fresh `node` listing all Pods with @kubernetes/client-node (listPodForAllNamespaces), the
// least any Kubernetes client pays for the Pods alone. Sides run in rotated order per round.
//
//   node bench/kdd/felix-sync.bench.mjs [--pods 5000] [--policies 500] [--knps 50]
//     [--namespaces 20] [--rules 10] [--rounds 5] [--out file.json]
//     [--child-args '--cpu-prof --cpu-prof-dir=/tmp/prof']   (to profile the starts)
// Everything it starts (kube-apiserver, both etcds) and every temp dir is removed at the end,
// also on failure or a signal.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createDatastore, createKVStore } from '@calico-ts/datastore';
import { clusterSeed, startEtcd } from '@calico-ts/datastore/testing';
import { kubeRest, median, round, runPool, startClusterWithCrds } from './kube-cluster.mjs';

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '5000' },
    policies: { type: 'string', default: '500' },
    knps: { type: 'string', default: '50' },
    namespaces: { type: 'string', default: '20' },
    rules: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '5' },
    // Extra node arguments for every fresh start, e.g. `--child-args=--cpu-prof`.
    'child-args': { type: 'string', default: '' },
    out: { type: 'string' },
  },
});
const PODS = Number(args.pods);
const POLICIES = Number(args.policies);
const KNPS = Number(args.knps);
const NAMESPACES = Number(args.namespaces);
const RULES = Number(args.rules);
const ROUNDS = Number(args.rounds);
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'kdd-felix-sync.json');
const CHILD = join(HERE, 'felix-sync-child.mjs');
const HOST = 'bench-node';
const APPS = 50;
const ROLES = 10;
const CONCURRENCY = 32;

const log = (msg) => process.stderr.write(`kdd felix-sync bench: ${msg}\n`);
const nsName = (k) => `ns-${k}`;

function pod(i) {
  const ns = nsName(i % NAMESPACES);
  const ip = `10.65.${i >> 8}.${i & 0xff}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `pod-${i}`,
      namespace: ns,
      labels: { app: `app-${i % APPS}`, role: `r${i % ROLES}`, env: i % 3 === 0 ? 'prod' : 'staging' },
      annotations: {
        'cni.projectcalico.org/podIP': `${ip}/32`,
        'cni.projectcalico.org/podIPs': `${ip}/32`,
        'cni.projectcalico.org/containerID': randomBytes(32).toString('hex'),
      },
    },
    spec: {
      nodeName: HOST,
      containers: [
        {
          name: 'app',
          image: 'registry.k8s.io/pause:3.10',
          ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
          resources: { requests: { cpu: '10m', memory: '16Mi' } },
        },
      ],
    },
  };
}

/** Rule k of Calico policy p: selector + ports, nets + ports, deny nets, selector, in turn. */
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
      return { action: 'Deny', source: { nets: [`198.18.${p & 0xff}.${k}/32`] } };
    default:
      return {
        action: 'Allow',
        protocol: 'TCP',
        destination: { selector: `app == 'app-${(p + k) % APPS}'`, ports: [443] },
      };
  }
}

function calicoPolicy(p) {
  const half = RULES >> 1;
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name: `np-${p}`, namespace: nsName(p % NAMESPACES) },
    spec: {
      order: 100 + p,
      selector: `app == 'app-${p % APPS}'`,
      types: ['Ingress', 'Egress'],
      ingress: Array.from({ length: half }, (_, k) => rule(p, 2 * k)),
      egress: Array.from({ length: RULES - half }, (_, k) => rule(p, 2 * k + 1)),
    },
  };
}

function kubePolicy(q) {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `knp-${q}`, namespace: nsName(q % NAMESPACES) },
    spec: {
      podSelector: { matchLabels: { app: `app-${q % APPS}` } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { role: `r${q % ROLES}` } } }],
          ports: [{ protocol: 'TCP', port: 8080 }],
        },
      ],
    },
  };
}

/** Writes the cluster into the Kubernetes datastore. */
async function populate(rest, ds) {
  const t0 = performance.now();
  for (const r of clusterSeed({ poolCidr: '10.65.0.0/16' })) await ds.create(r);
  await rest.call('POST', '/api/v1/nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: HOST, labels: { 'kubernetes.io/hostname': HOST } },
    status: { addresses: [{ type: 'InternalIP', address: '198.18.0.10' }] },
  });
  for (let k = 0; k < NAMESPACES; k++) {
    await rest.call('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: nsName(k), labels: { team: `t${k % 4}` } },
    });
  }
  await runPool(PODS, CONCURRENCY, (i) =>
    rest.call('POST', `/api/v1/namespaces/${nsName(i % NAMESPACES)}/pods`, pod(i)),
  );
  log(`${PODS} pods written`);
  await runPool(POLICIES, CONCURRENCY, (p) => ds.create(calicoPolicy(p)));
  await runPool(KNPS, CONCURRENCY, (q) =>
    rest.call(
      'POST',
      `/apis/networking.k8s.io/v1/namespaces/${nsName(q % NAMESPACES)}/networkpolicies`,
      kubePolicy(q),
    ),
  );
  log(`populated in ${((performance.now() - t0) / 1000).toFixed(1)}s`);
}

/** Every key Felix's resources come from, as the Kubernetes datastore shows it, into etcd. */
async function copyToEtcd(kubeConfig, etcdEndpoints) {
  const from = await createKVStore(kubeConfig);
  const to = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints });
  try {
    const { kvs } = await from.list('/calico/resources/v3/projectcalico.org/');
    await runPool(kvs.length, CONCURRENCY, (i) => to.create(kvs[i].key, kvs[i].value));
    return kvs.length;
  } finally {
    await from.close();
    await to.close();
  }
}

/** One fresh child; resolves its report plus the wall time around it. */
function startOnce(env, children) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const extra = args['child-args'].split(' ').filter((a) => a !== '');
    const child = spawn(process.execPath, [...extra, CHILD], {
      cwd: HERE,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    const out = [];
    const err = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      children.delete(child);
      const wallMs = performance.now() - t0;
      if (code !== 0) {
        reject(new Error(`child exited ${code ?? signal}: ${Buffer.concat(err).toString().slice(-800)}`));
        return;
      }
      const line = Buffer.concat(out).toString().trim().split('\n').pop();
      resolve({ wallMs, ...JSON.parse(line) });
    });
  });
}

async function main() {
  const started = new Date();
  const loadStart = loadavg().map((x) => round(x, 2));
  log(
    `pods=${PODS} policies=${POLICIES} knps=${KNPS} namespaces=${NAMESPACES} rules=${RULES} rounds=${ROUNDS}`,
  );
  let apiServer;
  let etcd;
  let etcdStarting;
  let rest;
  const children = new Set();
  let cleaning;
  const cleanup = () => {
    cleaning ??= (async () => {
      for (const c of children) c.kill('SIGKILL');
      rest?.close();
      await etcdStarting?.catch(() => undefined);
      await etcd?.stop();
      await apiServer?.stop();
    })();
    return cleaning;
  };
  const onSignal = (sig) => {
    log(`${sig}: stopping what this started`);
    void cleanup().finally(() => process.exit(130));
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.once(sig, onSignal);
  try {
    // Both at once; cleanup waits for the etcd start, so one that ends late is stopped too.
    etcdStarting = startEtcd().then((e) => {
      etcd = e;
    });
    apiServer = await startClusterWithCrds(log);
    await etcdStarting;
    rest = kubeRest(apiServer, CONCURRENCY);
    const kubeCfg = { datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: apiServer.kubeconfigPath };
    const ds = await createDatastore(kubeCfg);
    try {
      await populate(rest, ds);
    } finally {
      await ds.close();
    }
    const copied = await copyToEtcd(kubeCfg, etcd.endpoints);
    log(`${copied} keys copied to etcd ${etcd.clientUrl}`);

    const sides = {
      kdd: { FELIX_SYNC_CFG: JSON.stringify(kubeCfg), FELIX_SYNC_HOST: HOST },
      etcd: {
        FELIX_SYNC_CFG: JSON.stringify({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints }),
        FELIX_SYNC_HOST: HOST,
      },
      'client-node pod list (floor)': {
        FELIX_SYNC_CFG: 'floor',
        FELIX_SYNC_KUBECONFIG: apiServer.kubeconfigPath,
      },
    };
    const names = Object.keys(sides);
    const runs = Object.fromEntries(names.map((n) => [n, []]));
    // One untimed start each (page cache, API server caches), then rotated rounds.
    for (const n of names) await startOnce(sides[n], children);
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < names.length; k++) {
        const n = names[(k + r) % names.length];
        runs[n].push(await startOnce(sides[n], children));
      }
      const line = names.map((n) => `${n.split(' ')[0]} ${Math.round(runs[n][r].doneMs)} ms`).join(', ');
      log(`round ${r + 1}/${ROUNDS}: ${line}`);
    }

    const summary = (n) => {
      const xs = runs[n];
      const m = (f) => median(xs.map(f));
      const last = xs[xs.length - 1];
      return {
        side: n,
        importedMs: round(
          m((x) => x.importedMs),
          0,
        ),
        inSyncMs: round(
          m((x) => x.inSyncMs),
          0,
        ),
        doneMs: round(
          m((x) => x.doneMs),
          0,
        ),
        fromOpenMs: round(
          m((x) => x.doneMs - x.openedMs),
          0,
        ),
        wallMs: round(
          m((x) => x.wallMs),
          0,
        ),
        peakRssMb: round(m((x) => x.peakRssKb) / 1024, 1),
        holds:
          last.pods !== undefined
            ? { pods: last.pods }
            : {
                endpoints: last.endpoints,
                policies: last.policies,
                profiles: last.profiles,
                ipSets: last.ipSets,
                chains: last.chains,
                updates: last.updates,
                ignored: last.ignored,
              },
        runs: xs.map((x) => ({
          openedMs: Math.round(x.openedMs),
          inSyncMs: Math.round(x.inSyncMs),
          doneMs: Math.round(x.doneMs),
          peakRssKb: x.peakRssKb,
        })),
      };
    };
    const rows = names.map(summary);
    const perRound = (f) => median(runs.kdd.map((x, i) => f(x) / f(runs.etcd[i])));
    const ratios = {
      doneMs: round(
        perRound((x) => x.doneMs),
        2,
      ),
      inSyncMs: round(
        perRound((x) => x.inSyncMs),
        2,
      ),
      peakRss: round(
        perRound((x) => x.peakRssKb),
        2,
      ),
      fromOpen: round(
        perRound((x) => x.doneMs - x.openedMs),
        2,
      ),
      doneOverFloor: round(median(runs.kdd.map((x, i) => x.doneMs / runs[names[2]][i].doneMs)), 2),
      fromOpenOverFloor: round(
        median(
          runs.kdd.map(
            (x, i) => (x.doneMs - x.openedMs) / (runs[names[2]][i].doneMs - runs[names[2]][i].openedMs),
          ),
        ),
        2,
      ),
    };
    const result = {
      bench: 'kdd-felix-sync',
      description:
        'Felix start to in-sync and full ruleset, Kubernetes datastore vs etcd holding the same resources, fresh processes, same run',
      date: started.toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      sizes: { pods: PODS, policies: POLICIES, knps: KNPS, namespaces: NAMESPACES, rules: RULES },
      rounds: ROUNDS,
      etcdKeys: copied,
      loadAverage: { start: loadStart, end: loadavg().map((x) => round(x, 2)) },
      rows,
      ratios,
    };
    await mkdir(dirname(OUT), { recursive: true });
    await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
    printTable(result);
    console.log(`\nJSON: ${OUT}`);
  } finally {
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.off(sig, onSignal);
    await cleanup();
  }
}

function printTable(res) {
  const s = res.sizes;
  console.log(
    `## Felix start to in-sync: ${s.pods} pods, ${s.policies} Calico + ${s.knps} Kubernetes NetworkPolicies, ${s.namespaces} namespaces (medians of ${res.rounds} fresh starts)\n`,
  );
  console.log(
    '| side | imported ms | in-sync ms | ruleset ms | ruleset − client open ms | peak RSS MB | holds |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const r of res.rows) {
    const holds = Object.entries(r.holds)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    console.log(
      `| ${r.side} | ${r.importedMs} | ${r.inSyncMs} | ${r.doneMs} | ${r.fromOpenMs} | ${r.peakRssMb} | ${holds} |`,
    );
  }
  const q = res.ratios;
  console.log(
    `\nKDD/etcd (median of per-round ratios): ruleset ${q.doneMs} (after the client is open ${q.fromOpen}), in-sync ${q.inSyncMs}, peak RSS ${q.peakRss}`,
  );
  console.log(
    `KDD ruleset / client-node pod list, both from process start: ${q.doneOverFloor}; both from an open client: ${q.fromOpenOverFloor}`,
  );
  console.log(
    `load average at start / end: ${res.loadAverage.start.join(' ')} / ${res.loadAverage.end.join(' ')} (${res.cpus} CPUs)`,
  );
}

await main();
