/**
 * Which IPv4 or IPv6 address (with its prefix) this node uses for BGP, chosen as upstream's
 * `autodetection` package chooses it. Pure: the host's interfaces (and, for can-reach, the source
 * address the kernel picked) are passed in.
 *
 * Upstream's order matters and is kept: interfaces are visited from the highest ifindex down (Go's
 * list reversed), and within one the first global-unicast address wins.
 */
import { formatIP, parseCidr, parseCidrOrIP, parseIP } from '@calico-ts/api/net';
import type { AutodetectMethod } from './env.js';

export interface HostInterface {
  readonly name: string;
  readonly index: number;
  /** Addresses as `address/prefix` (host bits kept), in the kernel's order; either family. */
  readonly cidrs: readonly string[];
}

/** Interfaces upstream never picks an address from with first-found and skip-interface. */
export const DEFAULT_INTERFACES_TO_EXCLUDE: readonly string[] = [
  '^docker.*',
  '^cbr.*',
  '^dummy.*',
  '^podman.*',
  '^virbr.*',
  '^lxcbr.*',
  '^veth.*',
  '^lo',
  '^cali.*',
  '^tunl.*',
  '^flannel.*',
  '^kube-ipvs.*',
  '^cni.*',
  '^vxlan\\.calico.*',
  '^vxlan-v6\\.calico.*',
  '^wireguard\\.cali.*',
  '^wg-v6\\.cali.*',
];

export type AutodetectResult =
  | { readonly ok: true; readonly cidr: string; readonly interface: string }
  | { readonly ok: false; readonly reason: string };

const anyOf = (patterns: readonly string[]): RegExp | undefined =>
  patterns.length === 0 ? undefined : new RegExp(`(${patterns.join(')|(')})`);

/** Interfaces kept by the include/exclude regexes, highest ifindex first. */
export function filterInterfaces(
  ifaces: readonly HostInterface[],
  include: readonly string[] = [],
  exclude: readonly string[] = [],
): HostInterface[] {
  const inc = anyOf(include);
  const exc = anyOf(exclude);
  return [...ifaces]
    .sort((a, b) => b.index - a.index)
    .filter((i) => (inc === undefined || inc.test(i.name)) && !exc?.test(i.name));
}

/** Go's `IP.IsGlobalUnicast` for IPv6: not unspecified, loopback (::1), link-local (fe80::/10) or multicast. */
export function isGlobalUnicastV6(address: string): boolean {
  const ip = parseIP(address);
  if (ip === undefined || ip.family !== 6) return false;
  const v = ip.value;
  if (v === 0n || v === 1n) return false;
  if (v >> 118n === 0x3fan) return false; // fe80::/10
  if (v >> 120n === 0xffn) return false; // ff00::/8
  return true;
}

/** Go's `IP.IsGlobalUnicast` for IPv4: not unspecified, loopback, link-local, multicast or broadcast. */
export function isGlobalUnicastV4(address: string): boolean {
  const ip = parseIP(address);
  if (ip === undefined || ip.family !== 4) return false;
  const v = ip.value;
  const first = Number(v >> 24n);
  if (v === 0n || v === 0xffffffffn) return false;
  if (first === 127 || first >= 224) return false;
  if (v >> 16n === 0xa9fen) return false; // 169.254.0.0/16
  return true;
}

function firstGlobal(
  family: 4 | 6,
  ifaces: readonly HostInterface[],
  within: readonly string[] = [],
): { cidr: string; interface: string } | undefined {
  const global = family === 4 ? isGlobalUnicastV4 : isGlobalUnicastV6;
  for (const i of ifaces) {
    for (const c of i.cidrs) {
      const address = c.split('/')[0]!;
      if (!global(address)) continue;
      if (within.length > 0 && !within.some((w) => cidrHolds(w, address))) continue;
      return { cidr: c, interface: i.name };
    }
  }
  return undefined;
}

function cidrHolds(cidr: string, address: string): boolean {
  const c = parseCidr(cidr);
  const a = parseIP(address);
  if (!c || !a || c.family !== a.family) return false;
  const shift = BigInt((c.family === 4 ? 32 : 128) - c.prefix);
  return a.value >> shift === c.network >> shift;
}

/** The interface address (with its prefix) equal to `address`, if any interface holds it. */
export function interfaceCidrOf(address: string, ifaces: readonly HostInterface[]): string | undefined {
  const want = parseIP(address);
  if (want === undefined) return undefined;
  for (const i of filterInterfaces(ifaces)) {
    for (const c of i.cidrs) {
      const have = parseCidrOrIP(c);
      if (have && have.family === want.family && have.address === want.value) return c;
    }
  }
  return undefined;
}

/**
 * An address given in `IP` completed with the prefix of the interface holding it (upstream's
 * GetLocalCIDR); an address no interface holds, or one given with a prefix, is kept as written.
 */
export function localCidr(value: string, ifaces: readonly HostInterface[]): string {
  if (value.includes('/')) return value;
  return interfaceCidrOf(value, ifaces) ?? value;
}

/**
 * The IPv4 address `method` picks. For can-reach, `reachSource` is the source address the kernel
 * chose for a datagram to the destination (undefined when there is no route).
 */
export function autodetectIPv4(
  method: AutodetectMethod,
  ifaces: readonly HostInterface[],
  reachSource?: string,
): AutodetectResult {
  return autodetectIP(4, method, ifaces, reachSource);
}

/** The address of `family` that `method` picks (`IP_AUTODETECTION_METHOD` / `IP6_AUTODETECTION_METHOD`). */
export function autodetectIP(
  family: 4 | 6,
  method: AutodetectMethod,
  ifaces: readonly HostInterface[],
  reachSource?: string,
): AutodetectResult {
  const found = (r: { cidr: string; interface: string } | undefined, why: string): AutodetectResult =>
    r ? { ok: true, ...r } : { ok: false, reason: why };
  const v = `IPv${family}`;
  switch (method.kind) {
    case 'first-found':
      return found(
        firstGlobal(family, filterInterfaces(ifaces, [], DEFAULT_INTERFACES_TO_EXCLUDE)),
        `no valid ${v} addresses found on the host interfaces`,
      );
    case 'interface':
      return found(
        firstGlobal(family, filterInterfaces(ifaces, method.patterns)),
        `no valid ${v} address on an interface matching ${method.patterns.join(', ')}`,
      );
    case 'skip-interface':
      return found(
        firstGlobal(
          family,
          filterInterfaces(ifaces, [], [...DEFAULT_INTERFACES_TO_EXCLUDE, ...method.patterns]),
        ),
        `no valid ${v} address on an interface not matching ${method.patterns.join(', ')}`,
      );
    case 'cidr':
      return found(
        firstGlobal(family, filterInterfaces(ifaces), method.cidrs),
        `no valid ${v} address within ${method.cidrs.join(', ')}`,
      );
    case 'can-reach': {
      if (reachSource === undefined) {
        return { ok: false, reason: `no route to ${method.destination}` };
      }
      const source = parseIP(reachSource);
      const text = source ? formatIP(source) : reachSource;
      for (const i of filterInterfaces(ifaces, [], DEFAULT_INTERFACES_TO_EXCLUDE)) {
        const c = i.cidrs.find((x) => x.split('/')[0] === text);
        if (c) return { ok: true, cidr: c, interface: i.name };
      }
      return {
        ok: false,
        reason: `the address ${text} used to reach ${method.destination} is on no usable interface`,
      };
    }
  }
}
