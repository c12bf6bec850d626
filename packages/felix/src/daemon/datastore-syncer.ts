/**
 * DatastoreSyncer: the resources Felix needs, listed then watched, as a stream of set/delete
 * updates and one in-sync signal (upstream's Felix syncer).
 *
 *   per kind:  list ──► set each (and delete what a re-list no longer has) ──► watch from the list
 *              revision ──► added/modified → set, deleted → delete, resync → replace all of the kind
 *              watch ends or fails ──► "disconnected", back off, list again (a full resync)
 *   all kinds listed once ──► in-sync
 *
 * API: `start()` runs until `stop()`. `onUpdate` receives resource changes (kind-tagged), `onInSync`
 * fires once, `onConnection(connected)` reports the datastore's reachability as seen by the watches
 * and lists. Thread-safety: one event loop; updates are delivered in order per kind.
 */
import type { Kind, ResourceOf } from '@calico-ts/api';
import type { Datastore, WatchEvent } from '@calico-ts/datastore';
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';

export type SyncedResource = ResourceOf<Kind> & { kind: Kind };

export type SyncerUpdate =
  | { readonly kind: 'set'; readonly resource: SyncedResource }
  | { readonly kind: 'delete'; readonly resource: SyncedResource };

export interface DatastoreSyncerOptions {
  readonly datastore: Datastore;
  readonly kinds: readonly Kind[];
  readonly onUpdate: (u: SyncerUpdate) => void;
  readonly onInSync: () => void;
  /** Reachability as seen by one kind's list/watch (`source` is the kind). */
  readonly onConnection: (source: string, connected: boolean, why?: string) => void;
  readonly log?: Logger;
  /** Backoff after a failed list or a broken watch, doubling up to `maxRetryMs`. */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
}

function keyOf(r: { metadata: { name: string; namespace?: string } }): string {
  return r.metadata.namespace ? `${r.metadata.namespace}/${r.metadata.name}` : r.metadata.name;
}

export class DatastoreSyncer {
  readonly #o: DatastoreSyncerOptions;
  readonly #log: Logger;
  readonly #abort = new AbortController();
  readonly #known = new Map<Kind, Map<string, SyncedResource>>();
  readonly #synced = new Set<Kind>();
  #inSync = false;
  readonly #loops: Promise<void>[] = [];

  constructor(opts: DatastoreSyncerOptions) {
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
  }

  get inSync(): boolean {
    return this.#inSync;
  }

  start(): void {
    for (const kind of this.#o.kinds) {
      this.#known.set(kind, new Map());
      this.#loops.push(this.#run(kind));
    }
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled(this.#loops);
  }

  #replace(kind: Kind, items: readonly SyncedResource[]): void {
    const known = this.#known.get(kind)!;
    const next = new Map(items.map((r) => [keyOf(r), r]));
    for (const [k, old] of known) if (!next.has(k)) this.#o.onUpdate({ kind: 'delete', resource: old });
    for (const r of items) this.#o.onUpdate({ kind: 'set', resource: r });
    this.#known.set(kind, next);
  }

  #markSynced(kind: Kind): void {
    this.#synced.add(kind);
    if (!this.#inSync && this.#synced.size === this.#o.kinds.length) {
      this.#inSync = true;
      this.#o.onInSync();
    }
  }

  async #run(kind: Kind): Promise<void> {
    const signal = this.#abort.signal;
    const base = this.#o.retryMs ?? 500;
    let delay = base;
    while (!signal.aborted) {
      try {
        const list = await this.#o.datastore.list(kind);
        if (signal.aborted) return;
        this.#replace(kind, list.items as SyncedResource[]);
        this.#markSynced(kind);
        this.#o.onConnection(kind, true);
        delay = base;
        for await (const ev of this.#o.datastore.watch(kind, { revision: list.revision, signal })) {
          this.#onEvent(kind, ev);
        }
        if (signal.aborted) return;
        throw new Error('the watch ended');
      } catch (e) {
        if (signal.aborted) return;
        this.#o.onConnection(kind, false, errorMessage(e));
        this.#log.warn(
          { kind, err: errorMessage(e), retryMs: delay },
          'datastore list/watch failed; retrying',
        );
        await sleep(delay, signal);
        delay = Math.min(delay * 2, this.#o.maxRetryMs ?? 5000);
      }
    }
  }

  #onEvent(kind: Kind, ev: WatchEvent<Kind>): void {
    const known = this.#known.get(kind)!;
    switch (ev.kind) {
      case 'added':
      case 'modified': {
        const r = ev.resource as SyncedResource;
        known.set(keyOf(r), r);
        this.#o.onUpdate({ kind: 'set', resource: r });
        return;
      }
      case 'deleted': {
        const r = ev.resource as SyncedResource;
        const old = known.get(keyOf(r));
        known.delete(keyOf(r));
        this.#o.onUpdate({ kind: 'delete', resource: old ?? r });
        return;
      }
      case 'resync':
        this.#log.info({ kind, reason: ev.reason }, 'datastore watch resynced');
        this.#replace(kind, ev.items as SyncedResource[]);
        return;
      case 'error':
        this.#log.warn(
          { kind, key: ev.key, err: errorMessage(ev.error) },
          'undecodable datastore value ignored',
        );
        return;
      case 'disconnected':
        this.#o.onConnection(kind, false, errorMessage(ev.error));
        return;
      case 'reconnected':
        this.#o.onConnection(kind, true);
        return;
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
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
