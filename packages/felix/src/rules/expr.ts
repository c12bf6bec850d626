/**
 * Builders for the nftables JSON expressions and statements the renderers use, so rule code
 * reads like nft syntax: `markClear(m.pass)` is `meta mark & 0x20000 == 0`.
 */
import type { NftExpression, NftFamily, NftMatchOp, NftStatement, NftVerdict } from './nft-json.js';

export const metaMark: NftExpression = { meta: { key: 'mark' } };

export function meta(key: string): NftExpression {
  return { meta: { key } };
}

export function payload(protocol: string, field: string): NftExpression {
  return { payload: { protocol, field } };
}

export function match(left: NftExpression, right: NftExpression, op: NftMatchOp = '=='): NftStatement {
  return { match: { op, left, right } };
}

/** `meta mark & bits == 0` */
export function markClear(bits: number): NftStatement {
  return match({ '&': [metaMark, bits >>> 0] }, 0);
}

/** `meta mark & bit == bit` */
export function markSet(bit: number): NftStatement {
  return match({ '&': [metaMark, bit >>> 0] }, bit >>> 0);
}

/** `meta mark set mark | bits` */
export function setMarkBits(bits: number): NftStatement {
  return { mangle: { key: metaMark, value: { '|': [metaMark, bits >>> 0] } } };
}

/** `meta mark set mark & ~bits` */
export function clearMarkBits(bits: number): NftStatement {
  return { mangle: { key: metaMark, value: { '&': [metaMark, ~bits >>> 0] } } };
}

export function ctState(...states: string[]): NftStatement {
  return match({ ct: { key: 'state' } }, states.length === 1 ? states[0]! : states, 'in');
}

export const accept: NftVerdict = { accept: null };
export const drop: NftVerdict = { drop: null };
export const ret: NftVerdict = { return: null };
/** `notrack`: the packet bypasses conntrack (valid before conntrack runs: raw priority). */
export const notrack: NftStatement = { notrack: null };

export function jump(target: string): NftVerdict {
  return { jump: { target } };
}

export function goto(target: string): NftVerdict {
  return { goto: { target } };
}

/** `fib daddr type local`: the destination is an address of this host. */
export const toLocalAddress: NftStatement = match({ fib: { result: 'type', flags: ['daddr'] } }, 'local');

/** `fib saddr type local`: the source is an address of this host. */
export const fromLocalAddress: NftStatement = match({ fib: { result: 'type', flags: ['saddr'] } }, 'local');

/** `ip` or `ip6`: the payload protocol of addresses in a family. */
export function addrProtocol(family: NftFamily): string {
  return family;
}

/** A CIDR as nft wants it: a plain address for a full-length prefix, else a prefix expression. */
export function cidrExpr(cidr: string): NftExpression {
  const slash = cidr.indexOf('/');
  if (slash < 0) return cidr;
  const addr = cidr.slice(0, slash);
  const len = Number(cidr.slice(slash + 1));
  const full = addr.includes(':') ? 128 : 32;
  return len === full ? addr : { prefix: { addr, len } };
}

/** One value, or an anonymous set of several. */
export function oneOrSet(values: readonly NftExpression[]): NftExpression {
  return values.length === 1 ? values[0]! : { set: values };
}

/** Protocol names as nft's `meta l4proto` knows them. */
export function l4protoExpr(p: string | number): NftExpression {
  if (typeof p === 'number') return p;
  if (p === 'icmpv6') return 'ipv6-icmp';
  return p;
}

/** The transport header to read ports from: the protocol's own when known, else `th`. */
export function portProtocol(p: string | number | undefined): string {
  if (p === 'tcp' || p === 6) return 'tcp';
  if (p === 'udp' || p === 17) return 'udp';
  if (p === 'sctp' || p === 132) return 'sctp';
  return 'th';
}
