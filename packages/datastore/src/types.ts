import type { Kind, ResourceOf } from '@calico-ts/api';

/**
 * The typed client every component uses. One implementation over a `KVStore` (etcd v3, memory);
 * the Kubernetes backend (a later addition) implements this same interface over the API server.
 *
 * Semantics, identical on every backend:
 * - `create` fails `already-exists`; fills `uid` and `creationTimestamp`; a `resourceVersion` on the
 *   input is rejected (`invalid`).
 * - `update` is compare-and-swap on `metadata.resourceVersion` (required): `conflict` if another
 *   write happened since, `not-found` if gone.
 * - `delete` is unconditional unless `resourceVersion` is given.
 * - `apply` creates or updates (last writer wins), retrying on conflict.
 * - Every write validates and defaults through `@calico-ts/api`; an invalid resource is rejected with
 *   every field error and nothing is written. Some rules compare with stored state (upstream's
 *   clientv3): an IPPool may not overlap another pool on create, and its CIDR, block size and a
 *   LoadBalancer use may not change on update; they fail `invalid` the same way.
 * - Returned objects carry `resourceVersion` = the store revision of their last write.
 */
export interface Datastore {
  readonly backend: 'etcdv3' | 'memory' | 'kubernetes';
  get<K extends Kind>(kind: K, name: string, opts?: { namespace?: string }): Promise<ResourceOf<K>>;
  list<K extends Kind>(kind: K, opts?: ListOptions): Promise<ResourceList<K>>;
  create<K extends Kind>(resource: ResourceOf<K> & { kind: K }, opts?: CreateOptions): Promise<ResourceOf<K>>;
  update<K extends Kind>(resource: ResourceOf<K> & { kind: K }): Promise<ResourceOf<K>>;
  apply<K extends Kind>(resource: ResourceOf<K> & { kind: K }): Promise<ResourceOf<K>>;
  delete<K extends Kind>(kind: K, name: string, opts?: DeleteOptions): Promise<ResourceOf<K>>;
  watch<K extends Kind>(kind: K, opts?: WatchOptions): AsyncIterable<WatchEvent<K>>;
  close(): Promise<void>;
}

export interface ListOptions {
  /** Only this namespace (namespaced kinds). Unset = all namespaces. */
  namespace?: string;
  /** Calico selector over `metadata.labels`, e.g. `color == "red" && has(app)`. */
  selector?: string;
  /** Only this name (with `namespace` for namespaced kinds): a get that returns a list. */
  name?: string;
}

export interface ResourceList<K extends Kind> {
  items: ResourceOf<K>[];
  /** Store revision of the list; pass to `watch` as `revision` to miss nothing. */
  revision: string;
}

/** What a create may relax; nothing by default. */
export interface CreateOptions {
  /**
   * Let an IPPool overlap the pools already stored: for splitting a pool, whose children are
   * made while it still exists (so there is never a moment with no pool over its addresses),
   * before it is deleted. Every other rule still applies.
   */
  allowPoolOverlap?: boolean;
}

export interface DeleteOptions {
  namespace?: string;
  /** Delete only if the stored object is still at this revision (`conflict` otherwise). */
  resourceVersion?: string;
}

export interface WatchOptions {
  namespace?: string;
  /** Report every change after this revision (exclusive), e.g. a list's `revision`. Default: now. */
  revision?: string;
  signal?: AbortSignal;
}

export type WatchEvent<K extends Kind> =
  | { kind: 'added'; resource: ResourceOf<K>; revision: string }
  | { kind: 'modified'; resource: ResourceOf<K>; previous?: ResourceOf<K>; revision: string }
  | { kind: 'deleted'; resource: ResourceOf<K>; revision: string }
  /**
   * The watch lost its place (the revision was compacted). `items` is the complete current state;
   * replace everything held for this kind. Watching continues after `revision`.
   */
  | { kind: 'resync'; items: ResourceOf<K>[]; revision: string; reason: 'compacted' }
  /** A value under this kind's prefix could not be decoded; reported, not dropped silently. */
  | { kind: 'error'; key: string; error: Error; revision: string }
  | { kind: 'disconnected'; error: Error }
  | { kind: 'reconnected' };
