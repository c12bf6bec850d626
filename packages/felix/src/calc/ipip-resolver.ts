/**
 * The desired IPIP state of this node (upstream `felix/dataplane/linux/ipip_mgr.go` with the shared
 * `route_mgr.go`): what Felix programs for IPIP pools when it, not BIRD, owns the cluster routes.
 * Pure; rendered and unit-tested only (the kernels this project runs on have no `ipip` module).
 *
 *   device   tunl0: MTU, address spec.bgp.ipv4IPIPTunnelAddr (/32)
 *   per remote block in an IPIP pool:
 *       <block> via <remote node IP> dev tunl0 onlink     (Always / other subnet)
 *       <block> via <remote node IP> (own interface)      (CrossSubnet, same subnet)
 *   per local block in an IPIP pool (not a /32): blackhole <block>
 *
 * IPIP is on when FelixConfiguration says so (`ipipEnabled`), else when any pool uses it. Unlike
 * VXLAN there is no neighbour or FDB state: the outer destination is the route's gateway.
 *
 * Who programs the routes: as in upstream v3.32, BIRD does (its kernel filter sends IPIP pool
 * routes via the peer over tunl0) unless FelixConfiguration `programClusterRoutes: Enabled` hands
 * them to Felix (`programRoutes`); the device is Felix's either way. Until this node has a tunnel
 * address (calico-node allocates it from an IPIP pool into `ipv4IPIPTunnelAddr`), there is no
 * device and no tunnel route, as upstream's `ipipManager.device` refuses to configure one.
 */
import {
  type BlockRoute,
  compareCidr,
  type EncapInput,
  nodeInfoOf,
  poolInfoOf,
  resolveBlockRoutes,
} from './route-resolver.js';
import type { EncapRoute } from './vxlan-resolver.js';

export const IPIP_DEVICE = 'tunl0';

export interface IpipConfig {
  /** IpInIpEnabled; undefined: on when any pool has ipipMode Always or CrossSubnet. */
  readonly enabled?: boolean | undefined;
  /** IpInIpMtu (`ipipMTU`); 0 means the host MTU less 20. */
  readonly mtu: number;
  readonly hostMtu: number;
  /** Felix programs the IPIP pools' routes (ProgramClusterRoutes Enabled); default true. */
  readonly programRoutes?: boolean;
}

export interface IpipDevice {
  readonly name: string;
  readonly mtu: number;
  /** Assigned as a /32 once the node has one. */
  readonly tunnelAddress?: string;
}

export interface IpipState {
  readonly enabled: boolean;
  readonly device?: IpipDevice;
  /** Sorted by destination. */
  readonly routes: readonly EncapRoute[];
  readonly waiting: readonly string[];
}

/**
 * Every node's IPv4 address, sorted and without repeats: the hosts IPIP packets may come from
 * (upstream's `all-hosts-net` IP set, to which the caller adds the external nodes).
 */
export function hostAddresses(nodes: EncapInput['nodes']): string[] {
  const out = new Set<string>();
  for (const n of nodes) {
    const ip = nodeInfoOf(n).ipv4;
    if (ip !== undefined) out.add(ip);
  }
  return [...out].sort(compareCidr);
}

export function ipipEnabled(input: Pick<EncapInput, 'pools'>, cfg: Pick<IpipConfig, 'enabled'>): boolean {
  return cfg.enabled ?? input.pools.some((p) => poolInfoOf(p)?.encap === 'ipip');
}

export function resolveIpip(input: EncapInput, cfg: IpipConfig): IpipState {
  if (!ipipEnabled(input, cfg)) return { enabled: false, routes: [], waiting: [] };
  const me = input.nodes.find((n) => n.metadata.name === input.hostname);
  const tunnelAddress = me ? nodeInfoOf(me).ipipTunnelAddr : undefined;
  const device: IpipDevice = {
    name: IPIP_DEVICE,
    mtu: cfg.mtu > 0 ? cfg.mtu : cfg.hostMtu - 20,
    ...(tunnelAddress !== undefined ? { tunnelAddress } : {}),
  };
  const waiting: string[] = [];
  if (tunnelAddress === undefined)
    waiting.push(`this node has no IPIP tunnel address (ipv4IPIPTunnelAddr) yet`);
  if (cfg.programRoutes === false) return { enabled: true, device, routes: [], waiting };
  const route = (r: BlockRoute): EncapRoute | undefined => {
    if (r.local) return r.block && !r.dst.endsWith('/32') ? { kind: 'blackhole', dst: r.dst } : undefined;
    if (r.nodeIP === undefined) {
      waiting.push(`node ${r.node} (route ${r.dst}) has no IPv4 address yet`);
      return undefined;
    }
    if (r.sameSubnet) return { kind: 'same-subnet', dst: r.dst, gateway: r.nodeIP };
    if (tunnelAddress === undefined) return undefined;
    return { kind: 'tunnel', dst: r.dst, gateway: r.nodeIP, dev: IPIP_DEVICE };
  };
  const routes: EncapRoute[] = [];
  for (const r of resolveBlockRoutes(input)) {
    if (r.encap !== 'ipip') continue;
    const out = route(r);
    if (out) routes.push(out);
  }
  routes.sort((a, b) => compareCidr(a.dst, b.dst));
  return { enabled: true, device, routes, waiting };
}
