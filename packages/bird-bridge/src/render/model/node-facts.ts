/**
 * A Node resource reduced to what peering needs for one address family (name, labels, address,
 * subnet, AS, route reflector cluster id), and the small value parsers and orderings the model's
 * steps share. Pure.
 */
import type { Node } from '@calico-ts/api';
import { formatCidr, parseCidrOrIP } from '@calico-ts/api/net';
import type { IPFamily } from '../bgp-input.js';

/** The AS number of a cluster whose BGPConfiguration sets none (upstream's default). */
export const DEFAULT_AS_NUMBER = 64512;

export interface NodeFacts {
  name: string;
  labels: Record<string, string>;
  ip?: string;
  network?: string;
  asNumber?: number;
  rrClusterId?: string;
}

/** `64512`, `"64512"` or the dotted `"high.low"` form, as one 32-bit number. */
export function asNumberValue(v: number | string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'number') return v;
  const m = /^(\d+)(?:\.(\d+))?$/.exec(v);
  if (!m) return undefined;
  return m[2] === undefined ? Number(m[1]) : Number(m[1]) * 65536 + Number(m[2]);
}

export function nodeFacts(n: Node, family: IPFamily): NodeFacts {
  const bgp = n.spec?.bgp;
  const addr = family === 4 ? bgp?.ipv4Address : bgp?.ipv6Address;
  const c = addr ? parseCidrOrIP(addr) : undefined;
  const ok = c !== undefined && c.family === family;
  return {
    name: n.metadata.name,
    labels: n.metadata.labels ?? {},
    ip: ok ? addr!.split('/')[0] : undefined,
    network: ok ? formatCidr(c) : undefined,
    asNumber: asNumberValue(bgp?.asNumber),
    rrClusterId: bgp?.routeReflectorClusterID || undefined,
  };
}

export function familyOf(text: string): IPFamily | undefined {
  return parseCidrOrIP(text)?.family;
}

/** Byte-wise string order (upstream compares addresses and names this way). */
export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function uniqueSorted(xs: readonly string[]): string[] {
  return [...new Set(xs)].sort(cmp);
}
