/**
 * `@calico-ts/datastore`: a typed client for the Calico datastore. `createDatastore` opens etcd v3,
 * the Kubernetes API or memory from a client configuration (environment, `calicoctl.cfg` or CNI
 * network config); a `Datastore` gets, lists, creates, updates, deletes and watches resources
 * with revisions and compare-and-swap; the IPAM record types (blocks, affinities, handles, config)
 * are here, the store of them is `IpamStore` in `@calico-ts/ipam`; `Syncer` turns watches into one
 * ordered update stream. The etcd3 client is in `@calico-ts/datastore/etcd3`, Kubernetes
 * mappings in `@calico-ts/datastore/kube`, test servers in `@calico-ts/datastore/testing`.
 */
export { type ParsedConfig, parseCalicoctlConfig } from './config/calicoctl-config.js';
export {
  CALICO_API_GROUPS,
  CLIENT_CONFIG_FIELDS,
  type ClientConfig,
  type ClientConfigField,
  type ConfigOrigin,
  DATASTORE_TYPES,
  type DatastoreType,
  DEFAULT_CALICOCTL_CONFIG_PATH,
  mergeClientConfig,
  type ResolveOptions,
  resolveClientConfig,
  validateClientConfig,
} from './config/client-config.js';
export { cniEnvFromNetConf, configFromCniNetConf } from './config/cni-config.js';
export { configFromEnv, type Env } from './config/env-config.js';
export {
  type LoadClientConfigOptions,
  loadClientConfig,
  loadCniClientConfig,
  type SrvResolver,
  type TlsMaterial,
} from './config/load-client-config.js';
export {
  DATASTORE_ERROR_CODES,
  DatastoreError,
  type DatastoreErrorCode,
  isDatastoreError,
} from './errors.js';
export { type CreateKVStoreOptions, createDatastore, createKVStore } from './factory.js';
export {
  type IndexFunction,
  Informer,
  type InformerOptions,
  InformerStore,
  type InformerStoreOptions,
  informerKeyOf,
  type ReadOptions,
  resourceInformer,
} from './informer.js';
export {
  AFFINITY_STATES,
  type AffinityInput,
  type AffinityState,
  type AffinityType,
  type AllocationAttribute,
  type AllocationBlock,
  type BlockAffinity,
  type IPAMConfig,
  type IPAMHandle,
  type Versioned,
  type VersionedList,
} from './ipam-records.js';
export { EtcdHttp2KVStore } from './kv/etcd-http2-kv-store.js';
export type { EtcdKVStoreOptions } from './kv/etcd-options.js';
export type {
  KV,
  KVDeleteOptions,
  KVEvent,
  KVList,
  KVRead,
  KVStore,
  KVWatchMessage,
  KVWatchOptions,
  KVWrite,
} from './kv/kv-store.js';
export { type MemoryKVDump, MemoryKVStore, type MemoryKVStoreOptions } from './kv/memory-kv-store.js';
export { KVDatastore, type KVDatastoreOptions } from './kv-datastore.js';
export {
  kvSource,
  resourceSource,
  type SourceEvent,
  Syncer,
  type SyncerOptions,
  type SyncerUpdate,
  type SyncSource,
} from './syncer.js';
export type {
  CreateOptions,
  Datastore,
  DeleteOptions,
  ListOptions,
  ResourceList,
  WatchEvent,
  WatchOptions,
} from './types.js';
