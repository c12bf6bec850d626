export * from './config/index.js';
export * from './errors.js';
export { type CreateKVStoreOptions, createDatastore, createKVStore } from './factory.js';
export { goJson, parseJsonExact } from './go-json.js';
export {
  AFFINITY_STATES,
  type AffinityInput,
  type AffinityState,
  type AffinityType,
  type AllocationAttribute,
  type AllocationBlock,
  type AssignEnvRecords,
  affinityKey,
  type BlockAffinity,
  blockKey,
  decodeAffinity,
  decodeBlock,
  decodeConfig,
  decodeHandle,
  encodeAffinity,
  encodeBlock,
  encodeConfig,
  encodeHandle,
  handleKey,
  IPAM_ROOT,
  type IPAMConfig,
  type IPAMHandle,
  IpamStore,
  type Versioned,
  type VersionedList,
} from './ipam-store.js';
export {
  DEFAULT_INTERFACE_PREFIX,
  podInterfaceName,
  workloadInterfacePrefix,
} from './kube/interface-name.js';
export { ENDPOINT_SLICES_PREFIX, NODES_PREFIX, PODS_PREFIX, SERVICES_PREFIX } from './kube/object-keys.js';
export { classifyEtcdHttp2Error } from './kv/etcd-http2-errors.js';
export { EtcdHttp2KVStore } from './kv/etcd-http2-kv-store.js';
// EtcdKVStore and classifyEtcdError (etcd3 + grpc-js, heavy to load) are in `@calico-ts/datastore/etcd3`,
// so importing this module does not load them; `createKVStore`/`createDatastore` load them when asked.
export type { EtcdKVStoreOptions } from './kv/etcd-kv-store.js';
export type * from './kv/kv-store.js';
export { type MemoryKVDump, MemoryKVStore, type MemoryKVStoreOptions } from './kv/memory-kv-store.js';
export { kvJson, kvJsonExact } from './kv/parsed-kv.js';
export {
  DEFAULT_ALLOW_PROFILE,
  formatTimestamp,
  KVDatastore,
  type KVDatastoreOptions,
} from './kv-datastore.js';
export {
  decodeResource,
  encodeResource,
  isPolicyKind,
  LEGACY_DEFAULT_TIER_PREFIX,
  POLICY_NAME_ANNOTATION,
} from './resource-codec.js';
export {
  parseResourceKey,
  RESOURCE_ROOT,
  type ResourceKeyParts,
  resourceKey,
  resourcePrefix,
} from './resource-keys.js';
export {
  kvSource,
  resourceSource,
  type SourceEvent,
  Syncer,
  type SyncerLogger,
  type SyncerOptions,
  type SyncerUpdate,
  type SyncSource,
} from './syncer.js';
export type * from './types.js';
