/**
 * The key-value seam under the typed client. Two implementations with the same semantics:
 * `EtcdKVStore` (real etcd v3 through the `etcd3` package) and `MemoryKVStore` (tests, embedded use).
 *
 * Revisions are etcd's: one store-wide counter, bumped by every write; each key remembers the
 * revision of its last write (`modRevision`). Revisions travel as decimal strings because they are
 * 64-bit in etcd and are shown to users as `resourceVersion`.
 *
 * Errors: every method throws only `DatastoreError` (`not-found`, `already-exists`, `conflict`,
 * `unavailable`, `compacted`, `unauthorized`).
 */
export interface KV {
  key: string;
  value: string;
  /** Revision of the last write to this key. */
  modRevision: string;
  /** Revision at which this key was created (since its last deletion). */
  createRevision: string;
}

export interface KVList {
  kvs: KV[];
  /** Store revision at which the list was taken; a watch from `revision + 1` misses nothing. */
  revision: string;
}

export type KVEvent =
  | { kind: 'put'; kv: KV; prev?: KV }
  | { kind: 'delete'; key: string; modRevision: string; prev?: KV };

export type KVWatchMessage =
  /** Events of one revision, in order. */
  | { kind: 'events'; events: KVEvent[]; revision: string }
  /**
   * The watch could not continue from where it was (the start revision was compacted, or a
   * reconnect found history gone). What follows is the full current state under the prefix; the
   * consumer must replace what it holds. Never silently skipped.
   */
  | { kind: 'resync'; list: KVList; reason: 'compacted' }
  /** Connection lost; the watch is retrying and will resume from the last revision it saw. */
  | { kind: 'disconnected'; error: Error }
  /** Connection back; no events were lost. */
  | { kind: 'reconnected' };

export interface KVWatchOptions {
  /** First revision to report (inclusive). Default: the revision after "now". */
  fromRevision?: string;
  signal?: AbortSignal;
}

/** One read of `KVStore.readAll`: a key, or (`prefix`) every key starting with it. */
export interface KVRead {
  key: string;
  prefix?: boolean;
  /** Keys and revisions only: every KV's `value` comes back as `''` (etcd sends no values). */
  keysOnly?: boolean;
}

/** One write of `KVStore.writeAll`. */
export interface KVWrite {
  key: string;
  value: string;
  /** `value` as data, when the writer has it (see `KVStore.create`). */
  data?: unknown;
  /** The key's current modRevision (compare-and-swap); absent: the key must not exist (create). */
  modRevision?: string;
}

/** How `KVStore.delete` answers. */
export interface KVDeleteOptions {
  /** Whether the returned KV must carry the deleted value. Default true. */
  readonly value?: boolean;
}

export interface KVStore {
  get(key: string): Promise<KV | undefined>;
  /** Every key with this prefix, sorted by key. */
  list(prefix: string): Promise<KVList>;
  /**
   * Create; fails `already-exists` if the key is present. `data`, when the writer has it, is the
   * value as data (`goJson(data)` writes what `value` holds, e.g. `blockData` beside
   * `encodeBlock`): a store that builds objects from values (Kubernetes) takes it instead of
   * parsing `value` back. Others ignore it.
   */
  create(key: string, value: string, data?: unknown): Promise<KV>;
  /**
   * Overwrite iff the key's modRevision equals `modRevision`; `conflict` otherwise, `not-found` if
   * absent. `data` as for `create`.
   */
  update(key: string, value: string, modRevision: string, data?: unknown): Promise<KV>;
  /**
   * Several gets and lists as one request, all at one revision (an etcd Txn of ranges). Each
   * result is the matching KVs sorted by key: none or one for a key, any number for a prefix.
   */
  readAll(reads: readonly KVRead[]): Promise<{ results: KV[][]; revision: string }>;
  /**
   * Several creates and compare-and-swaps as one transaction (one etcd Txn, one revision): all are
   * written or none. A create whose key exists fails `already-exists`; a stale or missing
   * `modRevision` fails `conflict` (`not-found` when the key is gone), naming the first such key.
   * Resolves the written KVs in the order given.
   */
  writeAll(writes: readonly KVWrite[]): Promise<KV[]>;
  /** Unconditional put (create or overwrite). */
  put(key: string, value: string): Promise<KV>;
  /**
   * Delete, iff `modRevision` matches when given. Returns the deleted KV; with
   * `{ value: false }` its `value` may be `''` (a caller that only needs the record gone saves a
   * store without transactions, Kubernetes, the read of it).
   */
  delete(key: string, modRevision?: string, options?: KVDeleteOptions): Promise<KV>;
  /** Watch a prefix. The iterator ends when `signal` aborts or `close()` is called. */
  watch(prefix: string, options?: KVWatchOptions): AsyncIterable<KVWatchMessage>;
  /** Current store revision. */
  revision(): Promise<string>;
  close(): Promise<void>;
}
