/**
 * The host-side interface name of a Kubernetes pod, as upstream's Kubernetes datastore computes it
 * for the pod's WorkloadEndpoint (`VethNameForWorkload`). Pure. Its own module so programs that
 * only need the name (the lab, tests) do not load the Kubernetes mapping.
 */
import { createHash } from 'node:crypto';

export const DEFAULT_INTERFACE_PREFIX = 'cali';

/**
 * The prefix pods' host interfaces are named with: the first entry of a comma-separated prefix
 * list (FELIX_INTERFACEPREFIX), or `cali` when there is none. Felix matches every entry; the first
 * names the endpoints.
 */
export function workloadInterfacePrefix(prefixList: string | undefined): string {
  const first = (prefixList ?? '').split(',')[0]!.trim();
  return first === '' ? DEFAULT_INTERFACE_PREFIX : first;
}

/** Linux IFNAMSIZ - 1. */
const MAX_IFNAME = 15;

/**
 * Upstream's host-side interface of a pod (`VethNameForWorkload`): the prefix (see
 * `workloadInterfacePrefix`) + the first 11 hex characters of SHA-1 of `<namespace>.<pod>`. The
 * pod's CNI plugin must name the interface the same way: Calico's does, and so does the Amazon VPC
 * CNI with prefix `eni`. A prefix longer than 4 characters shortens the digest so the name stays
 * within the kernel's 15 (upstream would ask for a name the kernel refuses); the CNI plugin
 * (`hostVethName`) shortens it the same way, so Felix finds the interface the plugin made.
 */
export function podInterfaceName(namespace: string, pod: string, prefixList?: string): string {
  const prefix = workloadInterfacePrefix(prefixList);
  const digest = createHash('sha1').update(`${namespace}.${pod}`).digest('hex');
  return `${prefix}${digest.slice(0, Math.max(0, Math.min(11, MAX_IFNAME - prefix.length)))}`;
}
