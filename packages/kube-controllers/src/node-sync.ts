/**
 * What the node controller writes about nodes, computed from what it sees (pure):
 *
 *   Kubernetes Node labels ──► syncedNodeLabels ──► the Calico Node's labels (etcd mode, upstream's
 *                                                   `syncLabels`): k8s labels set on it, the ones
 *                                                   Kubernetes dropped removed, the synced set kept
 *                                                   in annotation `projectcalico.org/kube-labels`
 *   Calico Nodes ──► autoHostEndpoint ──► HostEndpoint `<node>-auto-hep` (upstream's
 *                                          `hostEndpoint.autoCreate`): interfaceName `*`, the
 *                                          node's addresses as expectedIPs, the node's labels plus
 *                                          `projectcalico.org/created-by: calico-kube-controllers`,
 *                                          profile `projectcalico-default-allow`
 *
 * `planHostEndpoints` gives the writes: one auto HEP per node when enabled, none when disabled;
 * only HEPs carrying the created-by label are ever updated or deleted.
 */
import type { HostEndpoint, Node } from '@calico-ts/api';
import { type MirrorPlan, planMirror } from './reconcile.js';

export const CREATED_BY_LABEL = 'projectcalico.org/created-by';
export const CREATED_BY_VALUE = 'calico-kube-controllers';
export const KUBE_LABELS_ANNOTATION = 'projectcalico.org/kube-labels';
export const DEFAULT_ALLOW_PROFILE = 'projectcalico-default-allow';

export function autoHostEndpointName(node: string): string {
  return `${node}-auto-hep`;
}

export function isAutoHostEndpoint(hep: HostEndpoint): boolean {
  return hep.metadata.labels?.[CREATED_BY_LABEL] === CREATED_BY_VALUE;
}

const addressOf = (cidrOrIp: string | undefined) => cidrOrIp?.split('/')[0];

/** The node's addresses in upstream's order: BGP IPv4, BGP IPv6, IPIP tunnel, VXLAN tunnel (v4, v6). */
export function nodeExpectedIPs(node: Node): string[] {
  const s = node.spec ?? {};
  return [
    addressOf(s.bgp?.ipv4Address),
    addressOf(s.bgp?.ipv6Address),
    s.bgp?.ipv4IPIPTunnelAddr,
    s.ipv4VXLANTunnelAddr,
    s.ipv6VXLANTunnelAddr,
  ].filter((a): a is string => a !== undefined && a !== '');
}

export function autoHostEndpoint(node: Node): HostEndpoint {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'HostEndpoint',
    metadata: {
      name: autoHostEndpointName(node.metadata.name),
      labels: { ...node.metadata.labels, [CREATED_BY_LABEL]: CREATED_BY_VALUE },
    },
    spec: {
      node: node.metadata.name,
      interfaceName: '*',
      expectedIPs: nodeExpectedIPs(node),
      profiles: [DEFAULT_ALLOW_PROFILE],
    },
  } as HostEndpoint;
}

export function planHostEndpoints(
  nodes: readonly Node[],
  heps: readonly HostEndpoint[],
  enabled: boolean,
): MirrorPlan<HostEndpoint> {
  return planMirror(enabled ? nodes.map(autoHostEndpoint) : [], heps.filter(isAutoHostEndpoint));
}

/** The Kubernetes node a Calico Node stands for: its k8s orchRef, else its own name. */
export function kubernetesNodeName(node: Node): string {
  return node.spec?.orchRefs?.find((r) => r.orchestrator === 'k8s')?.nodeName ?? node.metadata.name;
}

function parseSynced(text: string | undefined): Record<string, string> {
  if (!text) return {};
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};
  } catch {
    return {};
  }
}

/**
 * The Calico Node with its Kubernetes Node's labels synced onto it, or undefined when it already
 * carries them. Labels set on the Calico Node by other means are kept unless Kubernetes set them
 * before and has now dropped them.
 */
export function syncedNodeLabels(node: Node, kubeLabels: Readonly<Record<string, string>>): Node | undefined {
  const annotations = { ...node.metadata.annotations };
  const before = parseSynced(annotations[KUBE_LABELS_ANNOTATION]);
  const labels = { ...node.metadata.labels };
  for (const k of Object.keys(before)) if (!(k in kubeLabels)) delete labels[k];
  Object.assign(labels, kubeLabels);
  const synced = JSON.stringify(
    Object.fromEntries(Object.entries(kubeLabels).sort(([a], [b]) => (a < b ? -1 : 1))),
  );
  const same =
    annotations[KUBE_LABELS_ANNOTATION] === synced &&
    Object.keys(labels).length === Object.keys(node.metadata.labels ?? {}).length &&
    Object.entries(labels).every(([k, v]) => node.metadata.labels?.[k] === v);
  if (same) return undefined;
  annotations[KUBE_LABELS_ANNOTATION] = synced;
  return { ...node, metadata: { ...node.metadata, labels, annotations } };
}
