/**
 * `@calico-ts/datastore/kube`: the Kubernetes API connection the Kubernetes datastore uses, for
 * programs that read other Kubernetes objects with the same kubeconfig handling (the CNI plugin
 * reads a Pod and its Namespace). Loads nothing heavy: `@kubernetes/client-node` only through
 * `loadKubeConnectionWithClientNode`, for kubeconfigs with exec or auth-provider credentials.
 */
export {
  connectionFromKubeconfig,
  inClusterConnection,
  type KubeConnection,
  kubeconfigNeedsClientNode,
  loadKubeConnection,
  loadKubeConnectionWithClientNode,
} from './kube/kube-connection.js';
export { classifyStatus, KubeHttp, type KubeHttpOptions, type KubeStatus } from './kube/kube-http.js';
export { KUBE_DATASTORE_READ_WRITE_RULES, type RbacRule } from './kube/rbac-rules.js';
