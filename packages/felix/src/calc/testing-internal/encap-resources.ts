/** Builders for the tunnel resolvers' tests: Nodes, encapsulating IPPools and IPAM block facts. */
import type { IPPool, Node } from '@calico-ts/api';
import type { BlockRoutes } from '../route-resolver.js';

const V3 = 'projectcalico.org/v3' as const;

export function node(
  name: string,
  ip: string | undefined,
  opts: {
    vxlan?: string;
    mac?: string;
    ipip?: string;
    addresses?: { address: string; type: 'InternalIP' }[];
  } = {},
): Node {
  const bgp = { ...(ip ? { ipv4Address: ip } : {}), ...(opts.ipip ? { ipv4IPIPTunnelAddr: opts.ipip } : {}) };
  return {
    apiVersion: V3,
    kind: 'Node',
    metadata: { name },
    spec: {
      ...(Object.keys(bgp).length > 0 ? { bgp } : {}),
      ...(opts.vxlan ? { ipv4VXLANTunnelAddr: opts.vxlan } : {}),
      ...(opts.mac ? { vxlanTunnelMACAddr: opts.mac } : {}),
      ...(opts.addresses ? { addresses: opts.addresses } : {}),
    },
  };
}

export function encapPool(
  name: string,
  cidr: string,
  modes: { vxlanMode?: 'Always' | 'CrossSubnet' | 'Never'; ipipMode?: 'Always' | 'CrossSubnet' | 'Never' },
): IPPool {
  return { apiVersion: V3, kind: 'IPPool', metadata: { name }, spec: { cidr, blockSize: 26, ...modes } };
}

export function block(
  cidr: string,
  host: string | undefined,
  borrowed: [string, string][] = [],
): BlockRoutes {
  return {
    cidr,
    ...(host ? { host } : {}),
    borrowed: borrowed.map(([dst, h]) => ({ dst, host: h })),
  };
}
