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

/** `--kubelet`: what the cluster runs and where it keeps it. */
export interface ClusterPlan {
  readonly install: ClusterInstall;
  /** kube-controller-manager and kube-scheduler: kubeconfigs, logs. */
  readonly dir: string;
  /** A private bind mount holding each node's mount-namespace file. */
  readonly mntnsDir: string;
}

export function planCluster(stateDir: string, install: ClusterInstall): ClusterPlan {
  return { install, dir: join(stateDir, 'cluster'), mntnsDir: join(stateDir, 'mntns') };
}
