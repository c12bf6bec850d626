import { isIP } from 'node:net';
import { NetlinuxError } from './errors.js';
import type { IpFamily } from './types.js';

/** Family of an address or prefix (`198.18.0.1`, `2001:db8::/64`); throws `invalid` otherwise. */
export function ipFamily(addrOrCidr: string): IpFamily {
  const addr = addrOrCidr.split('/')[0]!;
  const v = isIP(addr);
  if (v === 4 || v === 6) return v;
  throw new NetlinuxError('invalid', `not an IP address or prefix: ${JSON.stringify(addrOrCidr)}`);
}

/** Splits and checks `addr/len`; an address without a length is a host prefix (/32 or /128). */
export function parseCidr(cidr: string): { address: string; prefixLen: number; family: IpFamily } {
  const [address, len, ...rest] = cidr.split('/');
  const family = ipFamily(address!);
  const max = family === 4 ? 32 : 128;
  if (rest.length > 0 || (len !== undefined && !/^\d{1,3}$/.test(len))) {
    throw new NetlinuxError('invalid', `not a prefix: ${JSON.stringify(cidr)}`);
  }
  const prefixLen = len === undefined ? max : Number(len);
  if (prefixLen > max)
    throw new NetlinuxError('invalid', `prefix length out of range: ${JSON.stringify(cidr)}`);
  return { address: address!, prefixLen, family };
}

/** `198.18.0.5` → `198.18.0.5/32`, `2001:db8::5` → `2001:db8::5/128`; a prefix is returned checked. */
export function hostCidr(addr: string): string {
  const { address, prefixLen } = parseCidr(addr);
  return `${address}/${prefixLen}`;
}

/**
 * A route destination as iproute2 prints it, in the form netlinux reports: `default` becomes
 * `0.0.0.0/0` or `::/0`, a bare address a host prefix.
 */
export function normalizeRouteDst(dst: string, family: IpFamily): string {
  if (dst === 'default') return family === 4 ? '0.0.0.0/0' : '::/0';
  return dst.includes('/') ? dst : `${dst}/${family === 4 ? 32 : 128}`;
}
