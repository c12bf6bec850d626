/**
 * The typed client over any KVStore (etcd v3 or memory): upstream clientv3 semantics on upstream's
 * key layout and value JSON.
 *
 *   create/update/apply ──► validateResource (api) ──► stored-state rules ──► prepareResource
 *                                                        ──► KVStore CAS ──► result
 *   get/list/delete ──────────────────────────────────► KVStore ──────────────────────► decode
 *   watch ──► KVStore.watch(prefix, from rev+1) ──► typed WatchEvents (added/modified/deleted,
 *                                                   resync with decoded items, error, link state)
 *
 * API: see `Datastore` in types.ts.
 * Design: every write is validated first and nothing is written when any rule is broken; the
 * `DatastoreError('invalid')` carries the api's `ValidationError` (every field error) as `cause`.
 * Rules that compare with stored state (IPPool: no CIDR overlap with another pool on create; CIDR,
 * block size and a LoadBalancer use immutable on update, see ippool-checks.ts; a policy's tier
 * must exist when the policy is created, `default` always does) run after the
 * resource is valid on its own and report the same way. The overlap check is not atomic with the
 * write: two racing creates of overlapping pools can both succeed, as upstream's can.
 * Conflicts are the store's CAS failures. `apply` re-reads and retries on conflict.
 * Thread-safety: stateless apart from the store; any number of concurrent calls.
 */
import {
  API_VERSION,
  DEFAULT_TIER,
  type FieldError,
  formatFieldError,
  type IPPool,
  KINDS,
  type Kind,
  type Resource,
  type ResourceOf,
  selectorMatches,
  ValidationError,
  validateResource,
} from '@calico-ts/api';
import { DatastoreError, isDatastoreError } from './errors.js';
import { ipPoolCreateProblems, ipPoolUpdateProblems } from './ippool-checks.js';
import type { KV, KVEvent, KVStore, KVWatchMessage } from './kv/kv-store.js';
import { parseRevision } from './kv/revision.js';
import { referenceProblems } from './reference-checks.js';
import {
  decodeResource,
  isPolicyKind,
  LEGACY_DEFAULT_TIER_PREFIX,
  prepareResource,
  withRevision,
} from './resource-codec.js';
import { parseResourceKey, type ResourceKeyParts, resourceKey, resourcePrefix } from './resource-keys.js';
import type {
  CreateOptions,
  Datastore,
  DeleteOptions,
  ListOptions,
  ResourceList,
  WatchEvent,
  WatchOptions,
} from './types.js';

export interface KVDatastoreOptions {
  backend: 'etcdv3' | 'memory' | 'kubernetes';
  /** Clock for `creationTimestamp` (tests pass a fixed one). */
  now?: () => Date;
  /** UID generator for new resources (tests pass a fixed one). */
  newUid?: () => string;
}

/** Upstream's built-in, read-only profile (`libcalico-go/lib/resources/static.go`). */
export const DEFAULT_ALLOW_PROFILE = 'projectcalico-default-allow';
const MAX_APPLY_ATTEMPTS = 10;

type Meta = Resource['metadata'];

export class KVDatastore implements Datastore {
  readonly backend: 'etcdv3' | 'memory' | 'kubernetes';
  /** The creationTimestamp of a resource created now. */
  private readonly timestamp: () => string;
  private readonly newUid: () => string;

  constructor(
    private readonly store: KVStore,
    options: KVDatastoreOptions,
  ) {
    if (options.backend !== 'etcdv3' && options.backend !== 'memory' && options.backend !== 'kubernetes') {
      throw new DatastoreError(
        'config',
        `KVDatastore backend must be etcdv3, memory or kubernetes, got ${String(options.backend)}`,
      );
    }
    this.backend = options.backend;
    const now = options.now;
    this.timestamp = now ? () => formatTimestamp(now()) : currentTimestamp;
    this.newUid = options.newUid ?? (() => globalThis.crypto.randomUUID());
  }

  async get<K extends Kind>(
    kind: K,
    name: string,
    opts: { namespace?: string } = {},
  ): Promise<ResourceOf<K>> {
    if (kind === 'Profile' && name === DEFAULT_ALLOW_PROFILE) return defaultAllowProfile() as ResourceOf<K>;
    const found = await this.find(kind, name, opts.namespace);
    if (!found) throw new DatastoreError('not-found', `${subjectOf(kind, name, opts.namespace)} not found`);
    return decodeResource(found.kv, found.parts) as ResourceOf<K>;
  }

  async list<K extends Kind>(kind: K, opts: ListOptions = {}): Promise<ResourceList<K>> {
    const { selector, name } = opts;
    if (selector !== undefined) checkSelector(selector);
    const res = await this.store.list(resourcePrefix(kind, opts.namespace));
    const items: ResourceOf<K>[] = [];
    const keep = (r: Resource) =>
      (name === undefined || r.metadata.name === name) &&
      (selector === undefined || selectorMatches(selector, r.metadata.labels ?? {}));
    for (const kv of res.kvs) {
      const parts = parseResourceKey(kv.key);
      if (!parts || parts.kind !== kind) continue;
      let r: Resource;
      try {
        r = decodeResource(kv, parts);
      } catch {
        // As upstream: an entry that does not decode is left out of lists (watch reports it).
        continue;
      }
      if (keep(r)) items.push(r as ResourceOf<K>);
    }
    if (kind === 'Profile') {
      const p = defaultAllowProfile();
      if (keep(p)) items.push(p as ResourceOf<K>);
    }
    return { items, revision: res.revision };
  }

  async create<K extends Kind>(
    resource: ResourceOf<K> & { kind: K },
    opts: CreateOptions = {},
  ): Promise<ResourceOf<K>> {
    const v = this.validate(resource, 'create');
    if (!(opts.allowPoolOverlap && v.kind === 'IPPool')) await this.checkCreate(v);
    this.stamp(v.metadata);
    const parts = partsOf(v);
    const prepared = prepareResource(v);
    let kv: KV;
    try {
      kv = await this.store.create(resourceKey(parts.kind, parts.name, parts.namespace), prepared.text);
    } catch (e) {
      rethrow(e, subjectOf(parts.kind, parts.name, parts.namespace));
    }
    return withRevision(prepared.resource, kv.modRevision) as ResourceOf<K>;
  }

  /**
   * `create`, in one transaction with `guard` (a KV read from this store) written back unchanged:
   * the resource is created only while `guard` is still at its `modRevision`. When it is gone the
   * create fails `not-found`, when it changed `conflict`, naming the guard's key; nothing is written.
   * A create that reaches the store late (sent on a connection its writer had given up on) after
   * whatever the guard stands for was removed is so refused. Costs one more put: the guard's
   * modRevision moves on.
   */
  async createGuarded<K extends Kind>(
    resource: ResourceOf<K> & { kind: K },
    guard: KV,
  ): Promise<ResourceOf<K>> {
    const v = this.validate(resource, 'create');
    await this.checkCreate(v);
    this.stamp(v.metadata);
    const parts = partsOf(v);
    const prepared = prepareResource(v);
    const subject = subjectOf(parts.kind, parts.name, parts.namespace);
    let written: KV[];
    try {
      // The guard first: when both fail, that it is gone is what the caller must hear.
      written = await this.store.writeAll([
        { key: guard.key, value: guard.value, modRevision: guard.modRevision },
        { key: resourceKey(parts.kind, parts.name, parts.namespace), value: prepared.text },
      ]);
    } catch (e) {
      if (isDatastoreError(e, 'not-found') || isDatastoreError(e, 'conflict')) {
        const how = e.code === 'not-found' ? 'no longer exists' : 'has changed';
        throw new DatastoreError(e.code, `${subject} not created: ${guard.key} ${how}`, { cause: e });
      }
      rethrow(e, subject);
    }
    return withRevision(prepared.resource, written[1]!.modRevision) as ResourceOf<K>;
  }

  async update<K extends Kind>(resource: ResourceOf<K> & { kind: K }): Promise<ResourceOf<K>> {
    const v = this.validate(resource, 'update');
    const parts = partsOf(v);
    const rv = resource.metadata.resourceVersion!;
    await this.checkReferences(v);
    if (hasStoredStateRules(v)) await this.checkUpdate(v, rv);
    const prepared = prepareResource(v);
    const key = resourceKey(parts.kind, parts.name, parts.namespace);
    try {
      const kv = await this.store.update(key, prepared.text, rv);
      return withRevision(prepared.resource, kv.modRevision) as ResourceOf<K>;
    } catch (e) {
      const subject = subjectOf(parts.kind, parts.name, parts.namespace);
      const legacy = legacyKeyOf(parts);
      if (!legacy || !isDatastoreError(e, 'not-found')) rethrow(e, subject);
      const kv = await this.store
        .update(legacy, prepared.text, rv)
        .catch((e2: unknown) => rethrow(e2, subject));
      return withRevision(prepared.resource, kv.modRevision) as ResourceOf<K>;
    }
  }

  async apply<K extends Kind>(resource: ResourceOf<K> & { kind: K }): Promise<ResourceOf<K>> {
    const v = this.validate(resource, 'apply');
    const parts = partsOf(v);
    const subject = subjectOf(parts.kind, parts.name, parts.namespace);
    for (let attempt = 0; attempt < MAX_APPLY_ATTEMPTS; attempt++) {
      const found = await this.find(parts.kind, parts.name, parts.namespace);
      try {
        if (!found) {
          await this.checkCreate(v);
          this.stamp(v.metadata);
          const prepared = prepareResource(v);
          const kv = await this.store.create(
            resourceKey(parts.kind, parts.name, parts.namespace),
            prepared.text,
          );
          return withRevision(prepared.resource, kv.modRevision) as ResourceOf<K>;
        }
        await this.checkReferences(v);
        // Keep what the store owns: identity and creation time of the existing object.
        const current = decodeResource(found.kv, found.parts);
        throwIfProblems(v, storedStateProblems(v, current));
        const meta: Meta = {
          ...v.metadata,
          uid: current.metadata.uid ?? v.metadata.uid,
          creationTimestamp: current.metadata.creationTimestamp ?? v.metadata.creationTimestamp,
        };
        const prepared = prepareResource({ ...v, metadata: meta } as Resource);
        const kv = await this.store.update(found.kv.key, prepared.text, found.kv.modRevision);
        return withRevision(prepared.resource, kv.modRevision) as ResourceOf<K>;
      } catch (e) {
        // A create that finds nothing to create into (the Kubernetes datastore's Node of a missing
        // Kubernetes Node) is no race: report it rather than retry.
        if (!found && isDatastoreError(e, 'not-found')) rethrow(e, subject);
        if (
          isDatastoreError(e, 'conflict') ||
          isDatastoreError(e, 'not-found') ||
          isDatastoreError(e, 'already-exists')
        ) {
          continue; // someone else wrote in between: read again
        }
        rethrow(e, subject);
      }
    }
    throw new DatastoreError(
      'conflict',
      `${subject}: still changing under us after ${MAX_APPLY_ATTEMPTS} attempts`,
    );
  }

  async delete<K extends Kind>(kind: K, name: string, opts: DeleteOptions = {}): Promise<ResourceOf<K>> {
    const subject = subjectOf(kind, name, opts.namespace);
    if (kind === 'Profile' && name === DEFAULT_ALLOW_PROFILE) {
      throw new DatastoreError('invalid', `${subject} is built in and cannot be deleted`);
    }
    if (opts.resourceVersion !== undefined) parseRevision(opts.resourceVersion, 'metadata.resourceVersion');
    const parts: ResourceKeyParts = {
      kind,
      name,
      ...(KINDS[kind].namespaced ? { namespace: opts.namespace } : {}),
    };
    const key = resourceKey(kind, name, opts.namespace);
    let kv: KV;
    let at = parts;
    try {
      kv = await this.store.delete(key, opts.resourceVersion);
    } catch (e) {
      const legacy = legacyKeyOf(parts);
      if (!legacy || !isDatastoreError(e, 'not-found')) rethrow(e, subject);
      kv = await this.store.delete(legacy, opts.resourceVersion).catch((e2: unknown) => rethrow(e2, subject));
      at = { ...parts, name: legacyNameOf(name) };
    }
    try {
      return decodeResource(kv, at) as ResourceOf<K>;
    } catch {
      return skeleton(at, kv.modRevision) as ResourceOf<K>;
    }
  }

  watch<K extends Kind>(kind: K, opts: WatchOptions = {}): AsyncIterable<WatchEvent<K>> {
    const prefix = resourcePrefix(kind, opts.namespace);
    const fromRevision =
      opts.revision === undefined ? undefined : String(parseRevision(opts.revision, 'revision') + 1);
    const inner = this.store.watch(prefix, { fromRevision, signal: opts.signal });
    return mapWatch<K>(kind, inner);
  }

  async close(): Promise<void> {
    await this.store.close();
  }

  /** The stored KV of a resource, at its key or (policies of the default tier) its pre-v3.32 key. */
  private async find(
    kind: Kind,
    name: string,
    namespace: string | undefined,
  ): Promise<{ kv: KV; parts: ResourceKeyParts } | undefined> {
    const parts: ResourceKeyParts = { kind, name, ...(KINDS[kind].namespaced ? { namespace } : {}) };
    const kv = await this.store.get(resourceKey(kind, name, namespace));
    if (kv) return { kv, parts };
    const legacy = legacyKeyOf(parts);
    if (!legacy) return undefined;
    const old = await this.store.get(legacy);
    return old ? { kv: old, parts: { ...parts, name: legacyNameOf(name) } } : undefined;
  }

  /**
   * Fill in what the store owns on create: a uid and the creation time. `meta` is the validated
   * copy (never the caller's object), so it is filled in place.
   */
  private stamp(meta: Meta): Meta {
    if (!meta.uid) meta.uid = this.newUid();
    if (!meta.creationTimestamp) meta.creationTimestamp = this.timestamp();
    return meta;
  }

  /**
   * Rules of a create that depend on other stored objects: an IPPool's CIDR must not overlap another
   * pool's (one list of the pools); a policy's tier must exist (upstream clientv3's policy Create
   * gets the tier first). The `default` tier always exists (client initialisation makes it and it
   * cannot be deleted), so it is not looked up. Throws `invalid`.
   */
  private async checkCreate(v: Resource): Promise<void> {
    await this.checkReferences(v);
    if (v.kind === 'IPPool') {
      const pools = await this.list('IPPool');
      throwIfProblems(v, ipPoolCreateProblems(v, pools.items));
      return;
    }
    if (!TIERED_KINDS.has(v.kind)) return;
    const tier = (v.spec as { tier?: string }).tier || DEFAULT_TIER;
    if (tier === DEFAULT_TIER) return;
    if (await this.find('Tier', tier, undefined)) return;
    throwIfProblems(v, [
      { path: 'spec.tier', rule: `tier "${tier}" does not exist; create the Tier before policies in it` },
    ]);
  }

  /** References that must name stored objects, on create and on update (reference-checks.ts). */
  private async checkReferences(v: Resource): Promise<void> {
    throwIfProblems(
      v,
      await referenceProblems(v, async (kind, name) => !!(await this.find(kind, name, undefined))),
    );
  }

  /**
   * Rules of an update that compare with the stored version (an IPPool's CIDR and block size are
   * immutable). The version compared is the one the update replaces: when the stored revision is not
   * the given one, the update fails `conflict` here, as its compare-and-swap would.
   */
  private async checkUpdate(v: Resource, rv: string): Promise<void> {
    const parts = partsOf(v);
    const subject = subjectOf(parts.kind, parts.name, parts.namespace);
    const found = await this.find(parts.kind, parts.name, parts.namespace);
    if (!found) rethrow(new DatastoreError('not-found', `${subject} not found`), subject);
    if (BigInt(found.kv.modRevision) !== BigInt(rv)) {
      rethrow(new DatastoreError('conflict', `${subject} is at a different revision`), subject);
    }
    throwIfProblems(v, storedStateProblems(v, decodeResource(found.kv, found.parts)));
  }

  /** Validate and default a write; throws `invalid` with every field error and writes nothing. */
  private validate(input: Resource, op: 'create' | 'update' | 'apply'): Resource {
    const doc = input as unknown as { kind?: unknown; metadata?: Partial<Meta> };
    const meta = (doc?.metadata ?? {}) as Partial<Meta>;
    const extra: FieldError[] = [];
    if (op === 'create' && meta.resourceVersion) {
      extra.push({ path: 'metadata.resourceVersion', rule: 'must not be set when creating a resource' });
    }
    if (op === 'update') {
      if (!meta.resourceVersion) {
        extra.push({
          path: 'metadata.resourceVersion',
          rule: 'is required to update a resource (get it first)',
        });
      } else if (!/^\d+$/.test(meta.resourceVersion)) {
        extra.push({ path: 'metadata.resourceVersion', rule: 'must be a revision number' });
      }
      if (!meta.uid) extra.push({ path: 'metadata.uid', rule: 'is required to update a resource' });
      if (!meta.creationTimestamp) {
        extra.push({ path: 'metadata.creationTimestamp', rule: 'is required to update a resource' });
      }
    }
    if (doc?.kind === 'Profile' && meta.name === DEFAULT_ALLOW_PROFILE) {
      extra.push({ path: 'metadata.name', rule: `${DEFAULT_ALLOW_PROFILE} is built in and read-only` });
    }
    const r = validateResource(input);
    if (r.ok && extra.length === 0) return r.value;
    const kindText = typeof doc?.kind === 'string' ? doc.kind : 'resource';
    const subject =
      typeof meta.name === 'string' && meta.name !== ''
        ? `${kindText} "${meta.namespace ? `${meta.namespace}/` : ''}${meta.name}"`
        : kindText;
    const errors = [...(r.ok ? [] : r.errors), ...extra].sort((a, b) =>
      a.path < b.path ? -1 : a.path > b.path ? 1 : 0,
    );
    if (errors.length > 0 || !r.ok) throw invalid(subject, errors);
    return r.value;
  }
}

/** `invalid` with every field error, as a rejected write reports it. */
function invalid(subject: string, errors: readonly FieldError[]): DatastoreError {
  return new DatastoreError(
    'invalid',
    `${subject} was not written: ${errors.map(formatFieldError).join('; ')}`,
    {
      cause: new ValidationError(subject, errors),
    },
  );
}

/** Kinds whose updates are checked against the stored version. */
/** The kinds whose objects name a tier (`spec.tier`, default `default`), which must exist on create. */
const TIERED_KINDS: ReadonlySet<Kind> = new Set([
  'NetworkPolicy',
  'GlobalNetworkPolicy',
  'StagedNetworkPolicy',
  'StagedGlobalNetworkPolicy',
]);

function hasStoredStateRules(v: Resource): v is IPPool {
  return v.kind === 'IPPool';
}

/** What is wrong with replacing `stored` by the validated `v`, for kinds with such rules. */
function storedStateProblems(v: Resource, stored: Resource): FieldError[] {
  return hasStoredStateRules(v) ? ipPoolUpdateProblems(v, stored as IPPool) : [];
}

function throwIfProblems(v: Resource, problems: readonly FieldError[]): void {
  if (problems.length === 0) return;
  const parts = partsOf(v);
  throw invalid(subjectOf(parts.kind, parts.name, parts.namespace), problems);
}

async function* mapWatch<K extends Kind>(
  kind: K,
  inner: AsyncIterable<KVWatchMessage>,
): AsyncGenerator<WatchEvent<K>> {
  for await (const msg of inner) {
    switch (msg.kind) {
      case 'events':
        for (const ev of msg.events) {
          const out = mapEvent<K>(kind, ev, msg.revision);
          if (out) yield out;
        }
        break;
      case 'resync': {
        const items: ResourceOf<K>[] = [];
        const errors: WatchEvent<K>[] = [];
        for (const kv of msg.list.kvs) {
          const parts = parseResourceKey(kv.key);
          if (!parts || parts.kind !== kind) continue;
          try {
            items.push(decodeResource(kv, parts) as ResourceOf<K>);
          } catch (e) {
            errors.push({ kind: 'error', key: kv.key, error: e as Error, revision: msg.list.revision });
          }
        }
        if (kind === 'Profile') items.push(defaultAllowProfile() as ResourceOf<K>);
        yield { kind: 'resync', items, revision: msg.list.revision, reason: msg.reason };
        yield* errors;
        break;
      }
      case 'disconnected':
        yield { kind: 'disconnected', error: msg.error };
        break;
      case 'reconnected':
        yield { kind: 'reconnected' };
        break;
    }
  }
}

function mapEvent<K extends Kind>(kind: K, ev: KVEvent, revision: string): WatchEvent<K> | undefined {
  const key = ev.kind === 'put' ? ev.kv.key : ev.key;
  const parts = parseResourceKey(key);
  if (!parts || parts.kind !== kind) return undefined;
  if (ev.kind === 'delete') {
    let resource: Resource;
    try {
      resource = ev.prev ? decodeResource(ev.prev, parts) : skeleton(parts, ev.modRevision);
    } catch {
      resource = skeleton(parts, ev.prev?.modRevision ?? ev.modRevision);
    }
    return { kind: 'deleted', resource: resource as ResourceOf<K>, revision };
  }
  let resource: Resource;
  try {
    resource = decodeResource(ev.kv, parts);
  } catch (e) {
    return { kind: 'error', key, error: e as Error, revision };
  }
  if (ev.kv.createRevision === ev.kv.modRevision)
    return { kind: 'added', resource: resource as ResourceOf<K>, revision };
  let previous: Resource | undefined;
  try {
    previous = ev.prev ? decodeResource(ev.prev, parts) : undefined;
  } catch {
    previous = undefined;
  }
  return previous
    ? { kind: 'modified', resource: resource as ResourceOf<K>, previous: previous as ResourceOf<K>, revision }
    : { kind: 'modified', resource: resource as ResourceOf<K>, revision };
}

/** What we know of a deleted object whose last value is gone or unreadable: its identity. */
function skeleton(parts: ResourceKeyParts, revision: string): Resource {
  const metadata: Meta = { name: parts.name, resourceVersion: revision };
  if (parts.namespace !== undefined) metadata.namespace = parts.namespace;
  return { apiVersion: API_VERSION, kind: parts.kind, metadata, spec: {} } as unknown as Resource;
}

function defaultAllowProfile(): Resource {
  return {
    apiVersion: API_VERSION,
    kind: 'Profile',
    metadata: { name: DEFAULT_ALLOW_PROFILE, resourceVersion: '0' },
    spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] },
  } as unknown as Resource;
}

function partsOf(r: Resource): ResourceKeyParts {
  const kind = r.kind as Kind;
  return KINDS[kind].namespaced
    ? { kind, name: r.metadata.name, namespace: r.metadata.namespace }
    : { kind, name: r.metadata.name };
}

/** Pre-v3.32 key of a default-tier policy (`default.<name>`), or undefined when there is none. */
function legacyKeyOf(parts: ResourceKeyParts): string | undefined {
  if (!isPolicyKind(parts.kind) || parts.name.startsWith(LEGACY_DEFAULT_TIER_PREFIX)) return undefined;
  return resourceKey(parts.kind, legacyNameOf(parts.name), parts.namespace);
}

function legacyNameOf(name: string): string {
  return `${LEGACY_DEFAULT_TIER_PREFIX}${name}`;
}

function subjectOf(kind: Kind, name: string, namespace?: string): string {
  return `${kind} "${namespace ? `${namespace}/` : ''}${name}"`;
}

/** Go's metav1.Time JSON form: RFC 3339 in UTC, whole seconds. */
export function formatTimestamp(d: Date): string {
  const iso = d.toISOString();
  // "2026-01-02T03:04:05.678Z" → "2026-01-02T03:04:05Z" (years 0–9999; others keep their form)
  return iso.length === 24 ? `${iso.slice(0, 19)}Z` : iso.replace(/\.\d{3}Z$/, 'Z');
}

let lastSecond = -1;
let lastStamp = '';

/** `formatTimestamp` of the wall clock now, formatted once per second. */
function currentTimestamp(): string {
  const second = Math.floor(Date.now() / 1000);
  if (second !== lastSecond) {
    lastStamp = formatTimestamp(new Date(second * 1000));
    lastSecond = second;
  }
  return lastStamp;
}

function checkSelector(selector: string): void {
  try {
    selectorMatches(selector, {});
  } catch (e) {
    throw new DatastoreError('invalid', `list selector: ${(e as Error).message}`, { cause: e });
  }
}

/** Re-raise a store error with the resource named; non-datastore errors pass through unchanged. */
function rethrow(e: unknown, subject: string): never {
  if (e instanceof DatastoreError) {
    switch (e.code) {
      case 'already-exists':
        throw new DatastoreError(e.code, `${subject} already exists`, { cause: e });
      case 'not-found':
        throw new DatastoreError(e.code, `${subject} not found`, { cause: e });
      case 'conflict':
        throw new DatastoreError(
          e.code,
          `${subject} was changed by someone else since it was read (resourceVersion is stale); get it again and retry`,
          { cause: e },
        );
      default:
        throw e;
    }
  }
  throw e;
}
