/**
 * Kubernetes mode (upstream `CmdAddK8s`): what ADD learns about a pod from the Kubernetes API
 * before it makes anything. Reads the Pod and its Namespace side by side (through `ctx.kube()`,
 * shared with an in-process calico-ipam), then computes the endpoint's fields and what the
 * `cni.projectcalico.org/*` annotations ask (pod.ts, spec/annotations.ts: pure).
 *
 * Kubernetes mode is `policy.type: k8s` or `datastore_type: kubernetes`, for a Kubernetes pod
 * (K8S_POD_NAMESPACE and K8S_POD_NAME in CNI_ARGS). Upstream reads the pod only with
 * `policy.type: k8s`; on the Kubernetes datastore the endpoint is the Pod itself, so its
 * annotations apply there too.
 */
import { type KubeNamespace, type KubePod, type PodEndpointFields, podEndpointFields } from '../pod.js';
import { type PodNetworkRequest, parsePodNetworkRequest } from '../spec/annotations.js';
import type { NetConf } from '../spec/netconf.js';
import type { PluginContext } from './context.js';

export function kubernetesMode(conf: NetConf): boolean {
  return conf.policyType === 'k8s' || conf.datastoreType === 'kubernetes';
}

/**
 * Whether calico-ipam reads the pod's Namespace for IP pool namespaceSelectors: in Kubernetes
 * mode, or whenever the network config names a kubeconfig (upstream's rule).
 */
export function ipamReadsNamespace(conf: NetConf): boolean {
  return kubernetesMode(conf) || conf.kubeApi.kubeconfig !== undefined;
}

export interface PodInfo {
  pod: KubePod;
  namespace: KubeNamespace;
  fields: PodEndpointFields;
  request: PodNetworkRequest;
}

export async function readPodInfo(ctx: PluginContext, namespace: string, podName: string): Promise<PodInfo> {
  const kube = await ctx.kube();
  // Side by side; the pod's error is the one reported when both fail (it says more).
  const [podRead, nsRead] = await Promise.allSettled([
    kube.getPod(namespace, podName),
    kube.getNamespace(namespace),
  ]);
  if (podRead.status === 'rejected') throw podRead.reason;
  if (nsRead.status === 'rejected') throw nsRead.reason;
  const pod = podRead.value;
  const ns = nsRead.value;
  const request = parsePodNetworkRequest({
    pod: `${namespace}/${podName}`,
    namespace,
    podAnnotations: pod.metadata.annotations ?? {},
    namespaceAnnotations: ns.metadata.annotations ?? {},
    ipamType: ctx.conf.ipam?.type ?? '',
    featureControl: ctx.conf.featureControl,
  });
  return { pod, namespace: ns, fields: podEndpointFields(pod, namespace), request };
}

/**
 * The network config calico-ipam gets: the one received, or with its `ipam` pools and families
 * replaced as the annotations ask (upstream rewrites stdin the same way; flags as strings).
 */
export function ipamStdin(stdin: string, raw: Record<string, unknown>, o: PodNetworkRequest['ipam']): string {
  if (
    o.ipv4Pools === undefined &&
    o.ipv6Pools === undefined &&
    o.assignIpv4 === undefined &&
    o.assignIpv6 === undefined
  ) {
    return stdin;
  }
  const ipam = { ...((raw.ipam as Record<string, unknown> | undefined) ?? {}) };
  if (o.ipv4Pools !== undefined) ipam.ipv4_pools = o.ipv4Pools;
  if (o.ipv6Pools !== undefined) ipam.ipv6_pools = o.ipv6Pools;
  if (o.assignIpv4 !== undefined) ipam.assign_ipv4 = String(o.assignIpv4);
  if (o.assignIpv6 !== undefined) ipam.assign_ipv6 = String(o.assignIpv6);
  return JSON.stringify({ ...raw, ipam });
}
