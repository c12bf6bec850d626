// One process of simulated nodes for bench/scale: each node is Felix's calculation path (its
// syncer, the real CalcGraph, a 50 ms debounce, flush) ending in a recording dataplane that keeps
// the desired state each flush hands it. The syncer is chosen exactly as calico-node chooses it
// (`agentSyncer`): Typha when a Typha address is given, else the node's own list+watch of every
// Felix source on the datastore. The nodes of one process share one etcd client (one gRPC
// connection), but each runs its own lists and watches, as separate processes would.
//
// Driven over IPC by scale.bench.mjs:
//   parent → {t:'expect', policy, marker}   report when the policy's rules carry `marker`
//   parent → {t:'stats'}                    reply {t:'stats', rss, heapUsed, nodes}
//   parent → {t:'stop'}                     stop every node, exit 0
//   child  → {t:'synced', node, at}         the node's first flush after in-sync, with the policy
//   child  → {t:'applied', node, at}        the node's recorded state has the marker
//
//   node agent-worker.mjs <json config>     {nodes, etcdEndpoints, typhaAddr?, watchPolicy}
import { EventEmitter } from 'node:events';
import { createKVStore, KVDatastore } from '@calico-ts/datastore';
import { CALC_KINDS, CalcGraph, felixKeySources, felixSyncerSources } from '@calico-ts/felix';
import { agentSyncer } from '@calico-ts/typha';

const cfg = JSON.parse(process.argv[2]);
// Each node's syncer hangs one abort listener per source on its signal; 13 sources are expected.
EventEmitter.defaultMaxListeners = 64;
const DEBOUNCE_MS = 50;
const calcKinds = new Set([...CALC_KINDS, 'Service', 'EndpointSlice']);

const kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: cfg.etcdEndpoints });
const ds = new KVDatastore(kv, { backend: 'etcdv3' });
const sources = () => felixSyncerSources(ds, felixKeySources(kv, ds.backend));

/** The recording dataplane: the desired state as the flushes built it. */
class RecordingDataplane {
  policies = new Map();
  endpoints = new Set();
  ipSets = new Map();
  applies = 0;
  apply(diff) {
    this.applies++;
    for (const p of diff.policiesUpdated) this.policies.set(p.id, p);
    for (const id of diff.policiesRemoved) this.policies.delete(id);
    for (const e of diff.endpointsUpdated) this.endpoints.add(e.key);
    for (const id of diff.endpointsRemoved) this.endpoints.delete(id);
    for (const s of diff.ipSetsUpdated) this.ipSets.set(s.id, s);
    for (const id of diff.ipSetsRemoved) this.ipSets.delete(id);
  }
}

let expect; // { policy, marker }
const agents = cfg.nodes.map((node) => {
  const graph = new CalcGraph({ hostname: node });
  const dp = new RecordingDataplane();
  const a = { node, graph, dp, timer: undefined, inSync: false, syncedSent: false, appliedSent: undefined };
  const flush = () => {
    a.timer = undefined;
    dp.apply(graph.flush());
    const p = dp.policies.get(cfg.watchPolicy);
    if (a.inSync && !a.syncedSent && p) {
      a.syncedSent = true;
      process.send({ t: 'synced', node, at: Date.now() });
    }
    if (expect && a.appliedSent !== expect.marker && p && JSON.stringify(p.inbound).includes(expect.marker)) {
      a.appliedSent = expect.marker;
      process.send({ t: 'applied', node, at: Date.now() });
    }
  };
  const schedule = () => {
    a.timer ??= setTimeout(flush, DEBOUNCE_MS);
  };
  a.syncer = agentSyncer(
    {
      sources: sources(),
      onUpdate: (u) => {
        if (!calcKinds.has(u.source)) return;
        graph.onUpdate({ kind: u.kind, resource: u.item });
        schedule();
      },
      onInSync: () => {
        a.inSync = true;
        graph.onUpdate({ kind: 'in-sync' });
        schedule();
      },
      retryMs: 200,
    },
    {
      FelixHostname: node,
      TyphaAddr: cfg.typhaAddr ?? '',
      TyphaK8sServiceName: '',
      TyphaK8sNamespace: 'kube-system',
      TyphaReadTimeout: 60,
      TyphaCAFile: cfg.tls?.caFile ?? '',
      TyphaCertFile: cfg.tls?.certFile ?? '',
      TyphaKeyFile: cfg.tls?.keyFile ?? '',
      TyphaCN: cfg.tls ? 'typha-server' : '',
      TyphaURISAN: '',
    },
    { client: 'scale-agent', syncerType: 'felix' },
  );
  return a;
});

process.on('message', async (m) => {
  if (m.t === 'expect') {
    expect = { policy: m.policy, marker: m.marker };
  } else if (m.t === 'stats') {
    globalThis.gc?.();
    const mem = process.memoryUsage();
    process.send({
      t: 'stats',
      rss: mem.rss,
      heapUsed: mem.heapUsed,
      heapTotal: mem.heapTotal,
      external: mem.external,
      nodes: agents.length,
    });
  } else if (m.t === 'stop') {
    for (const a of agents) {
      clearTimeout(a.timer);
      await a.syncer.stop();
    }
    await ds.close();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
for (const a of agents) a.syncer.start();
