/**
 * The kernel seam of the CNI plugin: set up, tear down and observe one workload's veth.
 *
 * One implementation, `LinuxDataplane` (linux-dataplane.ts), over the `NetOps` subset of
 * `@calico-ts/netlinux`; its tests run it over `FakeNetOps` (fake-net-ops.ts), an in-memory kernel.
 *
 * Errors: `dataplane-failed` (the kernel refused), `invalid-netns` (CNI_NETNS is not a namespace).
 */

/** The host end's MAC: fixed, so the kernel need not generate one and the IPv6 next hop is known. */
export const HOST_VETH_MAC = 'ee:ee:ee:ee:ee:ee';
/** The pod's IPv4 next hop: answered by proxy ARP on the host end. */
export const IPV4_GATEWAY = '169.254.1.1';
/** The host end's IPv6 link-local address (EUI-64 of ee:ee:ee:ee:ee:ee), the pod's IPv6 next hop. */
export const IPV6_GATEWAY = 'fe80::ecee:eeff:feee:eeee';

export interface VethPairSpec {
  /** CNI_NETNS: a path (or a name under /run/netns). */
  netns: string;
  /** CNI_IFNAME. */
  containerIfName: string;
  hostIfName: string;
  /** 0 = kernel default. */
  mtu: number;
  numQueues: number;
  /** The pod end's MAC (`cni.projectcalico.org/hwAddr`); default: a random local unicast one. */
  containerMac?: string;
}

export interface WorkloadNetworkSpec extends VethPairSpec {
  /** Single-address CIDRs (/32, /128) for the pod end. */
  addresses: string[];
  /** Destinations routed in the pod via the gateway of their family. */
  routes: string[];
  allowIpForwarding: boolean;
}

export interface WorkloadNetwork {
  hostIfName: string;
  hostMac: string;
  containerMac: string;
  containerMtu: number;
}

export interface ObservedRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  scope?: string;
}

export interface ObservedInterface {
  name: string;
  up: boolean;
  mac: string;
  mtu: number;
  /** `address/prefix`. */
  addresses: string[];
  routes: ObservedRoute[];
}

export interface ObservedWorkload {
  netnsExists: boolean;
  container?: ObservedInterface;
  host?: ObservedInterface & { sysctls: Record<string, string | undefined> };
}

export interface Dataplane {
  /**
   * Fails (`invalid-netns`, `dataplane-failed`) unless the netns exists and has no `ifName` yet:
   * checked before IPAM runs, so a bad request never touches an existing allocation.
   */
  preflight(netns: string, ifName: string): Promise<void>;
  /**
   * Creates the veth pair, the pod end in the netns (deleting a stale host end of the same name
   * first). Fails like `preflight` when the netns is missing or already has CNI_IFNAME, touching
   * nothing. Undo: `removeHostInterface`.
   */
  createPair(spec: VethPairSpec): Promise<{ containerMac: string }>;
  /**
   * Addresses, routes and sysctls of a pair `createPair` made. On failure deletes the pair before
   * throwing, so no device is left behind.
   */
  configure(spec: WorkloadNetworkSpec, containerMac: string): Promise<WorkloadNetwork>;
  /** `createPair` then `configure`. */
  setUp(spec: WorkloadNetworkSpec): Promise<WorkloadNetwork>;
  /** Deletes a host end (and so its peer and routes); `false` when it was not there. */
  removeHostInterface(name: string): Promise<boolean>;
  /** DEL: removes CNI_IFNAME from the netns; `absent` when the netns or the device is gone. */
  tearDown(netns: string, ifName: string): Promise<'removed' | 'absent'>;
  /** CHECK: what the kernel has for this workload. */
  observe(netns: string, ifName: string, hostIfName: string): Promise<ObservedWorkload>;
}
