export { type ClusterSeedOptions, clusterSeed } from './cluster-seed.js';
export {
  type EtcdctlResult,
  type EtcdServer,
  type EtcdTlsFiles,
  etcdAvailable,
  type StartEtcdOptions,
  startEtcd,
} from './etcd-server.js';
export {
  findKubectl,
  type KubeApiServer,
  kubeApiServerAvailable,
  type StartKubeApiServerOptions,
  startKubeApiServer,
} from './kube-apiserver.js';
