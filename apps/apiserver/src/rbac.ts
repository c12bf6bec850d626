/**
 * The RBAC calico-apiserver's service account needs (data; the operator renders it, the
 * integration test applies exactly this):
 *
 *   ClusterRoleBinding <sa>-delegate-auth  → ClusterRole system:auth-delegator
 *                                             (create tokenreviews, subjectaccessreviews)
 *   RoleBinding kube-system/<sa>-auth-reader → Role extension-apiserver-authentication-reader
 *                                             (read the authentication ConfigMap)
 *   ClusterRoleBinding <sa>                 → ClusterRole calico-apiserver (API_SERVER_ROLE):
 *     crd.projectcalico.org, every resource: get list watch create update patch delete
 *       deletecollection (the Kubernetes datastore: the v3 kinds and the IPAM records an IPPool's
 *       deletion releases)
 *     "" namespaces, serviceaccounts: get list watch (Profiles kns.* / ksa.*)
 *     "" pods, nodes: get list watch update patch (WorkloadEndpoints and Nodes are those objects;
 *       writes merge Calico's fields into them)
 *     networking.k8s.io networkpolicies: get list watch (their knp.default.* NetworkPolicies)
 *
 * On etcd only the first two are needed.
 */

type Obj = Record<string, unknown>;

export const API_SERVER_ROLE = 'calico-apiserver';

const ROLE_RULES = [
  {
    apiGroups: ['crd.projectcalico.org'],
    resources: ['*'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'],
  },
  { apiGroups: [''], resources: ['namespaces', 'serviceaccounts'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'list', 'watch'] },
];

/** The ClusterRole and the bindings for service account `namespace/serviceAccount`. */
export function apiServerRbac(namespace: string, serviceAccount: string): Obj[] {
  const subjects = [{ kind: 'ServiceAccount', name: serviceAccount, namespace }];
  const clusterRef = (name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name });
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: API_SERVER_ROLE },
      rules: ROLE_RULES,
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
