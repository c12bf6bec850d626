/**
 * NodeController (upstream's node controller): IPAM garbage collection and auto host endpoints on
 * both datastores; in etcd mode also the Calico Nodes of deleted Kubernetes Nodes and label sync.
 *
 *   Pods, Nodes (Kubernetes, as they are) ─ Syncer ─► who exists now, each Node's labels
 *   Calico Nodes, HostEndpoints, IPPools ─ informers ─► what the passes read (no list per pass;
 *                                                       the datastore is read while one is down)
 *
 *   node pass (on any Node event, debounced, and at the start of every scan):
 *     Calico Nodes whose Kubernetes Node is gone (etcd) ─► their endpoints deleted, affinities
 *                                                          released, the Node deleted
 *     Kubernetes Node labels ─► syncedNodeLabels ─► Calico Node update (etcd, syncLabels)
 *     Calico Nodes ─► planHostEndpoints ─► `<node>-auto-hep` create / update / delete
 *   scan (every leak grace period / 2, and soon after a Pod or a Node is deleted): the node pass, then
 *     IPAM blocks ─► judgeAllocations ─► planLeakRelease ─► IpamClient.releaseIPs (conditional on
 *                   (ipam-leaks.ts)     (grace period)      handle + sequence number)
 *                                    ─► deleted nodes with nothing valid left ─► releaseHostAffinities
 *                                       (empty blocks deleted; blocks in use keep their affinity)
 *                 ─► IPAM gauges and GC counters (upstream's metric names)
 *
 * A Pod's allocation is a leak when the Pod is gone, moved to another node, evicted, or shows other
 * addresses. On a node that still exists it is released after `leakGracePeriodMs` (0 = never); on a
 * node deleted from Kubernetes at once, and then the node's affinities go too: on the Kubernetes
 * datastore, `kubectl delete node` (and the Pods' deletion) frees the node's blocks. Before a
 * release the Kubernetes object that decided it (the Node, the Pod) is read again from the API.
 * Nothing is judged before the Kubernetes view has been listed once.
 */

import type { HostEndpoint, IPPool, Node } from '@calico-ts/api';
import type { Logger } from '@calico-ts/api/log';
import {
  type AllocationBlock,
  type Datastore,
  type Informer,
  informerKeyOf,
  type KVStore,
  kvSource,
  resourceInformer,
  Syncer,
  type SyncSource,
} from '@calico-ts/datastore';
import { kvJson, NODES_PREFIX, PODS_PREFIX } from '@calico-ts/datastore/internal';
import type { IpamClient } from '@calico-ts/ipam';
import { newGcState } from '@calico-ts/ipam/internal';
import {
  ipamNodes,
  type JudgedAllocation,
  judgeAllocations,
  type NodeFate,
  type PodFacts,
  planLeakRelease,
  podOwnsAddress,
} from './ipam-leaks.js';
import { ipamGauges, ipamMetrics, type PoolRef, poolOf } from './ipam-metrics.js';
import type { MetricsRegistry } from './metrics.js';
import type { ReconcileReport } from './mirror-controller.js';
import { kubernetesNodeName, planHostEndpoints, syncedNodeLabels } from './node-sync.js';
import { resourceKeyOf } from './reconcile.js';
import { ReconcileLoop } from './reconcile-loop.js';
import { invalidReason, isInvalid, UnconvertibleReporter } from './unconvertible.js';
import { decodePod } from './wep-label-controller.js';

interface PodView {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly spec?: { readonly nodeName?: string };
  readonly status?: {
    readonly podIPs?: readonly { readonly ip?: string }[];
    readonly podIP?: string;
    readonly phase?: string;
    readonly reason?: string;
  };
}

export interface NodeControllerOptions {
  /** The Kubernetes datastore's key store (Pods and Nodes as they are). */
  readonly kubernetes: KVStore;
  /** The Calico datastore and IPAM on it. */
  readonly calico: Datastore;
  readonly ipam: IpamClient;
  /** Delete Calico Nodes whose Kubernetes Node is gone (etcd mode only). */
  readonly deleteNodes: boolean;
  /** Copy Kubernetes Node labels onto Calico Nodes (etcd mode; upstream's `syncLabels`). */
  readonly syncLabels?: boolean;
  /**
   * Keep a HostEndpoint `<node>-auto-hep` per Calico Node (upstream's `hostEndpoint.autoCreate`).
   * False deletes the ones this controller made.
   */
  readonly autoHostEndpoints?: boolean;
  readonly log: Logger;
  /**
   * How long a Pod's allocation must stay a leak, its node still there, before it is released
   * (upstream's `leakGracePeriod`). Default 15 min; 0 turns that collection off.
   */
  readonly leakGracePeriodMs?: number;
  /** Scan at least this often. Allocations are scanned every grace period / 2 (5 min when off). */
  readonly scanPeriodMs?: number;
  /** How long after a Pod or Node deletion the scan runs (deletions close together share one; 1 s). */
  readonly deletionDebounceMs?: number;
  readonly now?: () => number;
  readonly retryMs?: number;
  readonly onReconciled?: (r: ReconcileReport & { readonly released: readonly string[] }) => void;
  /** Where the IPAM gauges and GC counters go (upstream's names); with `blocks`, to read them. */
  readonly metrics?: MetricsRegistry;
  /** A Kubernetes object was skipped because it cannot be converted (a Node, or its host endpoint). */
  readonly onSkipped?: (name: string) => void;
  /** The IPAM blocks as stored, e.g. `() => ipamStore.listBlocks()`: what the scan judges. */
  readonly blocks: () => Promise<readonly AllocationBlock[]>;
}

/** The addresses a pod shows: the CNI annotations, else its status. Pure. */
export function podAddresses(pod: PodView): string[] {
  const a = pod.metadata.annotations ?? {};
  const fromCni = (a['cni.projectcalico.org/podIPs'] ?? a['cni.projectcalico.org/podIP'] ?? '')
    .split(',')
    .map((s) => s.trim().split('/')[0]!)
    .filter((s) => s !== '');
  if (fromCni.length > 0) return fromCni;
  const st = pod.status ?? {};
  return [...(st.podIPs ?? []).map((p) => p.ip ?? ''), st.podIP ?? ''].filter((s) => s !== '');
}

/** What the leak judgement needs of a Pod object. Pure. */
export function podFacts(obj: unknown): PodFacts {
  const pod = (obj ?? {}) as PodView;
  const st = pod.status ?? {};
  return {
    ...(pod.spec?.nodeName ? { nodeName: pod.spec.nodeName } : {}),
    addresses: podAddresses({
      metadata: pod.metadata ?? { name: '' },
      ...(pod.status ? { status: st } : {}),
    }),
    reported: Boolean(st.podIP) || (st.podIPs ?? []).some((p) => Boolean(p.ip)),
    evicted: st.phase === 'Failed' && st.reason === 'Evicted',
  };
}

const DEFAULT_LEAK_GRACE_MS = 15 * 60_000;

export class NodeController {
  readonly name = 'node';
  readonly #o: NodeControllerOptions;
  /** `<namespace>/<name>` → the Pod as the leak judgement sees it. */
  readonly #pods = new Map<string, PodFacts>();
  /** Kubernetes Node name → its labels. */
  readonly #k8sNodes = new Map<string, Readonly<Record<string, string>>>();
  readonly #gc = newGcState();
  readonly #loop: ReconcileLoop;
  /** Passes over the nodes (deletion, labels, host endpoints): on node events and every scan. */
  readonly #nodeLoop: ReconcileLoop;
  readonly #bad: UnconvertibleReporter;
  /** Kubernetes Nodes that exist but cannot be read: never taken for gone. */
  readonly #unreadableNodes = new Set<string>();
  #inSync = false;
  readonly #gauges: ReturnType<typeof ipamGauges> | undefined;
  #syncer: Syncer | undefined;
  /** What the passes read of the Calico datastore, kept by list+watch instead of a list per pass. */
  readonly #calicoNodes: Informer<Node>;
  readonly #heps: Informer<HostEndpoint>;
  readonly #pools: Informer<IPPool>;

  constructor(opts: NodeControllerOptions) {
    this.#o = opts;
    this.#gauges = opts.metrics ? ipamGauges(opts.metrics) : undefined;
    this.#bad = new UnconvertibleReporter(this.name, opts.log, opts.onSkipped);
    const grace = opts.leakGracePeriodMs ?? DEFAULT_LEAK_GRACE_MS;
    this.#loop = new ReconcileLoop({
      pass: () => this.#scanOnce(),
      periodMs: Math.min(
        opts.scanPeriodMs ?? Number.POSITIVE_INFINITY,
        grace > 0 ? Math.max(grace / 2, 1000) : 5 * 60_000,
      ),
      debounceMs: opts.deletionDebounceMs ?? 1000,
      ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
      onError: (e) =>
        opts.log.warn({ controller: this.name, err: (e as Error).message }, 'scan failed; will retry'),
    });
    this.#nodeLoop = new ReconcileLoop({
      pass: () => this.#nodesOnce(),
      ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
      onError: (e) =>
        opts.log.warn({ controller: this.name, err: (e as Error).message }, 'node sync failed; will retry'),
    });
    const follow = { log: opts.log, ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}) };
    this.#calicoNodes = resourceInformer(opts.calico, 'Node', {
      ...follow,
      // Calico Nodes change too (calico-node writes their addresses): a pass follows them when a
      // Calico Node's labels or host endpoint depend on them.
      onChange: () => {
        if (this.#inSync && (opts.syncLabels || opts.autoHostEndpoints)) this.#nodeLoop.schedule();
      },
    }) as Informer<Node>;
    this.#heps = resourceInformer(opts.calico, 'HostEndpoint', follow) as Informer<HostEndpoint>;
    this.#pools = resourceInformer(opts.calico, 'IPPool', follow) as Informer<IPPool>;
  }

  #informers(): Informer<unknown>[] {
    return [this.#calicoNodes, this.#heps, this.#pools] as Informer<unknown>[];
  }

  /** What an informer holds; the datastore's list while its watch is down. */
  async #read<T>(informer: Informer<T>, kind: 'Node' | 'HostEndpoint' | 'IPPool'): Promise<T[]> {
    if (informer.serving) return informer.list();
    return (await this.#o.calico.list(kind)).items as T[];
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#syncer = new Syncer({
        sources: [
          // Any Pod that parses counts: one whose labels are odd still owns its addresses.
          kvSource('pods', this.#o.kubernetes, PODS_PREFIX, (kv) => podFacts(kvJson(kv))) as SyncSource,
          kvSource('nodes', this.#o.kubernetes, NODES_PREFIX, (kv) => {
            try {
              return decodePod(kv.value) as PodView;
            } catch (e) {
              this.#unreadableNodes.add(kv.key.slice(NODES_PREFIX.length));
              this.#bad.skip(kv.key, kv.modRevision, (e as Error).message);
              throw e;
            }
          }) as SyncSource,
        ],
        onUpdate: (u) => {
          if (u.source === 'pods') {
            const { key, value } = u.item as { key: string; value: PodFacts };
            const name = key.slice(PODS_PREFIX.length);
            if (u.kind === 'set') this.#pods.set(name, value);
            else {
              this.#pods.delete(name);
              // Its addresses may be leaks now (a Pod deleted behind the CNI plugin's back).
              if (this.#inSync) this.#loop.schedule();
            }
            return;
          }
          if (u.source === 'nodes') {
            const { value } = u.item as { value: PodView };
            const { key } = u.item as { key: string };
            if (u.kind === 'set') this.#k8sNodes.set(value.metadata.name, value.metadata.labels ?? {});
            else this.#k8sNodes.delete(value?.metadata.name ?? key.slice(NODES_PREFIX.length));
            this.#unreadableNodes.delete(key.slice(NODES_PREFIX.length));
            // A deleted Node's addresses and blocks are freed by the next scan, not a period later.
            if (u.kind !== 'set' && this.#inSync) this.#loop.schedule();
          }
          if (this.#inSync) this.#nodeLoop.schedule();
        },
        onInSync: () => {
          this.#inSync = true;
          resolve();
        },
        log: this.#o.log,
        ...(this.#o.retryMs !== undefined ? { retryMs: this.#o.retryMs } : {}),
      });
      this.#syncer.start();
    });
    for (const i of this.#informers()) i.start();
    await Promise.all(this.#informers().map((i) => i.synced()));
    await this.scan();
    this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#loop.stop();
    await this.#nodeLoop.stop();
    await this.#syncer?.stop();
    await Promise.all(this.#informers().map((i) => i.stop()));
  }

  /** One pass: the nodes (deleted ones, labels, host endpoints), then leaked addresses. */
  scan(): Promise<void> {
    return this.#loop.run();
  }

  /** One scan: a node pass, then leak collection; true when something failed (the loop retries). */
  async #scanOnce(): Promise<boolean> {
    await this.#nodeLoop.run();
    let calicoNodes: Map<string, Node>;
    let blocks: readonly AllocationBlock[];
    try {
      calicoNodes = new Map((await this.#read(this.#calicoNodes, 'Node')).map((n) => [n.metadata.name, n]));
      blocks = await this.#o.blocks();
    } catch (e) {
      this.#o.log.warn(
        { controller: this.name, err: (e as Error).message },
        'cannot list Nodes or IPAM blocks; leak collection skipped',
      );
      return true;
    }
    let released: JudgedAllocation[] = [];
    let pending: readonly JudgedAllocation[] = [];
    let failed = false;
    try {
      const fates = await this.#nodeFates(ipamNodes(blocks), calicoNodes);
      const judged = judgeAllocations(blocks, {
        pod: (ns, name) => this.#pods.get(`${ns}/${name}`),
        node: (n) => fates.get(n) ?? { kind: 'not-kubernetes' },
      });
      const plan = planLeakRelease(
        judged.allocations,
        this.#gc,
        (this.#o.now ?? Date.now)(),
        this.#o.leakGracePeriodMs ?? DEFAULT_LEAK_GRACE_MS,
      );
      this.#gc.firstSeen = plan.firstSeen;
      pending = plan.pending;
      released = await this.#release(plan.release, fates);
      for (const node of judged.nodesToRelease) {
        const r = await this.#o.ipam.releaseHostAffinities(node, { mustBeEmpty: true });
        if (r.released.length > 0)
          this.#o.log.info(
            { controller: this.name, node, blocks: r.released },
            'Kubernetes Node gone: its block affinities released',
          );
        if (r.notEmpty.length > 0)
          this.#o.log.info(
            { controller: this.name, node, blocks: r.notEmpty },
            'Kubernetes Node gone: blocks still in use keep its affinity until they are empty',
          );
      }
    } catch (e) {
      failed = true;
      this.#o.log.warn(
        { controller: this.name, err: (e as Error).message },
        'leak collection failed; will retry',
      );
    }
    if (this.#gauges) {
      try {
        // The blocks as judged, unless this scan changed them.
        await this.#publish(this.#gauges, released, pending, released.length > 0 ? undefined : blocks);
      } catch (e) {
        this.#o.log.warn(
          { controller: this.name, err: (e as Error).message },
          'cannot read IPAM blocks for the metrics; they keep their last values',
        );
      }
    }
    this.#o.onReconciled?.({
      created: 0,
      updated: 0,
      deleted: 0,
      failed: failed ? ['IPAM'] : [],
      released: released.map((r) => r.ip),
    });
    return failed;
  }

  /**
   * Each IPAM node's fate from the Kubernetes view; a node the view takes for gone is read again
   * from the API, so a Node the watch has not delivered yet is never taken for deleted.
   */
  async #nodeFates(names: readonly string[], calicoNodes: ReadonlyMap<string, Node>) {
    const fates = new Map<string, NodeFate>();
    for (const name of names) {
      const calicoNode = calicoNodes.get(name);
      let k8sName = name;
      if (calicoNode && this.#o.calico.backend !== 'kubernetes') {
        const refs = calicoNode.spec?.orchRefs ?? [];
        if (refs.length > 0 && !refs.some((r) => r.orchestrator === 'k8s')) {
          fates.set(name, { kind: 'not-kubernetes' });
          continue;
        }
        k8sName = kubernetesNodeName(calicoNode);
      }
      let exists = this.#k8sNodes.has(k8sName) || this.#unreadableNodes.has(k8sName);
      if (!exists) exists = (await this.#o.kubernetes.get(`${NODES_PREFIX}${k8sName}`)) !== undefined;
      fates.set(name, exists ? { kind: 'exists', kubernetesName: k8sName } : { kind: 'gone' });
    }
    return fates;
  }

  /**
   * Release the planned allocations, each conditional on its handle and sequence number. A
   * candidate (its node still there) is checked once more against its Pod as the API has it now;
   * if the Pod holds it again, its whole handle stays.
   */
  async #release(
    plan: readonly JudgedAllocation[],
    fates: ReadonlyMap<string, NodeFate>,
  ): Promise<JudgedAllocation[]> {
    const resurrected = new Set<string>();
    for (const a of plan) {
      if (a.verdict !== 'candidate' || resurrected.has(a.handleId)) continue;
      const kv = await this.#o.kubernetes.get(`${PODS_PREFIX}${a.attrs.namespace}/${a.attrs.pod}`);
      const pod = kv ? podFacts(kvJson(kv)) : undefined;
      if (podOwnsAddress(pod, a.ip, fates.get(a.node) ?? { kind: 'not-kubernetes' })) {
        resurrected.add(a.handleId);
        this.#o.log.info(
          { controller: this.name, ip: a.ip, pod: `${a.attrs.namespace}/${a.attrs.pod}` },
          'address in use again; not released',
        );
      }
    }
    const go = plan.filter((a) => !resurrected.has(a.handleId));
    if (go.length === 0) return [];
    const r = await this.#o.ipam.releaseIPs(
      go.map((a) => ({ ip: a.ip, handleId: a.handleId, sequenceNumber: a.sequenceNumber })),
    );
    const done = new Set(r.released);
    const out = go.filter((a) => done.has(a.ip));
    for (const a of out)
      this.#o.log.info(
        {
          controller: this.name,
          ip: a.ip,
          handle: a.handleId,
          node: a.node,
          ...(a.attrs.pod ? { pod: `${a.attrs.namespace}/${a.attrs.pod}` } : {}),
        },
        a.verdict === 'confirmed' ? 'leaked address released (its node is gone)' : 'leaked address released',
      );
    return out;
  }

  /**
   * One pass over the nodes: Calico Nodes whose Kubernetes Node is gone (etcd mode), labels
   * (etcd mode, `syncLabels`), auto host endpoints. True when a write failed.
   */
  async #nodesOnce(): Promise<boolean> {
    const failed: string[] = [];
    const done = { created: 0, updated: 0, deleted: 0 };
    let nodes: Node[];
    try {
      nodes = await this.#read(this.#calicoNodes, 'Node');
    } catch (e) {
      this.#o.log.warn({ controller: this.name, err: (e as Error).message }, 'cannot list Nodes; will retry');
      return true;
    }
    if (this.#o.deleteNodes) {
      const gone = nodes.filter(
        (n) =>
          !this.#k8sNodes.has(kubernetesNodeName(n)) && !this.#unreadableNodes.has(kubernetesNodeName(n)),
      );
      for (const node of gone) {
        const name = node.metadata.name;
        try {
          const weps = await this.#o.calico.list('WorkloadEndpoint');
          for (const w of weps.items) {
            if (w.spec.node !== name) continue;
            await this.#o.calico.delete('WorkloadEndpoint', w.metadata.name, {
              namespace: w.metadata.namespace ?? '',
            });
          }
          await this.#o.ipam.releaseHostAffinities(name);
          const gone = await this.#o.calico.delete('Node', name);
          this.#calicoNodes.removed(name, gone.metadata.resourceVersion);
          done.deleted++;
          this.#o.log.info(
            { controller: this.name, node: name },
            'Kubernetes Node gone: Calico Node deleted',
          );
        } catch (e) {
          failed.push(name);
          this.#o.log.warn(
            { controller: this.name, node: name, err: (e as Error).message },
            'cannot delete Calico Node; will retry',
          );
        }
      }
      nodes = nodes.filter((n) => !gone.includes(n));
    }
    if (this.#o.syncLabels) {
      for (const [i, node] of nodes.entries()) {
        const labels = this.#k8sNodes.get(kubernetesNodeName(node));
        if (labels === undefined) continue;
        const next = syncedNodeLabels(node, labels);
        if (!next) continue;
        const why = invalidReason(next);
        if (why !== undefined) {
          this.#bad.skip(`Node ${kubernetesNodeName(node)}`, JSON.stringify(labels), why);
          continue;
        }
        try {
          nodes[i] = (await this.#o.calico.update(next)) as Node;
          this.#calicoNodes.wrote(nodes[i]!);
          done.updated++;
          this.#o.log.info(
            { controller: this.name, node: node.metadata.name },
            'Kubernetes Node labels synced',
          );
        } catch (e) {
          if (isInvalid(e)) {
            this.#bad.skip(`Node ${kubernetesNodeName(node)}`, JSON.stringify(labels), (e as Error).message);
            continue;
          }
          failed.push(node.metadata.name);
          this.#o.log.warn(
            { controller: this.name, node: node.metadata.name, err: (e as Error).message },
            'cannot sync Node labels; will retry',
          );
        }
      }
    }
    try {
      const heps = await this.#read(this.#heps, 'HostEndpoint');
      const plan = planHostEndpoints(nodes, heps, this.#o.autoHostEndpoints === true);
      const write = async (what: keyof typeof done, hep: HostEndpoint, f: () => Promise<unknown>) => {
        const node = `Node ${hep.spec.node ?? hep.metadata.name}`;
        const version = JSON.stringify([hep.metadata.labels, hep.spec]);
        const why = what === 'deleted' ? undefined : invalidReason(hep);
        if (why !== undefined) {
          this.#bad.skip(node, version, `its host endpoint: ${why}`);
          return;
        }
        try {
          await f();
          done[what]++;
          this.#o.log.info({ controller: this.name, [what]: resourceKeyOf(hep) }, `HostEndpoint ${what}`);
        } catch (e) {
          if (isInvalid(e)) {
            this.#bad.skip(node, version, `its host endpoint: ${(e as Error).message}`);
            return;
          }
          failed.push(resourceKeyOf(hep));
          this.#o.log.warn(
            { controller: this.name, hostEndpoint: resourceKeyOf(hep), err: (e as Error).message },
            'cannot write auto HostEndpoint; will retry',
          );
        }
      };
      const wrote = (h: HostEndpoint) => this.#heps.wrote(h);
      for (const h of plan.creates) await write('created', h, () => this.#o.calico.create(h).then(wrote));
      for (const h of plan.updates) await write('updated', h, () => this.#o.calico.update(h).then(wrote));
      for (const h of plan.deletes)
        await write('deleted', h, async () => {
          const gone = await this.#o.calico.delete('HostEndpoint', h.metadata.name, {
            ...(h.metadata.resourceVersion ? { resourceVersion: h.metadata.resourceVersion } : {}),
          });
          this.#heps.removed(informerKeyOf(gone), gone.metadata.resourceVersion);
        });
    } catch (e) {
      failed.push('HostEndpoints');
      this.#o.log.warn(
        { controller: this.name, err: (e as Error).message },
        'cannot list HostEndpoints; will retry',
      );
    }
    this.#o.onReconciled?.({ ...done, failed, released: [] });
    return failed.length > 0;
  }

  async #publish(
    g: ReturnType<typeof ipamGauges>,
    released: readonly { ip: string; node: string }[],
    pending: readonly { ip: string; node: string }[],
    blocks: readonly AllocationBlock[] | undefined,
  ): Promise<void> {
    const pools: PoolRef[] = (await this.#read(this.#pools, 'IPPool')).map((p) => ({
      name: p.metadata.name,
      cidr: p.spec.cidr,
    }));
    for (const r of released) g.gcReclamations.inc({ ippool: poolOf(pools, r.ip), node: r.node });
    const m = ipamMetrics(blocks ?? (await this.#o.blocks()), pools, pending);
    g.inUse.replace(m.inUse);
    g.borrowed.replace(m.borrowed);
    g.gcCandidates.replace(m.gcCandidates);
    g.blocks.replace(m.blocks);
    g.poolSize.replace(m.poolSize);
    g.blocksPerNode.replace(m.blocksPerNode);
    g.allocationsPerNode.replace(m.allocationsPerNode);
    g.borrowedPerNode.replace(m.borrowedPerNode);
  }
}
