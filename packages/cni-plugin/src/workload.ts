/**
 * The calculation half of ADD, DEL and CHECK (pure): which routes a pod gets, the
 * WorkloadEndpoint resource, the CNI result, and what CHECK compares.
 */
import type { WorkloadEndpoint } from './io/backend.js';
import { HOST_VETH_MAC, IPV4_GATEWAY, IPV6_GATEWAY, type ObservedWorkload } from './io/dataplane.js';
import { NAMESPACE_LABEL, ORCHESTRATOR_LABEL, type PodEndpointFields } from './pod.js';
import type { Orchestrator } from './spec/cni-args.js';
import { addressOf, canonicalIp, hostCidr, isIPv4, parseCidr } from './spec/ip.js';
import type { CniDns, CniResult, CniRoute } from './spec/result.js';

export { NAMESPACE_LABEL, ORCHESTRATOR_LABEL };

function familyOf(cidrOrIp: string): 4 | 6 {
  return isIPv4(cidrOrIp.split('/')[0]!) ? 4 : 6;
}

/** The single-address CIDRs (/32, /128) of what IPAM returned, in its order, without duplicates. */
export function narrowAddresses(ipamAddresses: string[]): string[] {
  return [...new Set(ipamAddresses.map(hostCidr))];
}

/**
 * Destinations routed in the pod: the default route of each family the pod has an address of;
 * or, when the IPAM config lists routes, those (plus the defaults with `include_default_routes`).
 */
export function podRouteDestinations(
  addresses: string[],
  ipamRoutes: { dst: string }[],
  includeDefaultRoutes: boolean,
): string[] {
  const hasV4 = addresses.some((a) => familyOf(a) === 4);
  const hasV6 = addresses.some((a) => familyOf(a) === 6);
  const defaults = [...(hasV4 ? ['0.0.0.0/0'] : []), ...(hasV6 ? ['::/0'] : [])];
  if (ipamRoutes.length === 0) return defaults;
  const custom = ipamRoutes
    .map((r) => {
      const p = parseCidr(r.dst);
      return p ? `${p.ip}/${p.prefix}` : undefined;
    })
    .filter(
      (d): d is string => d !== undefined && ((familyOf(d) === 4 && hasV4) || (familyOf(d) === 6 && hasV6)),
    );
  return [...new Set(includeDefaultRoutes ? [...defaults, ...custom] : custom)];
}

export function gatewayFor(dst: string): string {
  return familyOf(dst) === 4 ? IPV4_GATEWAY : IPV6_GATEWAY;
}

export interface WorkloadEndpointInput {
  name: string;
  namespace: string;
  node: string;
  orchestrator: Orchestrator;
  pod?: string;
  containerId: string;
  endpoint: string;
  addresses: string[];
  hostIfName: string;
  mac: string;
  networkName: string;
  policyType: string;
  /** Kubernetes mode: what the Pod gives the endpoint (labels, service account, ports, profiles). */
  podFields?: PodEndpointFields;
  ipNATs?: { internalIP: string; externalIP: string }[];
  allowSpoofedSourcePrefixes?: string[];
}

/**
 * The endpoint ADD writes. Profiles: with `policy.type: k8s` the pod's (`kns.<ns>`, then
 * `ksa.<ns>.<sa>`; `kns.<ns>` alone when the pod is not known), otherwise the network's name.
 */
export function buildWorkloadEndpoint(i: WorkloadEndpointInput): WorkloadEndpoint {
  const profiles =
    i.policyType === 'k8s' ? (i.podFields?.profiles ?? [`kns.${i.namespace}`]) : [i.networkName];
  const spec: WorkloadEndpoint['spec'] = {
    orchestrator: i.orchestrator,
    node: i.node,
    containerID: i.containerId,
    endpoint: i.endpoint,
    ipNetworks: [...i.addresses],
    profiles,
    interfaceName: i.hostIfName,
    mac: i.mac,
  };
  if (i.pod !== undefined) spec.pod = i.pod;
  if (i.podFields?.serviceAccountName !== undefined) spec.serviceAccountName = i.podFields.serviceAccountName;
  if (i.podFields && i.podFields.ports.length > 0) spec.ports = i.podFields.ports.map((p) => ({ ...p }));
  if (i.ipNATs && i.ipNATs.length > 0) spec.ipNATs = i.ipNATs.map((n) => ({ ...n }));
  if (i.allowSpoofedSourcePrefixes && i.allowSpoofedSourcePrefixes.length > 0) {
    spec.allowSpoofedSourcePrefixes = [...i.allowSpoofedSourcePrefixes];
  }
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: {
      name: i.name,
      namespace: i.namespace,
      labels: {
        ...(i.podFields?.labels ?? {}),
        [NAMESPACE_LABEL]: i.namespace,
        [ORCHESTRATOR_LABEL]: i.orchestrator,
      },
    },
    spec,
  };
}

export interface AddResultInput {
  hostIfName: string;
  containerIfName: string;
  containerMac: string;
  containerMtu: number;
  netns: string;
  addresses: string[];
  routes: string[];
  dns: CniDns;
  /** The result of the plugins before this one in a chain: kept, ours appended. */
  prevResult?: CniResult;
}

/** The ADD result: `[host end, pod end]` interfaces, addresses on the pod end, no gateways. */
export function buildAddResult(i: AddResultInput): CniResult {
  const prev = i.prevResult;
  const base = prev?.interfaces.length ?? 0;
  const routes: CniRoute[] = i.routes.map((dst) => ({ dst, gw: gatewayFor(dst) }));
  const dnsEmpty = Object.keys(i.dns).length === 0;
  return {
    interfaces: [
      ...(prev?.interfaces ?? []),
      { name: i.hostIfName, mac: HOST_VETH_MAC },
      {
        name: i.containerIfName,
        mac: i.containerMac,
        ...(i.containerMtu > 0 ? { mtu: i.containerMtu } : {}),
        sandbox: i.netns,
      },
    ],
    ips: [...(prev?.ips ?? []), ...i.addresses.map((address) => ({ address, interface: base + 1 }))],
    routes: [...(prev?.routes ?? []), ...routes],
    dns: dnsEmpty && prev ? prev.dns : i.dns,
  };
}

/**
 * The addresses a previous result gave the pod interface `ifName`: IPs whose `interface` is that
 * sandbox interface, or every IP when the result does not say (IPAM-style results).
 */
export function addressesForInterface(result: CniResult, ifName: string): string[] {
  const idx = result.interfaces.findIndex((i) => i.name === ifName && i.sandbox);
  const ips = result.ips.filter((ip) => ip.interface === undefined || idx < 0 || ip.interface === idx);
  return narrowAddresses(ips.map((ip) => ip.address));
}

export interface ExpectedWorkload {
  netns: string;
  containerIfName: string;
  hostIfName: string;
  addresses: string[];
  routes: string[];
}

/** Every way the kernel state differs from what ADD set up, as sentences; empty = all good. */
export function workloadProblems(exp: ExpectedWorkload, obs: ObservedWorkload): string[] {
  const problems: string[] = [];
  const cont = exp.containerIfName;
  const host = exp.hostIfName;
  if (!obs.netnsExists) {
    problems.push(`network namespace ${exp.netns} does not exist`);
  } else if (!obs.container) {
    problems.push(`interface ${cont} does not exist in ${exp.netns}`);
  } else {
    const c = obs.container;
    if (!c.up) problems.push(`interface ${cont} in ${exp.netns} is down`);
    const have = new Set(c.addresses.map(canonCidr));
    for (const a of exp.addresses) {
      if (!have.has(canonCidr(a)))
        problems.push(`interface ${cont} in ${exp.netns} does not have address ${a}`);
    }
    const v4 = exp.addresses.some((a) => familyOf(a) === 4);
    if (v4 && !c.routes.some((r) => canonCidr(r.dst) === `${IPV4_GATEWAY}/32` && r.scope === 'link')) {
      problems.push(`interface ${cont} in ${exp.netns} has no route ${IPV4_GATEWAY} scope link`);
    }
    for (const dst of exp.routes) {
      const gw = gatewayFor(dst);
      const found = c.routes.some(
        (r) => canonCidr(r.dst) === canonCidr(dst) && r.gateway && canonicalIp(r.gateway) === gw,
      );
      if (!found) {
        const what = dst === '0.0.0.0/0' || dst === '::/0' ? `default route (${dst})` : `route to ${dst}`;
        problems.push(`${exp.netns} has no ${what} via ${gw} dev ${cont}`);
      }
    }
  }
  if (!obs.host) {
    problems.push(`host interface ${host} does not exist`);
  } else {
    const h = obs.host;
    if (!h.up) problems.push(`host interface ${host} is down`);
    if (h.mac.toLowerCase() !== HOST_VETH_MAC)
      problems.push(`host interface ${host} has MAC ${h.mac}, not ${HOST_VETH_MAC}`);
    for (const a of exp.addresses) {
      if (!h.routes.some((r) => canonCidr(r.dst) === canonCidr(a) && r.dev === host)) {
        problems.push(`host has no route ${a} dev ${host}`);
      }
    }
    if (exp.addresses.some((a) => familyOf(a) === 4)) {
      const proxyArp = h.sysctls[`net.ipv4.conf.${host}.proxy_arp`];
      if (proxyArp !== undefined && proxyArp !== '1') problems.push(`proxy ARP is off on ${host}`);
    }
  }
  return problems;
}

function canonCidr(c: string): string {
  const p = parseCidr(c);
  return p ? `${addressOf(p.ip)}/${p.prefix}` : c;
}
