/**
 * What the provider and the CNI change in calico-system (pure), as upstream's operator renders it
 * (`pkg/render/node.go`, `namespaces.go`, the Typha affinity of `installation` fillDefaults):
 *
 *   CLUSTER_TYPE     k8s,operator[,ecs|,gke|,aks][,bgp]   (EKS is `ecs`, as upstream names it)
 *   another CNI      Calico polices only: no install-cni, no cni-refresh, no CNI volumes, no
 *                    cni-config; CALICO_MANAGE_CNI=false, FELIX_ROUTESOURCE=WorkloadIPs and the
 *                    CNI's own interface prefix and rule actions:
 *                      AmazonVPC  FELIX_INTERFACEPREFIX=eni, FELIX_IPTABLESMANGLEALLOWACTION=Return,
 *                                 FELIX_BPFEXTTOSERVICECONNMARK=0x80
 *                      GKE        FELIX_INTERFACEPREFIX=gke, FELIX_IPTABLESMANGLEALLOWACTION=Return,
 *                                 FELIX_IPTABLESFILTERALLOWACTION=Return
 *                      AzureVNET  FELIX_INTERFACEPREFIX=azv
 *                    EKS + AmazonVPC, AKS + AzureVNET: FELIX_WIREGUARDHOSTENCRYPTIONENABLED=true;
 *                    HostLocal IPAM (GKE): USE_POD_CIDR=true; Typha: the same FELIX_INTERFACEPREFIX
 *                    (it names the Kubernetes datastore's endpoints for the Felixes behind it)
 *   EKS              calico-node off Fargate nodes (eks.amazonaws.com/compute-type NotIn fargate)
 *   AKS              calico-node off virtual kubelets (type NotIn virtual-kubelet); Typha off
 *                    virtual nodes and only on the cluster's own (kubernetes.azure.com/cluster
 *                    Exists); calico-system labelled control-plane: "true" (azure.policyMode
 *                    Default)
 *   GKE, Calico CNI  the plugins in /home/kubernetes/bin, GKE's CNI binary directory
 *
 * Of these variables this build's Felix acts on FELIX_INTERFACEPREFIX: it polices, and routes to,
 * the pods' host interfaces the other CNI made. The rest are upstream's, rendered so the DaemonSet
 * is upstream's; they tune what this dataplane does not have (iptables chain actions, the BPF
 * dataplane, WireGuard, routes computed from IPAM blocks for a host-local IPAM).
 */
import type { ResolvedInstallation } from './installation.js';
import { policyOnly } from './provider.js';

type Env = readonly (readonly [string, string])[];

const CLUSTER_TYPE_OF_PROVIDER: Partial<Record<string, string>> = {
  OpenShift: 'openshift',
  EKS: 'ecs',
  GKE: 'gke',
  AKS: 'aks',
};

export function clusterType(cfg: ResolvedInstallation): string {
  const parts = ['k8s', 'operator'];
  const p = CLUSTER_TYPE_OF_PROVIDER[cfg.platform.provider];
  if (p) parts.push(p);
  if (cfg.bgp) parts.push('bgp');
  return parts.join(',');
}

/** The CNI's interface prefix (another CNI's pods' host interfaces), undefined with Calico's. */
function interfacePrefix(cfg: ResolvedInstallation): string | undefined {
  const { cni } = cfg.platform;
  return cni === 'AmazonVPC' ? 'eni' : cni === 'GKE' ? 'gke' : cni === 'AzureVNET' ? 'azv' : undefined;
}

/**
 * Typha's variables for the CNI: the interface prefix, as upstream sets it, since Typha names the
 * Kubernetes datastore's endpoints for the Felixes behind it.
 */
export function platformTyphaEnv(cfg: ResolvedInstallation): Env {
  const prefix = interfacePrefix(cfg);
  return prefix ? [['FELIX_INTERFACEPREFIX', prefix]] : [];
}

/** calico-node's variables for the CNI and provider, in upstream's order. */
export function platformNodeEnv(cfg: ResolvedInstallation): Env {
  const { provider, cni, ipam } = cfg.platform;
  const env: [string, string][] = [];
  if (policyOnly(cfg.platform)) env.push(['CALICO_MANAGE_CNI', 'false']);
  if (cni === 'AmazonVPC') env.push(['FELIX_BPFEXTTOSERVICECONNMARK', '0x80']);
  if (ipam === 'HostLocal') env.push(['USE_POD_CIDR', 'true']);
  if ((provider === 'AKS' && cni === 'AzureVNET') || (provider === 'EKS' && cni === 'AmazonVPC'))
    env.push(['FELIX_WIREGUARDHOSTENCRYPTIONENABLED', 'true']);
  const prefix = interfacePrefix(cfg);
  if (prefix) env.push(['FELIX_INTERFACEPREFIX', prefix]);
  if (cni === 'AmazonVPC' || cni === 'GKE') env.push(['FELIX_IPTABLESMANGLEALLOWACTION', 'Return']);
  if (cni === 'GKE') env.push(['FELIX_IPTABLESFILTERALLOWACTION', 'Return']);
  if (policyOnly(cfg.platform)) env.push(['FELIX_ROUTESOURCE', 'WorkloadIPs']);
  return env;
}

const notIn = (key: string, value: string) => ({ key, operator: 'NotIn', values: [value] });
const required = (...matchExpressions: unknown[]) => ({
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions }] },
  },
});

/** calico-node's pod affinity: off the nodes that cannot run host-network pods. */
export function nodeAffinity(cfg: ResolvedInstallation): Record<string, unknown> | undefined {
  if (cfg.platform.provider === 'AKS') return required(notIn('type', 'virtual-kubelet'));
  if (cfg.platform.provider === 'EKS') return required(notIn('eks.amazonaws.com/compute-type', 'fargate'));
  return undefined;
}

/** Typha's node affinity (beside its pod anti-affinity): AKS' virtual nodes cannot run it. */
export function typhaNodeAffinity(cfg: ResolvedInstallation): Record<string, unknown> | undefined {
  if (cfg.platform.provider !== 'AKS') return undefined;
  return required(notIn('type', 'virtual-node'), { key: 'kubernetes.azure.com/cluster', operator: 'Exists' })
    .nodeAffinity;
}

/** Labels of calico-system beyond its own name and pod security. */
export function namespaceLabels(cfg: ResolvedInstallation): Record<string, string> {
  return cfg.platform.provider === 'AKS' && cfg.azurePolicyMode === 'Default'
    ? { 'control-plane': 'true' }
    : {};
}

/** Where install-cni puts the plugins on the host (Calico CNI only). */
export function cniBinDir(cfg: ResolvedInstallation): string {
  return cfg.platform.provider === 'GKE' ? '/home/kubernetes/bin' : '/opt/cni/bin';
}
