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
import type { Node } from '@calico-ts/api';
import {
  type Datastore,
  type KVStore,
  kvSource,
  NODES_PREFIX,
  PODS_PREFIX,
  Syncer,
  type SyncSource,
} from '@calico-ts/datastore';
import { type IpamClient, newGcState } from '@calico-ts/ipam';
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
  #syncer: Syncer | undefined;

  constructor(opts: NodeControllerOptions) {
    this.#o = opts;
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
    const result = await this.#o.ipam.gc({
      state: this.#gc,
      now,
      gracePeriodMs: this.#o.leakGracePeriodMs ?? 15 * 60_000,
      isOwnerAlive: async (attrs, { ip }) => {
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
    this.#o.onReconciled?.({ created: 0, updated: 0, deleted, failed, released: result.released });
    return failed.length > 0;
  }
}
