/**
 * The datastore seam of the CNI plugin: the few reads and writes ADD, DEL, CHECK, STATUS and GC
 * make, on Calico resources and on IPAM.
 *
 * Implementations: `CalicoBackend` (calico-backend.ts: `@calico-ts/datastore` + `@calico-ts/ipam`
 * against etcd or the Kubernetes API) and `FakeBackend` (fake-backend.ts: in memory, same
 * semantics, failure injection).
 *
 * Errors: every method throws only `CniPluginError` — `try-again` when the datastore cannot be
 * reached, `datastore-failed` for a refused read or write, `ipam-failed` when addresses cannot be
 * assigned. "Not found" is a return value, never an error.
 */
import type { WorkloadEndpoint } from '@calico-ts/api';

export type { WorkloadEndpoint };

export interface Readiness {
  ready: boolean;
  /** Why not, for the error message. */
  reason?: string;
}

export interface AutoAssignRequest {
  handleId: string;
  node: string;
  /** Allocation attributes: `node`, `timestamp`, and for pods `namespace`, `pod`. */
  attrs: Record<string, string>;
  num4: number;
  num6: number;
  /** Pools by CIDR or name; empty = every enabled pool that fits the node. */
  ipv4Pools: string[];
  ipv6Pools: string[];
  /** The pod's namespace labels, for IP pool namespaceSelectors (absent outside Kubernetes). */
  namespaceLabels?: Record<string, string>;
}

export interface AssignIpRequest {
  ip: string;
  handleId: string;
  node: string;
  attrs: Record<string, string>;
}

export interface PoolCapacity {
  /** Enabled pools (not `disabled`) that allow workloads. */
  enabledPools: number;
  /** Addresses still free in those pools (an estimate is fine: > 0 is what matters). */
  free: bigint;
}

export interface DeletePrecondition {
  uid?: string;
  resourceVersion?: string;
}

/** How `writeWorkloadEndpoint` writes. */
export interface WriteEndpointOptions {
  /** The IPAM handle holding the endpoint's addresses: the endpoint is created only while it exists. */
  ipamHandle?: string;
}

/** What a Pod says of its WorkloadEndpoint (`PluginBackend.endpointOfPod`). */
export interface PodEndpoint {
  /** The endpoint the Pod holds; undefined when it holds none (no ADD has annotated it). */
  endpoint: WorkloadEndpoint | undefined;
}

export interface PluginBackend {
  /**
   * The endpoint is its Pod (the Kubernetes datastore): every write of it is a compare-and-swap on
   * the Pod's resourceVersion, so once a delete has changed the Pod, a write sent before it (a late
   * one, from a killed ADD) fails instead of landing.
   */
  readonly endpointsOnPods?: boolean;
  /** ClusterInformation `default` exists and says `datastoreReady`. */
  readiness(): Promise<Readiness>;

  getWorkloadEndpoint(namespace: string, name: string): Promise<WorkloadEndpoint | undefined>;
  /**
   * On the Kubernetes datastore, where the endpoint is its Pod: the endpoint `name` as the Pod
   * `pod` (the object just read from the API server) holds it, with no read of its own, and that
   * Pod the copy the next endpoint write starts from (a compare-and-swap on its resourceVersion).
   * `undefined` where the backend cannot tell from a Pod: read with `getWorkloadEndpoint`.
   */
  endpointOfPod?(namespace: string, name: string, pod: unknown): PodEndpoint | undefined;
  /**
   * Creates, or replaces the existing one of that name (last writer wins). With `ipamHandle`, a
   * create happens only while that IPAM handle exists, checked in the same write (etcd: one
   * transaction): once a DEL has released the handle, a create of this ADD that reaches the
   * datastore late is refused (`try-again`) instead of leaving an endpoint behind.
   */
  writeWorkloadEndpoint(wep: WorkloadEndpoint, opts?: WriteEndpointOptions): Promise<WorkloadEndpoint>;
  /** `false` when it was not there. A precondition that no longer holds ⇒ `try-again`. */
  deleteWorkloadEndpoint(namespace: string, name: string, pre?: DeletePrecondition): Promise<boolean>;
  /** Creates the profile upstream makes for non-Kubernetes networks, if missing. */
  ensureNetworkProfile(network: string, orchestrator: 'k8s' | 'cni'): Promise<void>;

  /**
   * A hint that `autoAssign` for `node` follows shortly: its first reads may start now. Optional,
   * never fails (a failed read surfaces in the `autoAssign` that uses it).
   */
  prefetchAssign?(node: string): void;
  /** Addresses in CIDR form with the block's prefix length, IPv4 first. */
  autoAssign(req: AutoAssignRequest): Promise<string[]>;
  /** One specific address; resolves its CIDR with the block's prefix length. */
  assignIp(req: AssignIpRequest): Promise<string>;
  /**
   * Releases these addresses where `handleId` still holds them; resolves the ones released.
   * Addresses held by another handle, or by none, are left alone.
   */
  releaseAddresses(ips: string[], handleId: string): Promise<string[]>;
  /** Releases everything the handle holds; `false` when the handle does not exist. */
  releaseByHandle(handleId: string): Promise<boolean>;
  /** Addresses (no prefix) held by the handle; empty when it does not exist. */
  addressesOfHandle(handleId: string): Promise<string[]>;
  /** Every IPAM handle ID. */
  listHandles(): Promise<string[]>;
  poolCapacity(): Promise<PoolCapacity>;

  close(): Promise<void>;
}

/** `b` for a second user that must not close it (an in-process calico-ipam sharing the connection). */
export function borrowBackend(b: PluginBackend): PluginBackend {
  return {
    ...(b.endpointsOnPods ? { endpointsOnPods: true } : {}),
    readiness: () => b.readiness(),
    getWorkloadEndpoint: (ns, name) => b.getWorkloadEndpoint(ns, name),
    endpointOfPod: (ns, name, pod) => b.endpointOfPod?.(ns, name, pod),
    writeWorkloadEndpoint: (wep, opts) => b.writeWorkloadEndpoint(wep, opts),
    deleteWorkloadEndpoint: (ns, name, pre) => b.deleteWorkloadEndpoint(ns, name, pre),
    ensureNetworkProfile: (network, orch) => b.ensureNetworkProfile(network, orch),
    prefetchAssign: (node) => b.prefetchAssign?.(node),
    autoAssign: (req) => b.autoAssign(req),
    assignIp: (req) => b.assignIp(req),
    releaseAddresses: (ips, h) => b.releaseAddresses(ips, h),
    releaseByHandle: (h) => b.releaseByHandle(h),
    addressesOfHandle: (h) => b.addressesOfHandle(h),
    listHandles: () => b.listHandles(),
    poolCapacity: () => b.poolCapacity(),
    close: async () => {},
  };
}
