/**
 * etcd3's key-values and watch events (`IKeyValue`, Buffers and int64 strings) as the KVStore
 * seam's `KV` and `KVEvent` (text and decimal revisions). Pure; used by `EtcdKVStore` and its
 * watch (`etcd-kv-watch.ts`).
 */
import type { IKeyValue } from 'etcd3';
import type { KV, KVEvent } from './kv-store.js';

export function toKV(kv: IKeyValue): KV {
  return {
    key: kv.key.toString(),
    value: kv.value.toString(),
    modRevision: String(kv.mod_revision),
    createRevision: String(kv.create_revision),
  };
}

export function toEvent(type: string, kv: IKeyValue, prev: IKeyValue | null | undefined): KVEvent {
  if (type === 'Delete') {
    return prev
      ? { kind: 'delete', key: kv.key.toString(), modRevision: String(kv.mod_revision), prev: toKV(prev) }
      : { kind: 'delete', key: kv.key.toString(), modRevision: String(kv.mod_revision) };
  }
  return prev ? { kind: 'put', kv: toKV(kv), prev: toKV(prev) } : { kind: 'put', kv: toKV(kv) };
}
