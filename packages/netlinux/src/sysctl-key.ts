import { NetlinuxError } from './errors.js';
import type { IpFamily } from './types.js';

/** Where the kernel exposes sysctls. */
export const PROC_SYS = '/proc/sys';

// Keys whose fourth segment is an interface name: net.ipv4.conf.<if>.<param>, net.ipv6.neigh.<if>.<param>, …
const PER_INTERFACE = /^net\.(ipv4|ipv6)\.(conf|neigh)\.(.+)\.([^.]+)$/;

/**
 * The path of a sysctl below /proc/sys. Two spellings are accepted:
 * - slash form `net/ipv4/conf/eth0.100/proxy_arp`: segments are taken as they are, so an interface
 *   name with dots stays intact;
 * - dotted form `net.ipv4.conf.eth0.100.proxy_arp`: per-interface keys (`net.ipv{4,6}.{conf,neigh}`)
 *   keep everything between the fixed prefix and the last segment as the interface name; other
 *   keys turn every dot into a slash.
 * Throws `invalid` for empty segments or `.`/`..`.
 */
export function sysctlPath(key: string): string {
  let segments: string[];
  if (key.includes('/')) {
    segments = key.split('/');
  } else {
    const m = PER_INTERFACE.exec(key);
    segments = m ? ['net', m[1]!, m[2]!, m[3]!, m[4]!] : key.split('.');
  }
  if (segments.some((s) => s === '' || s === '.' || s === '..' || /[\0\n]/.test(s))) {
    throw new NetlinuxError('invalid', `invalid sysctl key ${JSON.stringify(key)}`);
  }
  return segments.join('/');
}

/**
 * The slash-form key of a per-interface sysctl, safe for any interface name:
 * `interfaceSysctlKey(4, 'conf', 'cali1', 'proxy_arp')` → `net/ipv4/conf/cali1/proxy_arp`.
 */
export function interfaceSysctlKey(
  family: IpFamily,
  group: 'conf' | 'neigh',
  ifname: string,
  param: string,
): string {
  return `net/ipv${family}/${group}/${ifname}/${param}`;
}
