/**
 * NodeController (upstream's node controller): IPAM garbage collection and auto host endpoints on
 * both datastores; in etcd mode also the Calico Nodes of deleted Kubernetes Nodes and label sync.
 *
 *   Pods, Nodes (Kubernetes, as they are) ─ Syncer ─► who exists now, each Node's labels
 *   Calico Nodes (when labels or HEPs need them) ─┘
 *
 *   node pass (on any Node event, debounced, and at the start of every scan):
 *     Calico Nodes whose Kubernetes Node is gone (etcd) ─► their endpoints deleted, affinities
 *                                                          released, the Node deleted
 *     Kubernetes Node labels ─► syncedNodeLabels ─► Calico Node update (etcd, syncLabels)
 *     Calico Nodes ─► planHostEndpoints ─► `<node>-auto-hep` create / update / delete
 *   scan (every `scanPeriodMs`): the node pass, then
 *     IPAM allocations ─► isOwnerAlive? ─► IpamClient.gc (released only after `leakGracePeriodMs`
 *                                           gone, conditional on handle + sequence number)
 *                     ─► IPAM gauges and GC counters (upstream's metric names)
 *
 * An allocation's owner (its attributes as the CNI plugin and calico-node wrote them):
 *   - a pod (`namespace` + `pod`): alive while the Pod exists and, when the Pod shows addresses,
 *     one of them is this address;
 *   - a tunnel address (`type` ipipTunnelAddress / vxlanTunnelAddress / wireguardTunnelAddress):
 *     alive while its Calico Node exists;
 *   - anything else: alive (never released on a guess).
 * Nothing is judged before the Kubernetes view has been listed once.
 */
import type { HostEndpoint, IPPool, Node } from '@calico-ts/api';
import {
  type AllocationBlock,
  type Datastore,
  type KVStore,
  kvSource,
  NODES_PREFIX,
  PODS_PREFIX,
  resourceSource,
  Syncer,
  type SyncSource,
} from '@calico-ts/datastore';
import { type IpamClient, newGcState } from '@calico-ts/ipam';
import { ipamMetrics, type PoolRef, poolOf } from './ipam-metrics.js';
import type { MetricsRegistry } from './metrics.js';
import type { ControllerLogger, ReconcileReport } from './mirror-controller.js';
import { kubernetesNodeName, planHostEndpoints, syncedNodeLabels } from './node-sync.js';
import { resourceKeyOf } from './reconcile.js';
import { ReconcileLoop } from './reconcile-loop.js';
import { invalidReason, isInvalid, UnconvertibleReporter } from './unconvertible.js';
import { decodePod, slimObject } from './wep-label-controller.js';

interface PodView {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly status?: { readonly podIPs?: readonly { readonly ip?: string }[]; readonly podIP?: string };
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
  readonly log: ControllerLogger;
  /** How long an allocation's owner must stay gone before it is released. Default 15 min. */
  readonly leakGracePeriodMs?: number;
  /** How often allocations and nodes are scanned. Default 60 s. */
  readonly scanPeriodMs?: number;
  readonly now?: () => number;
  readonly retryMs?: number;
  readonly onReconciled?: (r: ReconcileReport & { readonly released: readonly string[] }) => void;
  /** Where the IPAM gauges and GC counters go (upstream's names); with `blocks`, to read them. */
  readonly metrics?: MetricsRegistry;
  /** A Kubernetes object was skipped because it cannot be converted (a Node, or its host endpoint). */
  readonly onSkipped?: (name: string) => void;
  /** The IPAM blocks as stored (for the metrics), e.g. `() => ipamStore.listBlocks()`. */
  readonly blocks?: () => Promise<readonly AllocationBlock[]>;
}

function ipamGauges(reg: MetricsRegistry) {
  const pn = ['ippool', 'node'];
  return {
    inUse: reg.gauge(
      'ipam_allocations_in_use',
      'Calico IP allocations currently in use by a workload or interface.',
      pn,
    ),
    borrowed: reg.gauge(
      'ipam_allocations_borrowed',
      'Calico IP allocations in use whose block is affine to another node.',
      pn,
    ),
    gcCandidates: reg.gauge(
      'ipam_allocations_gc_candidates',
      'Allocations the garbage collector currently holds as possible leaks; returns to zero under normal operation.',
      pn,
    ),
    gcReclamations: reg.counter(
      'ipam_allocations_gc_reclamations',
      'Allocations reclaimed by the garbage collector.',
      pn,
    ),
    blocks: reg.gauge('ipam_blocks', 'IPAM blocks, by pool and the node they are affine to.', pn),
    poolSize: reg.gauge('ipam_ippool_size', 'Addresses in the IP pool CIDR.', ['ippool']),
    blocksPerNode: reg.gauge(
      'ipam_blocks_per_node',
      'IPAM blocks by the node they are affine to (prefer ipam_blocks).',
      ['node'],
    ),
    allocationsPerNode: reg.gauge(
      'ipam_allocations_per_node',
      'Calico IP allocations by node (prefer ipam_allocations_in_use).',
      ['node'],
    ),
    borrowedPerNode: reg.gauge(
      'ipam_allocations_borrowed_per_node',
      'Borrowed Calico IP allocations by node (prefer ipam_allocations_borrowed).',
      ['node'],
    ),
  };
}

const TUNNEL_TYPES: ReadonlySet<string> = new Set([
  'ipipTunnelAddress',
  'vxlanTunnelAddress',
  'wireguardTunnelAddress',
]);

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

export class NodeController {
  readonly name = 'node';
  readonly #o: NodeControllerOptions;
  readonly #pods = new Map<string, PodView>();
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

  constructor(opts: NodeControllerOptions) {
    this.#o = opts;
    this.#gauges = opts.metrics ? ipamGauges(opts.metrics) : undefined;
    this.#bad = new UnconvertibleReporter(this.name, opts.log, opts.onSkipped);
    this.#loop = new ReconcileLoop({
      pass: () => this.#scanOnce(),
      periodMs: opts.scanPeriodMs ?? 60_000,
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
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#syncer = new Syncer({
        sources: [
          // Any Pod that parses counts: one whose labels are odd still owns its addresses.
          kvSource(
            'pods',
            this.#o.kubernetes,
            PODS_PREFIX,
            (kv) => slimObject(JSON.parse(kv.value)) as PodView,
          ) as SyncSource,
          kvSource('nodes', this.#o.kubernetes, NODES_PREFIX, (kv) => {
            try {
              return decodePod(kv.value) as PodView;
            } catch (e) {
              this.#unreadableNodes.add(kv.key.slice(NODES_PREFIX.length));
              this.#bad.skip(kv.key, kv.modRevision, (e as Error).message);
              throw e;
            }
          }) as SyncSource,
          // Calico Nodes change too (calico-node writes their addresses): follow them when a
          // Calico Node's labels or host endpoint depend on them.
          ...(this.#o.syncLabels || this.#o.autoHostEndpoints
            ? [resourceSource(this.#o.calico, 'Node') as SyncSource]
            : []),
        ],
        onUpdate: (u) => {
          if (u.source === 'pods') {
            const { value } = u.item as { value: PodView };
            const key = `${value.metadata.namespace}/${value.metadata.name}`;
            if (u.kind === 'set') this.#pods.set(key, value);
            else this.#pods.delete(key);
            return;
          }
          if (u.source === 'nodes') {
            const { value } = u.item as { value: PodView };
            const { key } = u.item as { key: string };
            if (u.kind === 'set') this.#k8sNodes.set(value.metadata.name, value.metadata.labels ?? {});
            else this.#k8sNodes.delete(value?.metadata.name ?? key.slice(NODES_PREFIX.length));
            this.#unreadableNodes.delete(key.slice(NODES_PREFIX.length));
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
    await this.scan();
    this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#loop.stop();
    await this.#nodeLoop.stop();
    await this.#syncer?.stop();
  }

  /** One pass: the nodes (deleted ones, labels, host endpoints), then leaked addresses. */
  scan(): Promise<void> {
    return this.#loop.run();
  }

  /** One scan: a node pass, then leak collection; true when something failed (the loop retries). */
  async #scanOnce(): Promise<boolean> {
    await this.#nodeLoop.run();
    const calicoNodes = new Set<string>();
    try {
      for (const n of (await this.#o.calico.list('Node')).items as Node[]) calicoNodes.add(n.metadata.name);
    } catch (e) {
      this.#o.log.warn(
        { controller: this.name, err: (e as Error).message },
        'cannot list Nodes; leak collection skipped',
      );
      return true;
    }
    const now = (this.#o.now ?? Date.now)();
    const nodeOf = new Map<string, string>();
    const result = await this.#o.ipam.gc({
      state: this.#gc,
      now,
      gracePeriodMs: this.#o.leakGracePeriodMs ?? 15 * 60_000,
      isOwnerAlive: async (attrs, { ip }) => {
        nodeOf.set(ip, attrs.node ?? '');
        if (attrs.type && TUNNEL_TYPES.has(attrs.type))
          return attrs.node === undefined || calicoNodes.has(attrs.node);
        if (attrs.namespace && attrs.pod) {
          const pod = this.#pods.get(`${attrs.namespace}/${attrs.pod}`);
          if (!pod) return false;
          const addrs = podAddresses(pod);
          return addrs.length === 0 || addrs.includes(ip);
        }
        return true;
      },
    });
    for (const ip of result.released)
      this.#o.log.info({ controller: this.name, ip }, 'leaked address released');
    if (this.#gauges) {
      try {
        await this.#publish(
          this.#gauges,
          result.released.map((ip) => ({ ip, node: nodeOf.get(ip) ?? '' })),
          result.pending.map((p) => ({ ip: p.ip, node: nodeOf.get(p.ip) ?? '' })),
        );
      } catch (e) {
        this.#o.log.warn(
          { controller: this.name, err: (e as Error).message },
          'cannot read IPAM blocks for the metrics; they keep their last values',
        );
      }
    }
    this.#o.onReconciled?.({ created: 0, updated: 0, deleted: 0, failed: [], released: result.released });
    return false;
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
      nodes = (await this.#o.calico.list('Node')).items as Node[];
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
          await this.#o.calico.delete('Node', name);
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
      const heps = (await this.#o.calico.list('HostEndpoint')).items as HostEndpoint[];
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
      for (const h of plan.creates) await write('created', h, () => this.#o.calico.create(h));
      for (const h of plan.updates) await write('updated', h, () => this.#o.calico.update(h));
      for (const h of plan.deletes)
        await write('deleted', h, () =>
          this.#o.calico.delete('HostEndpoint', h.metadata.name, {
            ...(h.metadata.resourceVersion ? { resourceVersion: h.metadata.resourceVersion } : {}),
          }),
        );
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
  ): Promise<void> {
    const pools: PoolRef[] = ((await this.#o.calico.list('IPPool')).items as IPPool[]).map((p) => ({
      name: p.metadata.name,
      cidr: p.spec.cidr,
    }));
    for (const r of released) g.gcReclamations.inc({ ippool: poolOf(pools, r.ip), node: r.node });
    if (!this.#o.blocks) return;
    const m = ipamMetrics(await this.#o.blocks(), pools, pending);
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
