/**
 * Where each IPAM block lives, as seen from this node: the part of upstream's L3 route resolver
 * (`felix/calc/l3_route_resolver.go`) the tunnel managers need. Pure.
 *
 *   Node  ──► node IPv4 address and subnet (spec.bgp.ipv4Address, else an InternalIP/ExternalIP
 *             address), tunnel addresses
 *   IPPool ─► encapsulation of the CIDR (vxlan / ipip / none) and whether it is CrossSubnet
 *   block ──► block CIDR → its affine node; addresses in it held by another node → /32 → that node
 *                │
 *                ▼
 *   BlockRoute: dst, node, pool encapsulation, local?, the node's IP, same subnet as this node?
 *
 * A route is "same subnet" when its pool is CrossSubnet and this node's subnet (the prefix of its
 * own address, e.g. 198.18.0.2/24) contains the remote node's address: such traffic goes
 * unencapsulated, straight to the node.
 */

import type { IPPool, Node } from '@calico-ts/api';
import { type Cidr, cidrContains, formatCidr, formatIP, parseCidr, parseCidrOrIP } from '@calico-ts/api/net';

export type PoolEncap = 'vxlan' | 'ipip' | 'none';

/** The routing facts of one IPAM block (upstream `model.AllocationBlock` as Felix reads it). */
export interface BlockRoutes {
  /** Canonical block CIDR, e.g. `198.19.0.64/26`. */
  readonly cidr: string;
  /** The node the block is affine to (`affinity: host:<node>`); absent for none or a virtual owner. */
  readonly host?: string;
  /** Addresses in the block held by another node than `host` (borrowed), as `/32` or `/128`. */
  readonly borrowed: readonly { readonly dst: string; readonly host: string }[];
}

/** The part of an IPAM block record this module reads (the datastore's `AllocationBlock`). */
export interface BlockRecord {
  readonly cidr: string;
  readonly affinity: string | null;
  readonly allocations: readonly (number | null)[];
  readonly attributes: readonly { readonly secondary: Readonly<Record<string, string>> | null }[];
}

/** Routing facts of a stored block: its affine host and the addresses other nodes borrowed. */
export function blockRoutesOf(b: BlockRecord): BlockRoutes | undefined {
  const cidr = parseCidr(b.cidr);
  if (!cidr) return undefined;
  const host = b.affinity?.startsWith('host:') ? b.affinity.slice('host:'.length) : undefined;
  const borrowed: { dst: string; host: string }[] = [];
  const bits = cidr.family === 4 ? 32 : 128;
  for (let i = 0; i < b.allocations.length; i++) {
    const idx = b.allocations[i];
    if (idx === null || idx === undefined) continue;
    const owner = b.attributes[idx]?.secondary?.node;
    if (owner === undefined || owner === '' || owner === host) continue;
    const ip = formatIP({ family: cidr.family, value: cidr.network + BigInt(i) });
    borrowed.push({ dst: `${ip}/${bits}`, host: owner });
  }
  return { cidr: formatCidr(cidr), ...(host !== undefined ? { host } : {}), borrowed };
}

export interface NodeInfo {
  readonly name: string;
  /** The node's IPv4 address, e.g. `198.18.0.2`. */
  readonly ipv4?: string;
  /** Its subnet, e.g. `198.18.0.0/24` (a /32 when only a bare address is known). */
  readonly ipv4Subnet?: string;
  readonly vxlanTunnelAddr?: string;
  readonly vxlanTunnelMac?: string;
  readonly ipipTunnelAddr?: string;
  /** The node's IPv6 address (spec.bgp.ipv6Address, else an IPv6 InternalIP/ExternalIP). */
  readonly ipv6?: string;
  readonly ipv6Subnet?: string;
  /** spec.ipv6VXLANTunnelAddr and spec.vxlanTunnelMACAddrV6. */
  readonly vxlanTunnelAddrV6?: string;
  readonly vxlanTunnelMacV6?: string;
}

/** Upstream's choice of a node's address: spec.bgp.ipv4Address, else an InternalIP, else an ExternalIP. */
export function nodeInfoOf(node: Node): NodeInfo {
  const spec = node.spec ?? {};
  let addr: Cidr | undefined;
  if (spec.bgp?.ipv4Address) addr = parseCidrOrIP(spec.bgp.ipv4Address);
  if (!addr && !(spec.bgp?.ipv4Address || spec.bgp?.ipv6Address)) {
    for (const type of ['InternalIP', 'ExternalIP'] as const) {
      const a = (spec.addresses ?? []).find((x) => x.type === type && parseCidrOrIP(x.address)?.family === 4);
      if (a) {
        addr = parseCidrOrIP(a.address);
        break;
      }
    }
  }
  const info: {
    -readonly [K in keyof NodeInfo]: NodeInfo[K];
  } = { name: node.metadata.name };
  if (addr && addr.family === 4) {
    info.ipv4 = formatIP({ family: 4, value: addr.address });
    info.ipv4Subnet = formatCidr(addr);
  }
  let addr6: Cidr | undefined;
  if (spec.bgp?.ipv6Address) addr6 = parseCidrOrIP(spec.bgp.ipv6Address);
  if (!addr6 && !(spec.bgp?.ipv4Address || spec.bgp?.ipv6Address)) {
    for (const type of ['InternalIP', 'ExternalIP'] as const) {
      const a = (spec.addresses ?? []).find((x) => x.type === type && parseCidrOrIP(x.address)?.family === 6);
      if (a) {
        addr6 = parseCidrOrIP(a.address);
        break;
      }
    }
  }
  if (addr6 && addr6.family === 6) {
    info.ipv6 = formatIP({ family: 6, value: addr6.address });
    info.ipv6Subnet = formatCidr(addr6);
  }
  if (spec.ipv6VXLANTunnelAddr) info.vxlanTunnelAddrV6 = spec.ipv6VXLANTunnelAddr;
  if (spec.vxlanTunnelMACAddrV6) info.vxlanTunnelMacV6 = spec.vxlanTunnelMACAddrV6.toLowerCase();
  if (spec.ipv4VXLANTunnelAddr) info.vxlanTunnelAddr = spec.ipv4VXLANTunnelAddr;
  if (spec.vxlanTunnelMACAddr) info.vxlanTunnelMac = spec.vxlanTunnelMACAddr.toLowerCase();
  if (spec.bgp?.ipv4IPIPTunnelAddr) info.ipipTunnelAddr = spec.bgp.ipv4IPIPTunnelAddr;
  return info;
}

export interface PoolInfo {
  readonly name: string;
  readonly cidr: string;
  readonly encap: PoolEncap;
  readonly crossSubnet: boolean;
}

function used(mode: string | undefined): boolean {
  return mode === 'Always' || mode === 'CrossSubnet';
}

/** A pool's encapsulation as upstream classifies it (VXLAN wins over IPIP; both is invalid anyway). */
export function poolInfoOf(pool: IPPool): PoolInfo | undefined {
  const c = parseCidr(pool.spec.cidr);
  if (!c) return undefined;
  const { vxlanMode, ipipMode } = pool.spec;
  return {
    name: pool.metadata.name,
    cidr: formatCidr(c),
    encap: used(vxlanMode) ? 'vxlan' : used(ipipMode) ? 'ipip' : 'none',
    crossSubnet: vxlanMode === 'CrossSubnet' || ipipMode === 'CrossSubnet',
  };
}

export interface EncapInput {
  /** This node's name. */
  readonly hostname: string;
  readonly nodes: readonly Node[];
  readonly pools: readonly IPPool[];
  readonly blocks: readonly BlockRoutes[];
}

export interface BlockRoute {
  /** A block CIDR, or a borrowed address as /32. */
  readonly dst: string;
  readonly node: string;
  readonly local: boolean;
  readonly encap: PoolEncap;
  /** Whether `dst` is a whole block (not a borrowed address). */
  readonly block: boolean;
  /** The destination node's address of the route's family, when known. */
  readonly nodeIP?: string;
  readonly sameSubnet: boolean;
}

/** The pool containing `dst` (the most specific, should pools nest). */
export function poolFor(pools: readonly PoolInfo[], dst: string): PoolInfo | undefined {
  let best: PoolInfo | undefined;
  for (const p of pools) {
    if (!cidrContains(p.cidr, dst)) continue;
    if (!best || Number(p.cidr.split('/')[1]) > Number(best.cidr.split('/')[1])) best = p;
  }
  return best;
}

/**
 * Every block and borrowed address of `family` (IPv4 by default) with the node it belongs to,
 * sorted by destination; the node addresses and subnets are those of the same family.
 */
export function resolveBlockRoutes(input: EncapInput, family: 4 | 6 = 4): BlockRoute[] {
  const nodes = new Map(input.nodes.map((n) => [n.metadata.name, nodeInfoOf(n)]));
  const me = nodes.get(input.hostname);
  const pools = input.pools.map(poolInfoOf).filter((p): p is PoolInfo => p !== undefined);
  const byDst = new Map<string, BlockRoute>();
  const ipOf = (n: NodeInfo | undefined) => (family === 4 ? n?.ipv4 : n?.ipv6);
  const mySubnet = family === 4 ? me?.ipv4Subnet : me?.ipv6Subnet;
  const add = (dst: string, node: string, block: boolean) => {
    if (parseCidr(dst)?.family !== family) return;
    const pool = poolFor(pools, dst);
    const nodeIP = ipOf(nodes.get(node));
    const sameSubnet =
      pool?.crossSubnet === true &&
      mySubnet !== undefined &&
      nodeIP !== undefined &&
      cidrContains(mySubnet, nodeIP);
    byDst.set(dst, {
      dst,
      node,
      local: node === input.hostname,
      encap: pool?.encap ?? 'none',
      block,
      ...(nodeIP !== undefined ? { nodeIP } : {}),
      sameSubnet,
    });
  };
  for (const b of input.blocks) {
    if (b.host !== undefined) add(b.cidr, b.host, true);
  }
  for (const b of input.blocks) {
    // A borrowed address is more specific than its block and wins for its own /32.
    for (const x of b.borrowed) add(x.dst, x.host, false);
  }
  return [...byDst.values()].sort((a, b) => compareCidr(a.dst, b.dst));
}

/** Orders CIDRs by address, then prefix length. */
export function compareCidr(a: string, b: string): number {
  const x = parseCidrOrIP(a);
  const y = parseCidrOrIP(b);
  if (!x || !y) return a < b ? -1 : a > b ? 1 : 0;
  if (x.network !== y.network) return x.network < y.network ? -1 : 1;
  return x.prefix - y.prefix;
}

/**
 * The route protocol of the tunnel, same-subnet and blackhole routes: DeviceRouteProtocol, unless
 * it is the shared default `boot` (3), then upstream's own 80 (`dataplanedefs.DefaultRoutingProto`).
 */
export function encapRouteProtocol(deviceRouteProtocol: number): number {
  return deviceRouteProtocol === 3 ? 80 : deviceRouteProtocol;
}
