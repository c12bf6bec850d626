/**
 * Kubernetes Services and their EndpointSlices, indexed for policy `services` matches: what the
 * IP set of a `ServiceRef` holds.
 *
 *   Service ns/name ──────────────┐
 *                                 ├──► members(ref)
 *   EndpointSlice (label          │      destination (includePorts): endpoint addr × slice ports,
 *   kubernetes.io/service-name) ──┘        plus cluster IPs × Service ports  → `addr,proto:port`
 *                                        source: endpoint addresses          → `addr/32`, `addr/128`
 *
 * A Service that does not exist, or has no endpoints, has no members (not even its cluster IP), so
 * a rule naming it matches nothing. Pure: no I/O.
 */
import { endpointSliceService, type K8sEndpointSlice, type K8sService } from '@calico-ts/api';
import { formatIP, parseIP } from '@calico-ts/api/net';
import type { ServiceRef } from './types.js';

const PROTOCOLS: Readonly<Record<string, string>> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };

function protoOf(p: string | undefined): string | undefined {
  return PROTOCOLS[(p ?? 'TCP').toUpperCase()];
}

/** A canonical address, or undefined for anything that is not an IP (FQDN slices, `None`). */
function canonicalIP(text: string): string | undefined {
  const ip = parseIP(text);
  return ip ? formatIP(ip) : undefined;
}

export class ServiceIndex {
  private readonly services = new Map<string, K8sService>();
  private readonly slices = new Map<string, { readonly service: string; readonly slice: K8sEndpointSlice }>();
  private readonly slicesByService = new Map<string, Set<string>>();

  /** Records a Service (or its deletion); returns the `namespace/name` whose members may change. */
  onService(namespace: string, name: string, svc: K8sService | undefined): string {
    const key = `${namespace}/${name}`;
    if (svc) this.services.set(key, svc);
    else this.services.delete(key);
    return key;
  }

  /** Records an EndpointSlice (or its deletion); returns the Services whose members may change. */
  onEndpointSlice(namespace: string, name: string, slice: K8sEndpointSlice | undefined): string[] {
    const key = `${namespace}/${name}`;
    const touched: string[] = [];
    const old = this.slices.get(key);
    if (old) {
      touched.push(old.service);
      const set = this.slicesByService.get(old.service);
      set?.delete(key);
      if (set?.size === 0) this.slicesByService.delete(old.service);
      this.slices.delete(key);
    }
    const service = slice
      ? endpointSliceService({ ...slice, metadata: { ...slice.metadata, namespace } })
      : undefined;
    if (slice && service) {
      this.slices.set(key, { service, slice });
      let set = this.slicesByService.get(service);
      if (!set) {
        set = new Set();
        this.slicesByService.set(service, set);
      }
      set.add(key);
      if (!touched.includes(service)) touched.push(service);
    }
    return touched;
  }

  /** The members of a service IP set, sorted and without duplicates. */
  members(ref: ServiceRef): string[] {
    const key = `${ref.namespace}/${ref.name}`;
    const out = new Set<string>();
    for (const sliceKey of this.slicesByService.get(key) ?? []) {
      const { slice } = this.slices.get(sliceKey)!;
      for (const ep of slice.endpoints ?? []) {
        for (const a of ep.addresses) {
          const addr = canonicalIP(a);
          if (!addr) continue;
          if (!ref.includePorts) {
            out.add(`${addr}/${addr.includes(':') ? 128 : 32}`);
            continue;
          }
          for (const p of slice.ports ?? []) {
            const proto = protoOf(p.protocol);
            if (proto && p.port !== undefined) out.add(`${addr},${proto}:${p.port}`);
          }
        }
      }
    }
    // Cluster IPs count only while the Service has an endpoint: with none, nothing answers there
    // and the rule matches nothing.
    const svc = this.services.get(key);
    if (ref.includePorts && svc?.spec && out.size > 0) {
      const ips = svc.spec.clusterIPs ?? (svc.spec.clusterIP ? [svc.spec.clusterIP] : []);
      for (const ipText of ips) {
        const ip = canonicalIP(ipText);
        if (!ip) continue;
        for (const p of svc.spec.ports ?? []) {
          const proto = protoOf(p.protocol);
          if (proto) out.add(`${ip},${proto}:${p.port}`);
        }
      }
    }
    return [...out].sort();
  }
}
