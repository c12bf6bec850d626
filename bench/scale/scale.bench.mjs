// Scale: N simulated nodes follow a cluster of E WorkloadEndpoints and P GlobalNetworkPolicies in
// a private etcd, once each node on its own syncer (list+watch of every Felix source, as Felix
// without Typha) and once through one Typha process, in the same run. A node is Felix's
// calculation path (syncer → CalcGraph → 50 ms debounce → flush) ending in a recording dataplane
// (agent-worker.mjs); several nodes share a process, except the first, which runs alone so its RSS
// is that of one Felix at this scale.
//
// Measured per mode:
// - sync: from starting the nodes until every node's first flush after in-sync holds the watched
//   policy;
// - etcd's watchers once synced (`etcd_debugging_mvcc_watcher_total`) and the range requests it
//   served meanwhile (`etcd_debugging_mvcc_range_total`), per source;
// - policy change: --changes times, the watched policy (selecting every endpoint) gets a new port;
//   from just before the write until each node's recorded state has it: median and max over
//   nodes, and the worst change;
// - RSS: the lone node's process, and per node in the shared processes (process RSS / nodes); the
//   Typha process's RSS.
// Ratios typha/direct are printed; nothing is asserted (a busy machine is not a failure).
//
//   node bench/scale/scale.bench.mjs [--nodes 200] [--endpoints 10000] [--policies 1000]
//        [--per-process 25] [--changes 5] [--modes direct,typha] [--tls] [--out file.json]
//
// Every process is started here and stopped by its PID; etcd's temp dir is removed at the end,
// also on failure.
import { fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createKVStore, KVDatastore } from '@calico-ts/datastore';
import { makeEtcdCertificates, startEtcd } from '@calico-ts/datastore/testing';

const HERE = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '200' },
    // Run agents for only the first K nodes (the cluster still has --nodes nodes' endpoints).
    agents: { type: 'string' },
    endpoints: { type: 'string', default: '10000' },
    policies: { type: 'string', default: '1000' },
    'per-process': { type: 'string', default: '25' },
    changes: { type: 'string', default: '5' },
    modes: { type: 'string', default: 'direct,typha' },
    tls: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const CLUSTER_NODES = Number(args.nodes);
/** The nodes that run an agent; the rest exist only as Nodes and endpoints in the datastore. */
const NODES = Math.min(CLUSTER_NODES, Number(args.agents ?? args.nodes));
const ENDPOINTS = Number(args.endpoints);
const POLICIES = Number(args.policies);
const PER_PROCESS = Number(args['per-process']);
const CHANGES = Number(args.changes);
const MODES = args.modes.split(',');
const WATCHED = 'scale-all';
const NAMESPACES = 10;
const APPS = Math.max(1, Math.floor(POLICIES / 2));
const V3 = 'projectcalico.org/v3';
const MiB = 1024 * 1024;

const nodeName = (i) => `scale-node-${String(i).padStart(4, '0')}`;
const children = new Set();

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor((s.length - 1) / 2)];
}

async function pool(items, width, f) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await f(items[next++]);
    }),
  );
}

function watchedPolicy(port) {
  return {
    apiVersion: V3,
    kind: 'GlobalNetworkPolicy',
    metadata: { name: WATCHED },
    spec: {
      order: 1,
      selector: 'has(app)',
      types: ['Ingress'],
      ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [port] } }],
    },
  };
}

/** Profiles, Nodes, E endpoints round-robin over the nodes, P policies (one selects every endpoint). */
async function seed(ds) {
  const resources = [];
  for (let n = 0; n < NAMESPACES; n++) {
    resources.push({
      apiVersion: V3,
      kind: 'Profile',
      metadata: { name: `kns.ns${n}` },
      spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] },
    });
  }
  for (let i = 0; i < CLUSTER_NODES; i++) {
    resources.push({
      apiVersion: V3,
      kind: 'Node',
      metadata: { name: nodeName(i) },
      spec: { bgp: { ipv4Address: `10.${(i >> 8) & 255}.${i & 255}.1/16` } },
    });
  }
  for (let i = 0; i < ENDPOINTS; i++) {
    const node = nodeName(i % CLUSTER_NODES);
    const ns = `ns${i % NAMESPACES}`;
    const pod = `pod${i}`;
    resources.push({
      apiVersion: V3,
      kind: 'WorkloadEndpoint',
      metadata: {
        name: `${node}-k8s-${pod}-eth0`,
        namespace: ns,
        labels: { app: `app${i % APPS}`, tier: `t${i % 7}` },
      },
      spec: {
        orchestrator: 'k8s',
        node,
        pod,
        endpoint: 'eth0',
        containerID: `c${i}`,
        ipNetworks: [`10.${128 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}/32`],
        profiles: [`kns.${ns}`],
        interfaceName: `cali${String(i).padStart(11, '0')}`,
      },
    });
  }
  resources.push(watchedPolicy(40000));
  for (let j = 1; j < POLICIES; j++) {
    resources.push({
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: `pol-${j}` },
      spec: {
        order: 10 + j,
        selector: `app == 'app${j % APPS}'`,
        types: ['Ingress'],
        ingress: [
          {
            action: 'Allow',
            protocol: 'TCP',
            source: { selector: `app == 'app${(j + 1) % APPS}'` },
            destination: { ports: [80, 443] },
          },
          { action: 'Deny', source: { nets: [`192.0.2.${j % 256}/32`] } },
        ],
      },
    });
  }
  await pool(resources, 32, (r) => ds.create(r));
  return resources.length;
}

async function etcdMetric(etcd, name) {
  const text = await (await fetch(`${etcd.clientUrl}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`etcd metrics lack ${name}`);
  return Number(m[1]);
}

function start(script, config, onMessage, execArgv = ['--expose-gc', '--max-old-space-size=8192']) {
  const child = fork(join(HERE, script), [JSON.stringify(config)], {
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.add(child);
  child.on('message', (m) => onMessage(m, child));
  child.once('exit', (code, signal) => {
    children.delete(child);
    if (code !== 0 && !child.stopping) failure.reject(new Error(`${script} exited ${code ?? signal}`));
  });
  return child;
}

const failure = {};
failure.promise = new Promise((_, reject) => {
  failure.reject = reject;
});
failure.promise.catch(() => {});

// `progress()` (optional) says how far the wait has got: printed every 15 s, and in the timeout's
// error, so a run that gives up still reports what it reached.
async function waitFor(what, cond, timeoutMs, progress) {
  const start = Date.now();
  const end = start + timeoutMs;
  let nextReport = start + 15_000;
  while (!cond()) {
    const now = Date.now();
    if (now > end) {
      const got = progress ? ` (${progress()})` : '';
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${got}`);
    }
    if (progress && now >= nextReport) {
      nextReport = now + 15_000;
      console.error(
        `scale: waiting for ${what}: ${progress()} after ${((now - start) / 1000).toFixed(0)} s (load ${loadavg()[0].toFixed(1)})`,
      );
    }
    await Promise.race([new Promise((r) => setTimeout(r, 20)), failure.promise]);
  }
}

function ask(child, t) {
  return new Promise((resolve) => {
    const on = (m) => {
      if (m.t === t) {
        child.off('message', on);
        resolve(m);
      }
    };
    child.on('message', on);
    child.send({ t });
  });
}

async function stopChild(child) {
  if (child.exitCode !== null) return;
  child.stopping = true;
  const exited = new Promise((r) => child.once('exit', r));
  child.send({ t: 'stop' });
  const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(t);
}

async function runMode(mode, etcd, ds, tls) {
  let typha;
  let typhaInfo;
  if (mode === 'typha') {
    typha = start(
      'typha-proc.mjs',
      { etcdEndpoints: etcd.endpoints, ...(tls ? { tls: tls.server } : {}) },
      (m) => {
        if (m.t === 'listening') typhaInfo = m;
      },
    );
    await waitFor('Typha listening', () => typhaInfo !== undefined, 60_000);
  }
  const rangesBefore = await etcdMetric(etcd, 'etcd_debugging_mvcc_range_total');
  const synced = new Map();
  const applied = new Map();
  const groups = [[nodeName(0)]];
  for (let i = 1; i < NODES; i += PER_PROCESS) {
    groups.push(Array.from({ length: Math.min(PER_PROCESS, NODES - i) }, (_, k) => nodeName(i + k)));
  }
  const t0 = Date.now();
  const workers = groups
    .filter((g) => g.length > 0)
    .map((nodes, i) =>
      start(
        'agent-worker.mjs',
        {
          nodes,
          etcdEndpoints: etcd.endpoints,
          watchPolicy: `gnp/${WATCHED}`,
          ...(typha ? { typhaAddr: `127.0.0.1:${typhaInfo.port}` } : {}),
          ...(typha && tls ? { tls: tls.client } : {}),
        },
        (m) => {
          if (m.t === 'synced') synced.set(m.node, m.at);
          if (m.t === 'applied') applied.set(m.node, m.at);
        },
        // The lone node runs with Node's default heap settings, as a Felix process would.
        i === 0
          ? ['--expose-gc', ...(process.env.SCALE_SOLO_FLAGS ?? '').split(' ').filter(Boolean)]
          : undefined,
      ),
    );
  await waitFor(
    `${NODES} nodes in sync (${mode})`,
    () => synced.size === NODES,
    30 * 60_000,
    () => `${synced.size}/${NODES} in sync`,
  );
  const syncMs = Math.max(...synced.values()) - t0;
  // Watches start after each source's list; let the last ones register.
  await new Promise((r) => setTimeout(r, 1000));
  const watchers = await etcdMetric(etcd, 'etcd_debugging_mvcc_watcher_total');
  const ranges = (await etcdMetric(etcd, 'etcd_debugging_mvcc_range_total')) - rangesBefore;

  const changes = [];
  for (let c = 0; c < CHANGES; c++) {
    const port = 41000 + c + (mode === 'typha' ? 500 : 0);
    applied.clear();
    for (const w of workers) w.send({ t: 'expect', policy: `gnp/${WATCHED}`, marker: String(port) });
    const current = await ds.get('GlobalNetworkPolicy', WATCHED);
    const tWrite = Date.now();
    await ds.update({ ...current, spec: watchedPolicy(port).spec });
    await waitFor(
      `change ${c} on every node (${mode})`,
      () => applied.size === NODES,
      5 * 60_000,
      () => `${applied.size}/${NODES} applied`,
    );
    const lat = [...applied.values()].map((at) => at - tWrite);
    changes.push({ medianMs: median(lat), maxMs: Math.max(...lat), nodes: lat.length });
    await new Promise((r) => setTimeout(r, 300));
  }
  const stats = await Promise.all(workers.map((w) => ask(w, 'stats')));
  const typhaStats = typha ? await ask(typha, 'stats') : undefined;
  for (const w of workers) await stopChild(w);
  if (typha) await stopChild(typha);
  const shared = stats.slice(1);
  const sharedNodes = shared.reduce((n, s) => n + s.nodes, 0);
  return {
    mode,
    nodes: NODES,
    synced: synced.size,
    syncMs,
    watchers,
    sources: typhaInfo?.sources,
    ranges,
    changes,
    changeMedianMs: median(changes.map((c) => c.medianMs)),
    changeMaxMs: Math.max(...changes.map((c) => c.maxMs)),
    soloRssMiB: stats[0].rss / MiB,
    soloHeapMiB: stats[0].heapUsed / MiB,
    soloHeapTotalMiB: stats[0].heapTotal / MiB,
    soloExternalMiB: stats[0].external / MiB,
    sharedRssPerNodeMiB:
      sharedNodes > 0 ? shared.reduce((n, s) => n + s.rss, 0) / sharedNodes / MiB : undefined,
    typhaRssMiB: typhaStats ? typhaStats.rss / MiB : undefined,
    typhaClients: typhaStats?.clients,
    typhaDroppedSlow: typhaStats?.droppedSlow,
  };
}

/** Typha's server certificate and the agents' client certificate, with the CNs each side checks. */
async function makeCerts(dir) {
  const client = await makeEtcdCertificates(dir, {
    validDays: 1,
    serverCN: 'typha-server',
    clientCN: 'typha-client',
  });
  const server = {
    caFile: client.caFile,
    certFile: join(dir, 'server.pem'),
    keyFile: join(dir, 'server-key.pem'),
  };
  return { server, client: { caFile: client.caFile, certFile: client.certFile, keyFile: client.keyFile } };
}

const fmt = (x, d = 0) => (x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));

async function main() {
  console.log(
    `scale: ${NODES} nodes running of ${CLUSTER_NODES} (${PER_PROCESS} per process, the first alone), ${ENDPOINTS} endpoints, ${POLICIES} policies, ` +
      `${CHANGES} changes; ${cpus().length} CPUs, load ${loadavg()[0].toFixed(2)}${args.tls ? ', Typha over TLS' : ''}`,
  );
  const etcd = await startEtcd({ startTimeoutMs: 60_000 });
  const tmp = await mkdtemp(join(tmpdir(), 'calico-ts-scale-'));
  let kv;
  let ds;
  cleanup = async () => {
    for (const c of children) {
      c.stopping = true;
      c.kill('SIGKILL');
    }
    await etcd.stop();
    await rm(tmp, { recursive: true, force: true });
  };
  try {
    const tls = args.tls ? await makeCerts(tmp) : undefined;
    kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints });
    ds = new KVDatastore(kv, { backend: 'etcdv3' });
    const t = Date.now();
    const n = await seed(ds);
    console.log(`seeded ${n} resources in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const results = [];
    for (const mode of MODES) {
      const r = await runMode(mode, etcd, ds, tls);
      results.push(r);
      console.log(
        `${mode}: in sync ${fmt(r.syncMs / 1000, 1)} s, ${r.watchers} etcd watchers, ${r.ranges} range requests, ` +
          `change median ${fmt(r.changeMedianMs)} ms max ${fmt(r.changeMaxMs)} ms, RSS alone ${fmt(r.soloRssMiB)} MiB, ` +
          `shared ${fmt(r.sharedRssPerNodeMiB, 1)} MiB/node${r.typhaRssMiB ? `, Typha ${fmt(r.typhaRssMiB)} MiB` : ''}`,
      );
    }
    const d = results.find((r) => r.mode === 'direct');
    const ty = results.find((r) => r.mode === 'typha');
    console.log(
      '\n| mode | in sync (s) | etcd watchers | watchers per source | range requests | change median (ms) | change max (ms) | RSS one node alone (MiB) | RSS per node, shared (MiB) | Typha RSS (MiB) |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    const felixSources = 13;
    for (const r of results) {
      const perSource = r.mode === 'typha' ? r.watchers / r.sources : r.watchers / felixSources;
      console.log(
        `| ${r.mode} | ${fmt(r.syncMs / 1000, 1)} | ${r.watchers} | ${fmt(perSource, 1)} | ${r.ranges} | ${fmt(r.changeMedianMs)} | ${fmt(r.changeMaxMs)} | ${fmt(r.soloRssMiB)} | ${fmt(r.sharedRssPerNodeMiB, 1)} | ${fmt(r.typhaRssMiB)} |`,
      );
    }
    if (d && ty) {
      console.log(
        `\nratios typha/direct: in sync ${fmt(ty.syncMs / d.syncMs, 2)}, etcd watchers ${fmt(ty.watchers / d.watchers, 3)}, ` +
          `range requests ${fmt(ty.ranges / d.ranges, 3)}, change median ${fmt(ty.changeMedianMs / d.changeMedianMs, 2)}, ` +
          `change max ${fmt(ty.changeMaxMs / d.changeMaxMs, 2)}, RSS alone ${fmt(ty.soloRssMiB / d.soloRssMiB, 2)}`,
      );
    }
    for (const r of results) {
      console.log(
        `aims (${r.mode}): change on every node < 2000 ms: max ${fmt(r.changeMaxMs)} ms; ` +
          `Felix RSS at ${ENDPOINTS} endpoints < 150 MiB: ${fmt(r.soloRssMiB)} MiB` +
          (r.mode === 'typha' ? `; 1 watch per source: ${r.watchers} watchers for ${r.sources} sources` : ''),
      );
    }
    const out = {
      nodes: CLUSTER_NODES,
      agents: NODES,
      endpoints: ENDPOINTS,
      policies: POLICIES,
      perProcess: PER_PROCESS,
      results,
    };
    if (args.out) await writeFile(args.out, `${JSON.stringify(out, null, 2)}\n`);
  } finally {
    await ds?.close().catch(() => {});
    await cleanup();
  }
}

/** Kills the children, stops etcd and removes the temp dirs; set once etcd runs. */
let cleanup = async () => {
  for (const c of children) c.kill('SIGKILL');
};
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    cleanup().finally(() => process.exit(130));
  });
}
main().catch((e) => {
  console.error(`scale bench: ${e.stack ?? e}`);
  process.exitCode = 1;
});
