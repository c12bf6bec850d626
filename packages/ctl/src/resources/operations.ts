/**
 * The datastore operation behind each command, one resource at a time, with upstream's semantics
 * (`calicoctl/calicoctl/resourcemgr/resourcemgr.go`):
 *
 * - create keeps only name, namespace, labels and annotations of the given metadata;
 * - apply creates, or updates what exists: the stored metadata is kept, labels and annotations are
 *   merged over it, spec is replaced; a given resourceVersion must be the current one; an apply
 *   that would change nothing writes nothing (upstream writes anyway; the revision then moves);
 * - replace is apply's update half: the resource must exist;
 * - delete honours a given resourceVersion.
 *
 * Datastore errors become upstream's error texts (`resource does not exist: IPPool(x) with error:
 * <nil>`), which scripts grep for. On the Kubernetes datastore, what it cannot do (create or delete
 * a Node, write a Profile) is refused first, saying why (kdd-rules.ts).
 */
import { KINDS, type Kind, type Resource, validateResource } from '@calico-ts/api';
import { type Datastore, DatastoreError, isDatastoreError } from '@calico-ts/datastore';
import { CtlError, type CtlErrorCode } from '../errors.js';
import type { Obj } from '../output/columns.js';
import {
  type KddAction,
  kddCreateNotFound,
  kddNodeMissing,
  kddRefusal,
  kddStoreReason,
} from './kdd-rules.js';

const UPDATE_ATTEMPTS = 5;

/** Upstream's identifier for a resource in error texts: `Kind(name)` or `Kind(namespace/name)`. */
export function identifier(kind: Kind, name: string, namespace?: string): string {
  return KINDS[kind].namespaced && namespace ? `${kind}(${namespace}/${name})` : `${kind}(${name})`;
}

function metaOf(r: Obj): Obj {
  return (r.metadata ?? {}) as Obj;
}

function nameOf(r: Obj): string {
  return String(metaOf(r).name ?? '');
}

function namespaceOf(kind: Kind, r: Obj): string | undefined {
  if (!KINDS[kind].namespaced) return undefined;
  const ns = metaOf(r).namespace;
  return typeof ns === 'string' && ns !== '' ? ns : undefined;
}

/** A datastore failure as upstream words it. */
export function describeError(e: unknown, kind: Kind, name: string, namespace?: string): CtlError {
  if (e instanceof CtlError) return e;
  const id = identifier(kind, name, namespace);
  if (e instanceof DatastoreError) {
    const map: Record<string, [CtlErrorCode, string]> = {
      'not-found': ['not-found', `resource does not exist: ${id} with error: <nil>`],
      'already-exists': ['already-exists', `resource already exists: ${id}`],
      conflict: ['conflict', `update conflict: ${id}`],
    };
    const hit = map[e.code];
    if (hit) return new CtlError(hit[0], hit[1], { cause: e });
    if (e.code === 'unsupported') {
      return new CtlError('unsupported', `operation not supported on ${id}: ${kddStoreReason(e)}`, {
        cause: e,
      });
    }
    // A store's reason that names its key first (`/calico/resources/…: why`) names the resource.
    const message = e.message.startsWith('/calico/') ? `${id}: ${kddStoreReason(e)}` : e.message;
    return new CtlError(e.code === 'invalid' ? 'invalid-input' : 'failed', message, { cause: e });
  }
  return new CtlError('failed', e instanceof Error ? e.message : String(e), { cause: e });
}

function asResource(r: Obj): Resource & { kind: Kind } {
  return r as unknown as Resource & { kind: Kind };
}

/** Only name, namespace, labels and annotations survive into a create (upstream). */
export function metadataForCreate(r: Obj): Obj {
  const m = metaOf(r);
  const meta: Obj = { name: m.name };
  if (m.namespace) meta.namespace = m.namespace;
  if (m.resourceVersion) meta.resourceVersion = m.resourceVersion;
  if (m.labels) meta.labels = m.labels;
  if (m.annotations) meta.annotations = m.annotations;
  return { ...r, metadata: meta };
}

/** Stored metadata with the new labels and annotations merged over the stored ones (upstream). */
export function mergeForUpdate(stored: Obj, next: Obj): Obj {
  const sm = metaOf(stored);
  const nm = metaOf(next);
  const meta: Obj = { ...sm };
  const labels = { ...((sm.labels as Obj) ?? {}), ...((nm.labels as Obj) ?? {}) };
  const annotations = { ...((sm.annotations as Obj) ?? {}), ...((nm.annotations as Obj) ?? {}) };
  if (Object.keys(labels).length > 0) meta.labels = labels;
  else delete meta.labels;
  if (Object.keys(annotations).length > 0) meta.annotations = annotations;
  else delete meta.annotations;
  return { ...next, metadata: meta };
}

/**
 * Stored metadata with the labels and annotations of `next` as given, so one left out is removed:
 * what a patch (`calicoctl patch`) and a Kubernetes update mean. Identity and server-owned fields
 * (uid, creationTimestamp, resourceVersion) stay the stored ones.
 */
export function replaceForUpdate(stored: Obj, next: Obj): Obj {
  const out = mergeForUpdate(stored, next);
  const meta = out.metadata as Obj;
  const nm = metaOf(next);
  for (const k of ['labels', 'annotations']) {
    if (nm[k] !== undefined) meta[k] = nm[k];
    else delete meta[k];
  }
  return out;
}

/** How an update treats the metadata it is given (see `updateResource`). */
export interface UpdateOptions {
  /** Leave a resource that would not change alone (no write; its revision stays). */
  skipUnchanged: boolean;
  /**
   * `merge` (calicoctl's apply and replace): labels and annotations are merged over the stored
   * ones. `replace` (a Kubernetes update): they are the given ones. Default `merge`.
   */
  metadata?: 'merge' | 'replace';
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x !== null && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Obj).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

/** Whether writing `next` over `stored` would store the same resource (after defaulting). */
export function sameStoredContent(stored: Obj, next: Obj): boolean {
  const strip = (r: Obj) => {
    const v = validateResource({ ...r, metadata: { ...metaOf(r), resourceVersion: undefined } });
    return v.ok ? canonical(v.value) : undefined;
  };
  const a = strip(stored);
  return a !== undefined && a === strip(next);
}

/** On the Kubernetes datastore, refuse what it cannot do (see kdd-rules.ts). */
function refuseOnKdd(ds: Datastore, action: KddAction, kind: Kind, r: Obj): void {
  if (ds.backend !== 'kubernetes') return;
  const why = kddRefusal(action, kind, nameOf(r));
  if (why) throw new CtlError('unsupported', why);
}

/** A create's failure; on the Kubernetes datastore, a create that finds no collection or Pod says so. */
function describeCreateError(ds: Datastore, e: unknown, kind: Kind, r: Obj): CtlError {
  const crdMissing =
    e instanceof DatastoreError &&
    e.code === 'config' &&
    /does not serve \S+\.crd\.projectcalico\.org/.test(e.message);
  if (ds.backend === 'kubernetes' && e instanceof DatastoreError && (e.code === 'not-found' || crdMissing)) {
    return new CtlError('failed', kddCreateNotFound(e, kind, nameOf(r), namespaceOf(kind, r)), { cause: e });
  }
  return describeError(e, kind, nameOf(r), namespaceOf(kind, r));
}

/**
 * Create a resource as `calicoctl create` does: only name, namespace, labels and annotations of its
 * metadata are kept; on the Kubernetes datastore what it cannot hold is refused first. Throws a
 * `CtlError` in upstream's words.
 */
export async function createResource(ds: Datastore, kind: Kind, r: Obj): Promise<Obj> {
  refuseOnKdd(ds, 'create', kind, r);
  try {
    return (await ds.create(asResource(metadataForCreate(r)))) as unknown as Obj;
  } catch (e) {
    throw describeCreateError(ds, e, kind, r);
  }
}

async function getStored(ds: Datastore, kind: Kind, r: Obj): Promise<Obj> {
  const ns = namespaceOf(kind, r);
  return (await ds.get(kind, nameOf(r), ns ? { namespace: ns } : {})) as unknown as Obj;
}

/**
 * Update semantics of apply and replace: a given resourceVersion must be the stored one (else a
 * `conflict`); without one, a concurrent change is retried.
 */
export async function updateResource(ds: Datastore, kind: Kind, r: Obj, opts: UpdateOptions): Promise<Obj> {
  refuseOnKdd(ds, 'replace', kind, r);
  const name = nameOf(r);
  const ns = namespaceOf(kind, r);
  const rv = metaOf(r).resourceVersion;
  try {
    for (let attempt = 0; ; attempt++) {
      const stored = await getStored(ds, kind, r);
      const storedRv = metaOf(stored).resourceVersion;
      if (typeof rv === 'string' && rv !== '' && rv !== storedRv) {
        throw new CtlError('conflict', `update conflict: ${identifier(kind, name, ns)}`);
      }
      const merged = opts.metadata === 'replace' ? replaceForUpdate(stored, r) : mergeForUpdate(stored, r);
      if (opts.skipUnchanged && sameStoredContent(stored, merged)) return stored;
      try {
        return (await ds.update(asResource(merged))) as unknown as Obj;
      } catch (e) {
        if (isDatastoreError(e, 'conflict') && !rv && attempt + 1 < UPDATE_ATTEMPTS) continue;
        throw e;
      }
    }
  } catch (e) {
    throw describeError(e, kind, name, ns);
  }
}

/** Create the resource, or update the one there as `calicoctl apply` does (see `updateResource`). */
export async function applyResource(ds: Datastore, kind: Kind, r: Obj): Promise<Obj> {
  refuseOnKdd(ds, 'apply', kind, r);
  const name = nameOf(r);
  const ns = namespaceOf(kind, r);
  try {
    await getStored(ds, kind, r);
  } catch (e) {
    if (!isDatastoreError(e, 'not-found')) throw describeError(e, kind, name, ns);
    if (kind === 'Node' && ds.backend === 'kubernetes') {
      throw new CtlError('not-found', kddNodeMissing(name), { cause: e });
    }
    const fresh = { ...r, metadata: { ...metaOf(r) } };
    delete (fresh.metadata as Obj).resourceVersion;
    try {
      return (await ds.create(asResource(metadataForCreate(fresh)))) as unknown as Obj;
    } catch (e2) {
      if (!isDatastoreError(e2, 'already-exists')) throw describeCreateError(ds, e2, kind, fresh);
    }
  }
  return updateResource(ds, kind, r, { skipUnchanged: true });
}

/** What deleting an IPPool needs besides the datastore (see `deleteIPPool`). */
export interface PoolDeletion {
  /** Release every host's block affinities inside a CIDR (`IpamClient.releasePoolAffinities`). */
  releasePoolAffinities(cidr: string): Promise<unknown>;
  /** Pause between disabling the pool and releasing its blocks. */
  sleep(ms: number): Promise<void>;
}

/** Upstream waits this long after disabling a pool, so allocations in flight can finish. */
export const POOL_DELETE_PAUSE_MS = 500;

/**
 * Delete an IPPool as upstream's client does: disable it (so nothing more is assigned from it;
 * with the given resourceVersion, if any), pause briefly, release every block affinity inside its
 * CIDR (empty blocks go, used ones stay without an owner), then delete it.
 */
async function deleteIPPool(ds: Datastore, r: Obj, pools: PoolDeletion): Promise<Obj> {
  const name = nameOf(r);
  let rv = metaOf(r).resourceVersion;
  try {
    const pool = (await ds.get('IPPool', name)) as unknown as Obj;
    const spec = (pool.spec ?? {}) as Obj;
    if (spec.disabled !== true) {
      const meta = { ...metaOf(pool) };
      if (typeof rv === 'string' && rv !== '') meta.resourceVersion = rv;
      await ds.update(asResource({ ...pool, metadata: meta, spec: { ...spec, disabled: true } }));
      rv = undefined;
    }
    await pools.sleep(POOL_DELETE_PAUSE_MS);
    await pools.releasePoolAffinities(String(spec.cidr));
    return (await ds.delete('IPPool', name, {
      ...(typeof rv === 'string' && rv !== '' ? { resourceVersion: rv } : {}),
    })) as unknown as Obj;
  } catch (e) {
    throw describeError(e, 'IPPool', name);
  }
}

/**
 * Delete a resource (a given resourceVersion must be current); an IPPool, with `pools`, as upstream
 * deletes it (see `deleteIPPool`). Throws a `CtlError` in upstream's words.
 */
export async function deleteResource(ds: Datastore, kind: Kind, r: Obj, pools?: PoolDeletion): Promise<Obj> {
  refuseOnKdd(ds, 'delete', kind, r);
  if (kind === 'IPPool' && pools) return deleteIPPool(ds, r, pools);
  const name = nameOf(r);
  const ns = namespaceOf(kind, r);
  const rv = metaOf(r).resourceVersion;
  try {
    return (await ds.delete(kind, name, {
      ...(ns ? { namespace: ns } : {}),
      ...(typeof rv === 'string' && rv !== '' ? { resourceVersion: rv } : {}),
    })) as unknown as Obj;
  } catch (e) {
    throw describeError(e, kind, name, ns);
  }
}

/** The stored resource; a `CtlError` (`not-found`, …) in upstream's words. */
export async function getResource(ds: Datastore, kind: Kind, name: string, namespace?: string): Promise<Obj> {
  try {
    return (await ds.get(kind, name, namespace ? { namespace } : {})) as unknown as Obj;
  } catch (e) {
    throw describeError(e, kind, name, namespace);
  }
}

/** A list, sorted as upstream shows it (tiers by order, unset last). */
export async function listResources(
  ds: Datastore,
  kind: Kind,
  namespace?: string,
): Promise<{
  /** The resources, in upstream's order. */
  items: Obj[];
  /** The store revision of the list. */
  revision: string;
}> {
  try {
    const list = await ds.list(kind, namespace ? { namespace } : {});
    const items = list.items as unknown as Obj[];
    if (kind === 'Tier') {
      const order = (t: Obj) => (t.spec as Obj | undefined)?.order;
      items.sort((a, b) => {
        const oa = order(a);
        const ob = order(b);
        if (typeof oa !== 'number') return typeof ob === 'number' ? 1 : 0;
        if (typeof ob !== 'number') return -1;
        return oa - ob;
      });
    }
    return { items, revision: list.revision };
  } catch (e) {
    throw describeError(e, kind, '', namespace);
  }
}
