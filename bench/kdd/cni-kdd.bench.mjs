// CNI ADD and DEL latency on the Kubernetes datastore (issue 15): `calico` with `calico-ipam`
// (the native executables from packages/cni-plugin/bin/native, or the node bundles in bin/ when
// those are not built) with `datastore_type: kubernetes` against a real kube-apiserver, and
// `ptp` with `host-local` (Debian's containernetworking-plugins in /usr/lib/cni) in the same run.
// bench/cni does the same on etcd. Each side does a single series (ADDs one after another, then
// DELs one after another) and a burst (all ADDs at once, then all DELs at once); p50 and p99 of
// the wall time around each plugin process are reported, with ratios to ptp (aim: p50 within 2×).
// Two calico sides: every invocation in its own process (`service_socket: ""`), and the same
// executables handing the work to the plugin service (`calico --serve`), which is how calico-node
// serves ADDs. A floor row times CNI VERSION (process start-up only). Reported, never asserted.
//
// As a kubelet would, the Pod exists before its ADD: every Pod (namespace `bench`, bound to the
// Node) is created first; the ADD writes its CNI annotations, which make it a WorkloadEndpoint.
// Everything happens in a "node" network namespace `ckbench-<random>`: this script creates it and
// every pod namespace, then runs itself again inside it (`ip netns exec`, the `--inner` half),
// which starts kube-apiserver (with its own etcd) on the node's 127.0.0.1, installs the CRDs,
// writes ClusterInformation, the IPPool 198.19.0.0/16, the Node and the Pods, and spawns the
// plugins. host-local hands out 198.18.128.0/17. Every pod is DELeted; every namespace, process
// and temp dir this made is removed at the end, also on failure.
//
//   node bench/kdd/cni-kdd.bench.mjs [--iterations 30] [--burst 30] [--plugin-dir dir] [--out file.json]
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    iterations: { type: 'string', default: '30' },
    burst: { type: 'string', default: '30' },
    out: { type: 'string' },
    // Another build of the plugins to measure: a directory with calico and calico-ipam in it
    // (e.g. `node packages/cni-plugin/scripts/bundle.mjs /tmp/cni` makes /tmp/cni/native).
    'plugin-dir': { type: 'string' },
    // Internal: the half that runs inside the node namespace.
    inner: { type: 'boolean', default: false },
    id: { type: 'string' },
    tmp: { type: 'string' },
  },
});
const ITERATIONS = Number(args.iterations);
const BURST = Number(args.burst);
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'kdd-cni.json');
const PLUGIN_PKG = join(HERE, '..', '..', 'packages', 'cni-plugin', 'bin');
const NATIVE_DIR = join(PLUGIN_PKG, 'native');
const REF_DIR = '/usr/lib/cni';
// calico: every invocation runs in its own process (`service_socket: ""`); service: the same
// executables hand ADD/DEL to the plugin service (`calico --serve`), as on a node running calico-node.
const SIDES = ['calico', 'service', 'ptp'];
const LABELS = {
  calico: 'calico + calico-ipam, direct',
  service: 'calico + calico-ipam, via service',
  ptp: 'ptp + host-local',
};
const PHASES = ['single', 'burst'];
const GOAL = 2;

function log(msg) {
  process.stderr.write(`kdd cni bench: ${msg}\n`);
}

/** Run a command to completion; throws with its output when it fails. */
function run(cmd, argv) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${argv.join(' ')} exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).slice(-500)}`,
    );
  return r.stdout;
}

function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

/** Pod namespace names: per side and phase, one per ADD. */
function podName(id, side, phase, i) {
  return `${id}-${side[0]}${phase[0]}${i}`;
}

// ---------------------------------------------------------------------------------------------
// Outer half: namespaces and clean-up, in the host's network namespace.

async function outer() {
  const id = `ckbench-${Math.random().toString(16).slice(2, 8)}`;
  const tmp = await mkdtemp(join(tmpdir(), `${id}-`));
  const made = [];
  let code = 1;
  try {
    const addNetns = (name) => {
      run('ip', ['netns', 'add', name]);
      made.push(name);
      run('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
    };
    addNetns(id);
    const count = Math.max(ITERATIONS, BURST) + 1; // +1: the warm-up pod
    for (const side of SIDES)
      for (const phase of [...PHASES, 'warm'])
        for (let i = 0; i < (phase === 'warm' ? 1 : count - 1); i++) addNetns(podName(id, side, phase, i));
    log(`${made.length} namespaces made; running inside ${id}`);

    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        id,
        process.execPath,
        fileURLToPath(import.meta.url),
        '--inner',
        '--id',
        id,
        '--tmp',
        tmp,
        '--iterations',
        String(ITERATIONS),
        '--burst',
        String(BURST),
        '--out',
        OUT,
        ...(args['plugin-dir'] ? ['--plugin-dir', args['plugin-dir']] : []),
      ],
      { stdio: 'inherit' },
    );
    const onSignal = () => child.kill('SIGTERM');
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    code = await new Promise((resolve) => child.once('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  } finally {
    for (const name of made.reverse()) {
      spawnSync('ip', ['netns', 'delete', name]);
    }
    // Anything of ours a crash left behind (by our prefix only).
    if (existsSync('/run/netns')) {
      for (const name of readdirSync('/run/netns'))
        if (name === id || name.startsWith(`${id}-`)) spawnSync('ip', ['netns', 'delete', name]);
    }
    await rm(tmp, { recursive: true, force: true });
  }
  if (code !== 0) throw new Error(`inner bench exited ${code}`);
}

// ---------------------------------------------------------------------------------------------
// Inner half: kube-apiserver, datastore and plugins, inside the node network namespace.

/** Runs one plugin process; wall ms around it, exit code, output. */
function invoke(program, env, stdin) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(program, [], {
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out = [];
    const err = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    child.on('error', reject);
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
    child.on('close', (code) => {
      const ms = performance.now() - t0;
      resolve({
        ms,
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}

/** `calico --serve=SOCKET`, once its socket answers; stop() ends it (SIGTERM) and waits. */
async function startService(program, socket) {
  const child = spawn(program, [`--serve=${socket}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 10_000;
  while (!existsSync(socket)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the plugin service did not start on ${socket}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function inner() {
  const { createDatastore } = await import('@calico-ts/datastore');
  const { clusterSeed } = await import('@calico-ts/datastore/testing');
  const { apiRequestCounts, kubeRest, requestsPer, startClusterWithCrds } = await import(
    './kube-cluster.mjs'
  );
  const id = args.id;
  const tmp = args.tmp;
  const started = new Date();
  const native = existsSync(join(NATIVE_DIR, 'calico')) && existsSync(join(NATIVE_DIR, 'calico-ipam'));
  const calicoDir = args['plugin-dir'] ?? (native ? NATIVE_DIR : PLUGIN_PKG);
  const variant = args['plugin-dir']
    ? `from ${args['plugin-dir']}`
    : native
      ? 'native (bin/native/calico, calico-ipam)'
      : 'node bundle (bin/calico.mjs)';
  log(`calico: ${variant}`);

  const apiServer = await startClusterWithCrds(log);
  try {
    const kubeconfig = apiServer.kubeconfigPath;
    const ds = await createDatastore({ datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig });
    const rest = kubeRest(apiServer, 16);
    try {
      for (const r of clusterSeed()) await ds.create(r);
      await rest.call('POST', '/api/v1/nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: id, labels: { 'kubernetes.io/hostname': id } },
      });
      await rest.call('POST', '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'bench' },
      });
      // The Pods of every calico ADD, bound to this node, as the scheduler leaves them for kubelet.
      const pods = [];
      const count = Math.max(ITERATIONS, BURST);
      for (const side of ['calico', 'service'])
        for (const phase of [...PHASES, 'warm'])
          for (let i = 0; i < (phase === 'warm' ? 1 : count); i++) pods.push(podName(id, side, phase, i));
      await Promise.all(
        pods.map((name) =>
          rest.call('POST', '/api/v1/namespaces/bench/pods', {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace: 'bench', labels: { app: 'bench' } },
            spec: { nodeName: id, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
          }),
        ),
      );
      log(`${pods.length} pods bound to node ${id}`);
    } finally {
      await ds.close();
    }
    const nodenameFile = join(tmp, 'nodename');
    await writeFile(nodenameFile, id);

    const calicoConf = {
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'calico',
      log_level: 'warning',
      ipam: { type: 'calico-ipam' },
      policy: { type: 'k8s' },
      nodename_file: nodenameFile,
      ipam_lock_file: join(tmp, 'calico-ipam.lock'),
      datastore_type: 'kubernetes',
      kubernetes: { kubeconfig },
    };
    const serviceSocket = join(tmp, 'cni-plugin.sock');
    const confs = {
      calico: JSON.stringify({ ...calicoConf, service_socket: '' }),
      service: JSON.stringify({ ...calicoConf, service_socket: serviceSocket }),
      ptp: JSON.stringify({
        cniVersion: '1.0.0',
        name: 'bench-ptp',
        type: 'ptp',
        ipMasq: false,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: '198.18.128.0/17' }]],
          dataDir: join(tmp, 'host-local'),
        },
      }),
    };
    const programs = {
      calico: join(calicoDir, 'calico'),
      service: join(calicoDir, 'calico'),
      ptp: join(REF_DIR, 'ptp'),
    };
    const cniPath = { calico: calicoDir, service: calicoDir, ptp: REF_DIR };
    const service = await startService(programs.calico, serviceSocket);
    const added = []; // [side, env] of every ADD not yet DELeted

    const env = (side, command, pod) => {
      const cid = `${pod.replace(/-/g, '')}0123456789abcdef`.slice(0, 64);
      return {
        CNI_COMMAND: command,
        CNI_CONTAINERID: cid,
        CNI_NETNS: `/run/netns/${pod}`,
        CNI_IFNAME: 'eth0',
        CNI_PATH: cniPath[side],
        CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=${cid}`,
      };
    };
    const failures = [];
    const addresses = { calico: [], service: [], ptp: [] };
    const check = (side, command, pod, r) => {
      if (r.code !== 0)
        failures.push(`${side} ${command} ${pod}: exit ${r.code}: ${(r.stdout + r.stderr).slice(-300)}`);
      return r.ms;
    };
    const add = async (side, pod) => {
      const r = await invoke(programs[side], env(side, 'ADD', pod), confs[side]);
      added.push([side, pod]);
      if (r.code === 0) {
        try {
          const ip = JSON.parse(r.stdout).ips?.[0]?.address;
          if (ip) addresses[side].push(ip);
        } catch {
          // counted as a failure below if the exit code says so; odd output just has no address
        }
      }
      return check(side, 'ADD', pod, r);
    };
    const del = async (side, pod) => {
      const r = await invoke(programs[side], env(side, 'DEL', pod), confs[side]);
      const k = added.findIndex(([s, p]) => s === side && p === pod);
      if (k >= 0) added.splice(k, 1);
      return check(side, 'DEL', pod, r);
    };

    try {
      // Warm-up: page cache for the executables, the first IPAM block and affinity.
      for (const side of SIDES) {
        const pod = podName(id, side, 'warm', 0);
        await add(side, pod);
        await del(side, pod);
      }
      if (failures.length > 0) throw new Error(`warm-up failed:\n${failures.join('\n')}`);

      const samples = {};
      const apiRequests = {};
      for (const phase of PHASES) {
        const n = phase === 'single' ? ITERATIONS : BURST;
        // Alternate which side goes first per phase, so drift in load falls on both.
        const order = phase === 'single' ? SIDES : [...SIDES].reverse();
        for (const side of order) {
          const pods = Array.from({ length: n }, (_, i) => podName(id, side, phase, i));
          const s = { ADD: [], DEL: [] };
          const t0 = performance.now();
          if (phase === 'single') {
            // What each ADD and DEL asked of the API server (kube-apiserver's request counters).
            const c0 = side === 'ptp' ? undefined : await apiRequestCounts(rest);
            for (const pod of pods) s.ADD.push(await add(side, pod));
            const c1 = side === 'ptp' ? undefined : await apiRequestCounts(rest);
            for (const pod of pods) s.DEL.push(await del(side, pod));
            if (c0 && c1) {
              apiRequests[side] = {
                ADD: requestsPer(c0, c1, n),
                DEL: requestsPer(c1, await apiRequestCounts(rest), n),
              };
            }
          } else {
            s.ADD = await Promise.all(pods.map((pod) => add(side, pod)));
            s.DEL = await Promise.all(pods.map((pod) => del(side, pod)));
          }
          s.totalMs = performance.now() - t0;
          samples[`${side} ${phase}`] = s;
        }
      }

      // Floor: CNI VERSION, i.e. process start-up and nothing else, sequential.
      for (const side of SIDES) {
        const s = { VERSION: [] };
        for (let i = 0; i < ITERATIONS; i++) {
          const r = await invoke(programs[side], { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}');
          s.VERSION.push(check(side, 'VERSION', '-', r));
        }
        samples[`${side} floor`] = s;
      }

      const rows = [];
      for (const phase of [...PHASES, 'floor']) {
        for (const command of phase === 'floor' ? ['VERSION'] : ['ADD', 'DEL']) {
          const ref = samples[`ptp ${phase}`][command];
          const refP50 = percentile(ref, 50);
          const refP99 = percentile(ref, 99);
          for (const side of SIDES) {
            const xs = samples[`${side} ${phase}`][command];
            rows.push({
              phase,
              command,
              side: LABELS[side],
              n: xs.length,
              p50Ms: Number(percentile(xs, 50).toFixed(1)),
              p99Ms: Number(percentile(xs, 99).toFixed(1)),
              p50Ratio: Number((percentile(xs, 50) / refP50).toFixed(2)),
              p99Ratio: Number((percentile(xs, 99) / refP99).toFixed(2)),
            });
          }
        }
      }

      console.log(
        `calico: ${variant}; single: ${ITERATIONS} sequential; burst: ${BURST} concurrent; ${cpus().length} CPUs; load ${loadavg()[0].toFixed(2)}\n`,
      );
      console.log('| phase | command | plugin | n | p50 ms | p99 ms | p50 × ptp | p99 × ptp |');
      console.log('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |');
      for (const r of rows) {
        console.log(
          `| ${r.phase} | ${r.command} | ${r.side} | ${r.n} | ${r.p50Ms} | ${r.p99Ms} | ${r.p50Ratio} | ${r.p99Ratio} |`,
        );
      }
      const returned = SIDES.map((side) => `${side} ${addresses[side].length}`).join(', ');
      console.log(`\nADDs that returned an address (of ${ITERATIONS + BURST + 1} per plugin): ${returned}`);
      console.log('\nAPI server requests per single ADD / DEL (kube-apiserver request counters):');
      for (const [side, r] of Object.entries(apiRequests)) {
        const fmt = (o) =>
          Object.entries(o)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ');
        console.log(`  ${LABELS[side]}: ADD ${fmt(r.ADD)}; DEL ${fmt(r.DEL)}`);
      }
      console.log(`\nfailed invocations: ${failures.length}`);
      for (const f of failures.slice(0, 5)) console.log(`  ${f}`);
      console.log(`goal: calico p50 ≤ ${GOAL} × ptp p50, single and burst (with the service, as deployed)`);

      await mkdir(dirname(OUT), { recursive: true });
      await writeFile(
        OUT,
        `${JSON.stringify(
          {
            bench: 'kdd-cni',
            datastore: 'kubernetes',
            started: started.toISOString(),
            calico: variant,
            iterations: ITERATIONS,
            burst: BURST,
            node: process.version,
            cpus: cpus().length,
            loadavg1: Number(loadavg()[0].toFixed(2)),
            failures: failures.length,
            addresses: Object.fromEntries(
              SIDES.map((side) => [
                side,
                { count: addresses[side].length, distinct: new Set(addresses[side]).size },
              ]),
            ),
            rows,
            apiRequests,
            samplesMs: Object.fromEntries(
              Object.entries(samples).map(([k, s]) => [
                k,
                {
                  ...Object.fromEntries(
                    Object.entries(s).map(([c, xs]) => [
                      c,
                      Array.isArray(xs) ? xs.map((x) => Number(x.toFixed(1))) : Number(xs.toFixed(0)),
                    ]),
                  ),
                },
              ]),
            ),
          },
          null,
          2,
        )}\n`,
      );
      log(`wrote ${OUT}`);
    } finally {
      // DEL whatever an error left added (DEL is idempotent for both plugins).
      for (const [side, pod] of [...added]) await del(side, pod).catch(() => undefined);
      await service.stop();
      rest.close();
    }
  } finally {
    await apiServer.stop();
  }
}

if (args.inner) await inner();
else await outer();
