/**
 * The verbs over the datastore, with calicoctl's operations doing the work (`@calico-ts/ctl`):
 *
 *   create   admit ──► createResource (only name, namespace, labels, annotations kept)
 *   update   admit ──► updateResource (a given resourceVersion must be current; labels and
 *            annotations as given; an update that changes nothing writes nothing)
 *   patch    get ──► applyPatch ──► admit ──► updateResource at the revision read; retried when
 *            someone else wrote in between, unless the patch names a resourceVersion
 *   delete   deleteResource (an IPPool is disabled, its affinities released, then deleted), or
 *            deleteNode on etcd (its endpoints, addresses, affinities and node-scoped config go too)
 *   get/list getResource / listResources, then selectors and paging
 *
 * `dryRun`: everything is checked (validation, existence, a stale resourceVersion) and nothing is
 * written; the answer is the object as it would be stored, defaulted. Rules that compare with
 * other stored objects (an IPPool overlapping another) are checked by the write itself, so a dry
 * run does not see them.
 *
 * API: `ResourceStore`; every method throws `ApiServerError` (through `classify`).
 * Thread-safety: stateless apart from the datastore; any number of concurrent requests.
 */
import { validateResource } from '@calico-ts/api';
import type { Logger } from '@calico-ts/api/log';
import {
  createResource,
  deleteNode,
  deleteResource,
  getResource,
  listResources,
  type NodeIpam,
  type PoolDeletion,
  replaceForUpdate,
  unsupportedOperation,
  updateResource,
} from '@calico-ts/ctl';
import type { Datastore } from '@calico-ts/datastore';
import { admit } from './admission.js';
import { classify, conflictError } from './classify.js';
import { ApiServerError } from './errors.js';
import { pageOf, sortItems } from './paging.js';
import { applyPatch, type PatchType } from './patch.js';
import { GROUP, GROUP_VERSION, type ServedResource } from './resources.js';
import type { FieldPredicate, LabelPredicate } from './selectors.js';
import type { ListMeta } from './table.js';

type Obj = Record<string, unknown>;

const PATCH_ATTEMPTS = 5;

export interface StorageDeps {
  readonly datastore: Datastore;
  /** IPAM for deleting an IPPool (its block affinities); without it a pool is deleted alone. */
  readonly pools?: PoolDeletion;
  /** IPAM for deleting a Node on etcd (its addresses and affinities). */
  readonly nodeIpam?: NodeIpam;
  readonly log: Logger;
}

export interface ListQuery {
  readonly namespace?: string;
  readonly labels: LabelPredicate;
  readonly fields: FieldPredicate;
  readonly limit?: string | null;
  readonly continue?: string | null;
}

export interface Written {
  readonly object: Obj;
  readonly warnings: string[];
  /** A create that made the object (201), as against one that found it (dry run of update: 200). */
  readonly created?: boolean;
}

export interface DeleteOptions {
  readonly resourceVersion?: string;
  readonly uid?: string;
  readonly dryRun: boolean;
}

function metaOf(o: Obj): Obj {
  return (o.metadata ?? {}) as Obj;
}

/** The object as it would be stored: validated and defaulted (dry run). */
function asStored(r: Obj): Obj {
  const v = validateResource(r);
  return v.ok ? (v.value as unknown as Obj) : r;
}

export class ResourceStore {
  constructor(private readonly deps: StorageDeps) {}

  get backend(): Datastore['backend'] {
    return this.deps.datastore.backend;
  }

  async get(r: ServedResource, name: string, namespace?: string): Promise<Obj> {
    try {
      return await getResource(this.deps.datastore, r.kind, name, namespace);
    } catch (e) {
      throw classify(e, { resource: r, name, verb: 'get' });
    }
  }

  /** Every matching object in page order, with the list's revision. */
  async list(r: ServedResource, q: ListQuery): Promise<{ items: Obj[]; list: ListMeta }> {
    let listed: { items: Obj[]; revision: string };
    try {
      listed = await listResources(this.deps.datastore, r.kind, q.namespace);
    } catch (e) {
      throw classify(e, { resource: r, verb: 'list' });
    }
    const matching = listed.items.filter((o) => {
      const m = metaOf(o);
      const ns = typeof m.namespace === 'string' ? m.namespace : undefined;
      return q.fields(String(m.name ?? ''), ns) && q.labels((m.labels ?? {}) as Record<string, string>);
    });
    const page = pageOf(sortItems(matching), q.limit ?? null, q.continue ?? null);
    return {
      items: page.items,
      list: {
        resourceVersion: listed.revision,
        ...(page.continue !== undefined
          ? { continue: page.continue, remainingItemCount: page.remainingItemCount }
          : {}),
      },
    };
  }

  async create(
    r: ServedResource,
    namespace: string | undefined,
    body: unknown,
    dryRun: boolean,
  ): Promise<Written> {
    const a = admit({ verb: 'create', resource: r, body, ...(namespace !== undefined ? { namespace } : {}) });
    const target = { resource: r, name: a.name, verb: 'create' as const };
    try {
      if (dryRun) {
        await this.mustBeMissing(r, a.name, namespace);
        return { object: asStored(a.resource), warnings: a.warnings, created: true };
      }
      const object = await createResource(this.deps.datastore, r.kind, a.resource);
      this.deps.log.info({ kind: r.kind, name: a.name, namespace }, 'created');
      return { object, warnings: a.warnings, created: true };
    } catch (e) {
      throw classify(e, target);
    }
  }

  private async mustBeMissing(r: ServedResource, name: string, namespace: string | undefined): Promise<void> {
    try {
      await this.get(r, name, namespace);
    } catch (e) {
      if (e instanceof ApiServerError && e.code === 'not-found') return;
      throw e;
    }
    throw new ApiServerError('already-exists', `${r.plural}.${GROUP} "${name}" already exists`, {
      details: { name, group: GROUP, kind: r.plural },
    });
  }

  async update(
    r: ServedResource,
    namespace: string | undefined,
    name: string,
    body: unknown,
    dryRun: boolean,
  ): Promise<Written> {
    const a = admit({
      verb: 'update',
      resource: r,
      name,
      body,
      ...(namespace !== undefined ? { namespace } : {}),
    });
    return { object: await this.write(r, namespace, name, a.resource, dryRun), warnings: a.warnings };
  }

  /** An update of `next`: conflict when its resourceVersion is not the stored one. */
  private async write(
    r: ServedResource,
    namespace: string | undefined,
    name: string,
    next: Obj,
    dryRun: boolean,
  ): Promise<Obj> {
    const target = { resource: r, name, verb: 'update' as const };
    try {
      if (dryRun) {
        const stored = await this.get(r, name, namespace);
        const rv = metaOf(next).resourceVersion;
        if (typeof rv === 'string' && rv !== '' && rv !== metaOf(stored).resourceVersion) {
          throw conflictError(r, name);
        }
        return asStored(replaceForUpdate(stored, next));
      }
      const object = await updateResource(this.deps.datastore, r.kind, next, {
        skipUnchanged: true,
        metadata: 'replace',
      });
      this.deps.log.info({ kind: r.kind, name, namespace }, 'updated');
      return object;
    } catch (e) {
      throw classify(e, target);
    }
  }

  async patch(
    r: ServedResource,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    text: string,
    dryRun: boolean,
  ): Promise<Written> {
    for (let attempt = 1; ; attempt++) {
      const stored = await this.get(r, name, namespace);
      const patched = applyPatch(type, stored, text);
      const wanted = metaOf(patched).resourceVersion;
      const pinned = typeof wanted === 'string' && wanted !== '' && wanted !== metaOf(stored).resourceVersion;
      const a = admit({
        verb: 'patch',
        resource: r,
        name,
        body: patched,
        ...(namespace !== undefined ? { namespace } : {}),
      });
      try {
        return { object: await this.write(r, namespace, name, a.resource, dryRun), warnings: a.warnings };
      } catch (e) {
        // Someone wrote between the read and the write: patch what is there now.
        const retry =
          !pinned && e instanceof ApiServerError && e.code === 'conflict' && attempt < PATCH_ATTEMPTS;
        if (!retry) throw e;
      }
    }
  }

  async delete(
    r: ServedResource,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions,
  ): Promise<Obj> {
    const refused = unsupportedOperation('delete', r.kind, name);
    if (refused)
      throw new ApiServerError('method-not-allowed', refused, {
        details: { name, group: GROUP, kind: r.plural },
      });
    const target = { resource: r, name, verb: 'delete' as const };
    if (opts.uid !== undefined || opts.dryRun) {
      const stored = await this.get(r, name, namespace);
      const uid = metaOf(stored).uid;
      if (opts.uid !== undefined && uid !== opts.uid) {
        throw new ApiServerError(
          'conflict',
          `Precondition failed: UID in precondition: ${opts.uid}, UID in object meta: ${String(uid ?? '')}`,
          { details: { name, group: GROUP, kind: r.plural } },
        );
      }
      if (opts.dryRun) {
        if (opts.resourceVersion && opts.resourceVersion !== metaOf(stored).resourceVersion)
          throw conflictError(r, name);
        return stored;
      }
    }
    const { datastore: ds } = this.deps;
    const rv = opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {};
    try {
      const object =
        r.kind === 'Node' && ds.backend !== 'kubernetes'
          ? await deleteNode(ds, name, {
              ...rv,
              ...(this.deps.nodeIpam ? { ipam: this.deps.nodeIpam } : {}),
              warn: (m) => this.deps.log.warn({ node: name }, m),
            })
          : await deleteResource(
              ds,
              r.kind,
              {
                apiVersion: GROUP_VERSION,
                kind: r.kind,
                metadata: { name, ...(namespace ? { namespace } : {}), ...rv },
              },
              this.deps.pools,
            );
      this.deps.log.info({ kind: r.kind, name, namespace }, 'deleted');
      return object;
    } catch (e) {
      throw classify(e, target);
    }
  }

  /**
   * Delete every object the query selects; objects Calico derives from Kubernetes ones (a
   * Kubernetes NetworkPolicy's `knp.default.*`, a Namespace's profile) are left, as they go with
   * what they come from. Returns the deleted objects.
   */
  async deleteCollection(
    r: ServedResource,
    q: ListQuery,
    dryRun: boolean,
  ): Promise<{ items: Obj[]; list: ListMeta }> {
    const { items, list } = await this.list(r, { ...q, limit: null, continue: null });
    const deleted: Obj[] = [];
    for (const o of items) {
      const m = metaOf(o);
      const ns = typeof m.namespace === 'string' ? m.namespace : undefined;
      try {
        deleted.push(await this.delete(r, ns, String(m.name ?? ''), { dryRun }));
      } catch (e) {
        if (e instanceof ApiServerError && (e.code === 'method-not-allowed' || e.code === 'not-found'))
          continue;
        throw e;
      }
    }
    return { items: deleted, list };
  }
}

/** A list response: `<Kind>List` with its items and list metadata. */
export function listObject(r: ServedResource, items: readonly Obj[], list: ListMeta): Obj {
  return {
    apiVersion: GROUP_VERSION,
    kind: `${r.kind}List`,
    metadata: {
      ...(list.resourceVersion !== undefined ? { resourceVersion: list.resourceVersion } : {}),
      ...(list.continue !== undefined ? { continue: list.continue } : {}),
      ...(list.remainingItemCount !== undefined ? { remainingItemCount: list.remainingItemCount } : {}),
    },
    items,
  };
}
