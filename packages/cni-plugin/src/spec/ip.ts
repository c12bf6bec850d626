/**
 * The IP helpers the plugin needs, as strings, over `@calico-ts/api/net` (which loads no schema
 * library, so the executable stays light). Pure.
 */
import { formatIP, ipFamily, parseCidr as parseCidrValue, parseIP } from '@calico-ts/api/net';

export function isIPv4(ip: string): boolean {
  return ipFamily(ip) === 4;
}

export function isIP(ip: string): boolean {
  return ipFamily(ip) !== undefined;
}

/** `198.19.0.4/26` → `{ip: '198.19.0.4', prefix: 26}`; undefined unless a valid address and prefix. */
export function parseCidr(text: string): { ip: string; prefix: number } | undefined {
  const c = parseCidrValue(text);
  return c && { ip: formatIP({ family: c.family, value: c.address }), prefix: c.prefix };
}

/** The single-address CIDR of an address or CIDR: `198.19.0.4/26` → `198.19.0.4/32`. */
export function hostCidr(addrOrCidr: string): string {
  const ip = addressOf(addrOrCidr);
  return isIPv4(ip) ? `${ip}/32` : `${ip}/128`;
}

/** The address part of a CIDR (or the address itself), IPv6 in RFC 5952 form. */
export function addressOf(addrOrCidr: string): string {
  const slash = addrOrCidr.indexOf('/');
  return canonicalIp(slash >= 0 ? addrOrCidr.slice(0, slash) : addrOrCidr);
}

/** RFC 5952 text for IPv6 (lower case, longest zero run compressed); IPv4 unchanged; not an address: unchanged. */
export function canonicalIp(ip: string): string {
  const a = parseIP(ip);
  return a ? formatIP(a) : ip;
}
