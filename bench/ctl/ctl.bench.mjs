// `calicoctl get globalnetworkpolicies` (the built bin/calicoctl, a child process, `-o ps` and
// `-o yaml`) against `etcdctl get --prefix` of the same keys, on one private etcd holding N
// GlobalNetworkPolicies, in one run. Both are whole processes: start-up, connect, read, decode,
// print. Runs alternate (order rotated every round) so drift in machine load falls on every side;
// medians and the ratio to etcdctl are reported, never asserted (a slow machine is not a failure).
// Two floors are shown for reference: `node -e 0` (the runtime alone) and `calicoctl --version`
// (our start-up: load and parse the bundle, no datastore). When the native executable
// (bin/native/calicoctl, the same bundle compiled by bun) is built, it is timed beside the bundle.
//
//   node bench/ctl/ctl.bench.mjs [--n 5000] [--rounds 15] [--out file.json] [--compare other/bin/calicoctl]
// To profile calicoctl itself: `node --cpu-prof packages/ctl/bin/calicoctl get gnp -c <cfg>`.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createDatastore } from '@calico-ts/datastore';
import { startEtcd } from '@calico-ts/datastore/testing';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '5000' },
    // Each side's run time wanders by ±10% on a busy 2-core machine: 15 rounds keep the medians,
    // and so the ratio, from moving with it.
    rounds: { type: 'string', default: '15' },
    concurrency: { type: 'string', default: '32' },
    out: { type: 'string' },
    // Another calicoctl build to time beside this one (e.g. an older commit's bin), same runs.
    compare: { type: 'string' },
  },
});
const N = Number(args.n);
const ROUNDS = Number(args.rounds);
const CONCURRENCY = Number(args.concurrency);
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'ctl.json');
const BIN = join(HERE, '..', '..', 'packages', 'ctl', 'bin', 'calicoctl');
const NATIVE = join(HERE, '..', '..', 'packages', 'ctl', 'bin', 'native', 'calicoctl');
const PREFIX = '/calico/resources/v3/projectcalico.org/globalnetworkpolicies/';

/** A GlobalNetworkPolicy of the size a real cluster has: selectors, a few rules, ports, nets. */
function policy(i) {
  const app = `app-${i % 97}`;
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'GlobalNetworkPolicy',
    metadata: { name: `gnp-${String(i).padStart(5, '0')}`, labels: { team: `t${i % 13}` } },
    spec: {
      order: 100 + (i % 1000),
      selector: `app == '${app}' && env in {'prod', 'staging'}`,
      types: ['Ingress', 'Egress'],
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: `role == 'frontend-${i % 7}'` },
          destination: { ports: [80, 443, `${8000 + (i % 100)}:${8100 + (i % 100)}`] },
        },
        { action: 'Deny', source: { nets: [`198.18.${(i >> 8) & 0xff}.${i & 0xff}/32`] } },
      ],
      egress: [
        { action: 'Allow', protocol: 'UDP', destination: { ports: [53] } },
        { action: 'Allow', destination: { selector: `app == '${app}-db'` } },
      ],
    },
  };
}

async function runPool(count, op) {
  let next = 0;
  const worker = async () => {
    while (next < count) await op(next++);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, worker));
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Run one command to completion; wall ms, exit status, output size and line count. */
function timed(cmd, argv, env) {
  const t0 = performance.now();
  const r = spawnSync(cmd, argv, { env: { ...process.env, ...env }, maxBuffer: 1 << 30 });
  const ms = performance.now() - t0;
  const out = r.stdout ?? Buffer.alloc(0);
  let lines = 0;
  for (const b of out) if (b === 10) lines++;
  return { ms, status: r.status, bytes: out.length, lines, stderr: String(r.stderr ?? '').slice(0, 300) };
}

async function main() {
  const started = new Date();
  console.error(`ctl bench: n=${N} rounds=${ROUNDS}`);
  const etcd = await startEtcd();
  const dir = await mkdtemp(join(tmpdir(), 'ctl-bench-'));
  try {
    const ds = await createDatastore({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints });
    const t0 = performance.now();
    await runPool(N, (i) => ds.create(policy(i)));
    const loadMs = performance.now() - t0;
    await ds.close();
    console.error(`ctl bench: loaded ${N} GlobalNetworkPolicies in ${(loadMs / 1000).toFixed(1)}s`);

    const cfg = join(dir, 'calicoctl.cfg');
    await writeFile(
      cfg,
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: ${etcd.clientUrl}\n`,
    );
    const etcdctlEnv = { ETCDCTL_API: '3' };
    const sides = {
      etcdctl: () => timed('etcdctl', ['--endpoints', etcd.clientUrl, 'get', '--prefix', PREFIX], etcdctlEnv),
      'calicoctl -o ps': () => timed(process.execPath, [BIN, 'get', 'globalnetworkpolicies', '-c', cfg]),
      'calicoctl -o yaml': () =>
        timed(process.execPath, [BIN, 'get', 'globalnetworkpolicies', '-o', 'yaml', '-c', cfg]),
      'calicoctl --version': () => timed(process.execPath, [BIN, '--version']),
      ...(existsSync(NATIVE)
        ? {
            'native calicoctl -o ps': () => timed(NATIVE, ['get', 'globalnetworkpolicies', '-c', cfg]),
            'native calicoctl -o yaml': () =>
              timed(NATIVE, ['get', 'globalnetworkpolicies', '-o', 'yaml', '-c', cfg]),
            'native calicoctl --version': () => timed(NATIVE, ['--version']),
          }
        : {}),
      ...(args.compare
        ? {
            'compare: calicoctl -o ps': () =>
              timed(process.execPath, [args.compare, 'get', 'globalnetworkpolicies', '-c', cfg]),
            'compare: calicoctl -o yaml': () =>
              timed(process.execPath, [
                args.compare,
                'get',
                'globalnetworkpolicies',
                '-o',
                'yaml',
                '-c',
                cfg,
              ]),
            'compare: calicoctl --version': () => timed(process.execPath, [args.compare, '--version']),
          }
        : {}),
      'node -e 0': () => timed(process.execPath, ['-e', '0']),
    };
    const names = Object.keys(sides);
    for (const name of names) sides[name](); // warm-up: page cache, etcd's read path

    const samples = Object.fromEntries(names.map((n) => [n, []]));
    const last = {};
    for (let r = 0; r < ROUNDS; r++) {
      const order = names.map((_, k) => names[(k + r) % names.length]);
      for (const name of order) {
        const res = sides[name]();
        samples[name].push(res.ms);
        last[name] = res;
        if (res.status !== 0) console.error(`ctl bench: ${name} exited ${res.status}: ${res.stderr}`);
      }
    }

    const base = median(samples.etcdctl);
    const rows = names.map((name) => ({
      command: name,
      medianMs: Number(median(samples[name]).toFixed(1)),
      minMs: Number(Math.min(...samples[name]).toFixed(1)),
      ratioToEtcdctl: Number((median(samples[name]) / base).toFixed(2)),
      outputBytes: last[name].bytes,
      outputLines: last[name].lines,
      exit: last[name].status,
    }));

    console.log(
      `GlobalNetworkPolicies: ${N}; rounds: ${ROUNDS}; ${cpus().length} CPUs; load ${loadavg()[0].toFixed(2)}\n`,
    );
    console.log('| command | median ms | min ms | × etcdctl | output bytes | lines | exit |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const r of rows) {
      console.log(
        `| ${r.command} | ${r.medianMs} | ${r.minMs} | ${r.ratioToEtcdctl} | ${r.outputBytes} | ${r.outputLines} | ${r.exit} |`,
      );
    }
    console.log('\ngoal: calicoctl -o ps ≤ 1.5 × etcdctl (the native executable is what a user runs)');

    await mkdir(dirname(OUT), { recursive: true });
    await writeFile(
      OUT,
      `${JSON.stringify(
        {
          bench: 'ctl',
          started: started.toISOString(),
          n: N,
          rounds: ROUNDS,
          compare: args.compare ?? null,
          node: process.version,
          cpus: cpus().length,
          loadavg1: Number(loadavg()[0].toFixed(2)),
          loadMs: Number(loadMs.toFixed(0)),
          rows,
          samplesMs: Object.fromEntries(names.map((n) => [n, samples[n].map((x) => Number(x.toFixed(1)))])),
        },
        null,
        2,
      )}\n`,
    );
    console.error(`ctl bench: wrote ${OUT}`);
  } finally {
    await etcd.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
