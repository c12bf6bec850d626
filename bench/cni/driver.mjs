// The CNI latency bench's machinery, shared by bench/cni (etcd) and bench/kdd/cni-kdd (Kubernetes
// datastore): what differs between them is only the datastore each inner half starts and the
// network config `calico` gets.
//
// - `runOuter`: the outer half, in the host's network namespace: makes the node namespace and one
//   pod namespace per ADD, runs the script again inside the node namespace (`--inner`), and
//   removes every namespace and the temp dir afterwards, also on failure.
// - `measure`: the inner half's measurement: three sides (`calico` direct, `calico` via the plugin
//   service, `ptp` + `host-local`), a warm-up, a single series and a burst per side, a floor of
//   CNI VERSION; every pod DELeted at the end, also on failure.
// - `report`: the table, the figures and the JSON file.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';

const HERE = dirname(new URL(import.meta.url).pathname);
export const PLUGIN_PKG = join(HERE, '..', '..', 'packages', 'cni-plugin', 'bin');
export const NATIVE_DIR = join(PLUGIN_PKG, 'native');
export const REF_DIR = '/usr/lib/cni';
// calico: every invocation runs in its own process (`service_socket: ""`); service: the same
// executables hand ADD/DEL to the plugin service (`calico --serve`), as on a node running calico-node.
export const SIDES = ['calico', 'service', 'ptp'];
export const LABELS = {
  calico: 'calico + calico-ipam, direct',
  service: 'calico + calico-ipam, via service',
  ptp: 'ptp + host-local',
};
export const PHASES = ['single', 'burst'];
export const GOAL = 2;

/** Run a command to completion; throws with its output when it fails. */
export function run(cmd, argv) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${argv.join(' ')} exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).slice(-500)}`,
    );
  return r.stdout;
}

export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

/** Pod namespace names: per side and phase, one per ADD. */
export function podName(id, side, phase, i) {
  return `${id}-${side[0]}${phase[0]}${i}`;
}

/** The pod names of `sides` for every phase and the warm-up, `count` per phase. */
export function podNames(id, sides, count) {
  const names = [];
  for (const side of sides)
    for (const phase of [...PHASES, 'warm'])
      for (let i = 0; i < (phase === 'warm' ? 1 : count); i++) names.push(podName(id, side, phase, i));
  return names;
}

/** Which calico executables to measure: `pluginDir`, else the native ones when built, else the bundle. */
export function calicoExecutables(pluginDir) {
  const native = existsSync(join(NATIVE_DIR, 'calico')) && existsSync(join(NATIVE_DIR, 'calico-ipam'));
  return {
    dir: pluginDir ?? (native ? NATIVE_DIR : PLUGIN_PKG),
    variant: pluginDir
      ? `from ${pluginDir}`
      : native
        ? 'native (bin/native/calico, calico-ipam)'
        : 'node bundle (bin/calico.mjs)',
  };
}

/**
 * The outer half: the node namespace `id` and every pod namespace, then `script --inner --id ID
 * --tmp DIR ...innerArgs` inside the node namespace; everything removed afterwards.
 */
export async function runOuter({ prefix, script, iterations, burst, innerArgs, log }) {
  const id = `${prefix}-${Math.random().toString(16).slice(2, 8)}`;
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
    for (const name of podNames(id, SIDES, Math.max(iterations, burst))) addNetns(name);
    log(`${made.length} namespaces made; running inside ${id}`);

    const child = spawn(
      'ip',
      ['netns', 'exec', id, process.execPath, script, '--inner', '--id', id, '--tmp', tmp, ...innerArgs],
      { stdio: 'inherit' },
    );
    const onSignal = () => child.kill('SIGTERM');
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    code = await new Promise((resolve) => child.once('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  } finally {
    for (const name of made.reverse()) spawnSync('ip', ['netns', 'delete', name]);
    // Anything of ours a crash left behind (by our prefix only).
    if (existsSync('/run/netns')) {
      for (const name of readdirSync('/run/netns'))
        if (name === id || name.startsWith(`${id}-`)) spawnSync('ip', ['netns', 'delete', name]);
    }
    await rm(tmp, { recursive: true, force: true });
  }
  if (code !== 0) throw new Error(`inner bench exited ${code}`);
}

/** Runs one plugin process; wall ms around it, exit code, output. */
export function invoke(program, env, stdin) {
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
      resolve({
        ms: performance.now() - t0,
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

/**
 * The measurement, inside the node namespace with the datastore running. `calicoConf` is the
 * network config of both calico sides (without `service_socket`). `aroundSingle(side, n, f)`, when
 * given, wraps each calico side's single series (`f` runs the ADDs, returns a function that runs
 * the DELs) to observe what it cost the datastore.
 */
export async function measure({ id, tmp, calicoDir, calicoConf, iterations, burst, aroundSingle }) {
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
  const added = []; // [side, pod] of every ADD not yet DELeted

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
        // counted as a failure if the exit code says so; odd output just has no address
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
    // Warm-up: page cache for the executables, the datastore's first block and affinity.
    for (const side of SIDES) {
      const pod = podName(id, side, 'warm', 0);
      await add(side, pod);
      await del(side, pod);
    }
    if (failures.length > 0) throw new Error(`warm-up failed:\n${failures.join('\n')}`);

    const samples = {};
    for (const phase of PHASES) {
      const n = phase === 'single' ? iterations : burst;
      // Alternate which side goes first per phase, so drift in load falls on both.
      const order = phase === 'single' ? SIDES : [...SIDES].reverse();
      for (const side of order) {
        const pods = Array.from({ length: n }, (_, i) => podName(id, side, phase, i));
        const s = { ADD: [], DEL: [] };
        const t0 = performance.now();
        if (phase === 'single') {
          const series = async () => {
            for (const pod of pods) s.ADD.push(await add(side, pod));
            return async () => {
              for (const pod of pods) s.DEL.push(await del(side, pod));
            };
          };
          if (aroundSingle && side !== 'ptp') await aroundSingle(side, n, series);
          else await (await series())();
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
      for (let i = 0; i < iterations; i++) {
        const r = await invoke(programs[side], { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}');
        s.VERSION.push(check(side, 'VERSION', '-', r));
      }
      samples[`${side} floor`] = s;
    }
    return { samples, failures, addresses };
  } finally {
    // DEL whatever an error left added (DEL is idempotent for both plugins).
    for (const [side, pod] of [...added]) await del(side, pod).catch(() => undefined);
    await service.stop();
  }
}

/** p50/p99 per phase, command and side, with ratios to ptp. */
function rowsOf(samples) {
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
  return rows;
}

/**
 * Prints the table (then `extraLines`, e.g. the datastore's own figures) and writes `out`:
 * `header` first, then what every CNI bench reports.
 */
export async function report({
  out,
  header,
  variant,
  iterations,
  burst,
  result,
  extraLines = [],
  extra = {},
}) {
  const { samples, failures, addresses } = result;
  const rows = rowsOf(samples);
  console.log(
    `calico: ${variant}; single: ${iterations} sequential; burst: ${burst} concurrent; ${cpus().length} CPUs; load ${loadavg()[0].toFixed(2)}\n`,
  );
  console.log('| phase | command | plugin | n | p50 ms | p99 ms | p50 × ptp | p99 × ptp |');
  console.log('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(
      `| ${r.phase} | ${r.command} | ${r.side} | ${r.n} | ${r.p50Ms} | ${r.p99Ms} | ${r.p50Ratio} | ${r.p99Ratio} |`,
    );
  }
  const returned = SIDES.map((side) => `${side} ${addresses[side].length}`).join(', ');
  console.log(`\nADDs that returned an address (of ${iterations + burst + 1} per plugin): ${returned}`);
  for (const line of extraLines) console.log(line);
  console.log(`\nfailed invocations: ${failures.length}`);
  for (const f of failures.slice(0, 5)) console.log(`  ${f}`);
  console.log(`goal: calico p50 ≤ ${GOAL} × ptp p50, single and burst (with the service, as deployed)`);

  const round = (xs) => (Array.isArray(xs) ? xs.map((x) => Number(x.toFixed(1))) : Number(xs.toFixed(0)));
  await mkdir(dirname(out), { recursive: true });
  await writeFile(
    out,
    `${JSON.stringify(
      {
        ...header,
        calico: variant,
        iterations,
        burst,
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
        ...extra,
        samplesMs: Object.fromEntries(
          Object.entries(samples).map(([k, s]) => [
            k,
            Object.fromEntries(Object.entries(s).map(([c, xs]) => [c, round(xs)])),
          ]),
        ),
      },
      null,
      2,
    )}\n`,
  );
}
