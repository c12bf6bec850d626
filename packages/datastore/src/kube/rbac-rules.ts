/**
 * The Kubernetes RBAC rules a program needs to read and write every Calico resource through the
 * Kubernetes datastore (data, for whoever grants them: calico-apiserver's own test setup and the
 * operator's rendering both take these):
 *
 *   crd.projectcalico.org, every resource: all verbs (the v3 kinds, and the IPAM records an
 *     IPPool's deletion releases)
 *   "" namespaces, serviceaccounts: read (Profiles kns.* / ksa.* are those objects)
 *   "" pods, nodes: read, update, patch (WorkloadEndpoints and Nodes are those objects; writes
 *     merge Calico's fields into them)
 *   networking.k8s.io networkpolicies: read (their knp.default.* NetworkPolicies)
 */

/** One RBAC PolicyRule, as a ClusterRole's `rules` holds it. */
export interface RbacRule {
  /** API groups the rule covers (`''` is the core group). */
  readonly apiGroups: readonly string[];
  /** Resources (plural names) in those groups; `*` is every one. */
  readonly resources: readonly string[];
  /** Verbs allowed on them. */
  readonly verbs: readonly string[];
}

const READ = ['get', 'list', 'watch'] as const;

/** Full read/write access to Calico resources on the Kubernetes datastore. */
export const KUBE_DATASTORE_READ_WRITE_RULES: readonly RbacRule[] = [
  {
    apiGroups: ['crd.projectcalico.org'],
    resources: ['*'],
    verbs: [...READ, 'create', 'update', 'patch', 'delete', 'deletecollection'],
  },
  { apiGroups: [''], resources: ['namespaces', 'serviceaccounts'], verbs: READ },
  { apiGroups: [''], resources: ['pods', 'nodes'], verbs: [...READ, 'update', 'patch'] },
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: READ },
];
