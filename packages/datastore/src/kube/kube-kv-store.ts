/**
 * KubeKVStore: the `KVStore` seam over a Kubernetes API server, so the typed client
 * (`KVDatastore`: validation, defaults, codecs) and IPAM (`IpamStore`) run unchanged on the
 * Kubernetes datastore. Keys are Calico's etcd keys; kv-mapping.ts says which object each is.
 *
 *   get/create/update/delete(key) ──► locateKey ──► GET/POST/PUT/DELETE one object
 *   list(prefix), watch(prefix)   ──► collectionsForPrefix ──► list/watch each collection,
 *                                     objects → KVs, keys filtered by the prefix
 *
 * Every KV read here holds its value as parsed data (`parsedKV`): the typed client and IPAM copy
 * it rather than parse text, and the text is made only if something reads `value`. A Pod or Node
 * just read by `get` stands in for the read its next write would make (`#onCurrent`).
 *
 * Revisions: an object's `resourceVersion` is the API server's etcd revision of its last write,
 * and a list's is the store revision at the time, so `modRevision` and list revisions keep their
 * etcd meaning (one counter, a watch from a list's revision misses nothing). Kubernetes calls
 * them opaque; the kube-apiserver this is tested against (v1.36) hands out etcd's.
 *
 * Where Kubernetes differs from etcd, and what this does about it:
 *   - compare-and-swap update: PUT with `metadata.resourceVersion` (409 Conflict on a stale one);
 *   - compare-and-delete: DELETE with `preconditions.resourceVersion`;
 *   - no multi-object transactions: `readAll` sends its reads side by side (not at one revision);
 *     `writeAll` writes in order and, when a later write fails, undoes the earlier ones (a
 *     created object is deleted, an updated one is put back), then reports the failure. A crash
 *     between two writes can leave them apart, as upstream's Kubernetes IPAM can; the IPAM check
 *     and garbage collection find such records.
 *   - a watch whose resourceVersion is too old gets 410 Gone: reported as `resync` with the full
 *     current list, as etcd's compaction is. A broken watch is resumed from the last revision seen
 *     (bookmarks keep that fresh), with `disconnected` / `reconnected` around the gap. The watch
 *     is `kube-watch.ts`; it reports the connection through `WatchLink`, as the etcd stores do.
 *
 * Thread-safety: any number of concurrent calls.
 */
import { DatastoreError, isDatastoreError } from '../errors.js';
import type {
  KV,
  KVDeleteOptions,
  KVList,
  KVRead,
  KVStore,
  KVWatchMessage,
  KVWatchOptions,
  KVWrite,
} from '../kv/kv-store.js';
import { lazyParsedKV, parsedKV } from '../kv/parsed-kv.js';
import type { KubeHttp } from './kube-http.js';
import { type KubeWatchHost, watchPrefix } from './kube-watch.js';
import {
  type Collection,
  collectionsForPrefix,
  crdMissing,
  isCrdCollection,
  locateKey,
  type Obj,
  restPath,
  rvOf,
  wireReadOptions,
} from './kv-mapping.js';
import { decodeWireJson } from './wire-json.js';

interface KubeList {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: Obj[];
}

const PAGE = 500;
/** How long, and for how many keys, a Pod or Node read by `get` stands in for the write's own read. */
const RECENT_MS = 5000;
const RECENT_MAX = 256;
/** Errors a write on an out-of-date copy ends with, having written nothing: read again, retry once. */
const STALE_COPY_ERRORS = ['conflict', 'already-exists', 'not-found', 'invalid'] as const;

function compareRevisions(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function named(e: unknown, key: string): never {
  if (e instanceof DatastoreError) {
    throw new DatastoreError(e.code, `${key}: ${e.message}`, { cause: e });
  }
  throw e;
}

export interface KubeKVStoreOptions {
  /** Backoff between watch reconnects, doubling to `maxRetryMs`. */
  retryMs?: number;
  maxRetryMs?: number;
  /**
   * The interface prefix list (FELIX_INTERFACEPREFIX's form, default `cali`): a Pod's
   * WorkloadEndpoint gets `interfaceName` = first prefix + 11 hex of SHA-1("<namespace>.<pod>").
   */
  interfacePrefix?: string;
  /**
   * Only what Kubernetes itself serves (Nodes, Pods, Namespaces, ServiceAccounts, NetworkPolicies,
   * Services, EndpointSlices and the Calico resources derived from them); Calico's CRDs are never
   * read, so lists and watches work on a cluster without them. For a client whose Calico data is
   * elsewhere: kube-controllers on the etcd datastore reads its Kubernetes view this way, as
   * upstream's calico-etcd.yaml installs no CRDs. Default false.
   */
  kubernetesOnly?: boolean;
}

export class KubeKVStore implements KVStore {
  readonly #http: KubeHttp;
  readonly #opts: KubeKVStoreOptions;
  readonly #closing = new AbortController();
  /**
   * Pods and Nodes (`merge` collections) as `get` last returned them, each taken by the next write
   * of its key instead of reading the object again: the CNI plugin reads a Pod's endpoint and then
   * writes it, and a read-then-write costs three requests where two do. The copy's resourceVersion
   * makes the PUT a compare-and-swap; a copy that went out of date in between fails it (or decides
   * wrongly that the record exists or not) without writing, and the write is retried once on a
   * fresh read. Taken once, dropped after RECENT_MS, at most RECENT_MAX kept.
   */
  readonly #recent = new Map<string, { readonly obj: Obj; readonly at: number }>();

  /** What this store's watches use of it. */
  readonly #watchHost: KubeWatchHost;

  constructor(http: KubeHttp, opts: KubeKVStoreOptions = {}) {
    this.#http = http;
    this.#opts = opts;
    this.#watchHost = {
      http,
      closing: this.#closing.signal,
      retryMs: opts.retryMs ?? 250,
      maxRetryMs: opts.maxRetryMs ?? 5000,
      collections: (prefix) => this.#collections(prefix),
      revision: () => this.revision(),
      listCollection: (c, namespace) => this.#listCollection(c, namespace),
      toKV: (c, o, created) => this.#toKV(c, o, created),
    };
  }

  /**
   * The object as a KV that holds its value parsed (`parsedKV`): the typed client and IPAM copy
   * the data instead of parsing text, which is made only if something reads `value`.
   * `createRevision`: the object's revision when it was just created (or listed), else '0'.
   */
  #toKV(c: Collection, o: Obj, created = false): KV | undefined {
    const kv = c.toKV(o, this.#opts);
    if (!kv) return undefined;
    const rev = rvOf(o);
    return parsedKV(kv.key, kv.data, rev, created ? rev : '0');
  }

  async get(key: string): Promise<KV | undefined> {
    const loc = locateKey(key);
    try {
      const o = await this.#http.request<Obj>(
        'GET',
        restPath(loc.collection, loc.namespace, loc.name),
        undefined,
        wireReadOptions(loc.collection),
      );
      if (loc.collection.write === 'merge') this.#remember(key, o);
      const kv = this.#toKV(loc.collection, o);
      return kv?.key === key ? kv : undefined;
    } catch (e) {
      if (isDatastoreError(e, 'not-found')) return undefined;
      return named(e, key);
    }
  }

  /**
   * `object`, which the caller read itself (the CNI plugin's GET of a Pod), taken as if `get(key)`
   * had just returned it: the record it holds, and the copy the next write of `key` starts from.
   */
  adopt(key: string, object: Obj): KV | undefined {
    const loc = locateKey(key);
    const meta = (object.metadata ?? {}) as { name?: string; namespace?: string };
    if (loc.collection.write !== 'merge' || meta.name !== loc.name || meta.namespace !== loc.namespace)
      throw new DatastoreError('invalid', `${key}: adopt takes the Pod or Node of this key`);
    this.#remember(key, object);
    const kv = this.#toKV(loc.collection, object);
    return kv?.key === key ? kv : undefined;
  }

  async #listCollection(
    c: Collection,
    namespace: string | undefined,
  ): Promise<{ kvs: KV[]; revision: string }> {
    const kvs: KV[] = [];
    let cont: string | undefined;
    let revision = '0';
    do {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (cont) q.set('continue', cont);
      let list: KubeList;
      try {
        list = await this.#http.request<KubeList>(
          'GET',
          `${restPath(c, namespace)}?${q}`,
          undefined,
          wireReadOptions(c),
        );
      } catch (e) {
        // Never an empty list for a collection the API server does not serve: a reader would take
        // "no policies" for the truth and act on it.
        if (isDatastoreError(e, 'not-found')) throw crdMissing(c, restPath(c, namespace), e);
        throw e;
      }
      if (!cont) revision = list.metadata?.resourceVersion ?? '0';
      for (const o of list.items ?? []) {
        const kv = this.#toKV(c, o, true);
        if (kv) kvs.push(kv);
      }
      cont = list.metadata?.continue || undefined;
    } while (cont);
    return { kvs, revision };
  }

  /** The collections under `prefix` this store reads (without the CRDs when `kubernetesOnly`). */
  #collections(prefix: string): ReturnType<typeof collectionsForPrefix> {
    const all = collectionsForPrefix(prefix);
    return this.#opts.kubernetesOnly ? all.filter((t) => !isCrdCollection(t.collection)) : all;
  }

  async list(prefix: string): Promise<KVList> {
    const targets = this.#collections(prefix);
    if (targets.length === 0) return { kvs: [], revision: await this.revision() };
    const lists = await Promise.all(targets.map((t) => this.#listCollection(t.collection, t.namespace)));
    const seen = new Set<string>();
    const kvs: KV[] = [];
    for (const l of lists) {
      for (const kv of l.kvs) {
        if (!kv.key.startsWith(prefix) || seen.has(kv.key)) continue;
        seen.add(kv.key);
        kvs.push(kv);
      }
    }
    kvs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    // The oldest list revision: a watch from there misses no collection's changes.
    const revision = lists.map((l) => l.revision).reduce((a, b) => (compareRevisions(a, b) <= 0 ? a : b));
    return { kvs, revision };
  }

  #refuseReadonly(c: Collection, key: string): void {
    if (c.write === 'readonly')
      throw new DatastoreError('unsupported', `${key}: ${c.readonlyReason ?? 'read-only'}`);
  }

  #remember(key: string, obj: Obj): void {
    this.#recent.delete(key);
    this.#recent.set(key, { obj, at: performance.now() });
    if (this.#recent.size > RECENT_MAX) this.#recent.delete(this.#recent.keys().next().value!);
  }

  /**
   * Runs a `merge` write on the object behind `key`: the copy `get` just read when there is one
   * (a stale copy writes nothing and the write is retried on a fresh read), else a fresh read.
   */
  async #onCurrent<T>(
    loc: ReturnType<typeof locateKey>,
    key: string,
    write: (current: Obj) => Promise<T>,
  ): Promise<T> {
    const recent = this.#recent.get(key);
    this.#recent.delete(key);
    if (recent && performance.now() - recent.at <= RECENT_MS) {
      try {
        return await write(recent.obj);
      } catch (e) {
        if (!STALE_COPY_ERRORS.some((code) => isDatastoreError(e, code))) throw e;
      }
    }
    return write(await this.#current(loc, key));
  }

  /** The Kubernetes object behind a `merge` record; a clear error when it does not exist. */
  async #current(loc: ReturnType<typeof locateKey>, key: string): Promise<Obj> {
    try {
      return await this.#http.request<Obj>(
        'GET',
        restPath(loc.collection, loc.namespace, loc.name),
        undefined,
        wireReadOptions(loc.collection),
      );
    } catch (e) {
      if (isDatastoreError(e, 'not-found')) {
        const where = loc.namespace ? `${loc.namespace}/${loc.name}` : loc.name;
        throw new DatastoreError(
          'not-found',
          `${key}: the Kubernetes ${loc.collection.kind} ${where} does not exist`,
          { cause: e },
        );
      }
      return named(e, key);
    }
  }

  async #putMerged(loc: ReturnType<typeof locateKey>, key: string, obj: Obj): Promise<KV> {
    // Write nothing that would not read back as this record (a Pod on another node, not
    // scheduled, on the host network, or finished): it would change the object and be lost.
    if (this.#toKV(loc.collection, obj)?.key !== key) {
      const where = loc.namespace ? `${loc.namespace}/${loc.name}` : loc.name;
      throw new DatastoreError(
        'invalid',
        `${key}: the Kubernetes ${loc.collection.kind} ${where} does not match this record (for a Pod: not scheduled to the node the name says, on the host network, or finished); nothing was written`,
      );
    }
    try {
      const o = await this.#http.request<Obj>(
        'PUT',
        restPath(loc.collection, loc.namespace, loc.name),
        obj,
        wireReadOptions(loc.collection),
      );
      return this.#mustKV(loc.collection, o, key);
    } catch (e) {
      return named(e, key);
    }
  }

  async create(key: string, value: string, data?: unknown): Promise<KV> {
    const loc = locateKey(key);
    this.#refuseReadonly(loc.collection, key);
    if (loc.collection.write === 'merge') {
      return this.#onCurrent(loc, key, async (current) => {
        const existing = this.#toKV(loc.collection, current);
        if (existing?.key === key) throw new DatastoreError('already-exists', `${key}: already exists`);
        return this.#putMerged(loc, key, loc.collection.merge!(current, key, value));
      });
    }
    const body = loc.collection.toObject(key, value, data);
    try {
      return await this.#write(
        'POST',
        restPath(loc.collection, loc.namespace),
        body,
        loc.collection,
        key,
        true,
      );
    } catch (e) {
      if (isDatastoreError(e, 'not-found')) {
        if (loc.namespace && /namespaces? "[^"]*" not found/.test(e.message)) {
          throw new DatastoreError(
            'invalid',
            `${key}: namespace "${loc.namespace}" does not exist (in the Kubernetes datastore a namespaced resource needs its namespace)`,
            { cause: e },
          );
        }
        throw crdMissing(loc.collection, key, e);
      }
      return named(e, key);
    }
  }

  /**
   * A create or replace, resolving the written record. A collection with exact integers (IPAM
   * blocks) answers with objects whose exact decoding costs several times a plain parse, and its
   * writers mostly want only the new revision: the answer is parsed plainly for that, and decoded
   * exactly only if the KV's value is read (`lazyParsedKV`).
   */
  async #write(
    method: 'POST' | 'PUT',
    path: string,
    body: Obj,
    c: Collection,
    key: string,
    created: boolean,
  ): Promise<KV> {
    if (!c.exactIntegers)
      return this.#mustKV(
        c,
        await this.#http.request<Obj>(method, path, body, wireReadOptions(c)),
        key,
        created,
      );
    const bytes = await this.#http.requestBytes(method, path, body);
    let plain: Obj;
    try {
      plain = decodeWireJson(bytes, false) as Obj;
    } catch (e) {
      throw new DatastoreError(
        'unavailable',
        `${method} ${path}: the answer is not JSON: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
    const written = this.#mustKV(c, plain, key, created);
    const exact = () => c.toKV(decodeWireJson(bytes, true) as Obj, this.#opts)?.data;
    return lazyParsedKV(written.key, exact, written.modRevision, written.createRevision);
  }

  #mustKV(c: Collection, o: Obj, key: string, created = false): KV {
    const kv = this.#toKV(c, o, created);
    if (!kv) throw new DatastoreError('invalid', `${key}: the API server returned an object with no key`);
    return kv;
  }

  async update(key: string, value: string, modRevision: string, data?: unknown): Promise<KV> {
    const loc = locateKey(key);
    this.#refuseReadonly(loc.collection, key);
    if (loc.collection.write === 'merge') {
      return this.#onCurrent(loc, key, async (current) => {
        const rv = rvOf(current);
        if (rv !== modRevision)
          throw new DatastoreError('conflict', `${key}: revision ${modRevision} is not the current ${rv}`);
        return this.#putMerged(loc, key, loc.collection.merge!(current, key, value));
      });
    }
    const body = loc.collection.toObject(key, value, data);
    (body.metadata as Obj).resourceVersion = modRevision;
    try {
      return await this.#write(
        'PUT',
        restPath(loc.collection, loc.namespace, loc.name),
        body,
        loc.collection,
        key,
        false,
      );
    } catch (e) {
      return named(e, key);
    }
  }

  async put(key: string, value: string): Promise<KV> {
    for (let attempt = 0; ; attempt++) {
      const existing = await this.get(key);
      try {
        return existing ? await this.update(key, value, existing.modRevision) : await this.create(key, value);
      } catch (e) {
        const raced =
          isDatastoreError(e, 'conflict') ||
          isDatastoreError(e, 'already-exists') ||
          isDatastoreError(e, 'not-found');
        if (!raced || attempt >= 10) throw e;
      }
    }
  }

  async delete(key: string, modRevision?: string, options: KVDeleteOptions = {}): Promise<KV> {
    const loc = locateKey(key);
    this.#refuseReadonly(loc.collection, key);
    if (loc.collection.write === 'merge') {
      if (!loc.collection.clear) {
        throw new DatastoreError(
          'unsupported',
          `${key}: a ${loc.collection.kind} is deleted in Kubernetes itself (kubectl delete ${loc.collection.kind.toLowerCase()} ${loc.name})`,
        );
      }
      const clear = loc.collection.clear;
      return this.#onCurrent(loc, key, async (current) => {
        const kv = this.#toKV(loc.collection, current);
        if (kv?.key !== key) throw new DatastoreError('not-found', `${key}: not found`);
        if (modRevision !== undefined && modRevision !== kv.modRevision) {
          throw new DatastoreError(
            'conflict',
            `${key}: revision ${modRevision} is not the current ${kv.modRevision}`,
          );
        }
        try {
          await this.#http.request(
            'PUT',
            restPath(loc.collection, loc.namespace, loc.name),
            clear(current),
            wireReadOptions(loc.collection),
          );
        } catch (e) {
          return named(e, key);
        }
        return kv;
      });
    }
    // A compare-and-delete whose caller needs no value is one request: the DELETE's precondition
    // is the whole check (the revision was read for this key). Otherwise the key is read first:
    // the API server answers a Calico CRD's DELETE with a bare Status, not the object, and only
    // an object that reads back as this key may go (two handle IDs that differ in case share one
    // object name).
    const direct = modRevision !== undefined && options.value === false;
    const current = direct ? undefined : await this.get(key);
    if (!direct) {
      if (!current) throw new DatastoreError('not-found', `${key}: not found`);
      if (modRevision !== undefined && modRevision !== current.modRevision) {
        throw new DatastoreError(
          'conflict',
          `${key}: revision ${modRevision} is not the current ${current.modRevision}`,
        );
      }
    }
    const revision = current?.modRevision ?? modRevision!;
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { resourceVersion: revision },
    };
    try {
      await this.#http.request('DELETE', restPath(loc.collection, loc.namespace, loc.name), body, {
        exact: false,
      });
    } catch (e) {
      return named(e, key);
    }
    return current ?? { key, value: '', modRevision: revision, createRevision: '0' };
  }

  async readAll(reads: readonly KVRead[]): Promise<{ results: KV[][]; revision: string }> {
    // All at once: each its own request, and none waits for another.
    const read = (r: KVRead): Promise<{ kvs: KV[]; revision?: string }> =>
      r.prefix
        ? this.list(r.key).then((l) => ({
            kvs: r.keysOnly ? l.kvs.map(keyOnly) : l.kvs,
            revision: l.revision,
          }))
        : this.get(r.key).then(
            (kv) => ({ kvs: kv ? [r.keysOnly ? keyOnly(kv) : kv] : [] }),
            (e: unknown) => {
              if (isDatastoreError(e, 'unsupported')) return { kvs: [] };
              throw e;
            },
          );
    const got = await Promise.all(reads.map(read));
    let revision = '0';
    for (const g of got) if (g.revision && compareRevisions(g.revision, revision) > 0) revision = g.revision;
    if (revision === '0') revision = await this.revision();
    return { results: got.map((g) => g.kvs), revision };
  }

  async writeAll(writes: readonly KVWrite[]): Promise<KV[]> {
    const done: { write: KVWrite; kv: KV; before?: KV }[] = [];
    try {
      for (const [i, w] of writes.entries()) {
        if (w.modRevision === undefined) {
          done.push({ write: w, kv: await this.create(w.key, w.value, w.data) });
        } else if (i === writes.length - 1) {
          // The last write is never undone, so it needs no copy of what it replaces: the PUT's own
          // resourceVersion check is the compare-and-swap (409 conflict, 404 not-found). This is
          // IPAM's block write after its handle, one request fewer per allocation.
          done.push({ write: w, kv: await this.update(w.key, w.value, w.modRevision, w.data) });
        } else {
          const before = await this.get(w.key);
          if (!before) throw new DatastoreError('not-found', `${w.key}: not found`);
          if (before.modRevision !== w.modRevision) {
            throw new DatastoreError(
              'conflict',
              `${w.key}: revision ${w.modRevision} is not the current ${before.modRevision}`,
            );
          }
          done.push({ write: w, kv: await this.update(w.key, w.value, w.modRevision, w.data), before });
        }
      }
    } catch (e) {
      // Undo in reverse order, each only if nothing else wrote it meanwhile.
      for (const d of done.reverse()) {
        try {
          if (d.before) await this.update(d.write.key, d.before.value, d.kv.modRevision);
          else await this.delete(d.write.key, d.kv.modRevision, { value: false });
        } catch {
          // Someone else changed it since: theirs stands.
        }
      }
      throw e;
    }
    return done.map((d) => d.kv);
  }

  async revision(): Promise<string> {
    if (this.#opts.kubernetesOnly)
      return (
        (await this.#http.request<KubeList>('GET', '/api/v1/namespaces?limit=1', undefined, { exact: false }))
          .metadata?.resourceVersion ?? '0'
      );
    // The cheapest consistent read: an empty page of one collection carries the store revision.
    // IPAM blocks: every Calico client lists them under upstream's RBAC (calico-node, the CNI
    // plugin, kube-controllers); ipamconfigs, say, calico-node may only get and create. Without
    // the CRD, or a role that lists it, Namespaces.
    const list = await this.#http
      .request<KubeList>(
        'GET',
        `${restPath(locateKey('/calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26').collection)}?limit=1`,
      )
      .catch(async (e: unknown) => {
        if (!isDatastoreError(e, 'not-found') && !isDatastoreError(e, 'unauthorized')) throw e;
        return this.#http.request<KubeList>('GET', '/api/v1/namespaces?limit=1');
      });
    return list.metadata?.resourceVersion ?? '0';
  }

  watch(prefix: string, options: KVWatchOptions = {}): AsyncIterable<KVWatchMessage> {
    return watchPrefix(this.#watchHost, prefix, options);
  }

  async close(): Promise<void> {
    this.#closing.abort();
    this.#http.close();
  }
}

/** A KV without its value (a copy: spreading a parsed KV would make its text). */
function keyOnly(kv: KV): KV {
  return { key: kv.key, value: '', modRevision: kv.modRevision, createRevision: kv.createRevision };
}
