/**
 * The few IP helpers the plugin needs, kept here so the executable imports nothing heavy (pure).
 */
import { isIPv4 as netIsIPv4, isIPv6 as netIsIPv6 } from 'node:net';

export function isIPv4(ip: string): boolean {
  return netIsIPv4(ip);
}

export function isIP(ip: string): boolean {
  return netIsIPv4(ip) || netIsIPv6(ip);
}

/** `198.19.0.4/26` → `{ip: '198.19.0.4', prefix: 26}`; undefined unless a valid address and prefix. */
export function parseCidr(text: string): { ip: string; prefix: number } | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const ip = text.slice(0, slash);
  const p = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(p)) return undefined;
  const prefix = Number(p);
  if (netIsIPv4(ip)) return prefix <= 32 ? { ip, prefix } : undefined;
  if (netIsIPv6(ip) && !ip.includes('%')) return prefix <= 128 ? { ip: canonicalIp(ip), prefix } : undefined;
  return undefined;
}

/** The single-address CIDR of an address or CIDR: `198.19.0.4/26` → `198.19.0.4/32`. */
export function hostCidr(addrOrCidr: string): string {
  const ip = addrOrCidr.includes('/') ? addrOrCidr.slice(0, addrOrCidr.indexOf('/')) : addrOrCidr;
  return isIPv4(ip) ? `${ip}/32` : `${canonicalIp(ip)}/128`;
}

/** The address part of a CIDR (or the address itself), IPv6 in RFC 5952 form. */
export function addressOf(addrOrCidr: string): string {
  const ip = addrOrCidr.includes('/') ? addrOrCidr.slice(0, addrOrCidr.indexOf('/')) : addrOrCidr;
  return canonicalIp(ip);
}

/** RFC 5952 text for IPv6 (lower case, longest zero run compressed); IPv4 unchanged. */
export function canonicalIp(ip: string): string {
  if (!netIsIPv6(ip)) return ip;
  const groups = expandIPv6(ip);
  if (!groups) return ip;
  // Longest run of zero groups (length ≥ 2), first one on ties.
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  const left = hex.slice(0, bestStart).join(':');
  const right = hex.slice(bestStart + bestLen).join(':');
  return `${left}::${right}`;
}

function expandIPv6(ip: string): number[] | undefined {
  let text = ip;
  const lastColon = text.lastIndexOf(':');
  const dotted = text.slice(lastColon + 1);
  if (dotted.includes('.')) {
    const o = dotted.split('.').map(Number);
    const hi = ((o[0]! << 8) | o[1]!).toString(16);
    const lo = ((o[2]! << 8) | o[3]!).toString(16);
    text = `${text.slice(0, lastColon + 1)}${hi}:${lo}`;
  }
  const halves = text.split('::');
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((h) => Number.parseInt(h, 16)));
  const head = parse(halves[0]!);
  const rest = halves.length > 1 ? parse(halves[1]!) : [];
  const fill = 8 - head.length - rest.length;
  if (fill < 0 || (halves.length === 1 && fill !== 0)) return undefined;
  return [...head, ...new Array<number>(fill).fill(0), ...rest];
}
