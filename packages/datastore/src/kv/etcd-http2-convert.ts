/**
 * The codec's key-values and watch events (`WireKV`, `WatchEvent`: text and number revisions) as
 * the KVStore seam's `KV` and `KVEvent` (decimal revisions). Pure; used by `EtcdHttp2KVStore` and
 * its watch (`etcd-http2-watch.ts`).
 */

import type { WireKV } from './etcd-proto/key-value.js';
import type { WatchEvent } from './etcd-proto/watch.js';
import type { KV, KVEvent } from './kv-store.js';

export function toKV(kv: WireKV): KV {
  return {
    key: kv.key,
    value: kv.value,
    modRevision: String(kv.modRevision),
    createRevision: String(kv.createRevision),
  };
}

export function toEvent(ev: WatchEvent): KVEvent {
  if (ev.type === 'delete') {
    const modRevision = String(ev.kv.modRevision);
    return ev.prevKv
      ? { kind: 'delete', key: ev.kv.key, modRevision, prev: toKV(ev.prevKv) }
      : { kind: 'delete', key: ev.kv.key, modRevision };
  }
  return ev.prevKv
    ? { kind: 'put', kv: toKV(ev.kv), prev: toKV(ev.prevKv) }
    : { kind: 'put', kv: toKV(ev.kv) };
}
