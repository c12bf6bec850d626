/**
 * `KubeKVStore.watch(prefix)`: one Kubernetes watch per collection under the prefix, merged into
 * one stream of KV watch messages.
 *
 *   collectionsForPrefix ──► watchCollection × n ──push──► one queue ──► the consumer
 *                              │ per collection: its resourceVersion, the last value of each key
 *                              │ (Kubernetes events do not carry what they replaced), a retry pause
 *                              └─ lost / back ──► a count of collections down ──► WatchLink
 *
 * - Revisions: etcd's `fromRevision` is inclusive, a Kubernetes watch reports changes after its
 *   `resourceVersion`, so each collection watches from `fromRevision - 1`; bookmarks and events
 *   move it on, and a broken watch is resumed from there.
 * - A watch whose resourceVersion is too old gets 410 Gone (an `ERROR` event or the response):
 *   reported as `resync`, as etcd's compaction is, with the current list of every collection under
 *   the prefix (a resync replaces all a consumer holds for the prefix: one collection's list alone
 *   would drop the others' keys, e.g. `/calico/ipam/v2/` spans blocks, affinities, handles and
 *   config); the collection that got 410 goes on from its own list's revision.
 * - `disconnected` when the first collection's watch is lost, `reconnected` when the last one is
 *   back (the shared `WatchLink`); each collection retries after `retryMs` doubling to `maxRetryMs`
 *   (`RetryDelay`), reset by every event.
 * - It ends when the consumer stops, its signal aborts or the store closes: each collection's
 *   watch is aborted then.
 *
 * Thread-safety: one generator per watch, used from one event loop.
 */
import { DatastoreError, isDatastoreError } from '../errors.js';
import type { KV, KVList, KVWatchMessage, KVWatchOptions } from '../kv/kv-store.js';
import { RetryDelay, WatchLink } from '../kv/watch-link.js';
import { sleep } from '../syncer.js';
import type { KubeHttp, KubeWatchEvent } from './kube-http.js';
import { type Collection, type Obj, restPath, rvOf, wireReadOptions } from './kv-mapping.js';

/** What a watch needs of its store. */
export interface KubeWatchHost {
  readonly http: KubeHttp;
  /** Ends every watch: the store is closing. */
  readonly closing: AbortSignal;
  readonly retryMs: number;
  readonly maxRetryMs: number;
  /** The collections under `prefix` the store reads. */
  collections(prefix: string): { collection: Collection; namespace?: string }[];
  revision(): Promise<string>;
  /** Every object of a collection as KVs, and the list's revision. */
  listCollection(c: Collection, namespace: string | undefined): Promise<{ kvs: KV[]; revision: string }>;
  /** The object as a KV; undefined for an object with no key. */
  toKV(c: Collection, o: Obj, created: boolean): KV | undefined;
}

type Push = (m: KVWatchMessage) => void;

export async function* watchPrefix(
  host: KubeWatchHost,
  prefix: string,
  options: KVWatchOptions,
): AsyncGenerator<KVWatchMessage> {
  const mine = new AbortController();
  const signal = anySignal(options.signal, host.closing, mine.signal);
  const targets = host.collections(prefix);
  // Every collection's watch feeds one queue; events are delivered in arrival order.
  const queue: KVWatchMessage[] = [];
  let wake: (() => void) | undefined;
  const push: Push = (m) => {
    queue.push(m);
    wake?.();
  };
  const from = options.fromRevision ?? String(BigInt(await host.revision()) + 1n);
  const link = new WatchLink(push);
  let down = 0;
  const linkState = (isDown: boolean) => {
    const was = down;
    down += isDown ? 1 : -1;
    if (was === 0 && down > 0) link.down(new DatastoreError('unavailable', 'watch connection lost'));
    if (was > 0 && down === 0) link.up();
  };
  const listAll = async (): Promise<KVList> => {
    const lists = await Promise.all(
      targets.map((t) => listForResync(host, t.collection, t.namespace, prefix)),
    );
    return {
      kvs: lists.flatMap((l) => l.kvs).sort((a, b) => (a.key < b.key ? -1 : 1)),
      revision: lists.reduce((max, l) => (BigInt(l.revision) > BigInt(max) ? l.revision : max), '0'),
    };
  };
  // A resync lists them all again (below: one collection's list alone would drop the others' keys).
  const loops = targets.map((t) =>
    watchCollection(
      host,
      t.collection,
      t.namespace,
      prefix,
      from,
      signal,
      push,
      linkState,
      targets.length > 1 ? listAll : undefined,
    ),
  );
  let ended = false;
  void Promise.allSettled(loops).then(() => {
    ended = true;
    wake?.();
  });
  signal.addEventListener('abort', () => wake?.(), { once: true });
  try {
    for (;;) {
      while (queue.length === 0 && !ended && !signal.aborted) await new Promise<void>((r) => (wake = r));
      wake = undefined;
      if (queue.length === 0 || signal.aborted) return;
      yield queue.shift()!;
    }
  } finally {
    // The consumer stopped (or the signal fired): end every collection's watch.
    mine.abort();
  }
}

async function watchCollection(
  host: KubeWatchHost,
  c: Collection,
  namespace: string | undefined,
  prefix: string,
  fromRevision: string,
  signal: AbortSignal,
  push: Push,
  linkState: (down: boolean) => void,
  listAll: (() => Promise<KVList>) | undefined,
): Promise<void> {
  // Kubernetes watches report changes after `resourceVersion`; etcd's fromRevision is inclusive.
  let rv = String(BigInt(fromRevision) - 1n);
  // The last value seen of each key, so a modification or deletion carries what it replaced
  // (Kubernetes watch events do not).
  const seen = new Map<string, KV>();
  const delay = new RetryDelay(host.retryMs, host.maxRetryMs);
  let isDown = false;
  while (!signal.aborted) {
    const q = new URLSearchParams({ watch: '1', allowWatchBookmarks: 'true', resourceVersion: rv });
    try {
      const opened = () => {
        if (isDown) {
          isDown = false;
          linkState(false);
        }
      };
      const path = `${restPath(c, namespace)}?${q}`;
      for await (const ev of host.http.watch(path, signal, opened, wireReadOptions(c))) {
        delay.reset();
        rv = onEvent(host, c, ev, prefix, push, seen) ?? rv;
      }
      // The server ends watches after a while: resume from where it stopped.
    } catch (e) {
      if (signal.aborted) return;
      if (isDatastoreError(e, 'compacted')) {
        const own = await listForResync(host, c, namespace, prefix).catch(() => undefined);
        const all = own && (listAll ? await listAll().catch(() => undefined) : own);
        if (own && all) {
          seen.clear();
          for (const kv of own.kvs) seen.set(kv.key, kv);
          push({ kind: 'resync', list: all, reason: 'compacted' });
          rv = own.revision;
          continue;
        }
      } else if (isDatastoreError(e, 'not-found')) {
        // The CRD is not installed: nothing to watch until it is.
      }
      if (!isDown) {
        isDown = true;
        linkState(true);
      }
      await sleep(delay.next(), signal);
    }
  }
}

async function listForResync(
  host: KubeWatchHost,
  c: Collection,
  namespace: string | undefined,
  prefix: string,
): Promise<KVList> {
  const l = await host.listCollection(c, namespace);
  return {
    kvs: l.kvs.filter((kv) => kv.key.startsWith(prefix)).sort((a, b) => (a.key < b.key ? -1 : 1)),
    revision: l.revision,
  };
}

/** Turns one Kubernetes watch event into KV events; returns the revision it moves to. */
function onEvent(
  host: KubeWatchHost,
  c: Collection,
  ev: KubeWatchEvent,
  prefix: string,
  push: Push,
  seen: Map<string, KV>,
): string | undefined {
  if (ev.type === 'ERROR') {
    const status = ev.object as { code?: number; message?: string };
    if (status.code === 410)
      throw new DatastoreError('compacted', status.message ?? 'resourceVersion too old');
    throw new DatastoreError('unavailable', status.message ?? 'watch error');
  }
  const rev = rvOf(ev.object);
  if (ev.type === 'BOOKMARK') return rev;
  const kv = host.toKV(c, ev.object, ev.type === 'ADDED');
  if (!kv?.key.startsWith(prefix)) return rev;
  const prev = seen.get(kv.key);
  if (ev.type === 'DELETED') {
    seen.delete(kv.key);
    push({
      kind: 'events',
      events: [{ kind: 'delete', key: kv.key, modRevision: rev, prev: prev ?? kv }],
      revision: rev,
    });
  } else {
    seen.set(kv.key, kv);
    push({ kind: 'events', events: [{ kind: 'put', kv, ...(prev ? { prev } : {}) }], revision: rev });
  }
  return rev;
}

function anySignal(...signals: (AbortSignal | undefined)[]): AbortSignal {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  return live.length === 1 ? live[0]! : AbortSignal.any(live);
}
