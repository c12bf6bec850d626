/**
 * The desired VXLAN state of this node, per address family (upstream `felix/calc/vxlan_resolver.go` for the VTEPs,
 * `felix/dataplane/linux/vxlan_mgr.go` + `route_mgr.go` for what is programmed from them). Pure.
 *
 *   Nodes ──► VTEPs: node IP + tunnel address + MAC (spec.vxlanTunnelMACAddr, else derived)
 *   IPPools ─┐                     │
 *   blocks ──┴► resolveBlockRoutes ┤
 *                                  ▼
 *   device   vxlan.calico: VNI, port, local = this node's IP, MTU, MAC, address <tunnel>/32
 *   per remote VTEP:  neighbour <tunnel addr> lladdr <MAC>,  FDB <MAC> dst <node IP>
 *   per remote block in a VXLAN pool:
 *       <block> via <remote tunnel addr> dev vxlan.calico onlink       (Always / other subnet)
 *       <block> via <remote node IP> (on the node's own interface)     (CrossSubnet, same subnet)
 *   per local block in a VXLAN pool (not a /32): blackhole <block>
 *   a remote tunnel address outside that node's own blocks: <addr>/32 dev vxlan.calico
 *
 * IPv6 (`family` 6) is the same over vxlan-v6.calico: VTEPs from spec.bgp.ipv6Address,
 * spec.ipv6VXLANTunnelAddr and spec.vxlanTunnelMACAddrV6 (else the MAC derived from `<name>-v6`),
 * the IPv6 pools' blocks, a /128 tunnel address, MTU VXLANMTUV6 (0: the host MTU less 70).
 *
 * VXLAN is on when FelixConfiguration says so (`vxlanEnabled`), else when any pool uses it. A
 * remote node is a VTEP only with both a node IP and a tunnel address; until this node itself is
 * one, there is no device and no tunnel route (same-subnet and blackhole routes need neither).
 */
import { createHash } from 'node:crypto';
import { cidrContains, ipFamily } from '@calico-ts/api/net';
import {
  type BlockRoute,
  compareCidr,
  type EncapInput,
  type NodeInfo,
  nodeInfoOf,
  poolInfoOf,
  resolveBlockRoutes,
} from './route-resolver.js';

export const VXLAN_DEVICE_V4 = 'vxlan.calico';
export const VXLAN_DEVICE_V6 = 'vxlan-v6.calico';

export interface VxlanConfig {
  /** VXLANEnabled; undefined: on when any pool has vxlanMode Always or CrossSubnet. */
  readonly enabled?: boolean | undefined;
  readonly vni: number;
  readonly port: number;
  /** VXLANMTU; 0 means the host MTU less 50. */
  readonly mtu: number;
  /** VXLANMTUV6, for vxlan-v6.calico; 0 or absent means the host MTU less 70. */
  readonly mtuV6?: number;
  /** The smallest MTU of the host's interfaces (MTUIfacePattern). */
  readonly hostMtu: number;
}

export interface VxlanDevice {
  readonly name: string;
  readonly vni: number;
  readonly port: number;
  readonly mtu: number;
  readonly mac: string;
  /** This node's IP: the VXLAN source address; its interface is the device's parent. */
  readonly parentAddress: string;
  /** Assigned to the device as a /32 (IPv6: /128). */
  readonly tunnelAddress: string;
}

/** The VXLAN device of a family: vxlan.calico (4) or vxlan-v6.calico (6). */
export function vxlanDeviceName(family: 4 | 6): string {
  return family === 4 ? VXLAN_DEVICE_V4 : VXLAN_DEVICE_V6;
}

export type EncapRoute =
  /** `<dst> via <gateway> dev <dev> onlink`: through a tunnel device. */
  | { readonly kind: 'tunnel'; readonly dst: string; readonly gateway: string; readonly dev: string }
  /** `<dst> dev <dev> scope link`: a remote tunnel address reached on the tunnel device itself. */
  | { readonly kind: 'device'; readonly dst: string; readonly dev: string }
  /** `<dst> via <gateway>` on this node's own interface, unencapsulated (CrossSubnet, same subnet). */
  | { readonly kind: 'same-subnet'; readonly dst: string; readonly gateway: string }
  /** `blackhole <dst>`: a local block, so its unused addresses do not leak to the default route. */
  | { readonly kind: 'blackhole'; readonly dst: string };

export interface VxlanNeighbour {
  readonly dst: string;
  readonly lladdr: string;
}

export interface VxlanFdbEntry {
  readonly mac: string;
  readonly dst: string;
}

export interface VxlanState {
  readonly enabled: boolean;
  /** Present once this node is a VTEP (it has a node IP and a tunnel address). */
  readonly device?: VxlanDevice;
  /** Sorted by destination. */
  readonly routes: readonly EncapRoute[];
  /** Sorted by address. */
  readonly neighbours: readonly VxlanNeighbour[];
  /** Sorted by MAC. */
  readonly fdb: readonly VxlanFdbEntry[];
  /**
   * The node IPs of the other nodes' VTEPs, sorted: where VXLAN packets may come from (upstream's
   * `all-vxlan-net` IP set, with the external nodes added by the caller). Known whether or not
   * this node is a VTEP yet.
   */
  readonly allowedSources: readonly string[];
  /** Why something is not programmed yet (no local VTEP, remote nodes without one). */
  readonly waiting: readonly string[];
}

/**
 * The VTEP MAC upstream derives for a node without spec.vxlanTunnelMACAddr: the byte 0x66 (`f`)
 * followed by the first five bytes of SHA-1 of the node name (`<name>-v6` for IPv6). Locally
 * administered and unicast, and the same on every node that computes it.
 */
export function vtepMacFor(nodeName: string, family: 4 | 6 = 4): string {
  const sha = createHash('sha1')
    .update(family === 6 ? `${nodeName}-v6` : nodeName)
    .digest();
  return [0x66, ...sha.subarray(0, 5)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

interface Vtep {
  readonly node: string;
  readonly nodeIP: string;
  readonly tunnelAddr: string;
  readonly mac: string;
}

function vtepOf(n: NodeInfo, family: 4 | 6): Vtep | undefined {
  const [nodeIP, tunnelAddr, mac] =
    family === 4
      ? [n.ipv4, n.vxlanTunnelAddr, n.vxlanTunnelMac]
      : [n.ipv6, n.vxlanTunnelAddrV6, n.vxlanTunnelMacV6];
  if (nodeIP === undefined || tunnelAddr === undefined) return undefined;
  return { node: n.name, nodeIP, tunnelAddr, mac: mac ?? vtepMacFor(n.name, family) };
}

/** VXLAN of `family` is on: FelixConfiguration's `vxlanEnabled`, else a pool of that family uses it. */
export function vxlanEnabled(
  input: Pick<EncapInput, 'pools'>,
  cfg: Pick<VxlanConfig, 'enabled'>,
  family: 4 | 6 = 4,
): boolean {
  return (
    cfg.enabled ??
    input.pools.some((p) => poolInfoOf(p)?.encap === 'vxlan' && ipFamily(p.spec.cidr) === family)
  );
}

/** The VXLAN state of `family` (IPv4 unless told) for `input.hostname`. */
export function resolveVxlan(input: EncapInput, cfg: VxlanConfig, family: 4 | 6 = 4): VxlanState {
  const dev = vxlanDeviceName(family);
  const hostBits = family === 4 ? '/32' : '/128';
  if (!vxlanEnabled(input, cfg, family)) {
    return { enabled: false, routes: [], neighbours: [], fdb: [], allowedSources: [], waiting: [] };
  }
  const infos = input.nodes.map(nodeInfoOf);
  const vteps = new Map<string, Vtep>();
  const waiting: string[] = [];
  for (const n of infos) {
    const v = vtepOf(n, family);
    if (v) vteps.set(n.name, v);
  }
  const mine = vteps.get(input.hostname);
  let device: VxlanDevice | undefined;
  if (mine) {
    const mtu = family === 4 ? cfg.mtu : (cfg.mtuV6 ?? 0);
    device = {
      name: dev,
      vni: cfg.vni,
      port: cfg.port,
      mtu: mtu > 0 ? mtu : cfg.hostMtu - (family === 4 ? 50 : 70),
      mac: mine.mac,
      parentAddress: mine.nodeIP,
      tunnelAddress: mine.tunnelAddr,
    };
  } else {
    waiting.push(
      `this node (${input.hostname}) has no ${family === 6 ? 'IPv6 ' : ''}VXLAN tunnel address or node IP yet`,
    );
  }

  const blockRoutes = resolveBlockRoutes(input, family).filter((r) => r.encap === 'vxlan');
  const routes = new Map<string, EncapRoute>();
  const route = (r: BlockRoute): EncapRoute | undefined => {
    if (r.local) return r.block && !r.dst.endsWith(hostBits) ? { kind: 'blackhole', dst: r.dst } : undefined;
    if (r.sameSubnet && r.nodeIP !== undefined) return { kind: 'same-subnet', dst: r.dst, gateway: r.nodeIP };
    const v = vteps.get(r.node);
    if (!v) {
      waiting.push(`node ${r.node} (route ${r.dst}) has no VTEP yet`);
      return undefined;
    }
    if (!device) return undefined;
    return { kind: 'tunnel', dst: r.dst, gateway: v.tunnelAddr, dev };
  };
  for (const r of blockRoutes) {
    const out = route(r);
    if (out) routes.set(out.dst, out);
  }

  const neighbours: VxlanNeighbour[] = [];
  const fdb: VxlanFdbEntry[] = [];
  if (device) {
    const ownBlocks = new Map<string, string[]>();
    for (const r of blockRoutes) {
      if (r.block) ownBlocks.set(r.node, [...(ownBlocks.get(r.node) ?? []), r.dst]);
    }
    for (const v of [...vteps.values()].sort((a, b) => (a.node < b.node ? -1 : 1))) {
      if (v.node === input.hostname) continue;
      neighbours.push({ dst: v.tunnelAddr, lladdr: v.mac });
      fdb.push({ mac: v.mac, dst: v.nodeIP });
      // A tunnel address outside the node's own blocks (borrowed, or from a /32 block) is not
      // covered by a block route: reach it on the device directly, as upstream does.
      const dst = `${v.tunnelAddr}${hostBits}`;
      const inOwnBlock = (ownBlocks.get(v.node) ?? []).some(
        (b) => !b.endsWith(hostBits) && cidrContains(b, dst),
      );
      const inVxlanPool = input.pools.some((p) => {
        const info = poolInfoOf(p);
        return info?.encap === 'vxlan' && cidrContains(info.cidr, dst);
      });
      if (!inOwnBlock && inVxlanPool && routes.get(dst)?.kind !== 'same-subnet') {
        routes.set(dst, { kind: 'device', dst, dev });
      }
    }
  }
  neighbours.sort((a, b) => compareCidr(a.dst, b.dst));
  fdb.sort((a, b) => (a.mac < b.mac ? -1 : a.mac > b.mac ? 1 : 0));
  return {
    enabled: true,
    ...(device ? { device } : {}),
    routes: [...routes.values()].sort((a, b) => compareCidr(a.dst, b.dst)),
    neighbours,
    fdb,
    allowedSources: [
      ...new Set([...vteps.values()].filter((v) => v.node !== input.hostname).map((v) => v.nodeIP)),
    ].sort(compareCidr),
    waiting,
  };
}
