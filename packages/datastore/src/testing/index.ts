export { type ClusterSeedOptions, clusterSeed } from './cluster-seed.js';
export {
  type EtcdctlResult,
  type EtcdServer,
  type EtcdTlsFiles,
  etcdAvailable,
  type MakeEtcdCertificatesOptions,
  makeEtcdCertificates,
  type StartEtcdOptions,
  startEtcd,
} from './etcd-server.js';
export {
  adminKubeconfig,
  findKubectl,
  type KubeApiServer,
  type KubeApiServerArgsOptions,
  type KubeCertificates,
  type KubePrerequisites,
  kubeApiServerArgs,
  kubeApiServerAvailable,
  kubeApiServerBinary,
  type MakeKubeCertificatesOptions,
  makeKubeCertificates,
  missingKubePrerequisites,
  type StartKubeApiServerOptions,
  startKubeApiServer,
} from './kube-apiserver.js';
export {
  type ApiRequestCounts,
  parseApiRequestCounts,
  readApiRequestCounts,
  requestsBetween,
} from './kube-requests.js';
export { upstreamBlockJson } from './upstream-records.js';
