/**
 * What a Kubernetes Pod contributes to its WorkloadEndpoint (pure), as upstream's pod conversion
 * (`libcalico-go/lib/backend/k8s/conversion/workload_endpoint_default.go`) computes it:
 *
 * - labels: the pod's own, plus `projectcalico.org/namespace`, `projectcalico.org/orchestrator: k8s`
 *   and `projectcalico.org/serviceaccount` (when the pod names a service account shorter than 63
 *   characters);
 * - profiles: `kns.<namespace>`, then `ksa.<namespace>.<serviceaccount>` when it names one;
 * - `serviceAccountName`;
 * - ports: every container and init-container port with a port number and a name or a host port,
 *   protocol TCP, UDP or SCTP (TCP when unset; others are left out).
 *
 * Only the fields read here are typed; a Pod from the API server has many more.
 */
import type { WorkloadEndpoint } from './io/backend.js';

export const NAMESPACE_LABEL = 'projectcalico.org/namespace';
export const ORCHESTRATOR_LABEL = 'projectcalico.org/orchestrator';
export const SERVICE_ACCOUNT_LABEL = 'projectcalico.org/serviceaccount';

export interface KubeContainerPort {
  name?: string;
  containerPort?: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: string;
}

export interface KubeContainer {
  name?: string;
  ports?: KubeContainerPort[];
}

export interface KubeMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface KubePod {
  metadata: KubeMeta;
  spec?: {
    nodeName?: string;
    serviceAccountName?: string;
    containers?: KubeContainer[];
    initContainers?: KubeContainer[];
  };
}

export interface KubeNamespace {
  metadata: KubeMeta;
}

export type EndpointPort = NonNullable<WorkloadEndpoint['spec']['ports']>[number];

/** The WorkloadEndpoint fields that come from the Pod. */
export interface PodEndpointFields {
  labels: Record<string, string>;
  profiles: string[];
  serviceAccountName?: string;
  ports: EndpointPort[];
}

const PROTOCOLS: Record<string, 'TCP' | 'UDP' | 'SCTP'> = { '': 'TCP', TCP: 'TCP', UDP: 'UDP', SCTP: 'SCTP' };

export function podEndpointFields(pod: KubePod, namespace: string): PodEndpointFields {
  const sa = pod.spec?.serviceAccountName ?? '';
  const labels: Record<string, string> = {
    ...(pod.metadata.labels ?? {}),
    [NAMESPACE_LABEL]: namespace,
    [ORCHESTRATOR_LABEL]: 'k8s',
  };
  // Upstream keeps the label for backwards compatibility only where it fits a label value.
  if (sa !== '' && sa.length < 63) labels[SERVICE_ACCOUNT_LABEL] = sa;
  const profiles = [`kns.${namespace}`, ...(sa !== '' ? [`ksa.${namespace}.${sa}`] : [])];
  const ports: EndpointPort[] = [];
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    for (const p of c.ports ?? []) {
      const port = p.containerPort ?? 0;
      const hostPort = p.hostPort ?? 0;
      if (port === 0 || (hostPort === 0 && !p.name)) continue;
      const protocol = PROTOCOLS[p.protocol ?? ''];
      if (!protocol) continue;
      ports.push({ name: p.name ?? '', protocol, port, hostPort, hostIP: p.hostIP ?? '' });
    }
  }
  return { labels, profiles, ...(sa !== '' ? { serviceAccountName: sa } : {}), ports };
}
