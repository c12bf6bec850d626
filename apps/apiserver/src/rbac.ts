/**
 * The RBAC calico-apiserver's service account needs (data; the operator renders it, the
 * integration test applies exactly this):
 *
 *   ClusterRoleBinding <sa>-delegate-auth  → ClusterRole system:auth-delegator
 *                                             (create tokenreviews, subjectaccessreviews)
 *   RoleBinding kube-system/<sa>-auth-reader → Role extension-apiserver-authentication-reader
 *                                             (read the authentication ConfigMap)
 *   ClusterRoleBinding <sa>                 → ClusterRole calico-apiserver (API_SERVER_ROLE):
 *     KUBE_DATASTORE_READ_WRITE_RULES (@calico-ts/datastore/kube): every Calico resource on the
 *     Kubernetes datastore
 *
 * On etcd only the first two are needed.
 */

import { KUBE_DATASTORE_READ_WRITE_RULES } from '@calico-ts/datastore/kube';

type Obj = Record<string, unknown>;

export const API_SERVER_ROLE = 'calico-apiserver';

/** The ClusterRole and the bindings for service account `namespace/serviceAccount`. */
export function apiServerRbac(namespace: string, serviceAccount: string): Obj[] {
  const subjects = [{ kind: 'ServiceAccount', name: serviceAccount, namespace }];
  const clusterRef = (name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name });
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: API_SERVER_ROLE },
      rules: KUBE_DATASTORE_READ_WRITE_RULES,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: serviceAccount },
      roleRef: clusterRef(API_SERVER_ROLE),
      subjects,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${serviceAccount}-delegate-auth` },
      roleRef: clusterRef('system:auth-delegator'),
      subjects,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${serviceAccount}-auth-reader`, namespace: 'kube-system' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: 'extension-apiserver-authentication-reader',
      },
      subjects,
    },
  ];
}
