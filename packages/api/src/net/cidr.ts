/**
 * IPv4/IPv6 address and CIDR arithmetic on bigints: parsing (strict, as Go's net package parses),
 * canonical formatting (RFC 5952 for IPv6), masks, containment and overlap. Pure; used by resource
 * validation here and by IPAM elsewhere.
 */

export type IPFamily = 4 | 6;

/** One parsed IP address. `value` is the address as an unsigned integer of 32 or 128 bits. */
export interface IPAddress {
  readonly family: IPFamily;
  readonly value: bigint;
}

/** One parsed CIDR: the address as written, its prefix length, and the masked network address. */
export interface Cidr {
  readonly family: IPFamily;
  /** The address part exactly as written (host bits may be set). */
  readonly address: bigint;
  readonly prefix: number;
  /** `address` with the host bits cleared. */
  readonly network: bigint;
}

const BITS: Record<IPFamily, number> = { 4: 32, 6: 128 };

export function familyBits(family: IPFamily): number {
  return BITS[family];
}

const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/** Dotted quad, no leading zeros, as a 32-bit number; scanned by hand (the write path's hot spot). */
function parseIPv4Number(text: string): number | undefined {
  const n = text.length;
  if (n < 7 || n > 15) return undefined;
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2e) {
      if (digits === 0 || dots === 3) return undefined;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (c >= 0x30 && c <= 0x39) {
      if (digits > 0 && octet === 0) return undefined; // a leading zero
      octet = octet * 10 + (c - 0x30);
      if (octet > 255) return undefined;
      digits++;
    } else {
      return undefined;
    }
  }
  if (dots !== 3 || digits === 0) return undefined;
  return value * 256 + octet;
}

function parseIPv4(text: string): bigint | undefined {
  const v = parseIPv4Number(text);
  return v === undefined ? undefined : BigInt(v);
}

function parseIPv6(text: string): bigint | undefined {
  if (text.length === 0 || text.includes('%')) return undefined;
  let head = text;
  let tail4: bigint | undefined;
  // An embedded dotted-quad is allowed as the last 32 bits.
  const lastColon = text.lastIndexOf(':');
  if (lastColon >= 0 && text.indexOf('.', lastColon) > lastColon) {
    tail4 = parseIPv4(text.slice(lastColon + 1));
    if (tail4 === undefined) return undefined;
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const toGroups = (s: string): string[] | undefined => {
    if (s === '') return [];
    const g = s.split(':');
    return g.every((x) => HEX_GROUP.test(x)) ? g : undefined;
  };
  const left = toGroups(halves[0]!);
  const right = halves.length === 2 ? toGroups(halves[1]!) : [];
  if (!left || !right) return undefined;
  let groups: string[];
  if (halves.length === 2) {
    const missing = 8 - left.length - right.length;
    if (missing < 1) return undefined;
    groups = [...left, ...Array<string>(missing).fill('0'), ...right];
  } else {
    groups = left;
  }
  if (groups.length !== 8) return undefined;
  let v = 0n;
  for (const g of groups) v = (v << 16n) | BigInt(Number.parseInt(g, 16));
  if (tail4 !== undefined) v = (v & ~0xffffffffn) | tail4;
  return v;
}

/** Parse an IPv4 (dotted quad, no leading zeros) or IPv6 address. Returns undefined if invalid. */
export function parseIP(text: string): IPAddress | undefined {
  if (typeof text !== 'string') return undefined;
  if (text.includes(':')) {
    const v = parseIPv6(text);
    return v === undefined ? undefined : { family: 6, value: v };
  }
  const v = parseIPv4(text);
  return v === undefined ? undefined : { family: 4, value: v };
}

/** 4 or 6 for a valid IP address or CIDR, undefined otherwise. */
export function ipFamily(text: string): IPFamily | undefined {
  return text.includes('/') ? parseCidr(text)?.family : parseIP(text)?.family;
}

const MASKS: Record<IPFamily, bigint[]> = { 4: [], 6: [] };
for (const family of [4, 6] as const) {
  const bits = BITS[family];
  const all = (1n << BigInt(bits)) - 1n;
  for (let p = 0; p <= bits; p++)
    MASKS[family].push(p === 0 ? 0n : (all >> BigInt(bits - p)) << BigInt(bits - p));
}

export function prefixMask(family: IPFamily, prefix: number): bigint {
  const m = MASKS[family][prefix];
  if (m !== undefined) return m;
  return prefix <= 0 ? 0n : MASKS[family][BITS[family]]!;
}

/** A prefix length as written after the slash ("0", "24"; no leading zeros), or undefined. */
function parsePrefix(text: string, from: number): number | undefined {
  const n = text.length - from;
  if (n < 1 || n > 3) return undefined;
  let v = 0;
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39 || (i > from && v === 0)) return undefined;
    v = v * 10 + (c - 0x30);
  }
  return v;
}

/** Parse `address/prefix`. Host bits may be set (see `isStrictlyMasked`). Undefined if invalid. */
export function parseCidr(text: string): Cidr | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  if (slash < 0 || slash !== text.lastIndexOf('/')) return undefined;
  const ip = parseIP(text.slice(0, slash));
  if (!ip) return undefined;
  const prefix = parsePrefix(text, slash + 1);
  if (prefix === undefined || prefix > BITS[ip.family]) return undefined;
  return { family: ip.family, address: ip.value, prefix, network: ip.value & prefixMask(ip.family, prefix) };
}

/** Like `parseCidr`, but a bare IP address is taken as a /32 or /128. */
export function parseCidrOrIP(text: string): Cidr | undefined {
  if (typeof text !== 'string') return undefined;
  if (text.includes('/')) return parseCidr(text);
  const ip = parseIP(text);
  if (!ip) return undefined;
  return { family: ip.family, address: ip.value, prefix: BITS[ip.family], network: ip.value };
}

export function isStrictlyMasked(c: Cidr): boolean {
  return c.address === c.network;
}

function formatIPv4(v: bigint): string {
  const n = Number(v);
  return `${n >>> 24}.${(n >>> 16) & 0xff}.${(n >>> 8) & 0xff}.${n & 0xff}`;
}

function formatIPv6(v: bigint): string {
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((v >> BigInt(i * 16)) & 0xffffn));
  // Longest run of two or more zero groups, first one wins on a tie (RFC 5952).
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** Canonical text of an address: dotted quad, or compressed lower-case IPv6. */
export function formatIP(ip: IPAddress): string {
  return ip.family === 4 ? formatIPv4(ip.value) : formatIPv6(ip.value);
}

/** Canonical text of the CIDR's network (host bits cleared), e.g. `10.0.0.0/16`, `fd00::/64`. */
export function formatCidr(c: Cidr): string {
  return `${formatIP({ family: c.family, value: c.network })}/${c.prefix}`;
}

function toCidr(x: Cidr | IPAddress | string): Cidr | undefined {
  if (typeof x === 'string') return parseCidrOrIP(x);
  if ('prefix' in x) return x;
  return { family: x.family, address: x.value, prefix: BITS[x.family], network: x.value };
}

/** True if `inner` (a CIDR, an address, or the text of either) lies wholly inside `outer`. */
export function cidrContains(outer: Cidr | string, inner: Cidr | IPAddress | string): boolean {
  const o = toCidr(outer);
  const i = toCidr(inner);
  if (!o || !i || o.family !== i.family || i.prefix < o.prefix) return false;
  return (i.network & prefixMask(o.family, o.prefix)) === o.network;
}

/** True if the two CIDRs share at least one address (same family only). */
export function cidrsOverlap(a: Cidr | string, b: Cidr | string): boolean {
  const x = toCidr(a);
  const y = toCidr(b);
  if (!x || !y || x.family !== y.family) return false;
  const p = Math.min(x.prefix, y.prefix);
  const m = prefixMask(x.family, p);
  return (x.network & m) === (y.network & m);
}

/** Number of addresses in the CIDR. */
export function cidrSize(c: Cidr): bigint {
  return 1n << BigInt(BITS[c.family] - c.prefix);
}
