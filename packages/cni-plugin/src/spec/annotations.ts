/**
 * The `cni.projectcalico.org/*` annotations of a pod and its namespace, read into what they ask of
 * ADD (pure; upstream `cni-plugin/pkg/k8s/k8s.go`).
 *
 * | annotation (pod; `ns` = namespace too)  | effect                                                   |
 * | --------------------------------------- | -------------------------------------------------------- |
 * | `ipv4pools`, `ipv6pools` (ns)           | calico-ipam's `ipv4_pools`/`ipv6_pools` (pod beats ns)   |
 * | `ipFamilies` (ns)                       | calico-ipam's `assign_ipv4`/`assign_ipv6`                 |
 * | `ipAddrs`                               | exactly these addresses, through calico-ipam             |
 * | `ipAddrsNoIpam`                         | these addresses, no IPAM (`feature_control.ip_addrs_no_ipam`) |
 * | `floatingIPs`                           | endpoint `ipNATs` (`feature_control.floating_ips`)       |
 * | `hwAddr`                                | the pod interface's MAC                                  |
 * | `allowedSourcePrefixes`                 | endpoint `allowSpoofedSourcePrefixes`                    |
 *
 * The pool and family annotations apply only with calico-ipam, as upstream (other IPAM plugins do
 * not read those fields); `ipAddrs` and `ipAddrsNoIpam` need calico-ipam and refuse each other.
 * An empty value counts as absent. Every error is `invalid-annotation` and names the object, the
 * annotation and its value; upstream prints them as plain errors (999), and so does the table.
 */
import { CniPluginError } from '../errors.js';
import { canonicalIp, isIP, isIPv4, parseCidr } from './ip.js';

export const ANNOTATION_PREFIX = 'cni.projectcalico.org/';
export const IPV4_POOLS_ANNOTATION = `${ANNOTATION_PREFIX}ipv4pools`;
export const IPV6_POOLS_ANNOTATION = `${ANNOTATION_PREFIX}ipv6pools`;
export const IP_FAMILIES_ANNOTATION = `${ANNOTATION_PREFIX}ipFamilies`;
export const IP_ADDRS_ANNOTATION = `${ANNOTATION_PREFIX}ipAddrs`;
export const IP_ADDRS_NO_IPAM_ANNOTATION = `${ANNOTATION_PREFIX}ipAddrsNoIpam`;
export const FLOATING_IPS_ANNOTATION = `${ANNOTATION_PREFIX}floatingIPs`;
export const HW_ADDR_ANNOTATION = `${ANNOTATION_PREFIX}hwAddr`;
export const ALLOWED_SOURCE_PREFIXES_ANNOTATION = `${ANNOTATION_PREFIX}allowedSourcePrefixes`;

/** Where the addresses come from. */
export type AddressSource =
  | { kind: 'ipam' }
  /** calico-ipam assigns exactly these (one IPv4 and/or one IPv6). */
  | { kind: 'ipam-exact'; ips: string[] }
  /** These, without IPAM. */
  | { kind: 'no-ipam'; ips: string[] };

export interface PodNetworkRequest {
  /** calico-ipam settings to replace in the config it is given; absent = as configured. */
  ipam: { ipv4Pools?: string[]; ipv6Pools?: string[]; assignIpv4?: boolean; assignIpv6?: boolean };
  addresses: AddressSource;
  /** External addresses NATed to the pod's address of the same family. */
  floatingIps: string[];
  containerMac?: string;
  allowedSourcePrefixes: string[];
}

export interface AnnotationInput {
  /** `<namespace>/<name>`, for messages. */
  pod: string;
  namespace: string;
  podAnnotations: Record<string, string>;
  namespaceAnnotations: Record<string, string>;
  ipamType: string;
  featureControl: { ipAddrsNoIpam: boolean; floatingIps: boolean };
}

function bad(where: string, annotation: string, value: string, why: string): CniPluginError {
  return new CniPluginError('invalid-annotation', `${where}: annotation ${annotation}=${value} ${why}`);
}

/** A JSON list of strings, or why not. */
function stringList(where: string, annotation: string, value: string): string[] {
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch (e) {
    throw bad(where, annotation, value, `is not valid JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw bad(where, annotation, value, 'must be a JSON list of strings, e.g. ["a", "b"]');
  }
  return v as string[];
}

/** One IPv4 and/or one IPv6 address (upstream `validateAndExtractIPs`), canonical. */
function addressList(where: string, annotation: string, value: string): string[] {
  const list = stringList(where, annotation, value);
  if (list.length === 0) throw bad(where, annotation, value, 'is an empty list: name at least one address');
  let v4 = 0;
  let v6 = 0;
  for (const ip of list) {
    if (!isIP(ip)) throw bad(where, annotation, value, `has "${ip}", which is not an IP address`);
    if (isIPv4(ip)) v4++;
    else v6++;
  }
  if (v4 > 1 || v6 > 1) {
    throw bad(where, annotation, value, 'may have at most one IPv4 and one IPv6 address');
  }
  return list.map(canonicalIp);
}

function familyList(where: string, value: string): { assignIpv4: boolean; assignIpv6: boolean } {
  const list = stringList(where, IP_FAMILIES_ANNOTATION, value);
  const out = { assignIpv4: false, assignIpv6: false };
  for (const f of list) {
    if (f === 'IPv4') out.assignIpv4 = true;
    else if (f === 'IPv6') out.assignIpv6 = true;
    else throw bad(where, IP_FAMILIES_ANNOTATION, value, `has "${f}": families are "IPv4" and "IPv6"`);
  }
  return out;
}

/** `aa:bb:cc:dd:ee:ff` (or with `-`), a unicast address; lower case with colons. */
export function parseUnicastMac(text: string): string | undefined {
  const m =
    /^([0-9a-fA-F]{2})([:-])([0-9a-fA-F]{2})\2([0-9a-fA-F]{2})\2([0-9a-fA-F]{2})\2([0-9a-fA-F]{2})\2([0-9a-fA-F]{2})$/.exec(
      text,
    );
  if (!m) return undefined;
  const octets = [m[1], m[3], m[4], m[5], m[6], m[7]].map((o) => o!.toLowerCase());
  if ((Number.parseInt(octets[0]!, 16) & 1) === 1) return undefined; // multicast / broadcast
  if (octets.every((o) => o === '00')) return undefined;
  return octets.join(':');
}

/** A CIDR with its host bits cleared (upstream stores the network), IPv6 canonical. */
export function maskedCidr(text: string): string | undefined {
  const c = parseCidr(text);
  if (!c) return undefined;
  const v4 = isIPv4(c.ip);
  const bits = v4 ? 32 : 128;
  let n = v4 ? c.ip.split('.').reduce((a, o) => (a << 8n) | BigInt(Number(o)), 0n) : ipv6ToBig(c.ip);
  n &= ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - c.prefix)) - 1n);
  if (v4) return `${[24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.')}/${c.prefix}`;
  const groups: string[] = [];
  for (let s = 112n; s >= 0n; s -= 16n) groups.push(((n >> s) & 0xffffn).toString(16));
  return `${canonicalIp(groups.join(':'))}/${c.prefix}`;
}

function ipv6ToBig(ip: string): bigint {
  const [h, t = ''] = ip.split('::') as [string, string?];
  const hg = h === '' ? [] : h.split(':');
  const tg = t === '' ? [] : t.split(':');
  return [...hg, ...new Array<string>(8 - hg.length - tg.length).fill('0'), ...tg].reduce(
    (a, g) => (a << 16n) | BigInt(Number.parseInt(g, 16)),
    0n,
  );
}

export function parsePodNetworkRequest(i: AnnotationInput): PodNetworkRequest {
  const podWhere = `pod ${i.pod}`;
  const nsWhere = `namespace ${i.namespace}`;
  const pa = (k: string) => (i.podAnnotations[k] ? i.podAnnotations[k] : undefined);
  const na = (k: string) => (i.namespaceAnnotations[k] ? i.namespaceAnnotations[k] : undefined);
  const calicoIpam = i.ipamType === 'calico-ipam';
  const out: PodNetworkRequest = {
    ipam: {},
    addresses: { kind: 'ipam' },
    floatingIps: [],
    allowedSourcePrefixes: [],
  };

  if (calicoIpam) {
    for (const [annotation, field] of [
      [IPV4_POOLS_ANNOTATION, 'ipv4Pools'],
      [IPV6_POOLS_ANNOTATION, 'ipv6Pools'],
    ] as const) {
      const fromPod = pa(annotation);
      const value = fromPod ?? na(annotation);
      if (value === undefined) continue;
      const list = stringList(fromPod !== undefined ? podWhere : nsWhere, annotation, value);
      out.ipam[field] = list;
    }
    const families = pa(IP_FAMILIES_ANNOTATION);
    const familiesNs = na(IP_FAMILIES_ANNOTATION);
    if (families !== undefined) Object.assign(out.ipam, familyList(podWhere, families));
    else if (familiesNs !== undefined) Object.assign(out.ipam, familyList(nsWhere, familiesNs));
  }

  const exact = pa(IP_ADDRS_ANNOTATION);
  const noIpam = pa(IP_ADDRS_NO_IPAM_ANNOTATION);
  if (exact !== undefined && noIpam !== undefined) {
    throw new CniPluginError(
      'invalid-annotation',
      `${podWhere}: annotations ${IP_ADDRS_ANNOTATION} and ${IP_ADDRS_NO_IPAM_ANNOTATION} cannot be used together`,
    );
  }
  if (noIpam !== undefined) {
    if (!calicoIpam) {
      throw bad(podWhere, IP_ADDRS_NO_IPAM_ANNOTATION, noIpam, `needs calico-ipam, not "${i.ipamType}"`);
    }
    if (!i.featureControl.ipAddrsNoIpam) {
      throw bad(
        podWhere,
        IP_ADDRS_NO_IPAM_ANNOTATION,
        noIpam,
        'is not allowed: the network config does not enable feature_control.ip_addrs_no_ipam',
      );
    }
    out.addresses = { kind: 'no-ipam', ips: addressList(podWhere, IP_ADDRS_NO_IPAM_ANNOTATION, noIpam) };
  } else if (exact !== undefined) {
    if (!calicoIpam)
      throw bad(podWhere, IP_ADDRS_ANNOTATION, exact, `needs calico-ipam, not "${i.ipamType}"`);
    out.addresses = { kind: 'ipam-exact', ips: addressList(podWhere, IP_ADDRS_ANNOTATION, exact) };
  }

  const floating = pa(FLOATING_IPS_ANNOTATION);
  if (floating !== undefined) {
    if (!i.featureControl.floatingIps) {
      throw bad(
        podWhere,
        FLOATING_IPS_ANNOTATION,
        floating,
        'is not allowed: the network config does not enable feature_control.floating_ips',
      );
    }
    const list = stringList(podWhere, FLOATING_IPS_ANNOTATION, floating);
    for (const ip of list) {
      if (!isIP(ip))
        throw bad(podWhere, FLOATING_IPS_ANNOTATION, floating, `has "${ip}", which is not an IP address`);
    }
    out.floatingIps = list.map(canonicalIp);
  }

  const hw = pa(HW_ADDR_ANNOTATION);
  if (hw !== undefined) {
    const mac = parseUnicastMac(hw);
    if (!mac) {
      throw bad(podWhere, HW_ADDR_ANNOTATION, hw, 'is not a unicast MAC address such as 02:00:00:00:00:01');
    }
    out.containerMac = mac;
  }

  const prefixes = pa(ALLOWED_SOURCE_PREFIXES_ANNOTATION);
  if (prefixes !== undefined) {
    out.allowedSourcePrefixes = stringList(podWhere, ALLOWED_SOURCE_PREFIXES_ANNOTATION, prefixes).map(
      (p) => {
        const c = maskedCidr(p);
        if (!c)
          throw bad(
            podWhere,
            ALLOWED_SOURCE_PREFIXES_ANNOTATION,
            prefixes,
            `has "${p}", which is not a CIDR`,
          );
        return c;
      },
    );
  }
  return out;
}

/**
 * The endpoint's `ipNATs` for the floating IPs: each external address to the pod's address of its
 * family. A floating IP of a family the pod has no address of cannot be NATed: an error.
 */
export function floatingIpNats(
  pod: string,
  floatingIps: string[],
  podAddresses: string[],
): { internalIP: string; externalIP: string }[] {
  const v4 = podAddresses.map((a) => a.split('/')[0]!).find((a) => isIPv4(a));
  const v6 = podAddresses.map((a) => a.split('/')[0]!).find((a) => !isIPv4(a));
  return floatingIps.map((externalIP) => {
    const internal = isIPv4(externalIP) ? v4 : v6;
    if (internal === undefined) {
      throw bad(
        `pod ${pod}`,
        FLOATING_IPS_ANNOTATION,
        JSON.stringify(floatingIps),
        `has ${externalIP}, but the pod has no IPv${isIPv4(externalIP) ? 4 : 6} address to NAT it to`,
      );
    }
    return { internalIP: canonicalIp(internal), externalIP };
  });
}
