/**
 * What the graph keeps of an endpoint (WorkloadEndpoint, HostEndpoint) and of a network set
 * (NetworkSet, GlobalNetworkSet): parsed once when the update arrives, so the nodes downstream
 * compare canonical addresses and read named ports without touching the resource again.
 *
 *   WorkloadEndpoint ──► workloadInfo ──┐
 *   HostEndpoint ──────► hostEndpointInfo ┴► EndpointInfo: key, local?, own labels, profiles,
 *                                            canonical nets (/32, /128), addresses, named ports
 *   (Global)NetworkSet ► netSetInfo ───────► NetSetInfo: key, labels, canonical nets
 *
 * Pure.
 */
import {
  type HostEndpoint,
  NAMESPACE_LABEL,
  ORCHESTRATOR_LABEL,
  type WorkloadEndpoint,
} from '@calico-ts/api';
import { formatCidr, formatIP, parseCidrOrIP } from '@calico-ts/api/net';
import type { KindUpdate } from './dispatcher.js';
import type { Labels } from './selector-index.js';
import type { NamedPortProtocol } from './types.js';

export interface NamedPort {
  readonly name: string;
  readonly protocol: NamedPortProtocol;
  readonly port: number;
}

export interface EndpointInfo {
  readonly key: string;
  readonly kind: 'wep' | 'hep';
  readonly name: string;
  readonly namespace?: string;
  readonly local: boolean;
  readonly ownLabels: Labels;
  readonly profiles: readonly string[];
  readonly interfaceName?: string;
  /** Canonical CIDRs (/32, /128). */
  readonly nets: readonly string[];
  /** The same addresses without prefix, for named-port members. */
  readonly addrs: readonly string[];
  readonly ports: readonly NamedPort[];
}

export interface NetSetInfo {
  readonly key: string;
  readonly labels: Labels;
  readonly nets: readonly string[];
}

export function canonicalAddrs(texts: readonly string[] | undefined): { nets: string[]; addrs: string[] } {
  const nets: string[] = [];
  const addrs: string[] = [];
  for (const t of texts ?? []) {
    const c = parseCidrOrIP(t);
    if (!c) continue;
    nets.push(formatCidr(c));
    addrs.push(formatIP({ family: c.family, value: c.network }));
  }
  return { nets, addrs };
}

export function namedPorts(
  ports: readonly { name?: string; protocol: unknown; port: number }[] | undefined,
): NamedPort[] {
  const out: NamedPort[] = [];
  for (const p of ports ?? []) {
    if (!p.name) continue;
    const proto = String(p.protocol).toLowerCase();
    const protocol: NamedPortProtocol | undefined =
      proto === 'tcp' || proto === '6'
        ? 'tcp'
        : proto === 'udp' || proto === '17'
          ? 'udp'
          : proto === 'sctp' || proto === '132'
            ? 'sctp'
            : undefined;
    if (protocol) out.push({ name: p.name, protocol, port: p.port });
  }
  return out;
}

export function workloadInfo(w: WorkloadEndpoint, hostname: string): EndpointInfo {
  const ns = w.metadata.namespace ?? '';
  const labels: Record<string, string> = { ...w.metadata.labels };
  if (ns && labels[NAMESPACE_LABEL] === undefined) labels[NAMESPACE_LABEL] = ns;
  if (w.spec.orchestrator && labels[ORCHESTRATOR_LABEL] === undefined) {
    labels[ORCHESTRATOR_LABEL] = w.spec.orchestrator;
  }
  const { nets, addrs } = canonicalAddrs(w.spec.ipNetworks);
  const info: EndpointInfo = {
    key: `wep/${ns}/${w.metadata.name}`,
    kind: 'wep',
    name: w.metadata.name,
    namespace: ns,
    local: w.spec.node === hostname,
    ownLabels: labels,
    profiles: w.spec.profiles ?? [],
    nets,
    addrs,
    ports: namedPorts(w.spec.ports),
  };
  return w.spec.interfaceName ? { ...info, interfaceName: w.spec.interfaceName } : info;
}

export function hostEndpointInfo(h: HostEndpoint, hostname: string): EndpointInfo {
  const { nets, addrs } = canonicalAddrs(h.spec.expectedIPs);
  const info: EndpointInfo = {
    key: `hep/${h.metadata.name}`,
    kind: 'hep',
    name: h.metadata.name,
    local: h.spec.node === hostname,
    ownLabels: { ...h.metadata.labels },
    profiles: h.spec.profiles ?? [],
    nets,
    addrs,
    ports: namedPorts(h.spec.ports),
  };
  return h.spec.interfaceName ? { ...info, interfaceName: h.spec.interfaceName } : info;
}

/** The key an endpoint update names: `wep/<namespace>/<name>` or `hep/<name>`. */
export function endpointKey(r: KindUpdate['resource']): string {
  const { name, namespace } = r.metadata;
  return r.kind === 'WorkloadEndpoint' ? `wep/${namespace ?? ''}/${name}` : `hep/${name}`;
}

/** A network set update's key (`ns/<namespace>/<name>`, `gns/<name>`) and, for a set, its info. */
export function netSetKey(r: KindUpdate['resource']): string {
  const { name, namespace } = r.metadata;
  return r.kind === 'NetworkSet' ? `ns/${namespace ?? ''}/${name}` : `gns/${name}`;
}

export function netSetInfo(r: KindUpdate['resource']): NetSetInfo {
  const spec = (r as { spec?: { nets?: string[] } }).spec;
  const labels: Record<string, string> = { ...(r.metadata as { labels?: Labels }).labels };
  const namespace = r.metadata.namespace;
  if (r.kind === 'NetworkSet' && namespace) labels[NAMESPACE_LABEL] = namespace;
  return { key: netSetKey(r), labels, nets: canonicalAddrs(spec?.nets).nets };
}
