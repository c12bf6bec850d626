/**
 * Informer: a read-only, in-memory copy of one collection, kept current by the Syncer's
 * list-then-watch loop, for a long-running agent that would otherwise GET or LIST the datastore on
 * every event or every pass.
 *
 *   SyncSource (resourceSource, kvSource, objectSource)
 *     │ list (paginated on Kubernetes: limit/continue) ─► watch from the list's revision
 *     │ (bookmarks move it on; 410 Gone / compaction ─► resync: a fresh list replaces everything)
 *     ▼
 *   Syncer (one source) ──set / delete──► InformerStore: by key, by namespace, by named indexes
 *                       ──connection───► serving = listed once && watch up
 *
 * Reads (`get`, `list`, `byIndex`) answer only while the informer is serving: before the first
 * list, and while its watch is down (from the failure until the next list or watch is back), they
 * throw `DatastoreError('unavailable')` unless the caller passes `{ allowStale: true }`. A caller
 * that must not act on stale data reads the datastore then (`serving` says which).
 *
 * Own writes: `wrote(item)` and `removed(key, resourceVersion)` put what this process just wrote
 * into the copy at once, so the next pass does not act on the value from before it (and fail its
 * compare-and-swap). Per key, a change at a resourceVersion not newer than one already applied is
 * ignored (revisions compare as integers, which every backend here uses; a non-integer one is
 * always applied). Writes themselves stay the caller's: compare-and-swap on `resourceVersion`.
 *
 * Thread-safety: one event loop.
 */
import type { Kind, ResourceOf } from '@calico-ts/api';
import type { Logger } from '@calico-ts/api/log';
import { DatastoreError } from './errors.js';
import { resourceSource, Syncer, type SyncSource } from './syncer.js';
import type { Datastore } from './types.js';

/** Item → the values it is found under in a named index (empty: not in the index). */
export type IndexFunction<T> = (item: T) => readonly string[];

/** How an `InformerStore` files its items. */
export interface InformerStoreOptions<T> {
  /** The item's key: unique in the collection (`name`, or `namespace/name`). */
  readonly keyOf: (item: T) => string;
  /** The item's namespace, for `list({ namespace })`; undefined for cluster-scoped items. */
  readonly namespaceOf?: (item: T) => string | undefined;
  /** The item's resourceVersion (its revision), to order own writes against watch events. */
  readonly versionOf?: (item: T) => string | undefined;
  /** Named indexes for `byIndex`: name → the values an item is filed under. */
  readonly indexes?: Readonly<Record<string, IndexFunction<T>>>;
}

/** How a read of an informer may answer. */
export interface ReadOptions {
  /** Answer from the copy even while the watch is down or before the first list. */
  readonly allowStale?: boolean;
}

function revisionNumber(v: string | undefined): number | undefined {
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  return Number(v);
}

/**
 * The held items and their indexes: the informer's calculation, apart from any I/O. `set`,
 * `delete` return whether anything changed.
 */
export class InformerStore<T> {
  readonly #o: InformerStoreOptions<T>;
  readonly #items = new Map<string, T>();
  /** Per key, the newest revision applied (a delete counts as just after its item's revision). */
  readonly #newest = new Map<string, number>();
  /** Index name → value → keys. The namespace index is `#ns`. */
  readonly #index = new Map<string, Map<string, Set<string>>>();
  readonly #ns = new Map<string, Set<string>>();

  constructor(o: InformerStoreOptions<T>) {
    this.#o = o;
    for (const name of Object.keys(o.indexes ?? {})) this.#index.set(name, new Map());
  }

  /** How many items are held. */
  get size(): number {
    return this.#items.size;
  }

  /** The item at `key`, or undefined. */
  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  /** The keys held, in no particular order. */
  keys(): IterableIterator<string> {
    return this.#items.keys();
  }

  /** Every item (of `namespace` when given), in key order. */
  list(namespace?: string): T[] {
    const keys = namespace === undefined ? [...this.#items.keys()] : [...(this.#ns.get(namespace) ?? [])];
    return keys.sort().map((k) => this.#items.get(k)!);
  }

  /** The items an index files under `value`, in key order. Throws for an index never declared. */
  byIndex(index: string, value: string): T[] {
    const idx = this.#index.get(index);
    if (!idx) throw new DatastoreError('invalid', `informer has no index named ${JSON.stringify(index)}`);
    return [...(idx.get(value) ?? [])].sort().map((k) => this.#items.get(k)!);
  }

  /** An item as the watch (or this process's own write) reports it now. */
  set(item: T): boolean {
    const key = this.#o.keyOf(item);
    const rev = revisionNumber(this.#o.versionOf?.(item));
    const newest = this.#newest.get(key);
    if (rev !== undefined && newest !== undefined && rev <= newest) return false;
    if (rev !== undefined) this.#newest.set(key, rev);
    this.#unfile(key);
    this.#items.set(key, item);
    this.#file(key, item);
    return true;
  }

  /**
   * The item at `key` is gone. `revision` is the last one it had (a watch's delete reports the
   * item as it was): a delete older than a change already applied is ignored.
   */
  delete(key: string, revision?: string): boolean {
    const rev = revisionNumber(revision);
    const newest = this.#newest.get(key);
    if (rev !== undefined && newest !== undefined && rev < newest) return false;
    if (rev !== undefined) this.#newest.set(key, rev + 0.5);
    else this.#newest.delete(key);
    if (!this.#items.has(key)) return false;
    this.#unfile(key);
    this.#items.delete(key);
    return true;
  }

  #file(key: string, item: T): void {
    const ns = this.#o.namespaceOf?.(item);
    if (ns !== undefined) addTo(this.#ns, ns, key);
    for (const [name, f] of Object.entries(this.#o.indexes ?? {})) {
      const idx = this.#index.get(name)!;
      for (const v of f(item)) addTo(idx, v, key);
    }
  }

  #unfile(key: string): void {
    const old = this.#items.get(key);
    if (old === undefined) return;
    const ns = this.#o.namespaceOf?.(old);
    if (ns !== undefined) removeFrom(this.#ns, ns, key);
    for (const [name, f] of Object.entries(this.#o.indexes ?? {})) {
      const idx = this.#index.get(name)!;
      for (const v of f(old)) removeFrom(idx, v, key);
    }
  }
}

function addTo(m: Map<string, Set<string>>, v: string, key: string): void {
  const s = m.get(v);
  if (s) s.add(key);
  else m.set(v, new Set([key]));
}

function removeFrom(m: Map<string, Set<string>>, v: string, key: string): void {
  const s = m.get(v);
  if (!s) return;
  s.delete(key);
  if (s.size === 0) m.delete(v);
}

/** An informer's source and filing (its keys are the source's `keyOf`). */
export interface InformerOptions<T> extends Omit<InformerStoreOptions<T>, 'keyOf'> {
  /** What is listed and watched: `resourceSource`, `kvSource`, `KubeKVStore.objectSource`. */
  readonly source: SyncSource<T>;
  /** Every change applied from the datastore (not own writes), after the copy has it. */
  readonly onChange?: (change: { readonly kind: 'set' | 'delete'; readonly item: T }) => void;
  /** Where a failed list or watch is logged (as the Syncer logs it). */
  readonly log?: Logger;
  /** Backoff after a failed list or a broken watch, doubling up to `maxRetryMs` (the Syncer's). */
  readonly retryMs?: number;
  /** The backoff's cap. */
  readonly maxRetryMs?: number;
}

/** A read-only copy of one collection, kept by list+watch (see the file's comment). */
export class Informer<T> {
  /** The source's name (a kind, `ipam-blocks`, ...). */
  readonly name: string;
  readonly #store: InformerStore<T>;
  readonly #syncer: Syncer;
  #listed = false;
  #up = false;
  #started = false;
  readonly #waiters: (() => void)[] = [];

  constructor(o: InformerOptions<T>) {
    this.name = o.source.name;
    this.#store = new InformerStore({ ...o, keyOf: o.source.keyOf });
    this.#syncer = new Syncer({
      sources: [o.source as SyncSource],
      onUpdate: (u) => {
        const item = u.item as T;
        const changed =
          u.kind === 'set'
            ? this.#store.set(item)
            : this.#store.delete(o.source.keyOf(item), o.versionOf?.(item));
        if (changed) o.onChange?.({ kind: u.kind, item });
      },
      onReplace: (_source, items) => {
        // A list is all there is: what it lacks goes, own writes included (the watch from the
        // list's revision brings back anything written after it).
        const keep = new Set((items as T[]).map((i) => o.source.keyOf(i)));
        for (const key of [...this.#store.keys()]) {
          if (keep.has(key)) continue;
          const old = this.#store.get(key)!;
          this.#store.delete(key);
          o.onChange?.({ kind: 'delete', item: old });
        }
      },
      onInSync: () => {
        this.#listed = true;
        this.#up = true;
        for (const w of this.#waiters.splice(0)) w();
      },
      onConnection: (_source, connected) => {
        this.#up = connected;
      },
      ...(o.log ? { log: o.log } : {}),
      ...(o.retryMs !== undefined ? { retryMs: o.retryMs } : {}),
      ...(o.maxRetryMs !== undefined ? { maxRetryMs: o.maxRetryMs } : {}),
    });
  }

  /** Starts listing and watching; `synced()` resolves once the first list is held. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#syncer.start();
  }

  /** Resolves once the first list is held (at once if it is). */
  synced(): Promise<void> {
    if (this.#listed) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Ends the watch; reads no longer answer (unless stale reads are allowed). */
  async stop(): Promise<void> {
    await this.#syncer.stop();
    this.#up = false;
  }

  /** Listed once, and the watch is up now: reads answer. */
  get serving(): boolean {
    return this.#listed && this.#up;
  }

  /** The item at `key`, or undefined. Throws `unavailable` while not serving. */
  get(key: string, opts?: ReadOptions): T | undefined {
    this.#check(opts);
    return this.#store.get(key);
  }

  /** Every item (of `namespace` when given), in key order. Throws `unavailable` while not serving. */
  list(opts?: ReadOptions & { readonly namespace?: string }): T[] {
    this.#check(opts);
    return this.#store.list(opts?.namespace);
  }

  /** The items an index files under `value`. Throws `unavailable` while not serving. */
  byIndex(index: string, value: string, opts?: ReadOptions): T[] {
    this.#check(opts);
    return this.#store.byIndex(index, value);
  }

  /** This process wrote `item` (as the datastore returned it). */
  wrote(item: T): void {
    this.#store.set(item);
  }

  /** This process deleted the item at `key`, which was at `resourceVersion`. */
  removed(key: string, resourceVersion?: string): void {
    this.#store.delete(key, resourceVersion);
  }

  #check(opts: ReadOptions | undefined): void {
    if (opts?.allowStale || this.serving) return;
    throw new DatastoreError(
      'unavailable',
      this.#listed
        ? `informer ${this.name}: its watch is down; read the datastore`
        : `informer ${this.name}: not listed yet`,
    );
  }
}

function keyOfResource(r: { metadata: { name: string; namespace?: string } }): string {
  return r.metadata.namespace ? `${r.metadata.namespace}/${r.metadata.name}` : r.metadata.name;
}

/**
 * An informer over a Calico kind through the typed client: keys `name` or `namespace/name`, a
 * namespace index, revisions from `metadata.resourceVersion`.
 */
export function resourceInformer<K extends Kind>(
  ds: Datastore,
  kind: K,
  opts: Omit<InformerOptions<ResourceOf<K>>, 'source' | 'namespaceOf' | 'versionOf'> = {},
): Informer<ResourceOf<K>> {
  return new Informer<ResourceOf<K>>({
    ...opts,
    source: resourceSource(ds, kind),
    namespaceOf: (r) => r.metadata.namespace,
    versionOf: (r) => r.metadata.resourceVersion,
  });
}

/** The key `resourceInformer` files a resource under. */
export function informerKeyOf(r: { metadata: { name: string; namespace?: string } }): string {
  return keyOfResource(r);
}
