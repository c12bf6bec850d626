/**
 * `@calico-ts/datastore/etcd3`: the KVStore on the `etcd3` package (grpc-js), and its error
 * classifier. Apart from the main entry because loading etcd3 and grpc-js costs a few hundred
 * milliseconds, which one-shot programs on the http2 transport should not pay.
 */
export { classifyEtcdError } from './kv/etcd-errors.js';
export { EtcdKVStore, type EtcdKVStoreOptions } from './kv/etcd-kv-store.js';
