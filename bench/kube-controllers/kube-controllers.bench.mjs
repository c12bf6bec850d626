// calico-kube-controllers (the real program, apps/kube-controllers, in its own process) in etcd
// mode against a real kube-apiserver (startKubeApiServer: its own etcd, CRDs from deploy/crds) and
// a real Calico etcd, in one run. Reports times, rates and ratios; never asserts (a slow machine
// is not a failure).
//
//   (a) throughput: with the controllers running and in sync, N Namespaces (each with its
//       ServiceAccount `default`) and P Pods (P/N per namespace, their WorkloadEndpoints already
//       in etcd as the CNI plugin writes them, with Calico's labels only) are created at once
//       (`--concurrency` requests in flight). Measured from the first create:
//         accepted   the API server has accepted every object (the reference)
//         converged  etcd holds every kns.<ns> and ksa.<ns>.default Profile and every
//                    WorkloadEndpoint carries its Pod's labels (an etcd watch sees each write)
//       ratio converged/accepted: how much longer Calico takes to be right than the API server
//       takes to take the objects. Also the controller process's peak and final RSS.
//   (b) policy latency: K Kubernetes NetworkPolicies, one at a time; for each, the time from the
//       create request to the knp.default.<name> policy appearing in etcd, against the create
//       request's own round trip (the reference). What Felix does next is measured in bench/felix
//       and bench/lab, not here.
//
// With `--datastore kubernetes` Profiles, WorkloadEndpoints and Kubernetes policies are read from
// Kubernetes itself and only the node controller runs; what it writes is the auto HostEndpoints.
// There: M Nodes (`--nodes`, each with a Calico IPv4 address annotation) and P Pods spread over
// the namespaces are created at once, and converged = every `<node>-auto-hep` HostEndpoint exists
// with the node's address (polled from the API server every 250 ms).
//
//   node bench/kube-controllers/kube-controllers.bench.mjs [--namespaces 1000] [--pods 10000]
//     [--policies 20] [--concurrency 64] [--datastore etcdv3|kubernetes] [--nodes 500]
//     [--out file.json]
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startEtcd } from '@calico-ts/datastore/testing';
import { Etcd3 } from 'etcd3';
import { kubeRest, median, REPO, round, runPool, startClusterWithCrds } from '../kdd/kube-cluster.mjs';

const { values: args } = parseArgs({
  options: {
    namespaces: { type: 'string', default: '1000' },
    pods: { type: 'string', default: '10000' },
    policies: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '64' },
    timeout: { type: 'string', default: '600' },
    datastore: { type: 'string', default: 'etcdv3' },
    nodes: { type: 'string', default: '500' },
    out: { type: 'string' },
  },
});
const NS = Number(args.namespaces);
const PODS = Number(args.pods);
const POLICIES = Number(args.policies);
const CONC = Number(args.concurrency);
const TIMEOUT_MS = Number(args.timeout) * 1000;
const HERE = dirname(fileURLToPath(import.meta.url));
const KDD = args.datastore === 'kubernetes';
const NODES = Number(args.nodes);
const OUT =
  args.out ?? join(HERE, '..', 'results', KDD ? 'kube-controllers-kdd.json' : 'kube-controllers.json');
const BIN = join(REPO, 'apps', 'kube-controllers', 'bin', 'calico-kube-controllers');
const RES = '/calico/resources/v3/projectcalico.org/';

const log = (msg) => console.error(`kube-controllers bench: ${msg}`);
const ns = (i) => `bench-${String(i).padStart(5, '0')}`;
const pod = (i) => `pod-${String(i).padStart(6, '0')}`;
const nsOfPod = (i) => ns(i % NS);

async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/** Resident and peak resident memory of a process, in MB (from /proc). */
function memoryOf(pid) {
  try {
    const st = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(st)?.[1] ?? 0);
    return { rssMB: kb('VmRSS') / 1024, peakMB: kb('VmHWM') / 1024 };
  } catch {
    return { rssMB: null, peakMB: null };
  }
}

function wepValue(i) {
  const name = `node1-k8s-${pod(i).replace(/-/g, '--')}-eth0`;
  return {
    key: `${RES}workloadendpoints/${nsOfPod(i)}/${name}`,
    value: JSON.stringify({
      kind: 'WorkloadEndpoint',
      apiVersion: 'projectcalico.org/v3',
      metadata: {
        name,
        namespace: nsOfPod(i),
        uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        creationTimestamp: '2026-11-26T00:00:00Z',
        labels: { 'projectcalico.org/namespace': nsOfPod(i), 'projectcalico.org/orchestrator': 'k8s' },
      },
      spec: {
        orchestrator: 'k8s',
        node: 'node1',
        pod: pod(i),
        endpoint: 'eth0',
        containerID: `c${i}`,
        ipNetworks: [`198.19.${(i >> 8) & 255}.${i & 255}/32`],
        interfaceName: `cali${String(i).padStart(11, '0')}`,
        profiles: [`kns.${nsOfPod(i)}`, `ksa.${nsOfPod(i)}.default`],
      },
    }),
  };
}

/**
 * Follows etcd under the Calico resources from `revision` and keeps the counts the bench waits
 * for; `when(pred)` resolves at the first moment pred holds (checked on every event).
 */
async function followEtcd(client) {
  const state = { kns: new Set(), ksa: new Set(), labelled: new Set(), knp: new Map(), events: 0 };
  const waiters = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (w.pred(state)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(performance.now());
      }
    }
  };
  const watcher = await client.watch().prefix(RES).create();
  watcher.on('put', (kv) => {
    state.events++;
    const key = kv.key.toString();
    const rest = key.slice(RES.length);
    if (rest.startsWith('profiles/kns.')) state.kns.add(rest);
    else if (rest.startsWith('profiles/ksa.')) state.ksa.add(rest);
    else if (rest.startsWith('workloadendpoints/')) {
      const v = JSON.parse(kv.value.toString());
      if (v.metadata?.labels?.app !== undefined) state.labelled.add(rest);
    } else if (rest.startsWith('networkpolicies/') && !state.knp.has(rest))
      state.knp.set(rest, performance.now());
    check();
  });
  return {
    state,
    when: (pred) =>
      new Promise((resolve) => {
        waiters.push({ pred, resolve });
        check();
      }),
    close: () => watcher.cancel(),
  };
}

async function main() {
  log(`${NS} namespaces, ${PODS} pods, ${POLICIES} policies, concurrency ${CONC}`);
  const dir = await mkdtemp(join(tmpdir(), 'kc-bench-'));
  const api = await startClusterWithCrds(log);
  let etcd;
  let child;
  let client;
  let follow;
  const rest = kubeRest(api, CONC);
  try {
    etcd = await startEtcd();
    client = new Etcd3({ hosts: etcd.endpoints });
    const metricsPort = await freePort();
    await client.put(`${RES}kubecontrollersconfigurations/default`).value(
      JSON.stringify({
        kind: 'KubeControllersConfiguration',
        apiVersion: 'projectcalico.org/v3',
        metadata: {
          name: 'default',
          uid: '7d1d0a3e-0000-4000-8000-000000000001',
          creationTimestamp: '2026-11-26T00:00:00Z',
        },
        spec: { prometheusMetricsPort: metricsPort, controllers: {} },
      }),
    );
    // The endpoints the CNI plugin would have written, before the Pods exist in the API.
    const t0w = performance.now();
    for (let i = 0; i < PODS; i += 500) {
      const batch = [];
      for (let j = i; j < Math.min(PODS, i + 500); j++) batch.push(wepValue(j));
      await Promise.all(batch.map((w) => client.put(w.key).value(w.value)));
    }
    log(`${PODS} WorkloadEndpoints written to etcd in ${((performance.now() - t0w) / 1000).toFixed(1)}s`);

    const statusFile = join(dir, 'status.json');
    const env = {
      PATH: process.env.PATH ?? '',
      DATASTORE_TYPE: 'etcdv3',
      ETCD_ENDPOINTS: etcd.endpoints.join(','),
      KUBECONFIG: api.kubeconfigPath,
      STATUS_FILE: statusFile,
      METRICS_HOST: '127.0.0.1',
      LOG_LEVEL: 'warning',
      ENABLED_CONTROLLERS: 'policy,namespace,serviceaccount,workloadendpoint,node',
    };
    child = spawn(process.execPath, [BIN], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out = (out + d.toString()).slice(-4000);
    });
    const readyBy = Date.now() + 60_000;
    while (spawnSync(process.execPath, [BIN, '-r'], { env }).status !== 0) {
      if (child.exitCode !== null) throw new Error(`calico-kube-controllers exited: ${out}`);
      if (Date.now() > readyBy) throw new Error(`calico-kube-controllers not ready in 60s: ${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const idle = memoryOf(child.pid);
    log(`controllers ready (RSS ${idle.rssMB?.toFixed(0)} MB)`);
    follow = await followEtcd(client);

    // (a) everything at once.
    let peakRss = idle.rssMB ?? 0;
    const sampler = setInterval(() => {
      const m = memoryOf(child.pid);
      if (m.rssMB !== null) peakRss = Math.max(peakRss, m.rssMB);
    }, 100);
    const cpu0 = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(' ');
    const t0 = performance.now();
    const converged = follow.when((s) => s.kns.size >= NS && s.ksa.size >= NS && s.labelled.size >= PODS);
    await runPool(NS, CONC, (i) =>
      rest.call('POST', '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns(i), labels: { team: `t${i % 7}` } },
      }),
    );
    const nsAccepted = performance.now();
    await runPool(NS + PODS, CONC, (k) =>
      k < NS
        ? rest.call('POST', `/api/v1/namespaces/${ns(k)}/serviceaccounts`, {
            apiVersion: 'v1',
            kind: 'ServiceAccount',
            metadata: { name: 'default' },
          })
        : rest.call('POST', `/api/v1/namespaces/${nsOfPod(k - NS)}/pods`, {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: pod(k - NS), labels: { app: `a${(k - NS) % 10}` } },
            spec: {
              nodeName: 'node1',
              serviceAccountName: 'default',
              automountServiceAccountToken: false,
              containers: [{ name: 'c', image: 'none' }],
            },
          }),
    );
    const accepted = performance.now();
    log(`API server accepted ${2 * NS + PODS} objects in ${((accepted - t0) / 1000).toFixed(2)}s`);
    const timeout = new Promise((_, reject) =>
      setTimeout(() => {
        const s = follow.state;
        reject(
          new Error(
            `not converged in ${TIMEOUT_MS / 1000}s: kns ${s.kns.size}/${NS}, ksa ${s.ksa.size}/${NS}, labelled ${s.labelled.size}/${PODS}`,
          ),
        );
      }, TIMEOUT_MS).unref(),
    );
    const convergedAt = await Promise.race([converged, timeout]);
    clearInterval(sampler);
    const cpu1 = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(' ');
    const ticks = (f) => Number(f[13]) + Number(f[14]);
    const cpuSec = (ticks(cpu1) - ticks(cpu0)) / 100;
    const after = memoryOf(child.pid);
    const throughput = {
      objects: 2 * NS + PODS,
      namespacesAcceptedSec: round((nsAccepted - t0) / 1000, 2),
      acceptedSec: round((accepted - t0) / 1000, 2),
      convergedSec: round((convergedAt - t0) / 1000, 2),
      ratioConvergedToAccepted: round((convergedAt - t0) / (accepted - t0), 2),
      convergedObjectsPerSec: round((2 * NS + PODS) / ((convergedAt - t0) / 1000), 0),
      acceptedObjectsPerSec: round((2 * NS + PODS) / ((accepted - t0) / 1000), 0),
      controllerCpuSec: round(cpuSec, 1),
      controllerRssIdleMB: round(idle.rssMB, 0),
      controllerRssPeakMB: round(Math.max(peakRss, after.peakMB ?? 0), 0),
      controllerRssAfterMB: round(after.rssMB, 0),
    };
    log(
      `converged in ${throughput.convergedSec}s (${throughput.ratioConvergedToAccepted}x the API server's)`,
    );

    // (b) one policy at a time.
    const latencies = [];
    const creates = [];
    for (let i = 0; i < POLICIES; i++) {
      const name = `np-${i}`;
      const key = `networkpolicies/${ns(0)}/knp.default.${name}`;
      const seen = follow.when((s) => s.knp.has(key));
      const t = performance.now();
      await rest.call('POST', `/apis/networking.k8s.io/v1/namespaces/${ns(0)}/networkpolicies`, {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name },
        spec: {
          podSelector: { matchLabels: { app: `a${i % 10}` } },
          ingress: [{ ports: [{ port: 8000 + i, protocol: 'TCP' }] }],
          policyTypes: ['Ingress'],
        },
      });
      creates.push(performance.now() - t);
      await Promise.race([seen, timeout]);
      latencies.push(follow.state.knp.get(key) - t);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const policy = {
      policies: POLICIES,
      createToEtcdMsP50: round(median(latencies), 1),
      createToEtcdMsP90: round(sorted[Math.floor(0.9 * (sorted.length - 1))] ?? null, 1),
      createToEtcdMsMax: round(sorted.at(-1) ?? null, 1),
      apiCreateMsP50: round(median(creates), 1),
      ratioToApiCreate: round(median(latencies) / median(creates), 1),
    };

    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const reconciles = Object.fromEntries(
      [...metrics.matchAll(/^kube_controllers_reconciles_total\{controller="([^"]+)"\} (\d+)$/gm)].map(
        (m) => [m[1], Number(m[2])],
      ),
    );
    const heapUsedMB =
      Number(/^nodejs_heap_size_used_bytes (\d+)$/m.exec(metrics)?.[1] ?? Number.NaN) / 2 ** 20;
    throughput.controllerHeapUsedAfterMB = round(heapUsedMB, 0);
    const result = {
      bench: 'kube-controllers',
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, loadavg: loadavg().map((x) => round(x, 2)) },
      config: { namespaces: NS, pods: PODS, policies: POLICIES, concurrency: CONC, logLevel: 'warning' },
      throughput,
      policy,
      reconcilePasses: reconciles,
    };
    await mkdir(dirname(OUT), { recursive: true });
    await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
    console.log(
      `| kube-controllers, etcd mode (${NS} namespaces + SAs, ${PODS} pods) | value | reference | ratio |`,
    );
    console.log('| --- | --- | --- | --- |');
    console.log(
      `| all objects right in etcd (s) | ${throughput.convergedSec} | API server accepted them: ${throughput.acceptedSec} | ${throughput.ratioConvergedToAccepted} |`,
    );
    console.log(
      `| objects/s | ${throughput.convergedObjectsPerSec} | ${throughput.acceptedObjectsPerSec} | ${round(throughput.convergedObjectsPerSec / throughput.acceptedObjectsPerSec, 2)} |`,
    );
    console.log(
      `| controller RSS idle / peak / after (MB); JS heap in use after | ${throughput.controllerRssIdleMB} / ${throughput.controllerRssPeakMB} / ${throughput.controllerRssAfterMB}; ${throughput.controllerHeapUsedAfterMB} | | |`,
    );
    console.log(`| controller CPU during (a) (s) | ${throughput.controllerCpuSec} | | |`);
    console.log(
      `| NetworkPolicy create → knp.default.* in etcd, p50 / p90 (ms) | ${policy.createToEtcdMsP50} / ${policy.createToEtcdMsP90} | API create p50: ${policy.apiCreateMsP50} | ${policy.ratioToApiCreate} |`,
    );
    console.log(
      `\n(dataplane programming after the policy reaches etcd: bench/felix, bench/lab)\nresults: ${OUT}`,
    );
  } finally {
    follow?.close();
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    client?.close();
    rest.close();
    await etcd?.stop();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The program on the Kubernetes datastore: node controller, auto host endpoints. */
async function mainKdd() {
  log(`Kubernetes datastore: ${NODES} nodes, ${NS} namespaces, ${PODS} pods, concurrency ${CONC}`);
  const dir = await mkdtemp(join(tmpdir(), 'kc-bench-'));
  const api = await startClusterWithCrds(log);
  const rest = kubeRest(api, CONC);
  let child;
  try {
    const metricsPort = await freePort();
    await rest.call('POST', '/apis/crd.projectcalico.org/v1/kubecontrollersconfigurations', {
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'KubeControllersConfiguration',
      metadata: { name: 'default' },
      spec: {
        prometheusMetricsPort: metricsPort,
        controllers: { node: { hostEndpoint: { autoCreate: 'Enabled' } } },
      },
    });
    const statusFile = join(dir, 'status.json');
    const env = {
      PATH: process.env.PATH ?? '',
      DATASTORE_TYPE: 'kubernetes',
      KUBECONFIG: api.kubeconfigPath,
      STATUS_FILE: statusFile,
      METRICS_HOST: '127.0.0.1',
      LOG_LEVEL: 'warning',
      ENABLED_CONTROLLERS: 'node',
    };
    child = spawn(process.execPath, [BIN], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out = (out + d.toString()).slice(-4000);
    });
    const readyBy = Date.now() + 60_000;
    while (spawnSync(process.execPath, [BIN, '-r'], { env }).status !== 0) {
      if (child.exitCode !== null) throw new Error(`calico-kube-controllers exited: ${out}`);
      if (Date.now() > readyBy) throw new Error(`calico-kube-controllers not ready in 60s: ${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const idle = memoryOf(child.pid);
    log(`controllers ready (RSS ${idle.rssMB?.toFixed(0)} MB)`);
    let peakRss = idle.rssMB ?? 0;
    const sampler = setInterval(() => {
      const m = memoryOf(child.pid);
      if (m.rssMB !== null) peakRss = Math.max(peakRss, m.rssMB);
    }, 100);
    const node = (i) => `node-${String(i).padStart(5, '0')}`;
    const addr = (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    const t0 = performance.now();
    await runPool(NS + NODES, CONC, (k) =>
      k < NS
        ? rest.call('POST', '/api/v1/namespaces', {
            apiVersion: 'v1',
            kind: 'Namespace',
            metadata: { name: ns(k) },
          })
        : rest.call('POST', '/api/v1/nodes', {
            apiVersion: 'v1',
            kind: 'Node',
            metadata: {
              name: node(k - NS),
              labels: { zone: `z${(k - NS) % 3}` },
              annotations: { 'projectcalico.org/IPv4Address': `${addr(k - NS)}/16` },
            },
          }),
    );
    await runPool(PODS, CONC, (i) =>
      rest.call('POST', `/api/v1/namespaces/${nsOfPod(i)}/pods`, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: pod(i), labels: { app: `a${i % 10}` } },
        spec: {
          nodeName: node(i % NODES),
          automountServiceAccountToken: false,
          containers: [{ name: 'c', image: 'none' }],
        },
      }),
    );
    const accepted = performance.now();
    log(`API server accepted ${NS + NODES + PODS} objects in ${((accepted - t0) / 1000).toFixed(2)}s`);
    let convergedAt;
    let heps = 0;
    for (;;) {
      const list = await rest.call('GET', '/apis/crd.projectcalico.org/v1/hostendpoints');
      heps = list.items.filter(
        (h) => h.metadata.name.endsWith('-auto-hep') && h.spec?.expectedIPs?.length === 1,
      ).length;
      if (heps >= NODES) {
        convergedAt = performance.now();
        break;
      }
      if (performance.now() - t0 > TIMEOUT_MS)
        throw new Error(`not converged: ${heps}/${NODES} auto HostEndpoints`);
      await new Promise((r) => setTimeout(r, 250));
    }
    clearInterval(sampler);
    const after = memoryOf(child.pid);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const heapUsedMB =
      Number(/^nodejs_heap_size_used_bytes (\d+)$/m.exec(metrics)?.[1] ?? Number.NaN) / 2 ** 20;
    const objects = NS + NODES + PODS;
    const throughput = {
      objects,
      autoHostEndpoints: heps,
      acceptedSec: round((accepted - t0) / 1000, 2),
      convergedSec: round((convergedAt - t0) / 1000, 2),
      ratioConvergedToAccepted: round((convergedAt - t0) / (accepted - t0), 2),
      controllerRssIdleMB: round(idle.rssMB, 0),
      controllerRssPeakMB: round(Math.max(peakRss, after.peakMB ?? 0), 0),
      controllerRssAfterMB: round(after.rssMB, 0),
      controllerHeapUsedAfterMB: round(heapUsedMB, 0),
    };
    const result = {
      bench: 'kube-controllers (Kubernetes datastore)',
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, loadavg: loadavg().map((x) => round(x, 2)) },
      config: { nodes: NODES, namespaces: NS, pods: PODS, concurrency: CONC, logLevel: 'warning' },
      throughput,
    };
    await mkdir(dirname(OUT), { recursive: true });
    await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
    console.log(
      `| kube-controllers, Kubernetes datastore (${NODES} nodes, ${NS} namespaces, ${PODS} pods) | value | reference | ratio |`,
    );
    console.log('| --- | --- | --- | --- |');
    console.log(
      `| every auto HostEndpoint written (s) | ${throughput.convergedSec} | API server accepted the objects: ${throughput.acceptedSec} | ${throughput.ratioConvergedToAccepted} |`,
    );
    console.log(
      `| controller RSS idle / peak / after (MB); JS heap in use after | ${throughput.controllerRssIdleMB} / ${throughput.controllerRssPeakMB} / ${throughput.controllerRssAfterMB}; ${throughput.controllerHeapUsedAfterMB} | | |`,
    );
    console.log(`\nresults: ${OUT}`);
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    rest.close();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

(KDD ? mainKdd() : main()).catch((e) => {
  console.error(`kube-controllers bench: ${e.stack ?? e}`);
  process.exit(1);
});
