/**
 * The parts of Kubernetes `v1 Service` and `discovery.k8s.io/v1 EndpointSlice` that policy
 * `services` matches resolve through: a Service's cluster IPs and ports, and the addresses and
 * ports of its endpoints. Types only, and the one rule that ties a slice to its Service.
 */
import type { K8sObjectMeta } from './k8s-network-policy.js';

export interface K8sServicePort {
  readonly name?: string;
  /** `TCP` (default), `UDP` or `SCTP`. */
  readonly protocol?: string;
  readonly port: number;
  readonly targetPort?: number | string;
}

export interface K8sService {
  readonly apiVersion?: 'v1';
  readonly kind: 'Service';
  readonly metadata: K8sObjectMeta;
  readonly spec?: {
    readonly clusterIP?: string;
    readonly clusterIPs?: readonly string[];
    readonly ports?: readonly K8sServicePort[];
    readonly selector?: Readonly<Record<string, string>>;
    readonly type?: string;
  };
}

export interface K8sEndpointPort {
  readonly name?: string;
  readonly protocol?: string;
  readonly port?: number;
}

export interface K8sEndpoint {
  readonly addresses: readonly string[];
  readonly conditions?: {
    readonly ready?: boolean;
    readonly serving?: boolean;
    readonly terminating?: boolean;
  };
  readonly nodeName?: string;
  readonly targetRef?: { readonly kind?: string; readonly name?: string; readonly namespace?: string };
}

export interface K8sEndpointSlice {
  readonly apiVersion?: 'discovery.k8s.io/v1';
  readonly kind: 'EndpointSlice';
  readonly metadata: K8sObjectMeta;
  /** `IPv4`, `IPv6` or `FQDN` (FQDN slices carry no addresses a policy can match). */
  readonly addressType: string;
  readonly endpoints?: readonly K8sEndpoint[] | null;
  readonly ports?: readonly K8sEndpointPort[] | null;
}

/** The label that names the Service a slice belongs to. */
export const ENDPOINT_SLICE_SERVICE_LABEL = 'kubernetes.io/service-name';

/** `namespace/name` of the Service a slice belongs to, or undefined for an unowned slice. */
export function endpointSliceService(slice: K8sEndpointSlice): string | undefined {
  const name = slice.metadata.labels?.[ENDPOINT_SLICE_SERVICE_LABEL];
  if (!name) return undefined;
  return `${slice.metadata.namespace ?? 'default'}/${name}`;
}
