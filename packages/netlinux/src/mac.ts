import { randomBytes } from 'node:crypto';
import { NetlinuxError } from './errors.js';

/** The MAC Calico gives every host-side veth. */
export const CALICO_HOST_MAC = 'ee:ee:ee:ee:ee:ee';

const MAC_RE = /^[0-9a-f]{1,2}([:-])[0-9a-f]{1,2}(\1[0-9a-f]{1,2}){4}$/i;

export function isValidMac(mac: string): boolean {
  return MAC_RE.test(mac);
}

/** `EE-EE-EE-0-1-2` → `ee:ee:ee:00:01:02`. Throws `invalid` for anything that is not a 48-bit MAC. */
export function normalizeMac(mac: string): string {
  if (!isValidMac(mac)) throw new NetlinuxError('invalid', `not a MAC address: ${JSON.stringify(mac)}`);
  return mac
    .split(/[:-]/)
    .map((b) => b.toLowerCase().padStart(2, '0'))
    .join(':');
}

function macBytes(mac: string): number[] {
  return normalizeMac(mac)
    .split(':')
    .map((b) => Number.parseInt(b, 16));
}

/**
 * The IPv6 link-local address the kernel derives from a MAC (modified EUI-64, RFC 4291 §2.5.1):
 * flip the universal/local bit, insert `ff:fe` in the middle.
 * `ee:ee:ee:ee:ee:ee` → `fe80::ecee:eeff:feee:eeee`.
 */
export function linkLocalFromMac(mac: string): string {
  const b = macBytes(mac);
  const eui = [b[0]! ^ 0x02, b[1]!, b[2]!, 0xff, 0xfe, b[3]!, b[4]!, b[5]!];
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) groups.push(((eui[i]! << 8) | eui[i + 1]!).toString(16));
  // Printed like inet_ntop: the longest run of two or more zero groups becomes `::`.
  return compressIpv6(['fe80', '0', '0', '0', ...groups]);
}

function compressIpv6(groups: string[]): string {
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === '0') j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (bestLen < 2) return groups.join(':');
  const head = groups.slice(0, bestStart).join(':');
  const tail = groups.slice(bestStart + bestLen).join(':');
  return `${head}::${tail}`;
}

/** A random unicast, locally administered MAC (`x2:…`, `x6:…`, `xa:…`, `xe:…`). */
export function randomMac(): string {
  const b = [...randomBytes(6)];
  b[0] = (b[0]! & 0xfe) | 0x02;
  return b.map((x) => x.toString(16).padStart(2, '0')).join(':');
}
