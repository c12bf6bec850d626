/**
 * Resource values in etcd, byte for byte as upstream's etcdv3 backend writes them
 * (`libcalico-go/lib/clientv3/resources.go`, `backend/etcdv3/etcdv3.go`):
 *
 * - the whole v3 object as Go's encoding/json renders upstream's struct: `kind`, `apiVersion`,
 *   `metadata` and `spec` (and `status` for the kinds whose Go type has one), each in Go field
 *   order, with exactly the fields Go writes (see go-struct-encoder.ts and the api's
 *   go-encoding.ts), map keys sorted, and `<`, `>`, `&`, U+2028, U+2029 escaped;
 * - `resourceVersion` and `selfLink` cleared before writing (the revision is etcd's mod_revision);
 * - policies carry the annotation `projectcalico.org/metadata: {"name":"<name>"}`, removed on read;
 *   keys written before v3.32 as `default.<name>` read back as `<name>`.
 *
 * Pure calculation: no I/O.
 */
import { API_VERSION, applyDefaults, type Kind, POLICY_KINDS, type Resource } from '@calico-ts/api';
import { KIND_DEFINITIONS, objectMetaSchema } from '@calico-ts/api/internal';
import { DatastoreError } from './errors.js';
import { goJson } from './go-json.js';
import { type Encode, goEncoderFor, goSortedKeys, goStructEncoder } from './go-struct-encoder.js';
import type { KV } from './kv/kv-store.js';
import { kvJson } from './kv/parsed-kv.js';
import type { ResourceKeyParts } from './resource-keys.js';

export const POLICY_NAME_ANNOTATION = 'projectcalico.org/metadata';
/** Prefix of policy keys written by ≤v3.31 for the default tier. */
export const LEGACY_DEFAULT_TIER_PREFIX = 'default.';

const POLICY_KIND_SET: ReadonlySet<string> = new Set(POLICY_KINDS);

export function isPolicyKind(kind: Kind): boolean {
  return POLICY_KIND_SET.has(kind);
}

/**
 * ObjectMeta in Go field order; the store clears resourceVersion and selfLink. Compiled on first
 * use: a program that only reads (calicoctl get, --version) never pays for it.
 */
let metadataEncoder: Encode | undefined;
const encodeMetadata: Encode = (v) => {
  metadataEncoder ??= goStructEncoder(objectMetaSchema, ['resourceVersion', 'selfLink']);
  return metadataEncoder(v);
};

interface KindCodec {
  readonly spec: Encode;
  readonly status?: { readonly encode: Encode; readonly always: boolean };
  /** Read defaults that a freshly written value may still lack (none when they are the write ones). */
  readonly readDefaults: boolean;
}

const kindCodecs = new Map<Kind, KindCodec>();

function codecOf(kind: Kind): KindCodec {
  let c = kindCodecs.get(kind);
  if (!c) {
    const def = KIND_DEFINITIONS[kind] as (typeof KIND_DEFINITIONS)[Kind] | undefined;
    c = {
      spec: def ? goEncoderFor(def.spec) : (v) => v,
      ...(def?.status
        ? { status: { encode: goEncoderFor(def.status.schema), always: def.status.always } }
        : {}),
      readDefaults: def?.defaultOnRead !== undefined && def.defaultOnRead !== def.defaultOnWrite,
    };
    kindCodecs.set(kind, c);
  }
  return c;
}

/** What a write stores, and what a read of it will return (less `resourceVersion`). */
export interface PreparedResource {
  /** The JSON text for the store. */
  text: string;
  /** The resource as a read will decode it: stored metadata only, no policy name annotation. */
  resource: Resource;
}

/** The JSON text to store for a validated, defaulted resource. */
export function encodeResource(resource: Resource): string {
  return prepareResource(resource).text;
}

/**
 * Encode a validated, defaulted resource, and also return the object a later read of these bytes
 * decodes to, so a write can answer without parsing what it just wrote.
 */
export function prepareResource(resource: Resource): PreparedResource {
  const kind = resource.kind as Kind;
  const codec = codecOf(kind);
  const metadata = encodeMetadata(resource.metadata) as Record<string, unknown>;
  const spec = codec.spec(resource.spec ?? {});
  const out: Record<string, unknown> = { kind, apiVersion: API_VERSION, metadata, spec };
  if (codec.status) {
    const status = (resource as { status?: unknown }).status;
    if (codec.status.always) out.status = codec.status.encode(status ?? {});
    else if (status !== undefined && status !== null) out.status = codec.status.encode(status);
  }
  let text: string;
  if (isPolicyKind(kind)) {
    const annotations: Record<string, unknown> = {
      ...(metadata.annotations as Record<string, unknown> | undefined),
      [POLICY_NAME_ANNOTATION]: goJson({ name: resource.metadata.name }),
    };
    text = goJson({ ...out, metadata: { ...metadata, annotations: sortKeys(annotations) } });
  } else {
    text = goJson(out);
  }
  const read = codec.readDefaults ? applyDefaults(out as unknown as Resource) : out;
  return { text, resource: read as unknown as Resource };
}

/**
 * A prepared resource as it reads back at `revision`. Sets `resourceVersion` in place: the object
 * from `prepareResource` is fresh and not shared.
 */
export function withRevision(resource: Resource, revision: string): Resource {
  resource.metadata.resourceVersion = revision;
  return resource;
}

/**
 * Decode a stored value into a resource: name and namespace checked against the key, the policy
 * name annotation removed, `resourceVersion` set to the key's mod revision, read-path defaults
 * applied. Throws `invalid` for a value that is not a resource of the key's kind.
 */
export function decodeResource(kv: KV, parts: ResourceKeyParts): Resource {
  let doc: unknown;
  try {
    // A KV that arrived parsed (Kubernetes) is copied, not stringified and parsed again.
    doc = kvJson(kv);
  } catch (e) {
    throw new DatastoreError('invalid', `${kv.key}: stored value is not JSON: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new DatastoreError('invalid', `${kv.key}: stored value is not a JSON object`);
  }
  const obj = doc as Record<string, unknown>;
  if (obj.kind !== undefined && obj.kind !== parts.kind) {
    throw new DatastoreError(
      'invalid',
      `${kv.key}: stored kind ${JSON.stringify(obj.kind)} is not ${parts.kind}`,
    );
  }
  const rawMeta = obj.metadata ?? {};
  if (rawMeta === null || typeof rawMeta !== 'object' || Array.isArray(rawMeta)) {
    throw new DatastoreError('invalid', `${kv.key}: stored metadata is not an object`);
  }
  // The parsed object is ours alone: adjust it in place rather than copying it.
  let meta = rawMeta as Record<string, unknown>;
  if (isPolicyKind(parts.kind)) {
    meta = withoutPolicyNameAnnotation(parts, meta, kv.key);
  } else if (typeof meta.name !== 'string' || meta.name === '') {
    meta.name = parts.name;
  }
  if (meta.selfLink !== undefined) delete meta.selfLink; // never stored by upstream; rare
  if (parts.namespace !== undefined) meta.namespace = parts.namespace;
  meta.resourceVersion = kv.modRevision;
  if (
    obj.spec !== undefined &&
    (obj.spec === null || typeof obj.spec !== 'object' || Array.isArray(obj.spec))
  ) {
    throw new DatastoreError('invalid', `${kv.key}: stored spec is not an object`);
  }
  const resource: Record<string, unknown> = {
    apiVersion: API_VERSION,
    kind: parts.kind,
    metadata: meta,
    spec: obj.spec ?? {},
  };
  for (const k in obj) {
    if (k !== 'apiVersion' && k !== 'kind' && k !== 'metadata' && k !== 'spec') resource[k] = obj[k];
  }
  return applyDefaults(resource as unknown as Resource);
}

/**
 * A stored policy's metadata as a reader sees it: the name annotation taken out (and used as the
 * name), pre-v3.32 `default.<name>` keys read as `<name>`. Returns a new object.
 */
function withoutPolicyNameAnnotation(
  parts: ResourceKeyParts,
  meta: Record<string, unknown>,
  key: string,
): Record<string, unknown> {
  const annotations = meta.annotations;
  const map =
    annotations !== null && typeof annotations === 'object'
      ? (annotations as Record<string, unknown>)
      : undefined;
  const note = map?.[POLICY_NAME_ANNOTATION];
  let name: string | undefined;
  let rest: Record<string, unknown> | undefined;
  if (map && typeof note === 'string') {
    let parsed: { name?: unknown };
    try {
      parsed = JSON.parse(note) as { name?: unknown };
    } catch (e) {
      throw new DatastoreError('invalid', `${key}: annotation ${POLICY_NAME_ANNOTATION} is not JSON`, {
        cause: e,
      });
    }
    if (typeof parsed.name === 'string' && parsed.name !== '') {
      name = parsed.name;
      for (const k in map) {
        if (k === POLICY_NAME_ANNOTATION) continue;
        rest ??= {};
        rest[k] = map[k];
      }
    }
  }
  const out: Record<string, unknown> = {};
  for (const k in meta) {
    if (k === 'annotations' && name !== undefined) {
      if (rest) out.annotations = rest;
    } else out[k] = meta[k];
  }
  out.name =
    name ??
    (parts.name.startsWith(LEGACY_DEFAULT_TIER_PREFIX)
      ? parts.name.slice(LEGACY_DEFAULT_TIER_PREFIX.length)
      : parts.name);
  return out;
}

function sortKeys(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of goSortedKeys(o)) out[k] = o[k];
  return out;
}
