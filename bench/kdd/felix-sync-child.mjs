// One fresh Felix start, for felix-sync.bench.mjs: what calico-node's Felix does from process start
// to its first full ruleset, without a kernel. It opens the datastore as calico-node does
// (createKVStore + KVDatastore), follows the same sources through the same Syncer (CALC_KINDS,
// FelixConfiguration, Node, ClusterInformation, IPAM blocks, and on the Kubernetes datastore
// Services and EndpointSlices: `felixKeySources`), feeds the calculation graph as FelixDaemon does
// (flush 50 ms after a change), and on in-sync flushes it and renders the nftables ruleset
// (`renderRuleset`). Only the dataplane's apply is left out: the kernel's work is the same on
// both datastores and bench/felix measures it.
//
// Prints one JSON line: milliseconds since this script started at each step, what the graph
// holds, and the process's peak RSS (VmHWM of this fresh process).
//   FELIX_SYNC_CFG='{"datastoreType":...}' FELIX_SYNC_HOST=node node felix-sync-child.mjs
// FELIX_SYNC_CFG="floor" lists all Pods with @kubernetes/client-node instead (FELIX_SYNC_KUBECONFIG).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

// Never outlive a parent that was killed outright: a start that has not finished by then gives up.
setTimeout(() => {
  process.stderr.write('felix-sync child: not in sync after 10 minutes; giving up\n');
  process.exit(2);
}, 600_000).unref();

const peakRssKb = () => Number(/VmHWM:\s*(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
const emit = (o) => process.stdout.write(`${JSON.stringify({ ...o, peakRssKb: peakRssKb() })}\n`);

async function floor() {
  const { KubeConfig, CoreV1Api } = await import('@kubernetes/client-node');
  const importedMs = performance.now();
  const kc = new KubeConfig();
  kc.loadFromFile(process.env.FELIX_SYNC_KUBECONFIG);
  const api = kc.makeApiClient(CoreV1Api);
  const openedMs = performance.now();
  const list = await api.listPodForAllNamespaces();
  const listedMs = performance.now();
  emit({ importedMs, openedMs, inSyncMs: listedMs, doneMs: listedMs, pods: list.items.length });
}

async function felix() {
  const { createKVStore, KVDatastore, Syncer, resourceSource } = await import('@calico-ts/datastore');
  const { CALC_KINDS, CalcGraph, DEFAULT_RULES_CONFIG, IPAM_BLOCKS_SOURCE, felixKeySources, renderRuleset } =
    await import('@calico-ts/felix');
  const importedMs = performance.now();
  const cfg = JSON.parse(process.env.FELIX_SYNC_CFG);
  const host = process.env.FELIX_SYNC_HOST;
  const kv = await createKVStore(cfg);
  const ds = new KVDatastore(kv, { backend: cfg.datastoreType });
  const openedMs = performance.now();
  const graph = new CalcGraph({ hostname: host });
  const keySources = felixKeySources(kv, ds.backend);
  const kinds = [...CALC_KINDS, 'FelixConfiguration', 'Node', 'ClusterInformation'];
  let updates = 0;
  let ignored = 0;
  let flushes = 0;
  let timer;
  let syncer;
  const result = await new Promise((resolve, reject) => {
    const toGraph = (u) => {
      try {
        graph.onUpdate(u);
      } catch {
        ignored++;
      }
    };
    syncer = new Syncer({
      sources: [
        ...kinds.map((k) => resourceSource(ds, k)),
        ...(keySources.ipamBlocks ? [keySources.ipamBlocks] : []),
        ...(keySources.kubeSources ?? []),
      ],
      onUpdate(u) {
        updates++;
        if (u.source === IPAM_BLOCKS_SOURCE) return;
        if (u.source === 'Service' || u.source === 'EndpointSlice') {
          toGraph({ kind: u.kind, resource: u.item.value });
        } else {
          const k = u.item.kind;
          if (k === 'FelixConfiguration' || k === 'ClusterInformation' || k === 'Node') return;
          toGraph({ kind: u.kind, resource: u.item });
        }
        // FelixDaemon's debounced flush: the graph's incremental work happens while syncing.
        timer ??= setTimeout(() => {
          timer = undefined;
          flushes++;
          graph.flush();
        }, 50);
      },
      onInSync() {
        try {
          const inSyncMs = performance.now();
          if (timer !== undefined) clearTimeout(timer);
          graph.onUpdate({ kind: 'in-sync' });
          graph.flush();
          const state = graph.state();
          const ruleset = renderRuleset(state, DEFAULT_RULES_CONFIG);
          const doneMs = performance.now();
          resolve({
            importedMs,
            openedMs,
            inSyncMs,
            doneMs,
            updates,
            ignored,
            flushes,
            endpoints: Object.keys(state.endpoints).length,
            policies: Object.keys(state.policies).length,
            profiles: Object.keys(state.profiles).length,
            ipSets: Object.keys(state.ipSets).length,
            chains: ruleset.tables.reduce((n, t) => n + Object.keys(t.chains).length, 0),
          });
        } catch (e) {
          reject(e);
        }
      },
    });
    syncer.start();
  });
  emit(result);
  await syncer.stop();
  await ds.close();
}

if (process.env.FELIX_SYNC_CFG === 'floor') await floor();
else await felix();
process.exit(0);
