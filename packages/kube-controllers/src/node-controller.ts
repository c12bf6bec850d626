/**
 * NodeController (upstream's node controller): IPAM garbage collection on both datastores, and in
 * etcd mode the Calico Nodes of deleted Kubernetes Nodes.
 *
 *   Pods, Nodes (Kubernetes, as they are) ─ Syncer ─► who exists now
 *          every `scanPeriodMs`:
 *   IPAM allocations ─► isOwnerAlive? ─► IpamClient.gc (released only after `leakGracePeriodMs`
 *                                         gone, conditional on handle + sequence number)
 *   Calico Nodes (etcd) whose Kubernetes Node is gone ─► their endpoints deleted, affinities
 *                                                         released, the Node deleted (their
 *                                                         addresses then leak and are collected)
 *
 * An allocation's owner (its attributes as the CNI plugin and calico-node wrote them):
 *   - a pod (`namespace` + `pod`): alive while the Pod exists and, when the Pod shows addresses,
 *     one of them is this address;
 *   - a tunnel address (`type` ipipTunnelAddress / vxlanTunnelAddress / wireguardTunnelAddress):
 *     alive while its Calico Node exists;
 *   - anything else: alive (never released on a guess).
 * Nothing is judged before the Kubernetes view has been listed once.
 */
import type { IPPool, Node } from '@calico-ts/api';
import {
  type AllocationBlock,
  type Datastore,
  type KVStore,
  kvSource,
  NODES_PREFIX,
  PODS_PREFIX,
  Syncer,
  type SyncSource,
} from '@calico-ts/datastore';
import { type IpamClient, newGcState } from '@calico-ts/ipam';
import { ipamMetrics, type PoolRef, poolOf } from './ipam-metrics.js';
import type { MetricsRegistry } from './metrics.js';
import type { ControllerLogger, ReconcileReport } from './mirror-controller.js';
import { ReconcileLoop } from './reconcile-loop.js';

interface PodView {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
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
  readonly #k8sNodes = new Set<string>();
  readonly #gc = newGcState();
  readonly #loop: ReconcileLoop;
  readonly #gauges: ReturnType<typeof ipamGauges> | undefined;
  #syncer: Syncer | undefined;

  constructor(opts: NodeControllerOptions) {
    this.#o = opts;
    this.#gauges = opts.metrics ? ipamGauges(opts.metrics) : undefined;
    this.#loop = new ReconcileLoop({
      pass: () => this.#scanOnce(),
      periodMs: opts.scanPeriodMs ?? 60_000,
      ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
      onError: (e) =>
        opts.log.warn({ controller: this.name, err: (e as Error).message }, 'scan failed; will retry'),
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#syncer = new Syncer({
        sources: [
          kvSource(
            'pods',
            this.#o.kubernetes,
            PODS_PREFIX,
            (kv) => JSON.parse(kv.value) as PodView,
          ) as SyncSource,
          kvSource(
            'nodes',
            this.#o.kubernetes,
            NODES_PREFIX,
            (kv) => JSON.parse(kv.value) as PodView,
          ) as SyncSource,
        ],
        onUpdate: (u) => {
          const { value } = u.item as { value: PodView };
          if (u.source === 'pods') {
            const key = `${value.metadata.namespace}/${value.metadata.name}`;
            if (u.kind === 'set') this.#pods.set(key, value);
            else this.#pods.delete(key);
          } else if (u.kind === 'set') this.#k8sNodes.add(value.metadata.name);
          else this.#k8sNodes.delete(value.metadata.name);
        },
        onInSync: resolve,
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
    await this.#syncer?.stop();
  }

  /** One pass: deleted Nodes (etcd mode), then leaked addresses. */
  scan(): Promise<void> {
    return this.#loop.run();
  }

  /** One pass; true when something failed (the loop retries). */
  async #scanOnce(): Promise<boolean> {
    const failed: string[] = [];
    let deleted = 0;
    const calicoNodes = new Set<string>();
    try {
      for (const n of (await this.#o.calico.list('Node')).items as Node[]) calicoNodes.add(n.metadata.name);
    } catch (e) {
      this.#o.log.warn(
        { controller: this.name, err: (e as Error).message },
        'cannot list Nodes; scan skipped',
      );
      return true;
    }
    if (this.#o.deleteNodes) {
      for (const name of calicoNodes) {
        if (this.#k8sNodes.has(name)) continue;
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
          calicoNodes.delete(name);
          deleted++;
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
    this.#o.onReconciled?.({ created: 0, updated: 0, deleted, failed, released: result.released });
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
