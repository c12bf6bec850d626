/**
 * What the operator starts from: the objects of `deploy/manifests/calico.yaml` (the manifest
 * install), so the containers, their env, probes, mounts, security context and the RBAC rules
 * are the ones that install already runs, not a second copy. The render (render.ts) moves them
 * into calico-system and changes only what the Installation decides. Pure: the manifest's text
 * in, the objects out, or an error naming what the manifest lacks.
 */
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from './kube-object.js';

export interface CalicoBase {
  readonly serviceAccounts: readonly KubeObject[];
  readonly clusterRoles: readonly KubeObject[];
  readonly clusterRoleBindings: readonly KubeObject[];
  readonly nodeDaemonSet: KubeObject;
  readonly kubeControllers: KubeObject;
  readonly kubeControllersPdb: KubeObject;
  /** The CNI network configuration install-cni writes (calico-config's `cni_network_config`). */
  readonly cniNetworkConfig: string;
}

const COMPONENTS = ['calico-node', 'calico-cni-plugin', 'calico-kube-controllers'];

export function baseFromManifest(text: string): CalicoBase {
  const objs = parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null && typeof o === 'object' && typeof o.kind === 'string');
  const find = (kind: string, name: string): KubeObject => {
    const o = objs.find((x) => x.kind === kind && x.metadata?.name === name);
    if (!o) throw new Error(`the Calico manifest has no ${kind} ${name}`);
    return o;
  };
  const config = find('ConfigMap', 'calico-config') as KubeObject & { data?: Record<string, string> };
  const cni = config.data?.cni_network_config;
  if (!cni) throw new Error('the Calico manifest has no cni_network_config in ConfigMap calico-config');
  return {
    serviceAccounts: COMPONENTS.map((n) => find('ServiceAccount', n)),
    clusterRoles: COMPONENTS.map((n) => find('ClusterRole', n)),
    clusterRoleBindings: COMPONENTS.map((n) => find('ClusterRoleBinding', n)),
    nodeDaemonSet: find('DaemonSet', 'calico-node'),
    kubeControllers: find('Deployment', 'calico-kube-controllers'),
    kubeControllersPdb: find('PodDisruptionBudget', 'calico-kube-controllers'),
    cniNetworkConfig: cni,
  };
}
