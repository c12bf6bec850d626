/**
 * `lab up --kubelet`: the part of the cluster's plan that the lab plan (../plan.ts) holds: how
 * Calico gets onto the cluster and where the cluster keeps its own files. Pure. It is apart from
 * cluster/plan.ts, whose configuration files and arguments take the lab plan, so that the lab plan
 * and the cluster plan do not import each other.
 */
import { join } from 'node:path';

/** How Calico gets onto the cluster (`--install`). */
export type ClusterInstall =
  | 'manifest'
  | 'etcd'
  | 'policy-only'
  | 'helm'
  | 'operator'
  | 'operator-helm'
  | 'none';

/** Whether Calico comes from the operator (in calico-system), by its manifest or by its chart. */
export const byOperator = (install: ClusterInstall | undefined): boolean =>
  install === 'operator' || install === 'operator-helm';
export const CLUSTER_INSTALLS: readonly ClusterInstall[] = [
  'manifest',
  'etcd',
  'policy-only',
  'helm',
  'operator',
  'operator-helm',
  'none',
];

/**
 * `--helm-values` (with `--install operator-helm`): upstream's Helm guide values for EKS or AKS
 * (`eks`, `aks`: deploy/test/values/), or a values file of the user's (an absolute path).
 */
export const HELM_VALUES_PRESETS = ['eks', 'aks'] as const;

/** `--kubelet`: what the cluster runs and where it keeps it. */
export interface ClusterPlan {
  readonly install: ClusterInstall;
  /** `--helm-values`: `eks`, `aks` or an absolute path; absent: the lab's pool given with --set. */
  readonly helmValues?: string;
  /** kube-controller-manager and kube-scheduler: kubeconfigs, logs. */
  readonly dir: string;
  /** A private bind mount holding each node's mount-namespace file. */
  readonly mntnsDir: string;
}

export function planCluster(stateDir: string, install: ClusterInstall, helmValues?: string): ClusterPlan {
  return {
    install,
    ...(helmValues !== undefined ? { helmValues } : {}),
    dir: join(stateDir, 'cluster'),
    mntnsDir: join(stateDir, 'mntns'),
  };
}
