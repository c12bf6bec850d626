/**
 * Syncer: the one list-then-watch loop every agent uses to follow the datastore, over any number
 * of sources (Calico kinds, IPAM blocks, Kubernetes Services and EndpointSlices), on every backend.
 *
 *   per source:  list ──► set each (and delete what a re-list no longer has) ──► watch from the
 *                list's revision ──► set / delete; resync (etcd compaction, Kubernetes 410) →
 *                replace everything held for the source
 *                watch ends or fails ──► "disconnected", back off, list again (a full resync)
 *   every source listed once ──► in-sync (once)
 *
 * API: `start()` runs the loops until `stop()`. `onUpdate` gets `{ kind: 'set' | 'delete', source,
 * item }` in order per source; `onInSync` fires once; `onConnection(source, connected, why)` reports
 * reachability as each source sees it. Source factories: `resourceSource` (a Calico kind through
 * the typed client), `kvSource` (a key prefix of a KVStore, decoded: IPAM blocks), and on the
 * Kubernetes datastore `KubeKVStore.objectSource` (Services, EndpointSlices).
 * Thread-safety: one event loop.
 */
import type { Kind, ResourceOf } from '@calico-ts/api';
import { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';
import type { KV, KVStore } from './kv/kv-store.js';
import type { Datastore } from './types.js';

/** What a source's watch reports. */
export type SourceEvent<T> =
  | { readonly kind: 'set'; readonly item: T }
  | { readonly kind: 'delete'; readonly item: T }
  /** The watch lost its place: this is everything there is now. */
  | { readonly kind: 'resync'; readonly items: readonly T[] }
  /** Something under the source that does not decode: reported, then skipped. */
  | { readonly kind: 'error'; readonly key: string; readonly error: Error }
  | { readonly kind: 'disconnected'; readonly error: Error }
  | { readonly kind: 'reconnected' };

export interface SyncSource<T = unknown> {
  /** Names the source in updates and logs: a kind (`IPPool`), `ipam-blocks`, `Service`. */
  readonly name: string;
  list(): Promise<{ readonly items: readonly T[]; readonly revision: string }>;
  watch(revision: string, signal: AbortSignal): AsyncIterable<SourceEvent<T>>;
  keyOf(item: T): string;
}

export interface SyncerUpdate<T = unknown> {
  readonly kind: 'set' | 'delete';
  readonly source: string;
  readonly item: T;
}

export interface SyncerOptions {
  readonly sources: readonly SyncSource[];
  readonly onUpdate: (u: SyncerUpdate) => void;
  readonly onInSync: () => void;
  /** A list or resync of `source` is about to be reported (as deletes, then sets): all there is. */
  readonly onReplace?: (source: string, items: readonly unknown[]) => void;
  readonly onConnection?: (source: string, connected: boolean, why?: string) => void;
  readonly log?: Logger;
  /** Backoff after a failed list or a broken watch, doubling up to `maxRetryMs`. */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class Syncer {
  readonly #o: SyncerOptions;
  readonly #log: Logger;
  readonly #abort = new AbortController();
  readonly #known = new Map<string, Map<string, unknown>>();
  readonly #synced = new Set<string>();
  #inSync = false;
  readonly #loops: Promise<void>[] = [];

  constructor(opts: SyncerOptions) {
    const names = new Set<string>();
    for (const s of opts.sources) {
      if (names.has(s.name)) throw new Error(`Syncer: two sources named ${s.name}`);
      names.add(s.name);
    }
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
  }

  get inSync(): boolean {
    return this.#inSync;
  }

  start(): void {
    if (this.#o.sources.length === 0) {
      this.#inSync = true;
      this.#o.onInSync();
      return;
    }
    for (const source of this.#o.sources) {
      this.#known.set(source.name, new Map());
      this.#loops.push(this.#run(source));
    }
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled(this.#loops);
  }

  #replace(source: SyncSource, items: readonly unknown[]): void {
    const known = this.#known.get(source.name)!;
    const next = new Map(items.map((item) => [source.keyOf(item), item]));
    this.#o.onReplace?.(source.name, items);
    for (const [k, old] of known) {
      if (!next.has(k)) this.#o.onUpdate({ kind: 'delete', source: source.name, item: old });
    }
    for (const item of items) this.#o.onUpdate({ kind: 'set', source: source.name, item });
    this.#known.set(source.name, next);
  }

  #markSynced(name: string): void {
    this.#synced.add(name);
    if (!this.#inSync && this.#synced.size === this.#o.sources.length) {
      this.#inSync = true;
      this.#o.onInSync();
    }
  }

  async #run(source: SyncSource): Promise<void> {
    const signal = this.#abort.signal;
    const base = this.#o.retryMs ?? 500;
    let delay = base;
    while (!signal.aborted) {
      try {
        const list = await source.list();
        if (signal.aborted) return;
        this.#replace(source, list.items);
        this.#markSynced(source.name);
        this.#o.onConnection?.(source.name, true);
        delay = base;
        for await (const ev of source.watch(list.revision, signal)) this.#onEvent(source, ev);
        if (signal.aborted) return;
        throw new Error('the watch ended');
      } catch (e) {
        if (signal.aborted) return;
        this.#o.onConnection?.(source.name, false, messageOf(e));
        this.#log.warn(
          { source: source.name, err: messageOf(e), retryMs: delay },
          'list/watch failed; retrying',
        );
        await sleep(delay, signal);
        delay = Math.min(delay * 2, this.#o.maxRetryMs ?? 5000);
      }
    }
  }

  #onEvent(source: SyncSource, ev: SourceEvent<unknown>): void {
    const known = this.#known.get(source.name)!;
    switch (ev.kind) {
      case 'set':
        known.set(source.keyOf(ev.item), ev.item);
        this.#o.onUpdate({ kind: 'set', source: source.name, item: ev.item });
        return;
      case 'delete': {
        const key = source.keyOf(ev.item);
        const old = known.get(key);
        known.delete(key);
        this.#o.onUpdate({ kind: 'delete', source: source.name, item: old ?? ev.item });
        return;
      }
      case 'resync':
        this.#log.info({ source: source.name, items: ev.items.length }, 'watch resynced');
        this.#replace(source, ev.items);
        return;
      case 'error':
        this.#log.warn(
          { source: source.name, key: ev.key, err: messageOf(ev.error) },
          'undecodable value ignored',
        );
        return;
      case 'disconnected':
        this.#o.onConnection?.(source.name, false, messageOf(ev.error));
        return;
      case 'reconnected':
        this.#o.onConnection?.(source.name, true);
        return;
    }
  }
}

function keyOfResource(r: { metadata: { name: string; namespace?: string } }): string {
  return r.metadata.namespace ? `${r.metadata.namespace}/${r.metadata.name}` : r.metadata.name;
}

/** A Calico kind through the typed client. */
export function resourceSource<K extends Kind>(ds: Datastore, kind: K): SyncSource<ResourceOf<K>> {
  return {
    name: kind,
    keyOf: keyOfResource,
    list: () => ds.list(kind),
    async *watch(revision, signal) {
      for await (const ev of ds.watch(kind, { revision, signal })) {
        switch (ev.kind) {
          case 'added':
          case 'modified':
            yield { kind: 'set', item: ev.resource };
            break;
          case 'deleted':
            yield { kind: 'delete', item: ev.resource };
            break;
          case 'resync':
            yield { kind: 'resync', items: ev.items };
            break;
          case 'error':
            yield { kind: 'error', key: ev.key, error: ev.error };
            break;
          default:
            yield ev;
        }
      }
    },
  };
}

/**
 * The values under a key prefix of a KVStore, each decoded (e.g. IPAM blocks with `decodeBlock`);
 * a value that does not decode is reported as an error and left out.
 */
export function kvSource<T>(
  name: string,
  kv: KVStore,
  prefix: string,
  decode: (kv: KV) => T,
): SyncSource<{ readonly key: string; readonly value: T }> {
  const decodeAll = (kvs: readonly KV[]) => {
    const out: { key: string; value: T }[] = [];
    for (const x of kvs) {
      try {
        out.push({ key: x.key, value: decode(x) });
      } catch {
        // left out; the watch reports such values as errors
      }
    }
    return out;
  };
  return {
    name,
    keyOf: (item) => item.key,
    async list() {
      const l = await kv.list(prefix);
      return { items: decodeAll(l.kvs), revision: l.revision };
    },
    async *watch(revision, signal) {
      const from = String(BigInt(revision) + 1n);
      for await (const msg of kv.watch(prefix, { fromRevision: from, signal })) {
        switch (msg.kind) {
          case 'events':
            for (const e of msg.events) {
              if (e.kind === 'delete') {
                if (e.prev) {
                  try {
                    yield { kind: 'delete', item: { key: e.key, value: decode(e.prev) } };
                    continue;
                  } catch {
                    // fall through: deleted without a readable previous value
                  }
                }
                yield { kind: 'delete', item: { key: e.key, value: undefined as T } };
              } else {
                try {
                  yield { kind: 'set', item: { key: e.kv.key, value: decode(e.kv) } };
                } catch (err) {
                  yield { kind: 'error', key: e.kv.key, error: err as Error };
                }
              }
            }
            break;
          case 'resync':
            yield { kind: 'resync', items: decodeAll(msg.list.kvs) };
            break;
          default:
            yield msg;
        }
      }
    },
  };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
