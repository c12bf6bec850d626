/**
 * What the provider and the CNI change in calico-system (pure), as upstream's operator renders it
 * (`pkg/render/node.go`, `typha.go`, `namespaces.go`, the Typha affinity of `installation`
 * fillDefaults):
 *
 *   CLUSTER_TYPE     k8s,operator[,ecs|,gke|,aks][,bgp]   (EKS is `ecs`, as upstream names it)
 *   another CNI      Calico polices only: no install-cni, no cni-refresh, no CNI volumes, no
 *                    cni-config, CALICO_NETWORKING_BACKEND none, and the CNI's interface prefix,
 *                    FELIX_INTERFACEPREFIX (AmazonVPC `eni`, GKE `gke`, AzureVNET `azv`), on
 *                    calico-node and on Typha (Typha names the Kubernetes datastore's endpoints
 *                    for the Felixes behind it)
 *   EKS              calico-node off Fargate nodes (eks.amazonaws.com/compute-type NotIn fargate)
 *   AKS              calico-node off virtual kubelets (type NotIn virtual-kubelet); Typha off
 *                    virtual nodes and only on the cluster's own (kubernetes.azure.com/cluster
 *                    Exists); calico-system labelled control-plane: "true" (azure.policyMode
 *                    Default)
 *   GKE, Calico CNI  the plugins in /home/kubernetes/bin, GKE's CNI binary directory
 *
 * Left out, as every workload here sets only variables its program reads (deploy/test/operator.test.ts),
 * are upstream's variables for what this build does not have: FELIX_IPTABLESMANGLEALLOWACTION=Return
 * (AmazonVPC, GKE) and FELIX_IPTABLESFILTERALLOWACTION=Return (GKE) tune iptables chains, and
 * upstream's Felix reads its Nftables* actions instead in nftables mode, the only dataplane here;
 * FELIX_ROUTESOURCE=WorkloadIPs computes routes to other nodes from endpoints, and policy only
 * programs none; FELIX_BPFEXTTOSERVICECONNMARK (AmazonVPC) is the BPF dataplane's;
 * FELIX_WIREGUARDHOSTENCRYPTIONENABLED (EKS, AKS) WireGuard's; CALICO_MANAGE_CNI=false is what
 * dropping cni-refresh does; USE_POD_CIDR (GKE's HostLocal IPAM) routes by the Node's podCIDR.
 */
import type { ResolvedInstallation } from './installation.js';

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

/** calico-node's variables for the CNI: the interface prefix of the pods' host interfaces. */
export function platformNodeEnv(cfg: ResolvedInstallation): Env {
  const prefix = interfacePrefix(cfg);
  return prefix ? [['FELIX_INTERFACEPREFIX', prefix]] : [];
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
