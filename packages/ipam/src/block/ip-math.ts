/**
 * The address arithmetic IPAM needs on top of `@calico-ts/api`'s CIDR helpers: ordinals are
 * offsets from a block's network address, blocks are aligned slices of a pool. Text always comes from
 * api's canonical formatter, which matches Go's, because block CIDRs appear in etcd keys and handles.
 */
import {
  type Cidr,
  formatIP,
  type IPAddress,
  type IPFamily,
  parseCidr,
  prefixMask,
} from '@calico-ts/api/net';

export type { Cidr, IPAddress, IPFamily };

export function familyBits(family: IPFamily): number {
  return family === 4 ? 32 : 128;
}

/** A CIDR from its network address (host bits already clear). */
export function makeCidr(family: IPFamily, network: bigint, prefix: number): Cidr {
  return { family, address: network, prefix, network };
}

/** `a.b.c.d/n` with host bits cleared (as Go's `ParseCIDR` network), or undefined. */
export function parseNetwork(text: string): Cidr | undefined {
  const c = parseCidr(text);
  return c && makeCidr(c.family, c.network, c.prefix);
}

/** A CIDR whose host bits must already be zero (block keys), or undefined. */
export function parseStrictCidr(text: string): Cidr | undefined {
  const c = parseCidr(text);
  return c && c.address === c.network ? makeCidr(c.family, c.network, c.prefix) : undefined;
}

/** Last address of the prefix. */
export function cidrLast(c: Cidr): bigint {
  return c.network + (1n << BigInt(familyBits(c.family) - c.prefix)) - 1n;
}

export function cidrContainsIp(c: Cidr, ip: IPAddress): boolean {
  return c.family === ip.family && ip.value >= c.network && ip.value <= cidrLast(c);
}

/** The prefix of length `prefix` that holds `ip` (its block, for a pool of that block size). */
export function enclosingCidr(ip: IPAddress, prefix: number): Cidr {
  return makeCidr(ip.family, ip.value & prefixMask(ip.family, prefix), prefix);
}

export function ipText(ip: IPAddress): string {
  return formatIP(ip);
}
