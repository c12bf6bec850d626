/**
 * Calico's etcd key space mapped onto Kubernetes objects, as upstream's Kubernetes datastore
 * stores them (`libcalico-go/lib/backend/k8s/resources`): every Calico kind with a CRD is a
 * `crd.projectcalico.org/v1` object of the same kind, name (and namespace) and spec; IPAM records
 * are IPAMBlock, BlockAffinity, IPAMHandle and IPAMConfig objects.
 *
 *   /calico/resources/v3/projectcalico.org/<plural>/[<ns>/]<name> ⇄ <plural>.crd.projectcalico.org
 *   /calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26              ⇄ ipamblocks/10-0-0-0-26
 *   /calico/ipam/v2/host/<node>/ipv4/block/10.0.0.0-26             ⇄ blockaffinities/<node>-10-0-0-0-26
 *   /calico/ipam/v2/handle/<handleID>                              ⇄ ipamhandles/<handleid lower-cased>
 *   /calico/ipam/v2/config                                         ⇄ ipamconfigs/default
 *
 * Values: a resource's v3 metadata that Kubernetes does not keep itself (uid, creationTimestamp…)
 * travels in the annotation `projectcalico.org/metadata`, as upstream writes it; IPAM records
 * change field names (`affinity_claim_time` ⇄ `affinityClaimTime`, `alternateOwnerAttrs` ⇄
 * `alternate`, `strict_affinity` ⇄ `strictAffinity`, a block affinity's `deleted` is the string
 * "true"/"false"). Integers beyond 2^53 stay exact (`parseJsonExact` / `goJson`).
 *
 * Pure calculation: no I/O.
 */
import { POLICY_KINDS as API_POLICY_KINDS, KINDS, type Kind } from '@calico-ts/api';
import { formatCidr, parseCidr } from '@calico-ts/api/net';
import { DatastoreError } from '../errors.js';
import { parseJsonExact } from '../go-json.js';
import { KNP_PREFIX, type MappingContext, NATIVE_COLLECTIONS, type WriteMode } from './native-mapping.js';

export const CRD_GROUP = 'crd.projectcalico.org';
export const CRD_VERSION = 'v1';
export const CRD_API_VERSION = `${CRD_GROUP}/${CRD_VERSION}`;
export const METADATA_ANNOTATION = 'projectcalico.org/metadata';

const RESOURCE_ROOT = '/calico/resources/v3/projectcalico.org/';
const IPAM_ROOT = '/calico/ipam/v2/';
const BLOCK_ROOT = `${IPAM_ROOT}assignment/`;
const HANDLE_ROOT = `${IPAM_ROOT}handle/`;
const CONFIG_KEY = `${IPAM_ROOT}config`;

/** The Calico kinds upstream keeps as CRDs (Node, WorkloadEndpoint and Profile are not). */
export const CRD_KINDS: readonly Kind[] = [
  'BGPConfiguration',
  'BGPFilter',
  'BGPPeer',
  'CalicoNodeStatus',
  'ClusterInformation',
  'FelixConfiguration',
  'GlobalNetworkPolicy',
  'GlobalNetworkSet',
  'HostEndpoint',
  'IPPool',
  'IPReservation',
  'KubeControllersConfiguration',
  'NetworkPolicy',
  'NetworkSet',
  'StagedGlobalNetworkPolicy',
  'StagedKubernetesNetworkPolicy',
  'StagedNetworkPolicy',
  'Tier',
];

/** The kinds whose v3 name travels in the metadata annotation, as in etcd (see resource-codec). */
const POLICY_KINDS: ReadonlySet<string> = new Set(API_POLICY_KINDS);

export type Obj = Record<string, unknown>;

/** One Kubernetes collection and how its objects map to keys and values. */
export interface Collection {
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** REST base of the API group: `/apis/crd.projectcalico.org/v1`, `/api/v1`. */
  readonly base: string;
  /** `replace`: the object is the record; `merge`: the record is written into an object Kubernetes owns; `readonly`. */
  readonly write: WriteMode;
  readonly readonlyReason?: string;
  /**
   * Its values hold integers beyond 2^53 that must stay exact (IPAM blocks' sequence numbers):
   * its objects are read with `parseJsonExact`. `merge` collections are read so in any case.
   */
  readonly exactIntegers?: boolean;
  /** Every key of this collection starts with it. */
  readonly keyPrefix: string;
  /** Where a key lives, or undefined when the key is not one of this collection's. */
  locate(key: string): { readonly name: string; readonly namespace?: string } | undefined;
  /** An object as a key and its etcd-style value as parsed JSON data (`goJson(data)` is the text); undefined for an object that has no key. */
  toKV(obj: Obj, ctx?: MappingContext): { readonly key: string; readonly data: object } | undefined;
  /**
   * The object to write for a key and value (without resourceVersion); from `data` instead of
   * parsing `value` when the writer gave it (`KVStore.create`).
   */
  toObject(key: string, value: string, data?: unknown): Obj;
  /** `merge` collections: the Kubernetes object with the record written into it. */
  merge?(current: Obj, key: string, value: string): Obj;
  /** `merge` collections: the Kubernetes object with the record taken out (a delete). */
  clear?(current: Obj): Obj;
}

const CRD_BASE = `/apis/${CRD_GROUP}/${CRD_VERSION}`;

function parseObj(value: string, key: string, data?: unknown): Obj {
  let o: unknown = data;
  if (o === undefined) {
    try {
      o = parseJsonExact(value);
    } catch (e) {
      throw new DatastoreError('invalid', `value for ${key} is not JSON: ${(e as Error).message}`);
    }
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) {
    throw new DatastoreError('invalid', `value for ${key} is not a JSON object`);
  }
  return o as Obj;
}

/** An object with at least one own key. */
function hasKeys(o: unknown): boolean {
  if (o === null || typeof o !== 'object') return false;
  for (const k in o) if (Object.hasOwn(o, k)) return true;
  return false;
}

function meta(o: Obj): Obj {
  return (o.metadata ?? {}) as Obj;
}

/** An object's `metadata.resourceVersion` (its etcd revision), '0' when it has none. */
export function rvOf(o: Obj): string {
  return String((o.metadata as Obj | undefined)?.resourceVersion ?? '0');
}

/** Upstream `names.CIDRToName`: `10.0.0.0/26` → `10-0-0-0-26`, `fd00::/122` → `fd00---122`. */
export function cidrToName(cidr: string): string {
  return cidr.replace(/[.:/]/g, '-');
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

function checkName(name: string, what: string): string {
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    throw new DatastoreError(
      'invalid',
      `${what} ${JSON.stringify(name)} cannot be stored in Kubernetes: object names are lower-case DNS subdomains of at most 253 characters`,
    );
  }
  return name;
}

// ---- Calico resources as CRDs -------------------------------------------------------------------

/** Metadata fields Kubernetes keeps on the object itself; the rest goes in the annotation. */
const K8S_META = new Set(['name', 'namespace', 'resourceVersion', 'labels', 'annotations', 'selfLink']);

function policyNameOf(note: string | undefined): string | undefined {
  if (!note) return undefined;
  try {
    const n = (JSON.parse(note) as { name?: unknown }).name;
    return typeof n === 'string' ? n : undefined;
  } catch {
    return undefined;
  }
}

function resourceCollection(kind: Kind): Collection {
  const info = KINDS[kind];
  const keyPrefix = `${RESOURCE_ROOT}${info.plural}/`;
  const isPolicy = POLICY_KINDS.has(kind);
  // Kubernetes NetworkPolicies appear among NetworkPolicies as `knp.default.<name>`; no CRD
  // object owns those names.
  const mirrorsKnp = kind === 'NetworkPolicy';
  return {
    plural: info.plural,
    kind,
    namespaced: info.namespaced,
    base: CRD_BASE,
    write: 'replace',
    keyPrefix,
    locate(key) {
      if (!key.startsWith(keyPrefix)) return undefined;
      const parts = key.slice(keyPrefix.length).split('/');
      if (parts.some((p) => p === '')) return undefined;
      if (mirrorsKnp && parts[1]?.startsWith(KNP_PREFIX)) return undefined;
      if (info.namespaced) return parts.length === 2 ? { namespace: parts[0]!, name: parts[1]! } : undefined;
      return parts.length === 1 ? { name: parts[0]! } : undefined;
    },
    toKV(obj) {
      const m = meta(obj);
      const name = String(m.name ?? '');
      if (mirrorsKnp && name.startsWith(KNP_PREFIX)) return undefined;
      const namespace = m.namespace === undefined ? undefined : String(m.namespace);
      // One pass over the annotations: the metadata one read, the others kept in their order.
      const all = m.annotations as Record<string, string> | undefined;
      let annotations: Record<string, string> | undefined;
      let stored: string | undefined;
      for (const k in all) {
        if (k === METADATA_ANNOTATION) stored = all[k];
        else {
          annotations ??= {};
          annotations[k] = all[k]!;
        }
      }
      let extra: Obj = {};
      if (stored) {
        try {
          extra = JSON.parse(stored) as Obj;
        } catch {
          extra = {};
        }
      }
      const v3meta: Obj = { name };
      if (info.namespaced && namespace) v3meta.namespace = namespace;
      v3meta.uid = extra.uid ?? m.uid;
      v3meta.creationTimestamp = extra.creationTimestamp ?? m.creationTimestamp;
      for (const k in extra) if (!K8S_META.has(k) && !(k in v3meta)) v3meta[k] = extra[k];
      if (hasKeys(m.labels)) v3meta.labels = m.labels;
      // The etcd layout of policies names them in this annotation (see resource-codec); a policy
      // stored without it (by upstream ≤ v3.31 as `default.<name>`) is read the legacy way.
      if (isPolicy && typeof extra.name === 'string') {
        annotations ??= {};
        annotations[METADATA_ANNOTATION] = JSON.stringify({ name: extra.name });
      }
      if (annotations) v3meta.annotations = annotations;
      const out: Obj = { kind, apiVersion: 'projectcalico.org/v3', metadata: v3meta };
      if (obj.spec !== undefined) out.spec = obj.spec;
      if (obj.status !== undefined) out.status = obj.status;
      const key = info.namespaced ? `${keyPrefix}${namespace}/${name}` : `${keyPrefix}${name}`;
      return { key, data: out };
    },
    toObject(key, value, data) {
      const loc = this.locate(key);
      if (!loc) throw new DatastoreError('invalid', `${key} is not a ${kind} key`);
      const o = parseObj(value, key, data);
      const m = meta(o);
      const annotations: Record<string, string> = { ...((m.annotations as Record<string, string>) ?? {}) };
      const policyName = isPolicy ? policyNameOf(annotations[METADATA_ANNOTATION]) : undefined;
      delete annotations[METADATA_ANNOTATION];
      const extra: Obj = {};
      if (policyName !== undefined) extra.name = policyName;
      for (const [k, v] of Object.entries(m)) if (!K8S_META.has(k) && v !== undefined) extra[k] = v;
      if (Object.keys(extra).length > 0) annotations[METADATA_ANNOTATION] = JSON.stringify(extra);
      const k8sMeta: Obj = { name: checkName(loc.name, `${kind} name`) };
      if (loc.namespace) k8sMeta.namespace = loc.namespace;
      if (m.labels && Object.keys(m.labels as Obj).length > 0) k8sMeta.labels = m.labels;
      if (Object.keys(annotations).length > 0) k8sMeta.annotations = annotations;
      const out: Obj = { apiVersion: CRD_API_VERSION, kind, metadata: k8sMeta };
      if (o.spec !== undefined) out.spec = o.spec;
      if (o.status !== undefined) out.status = o.status;
      return out;
    },
  };
}

// ---- IPAM -------------------------------------------------------------------------------------

function canonicalCidr(text: unknown, what: string): { text: string; family: 4 | 6 } {
  const c = typeof text === 'string' ? parseCidr(text) : undefined;
  if (!c) throw new DatastoreError('invalid', `${what} is not a CIDR: ${JSON.stringify(text)}`);
  return { text: formatCidr(c), family: c.family };
}

const BLOCK_KEY_RE = /^\/calico\/ipam\/v2\/assignment\/ipv([46])\/block\/([^/]+)-(\d+)$/;

const blockCollection: Collection = {
  plural: 'ipamblocks',
  kind: 'IPAMBlock',
  namespaced: false,
  base: CRD_BASE,
  write: 'replace',
  exactIntegers: true,
  keyPrefix: BLOCK_ROOT,
  locate(key) {
    const m = BLOCK_KEY_RE.exec(key);
    if (!m) return undefined;
    return { name: cidrToName(`${m[2]}/${m[3]}`) };
  },
  toKV(obj) {
    const s = (obj.spec ?? {}) as Obj;
    const c = canonicalCidr(s.cidr, 'IPAMBlock spec.cidr');
    const out: Obj = { cidr: c.text, affinity: s.affinity ?? null };
    if (s.affinityClaimTime !== undefined && s.affinityClaimTime !== null)
      out.affinity_claim_time = s.affinityClaimTime;
    out.allocations = s.allocations ?? [];
    out.unallocated = s.unallocated ?? [];
    out.attributes = ((s.attributes as Obj[] | null) ?? []).map((a) => {
      const x: Obj = { handle_id: a.handle_id ?? null, secondary: a.secondary ?? null };
      if (a.alternate !== undefined && a.alternate !== null) x.alternateOwnerAttrs = a.alternate;
      return x;
    });
    out.sequenceNumber = s.sequenceNumber ?? 0;
    out.sequenceNumberForAllocation = s.sequenceNumberForAllocation ?? null;
    out.deleted = s.deleted === true;
    return { key: `${BLOCK_ROOT}ipv${c.family}/block/${c.text.replace('/', '-')}`, data: out };
  },
  toObject(key, value, data) {
    const o = parseObj(value, key, data);
    const c = canonicalCidr(o.cidr, `block ${key} cidr`);
    const spec: Obj = { cidr: c.text };
    if (o.affinity !== null && o.affinity !== undefined) spec.affinity = o.affinity;
    if (o.affinity_claim_time !== null && o.affinity_claim_time !== undefined)
      spec.affinityClaimTime = o.affinity_claim_time;
    spec.allocations = o.allocations ?? [];
    spec.unallocated = o.unallocated ?? [];
    spec.attributes = ((o.attributes as Obj[] | null) ?? []).map((a) => {
      const x: Obj = {};
      if (a.handle_id !== null && a.handle_id !== undefined) x.handle_id = a.handle_id;
      if (a.secondary !== null && a.secondary !== undefined) x.secondary = a.secondary;
      if (a.alternateOwnerAttrs !== null && a.alternateOwnerAttrs !== undefined)
        x.alternate = a.alternateOwnerAttrs;
      return x;
    });
    spec.sequenceNumber = o.sequenceNumber ?? 0;
    if (o.sequenceNumberForAllocation !== null && o.sequenceNumberForAllocation !== undefined)
      spec.sequenceNumberForAllocation = o.sequenceNumberForAllocation;
    spec.deleted = o.deleted === true;
    spec.strictAffinity = false;
    return { apiVersion: CRD_API_VERSION, kind: 'IPAMBlock', metadata: { name: cidrToName(c.text) }, spec };
  },
};

const AFFINITY_KEY_RE = /^\/calico\/ipam\/v2\/(host|virtual)\/([^/]+)\/ipv([46])\/block\/([^/]+)-(\d+)$/;

function affinityName(type: string, host: string, cidr: string): string {
  const base = `${host}-${cidrToName(cidr)}`;
  return checkName(type === 'virtual' ? `virtual-${base}` : base, 'block affinity name');
}

/** Block affinities live under two key roots (`host/`, `virtual/`); one collection each. */
function affinityCollection(type: 'host' | 'virtual'): Collection {
  const keyPrefix = `${IPAM_ROOT}${type}/`;
  return {
    plural: 'blockaffinities',
    kind: 'BlockAffinity',
    namespaced: false,
    base: CRD_BASE,
    write: 'replace',
    keyPrefix,
    locate(key) {
      const m = AFFINITY_KEY_RE.exec(key);
      if (!m || m[1] !== type) return undefined;
      return { name: affinityName(type, m[2]!, `${m[4]}/${m[5]}`) };
    },
    toKV(obj) {
      const s = (obj.spec ?? {}) as Obj;
      if ((s.type ?? 'host') !== type) return undefined;
      const c = canonicalCidr(s.cidr, 'BlockAffinity spec.cidr');
      const value: Obj = {
        state: s.state ?? 'confirmed',
        deleted: s.deleted === true || s.deleted === 'true',
      };
      return {
        key: `${keyPrefix}${String(s.node)}/ipv${c.family}/block/${c.text.replace('/', '-')}`,
        data: value,
      };
    },
    toObject(key, value, data) {
      const m = AFFINITY_KEY_RE.exec(key);
      if (!m) throw new DatastoreError('invalid', `${key} is not a block affinity key`);
      const cidr = canonicalCidr(`${m[4]}/${m[5]}`, `affinity ${key}`).text;
      const o = value === '' ? {} : parseObj(value, key, data);
      return {
        apiVersion: CRD_API_VERSION,
        kind: 'BlockAffinity',
        metadata: { name: affinityName(type, m[2]!, cidr) },
        spec: {
          state: o.state ?? 'confirmed',
          node: m[2],
          cidr,
          deleted: o.deleted === true ? 'true' : 'false',
          ...(type === 'virtual' ? { type } : {}),
        },
      };
    },
  };
}

const handleCollection: Collection = {
  plural: 'ipamhandles',
  kind: 'IPAMHandle',
  namespaced: false,
  base: CRD_BASE,
  write: 'replace',
  keyPrefix: HANDLE_ROOT,
  locate(key) {
    if (!key.startsWith(HANDLE_ROOT) || key.length === HANDLE_ROOT.length) return undefined;
    return { name: checkName(key.slice(HANDLE_ROOT.length).toLowerCase(), 'IPAM handle name') };
  },
  toKV(obj) {
    const s = (obj.spec ?? {}) as Obj;
    const id = typeof s.handleID === 'string' ? s.handleID : String(meta(obj).name);
    return {
      key: `${HANDLE_ROOT}${id}`,
      data: { block: s.block ?? {}, deleted: s.deleted === true },
    };
  },
  toObject(key, value, data) {
    const o = parseObj(value, key, data);
    const id = key.slice(HANDLE_ROOT.length);
    return {
      apiVersion: CRD_API_VERSION,
      kind: 'IPAMHandle',
      metadata: { name: checkName(id.toLowerCase(), 'IPAM handle name') },
      spec: { handleID: id, block: o.block ?? {}, deleted: o.deleted === true },
    };
  },
};

const configCollection: Collection = {
  plural: 'ipamconfigs',
  kind: 'IPAMConfig',
  namespaced: false,
  base: CRD_BASE,
  write: 'replace',
  keyPrefix: CONFIG_KEY,
  locate: (key) => (key === CONFIG_KEY ? { name: 'default' } : undefined),
  toKV(obj) {
    if (meta(obj).name !== 'default') return undefined;
    const s = (obj.spec ?? {}) as Obj;
    const out: Obj = {
      strict_affinity: s.strictAffinity === true,
      auto_allocate_blocks: s.autoAllocateBlocks !== false,
      maxBlocksPerHost: s.maxBlocksPerHost ?? 0,
    };
    if (s.kubeVirtVMAddressPersistence !== undefined)
      out.kubeVirtVMAddressPersistence = s.kubeVirtVMAddressPersistence;
    return { key: CONFIG_KEY, data: out };
  },
  toObject(key, value, data) {
    const o = parseObj(value, key, data);
    const spec: Obj = {
      strictAffinity: o.strict_affinity === true,
      autoAllocateBlocks: o.auto_allocate_blocks === true,
      maxBlocksPerHost: o.maxBlocksPerHost ?? 0,
    };
    if (o.kubeVirtVMAddressPersistence !== undefined)
      spec.kubeVirtVMAddressPersistence = o.kubeVirtVMAddressPersistence;
    return { apiVersion: CRD_API_VERSION, kind: 'IPAMConfig', metadata: { name: 'default' }, spec };
  },
};

/** Every collection, Calico resources first. */
export const COLLECTIONS: readonly Collection[] = [
  ...CRD_KINDS.map(resourceCollection),
  blockCollection,
  affinityCollection('host'),
  affinityCollection('virtual'),
  handleCollection,
  configCollection,
  ...NATIVE_COLLECTIONS,
];

/** The collection a key belongs to, with the object's place; throws `unsupported` for others. */
export function locateKey(key: string): { collection: Collection; name: string; namespace?: string } {
  for (const collection of COLLECTIONS) {
    const loc = collection.locate(key);
    if (loc) return { collection, ...loc };
  }
  throw new DatastoreError(
    'unsupported',
    `${key} has no place in the Kubernetes datastore (it holds Calico's CRD kinds, IPAM records, and what it derives from Nodes, Pods, Namespaces, ServiceAccounts and NetworkPolicies)`,
  );
}

/**
 * The collections a key prefix can reach, each with the namespace the prefix pins (for a
 * namespaced collection listed in one namespace).
 */
export function collectionsForPrefix(prefix: string): { collection: Collection; namespace?: string }[] {
  const out: { collection: Collection; namespace?: string }[] = [];
  for (const c of COLLECTIONS) {
    if (c.keyPrefix.startsWith(prefix)) out.push({ collection: c });
    else if (prefix.startsWith(c.keyPrefix)) {
      const rest = prefix.slice(c.keyPrefix.length);
      const slash = rest.indexOf('/');
      out.push(
        c.namespaced && slash > 0 ? { collection: c, namespace: rest.slice(0, slash) } : { collection: c },
      );
    }
  }
  return out;
}

/** The API server does not serve the collection: its CRD is not installed. */
export function crdMissing(c: Collection, what: string, cause: unknown): DatastoreError {
  const crd = isCrdCollection(c) ? `${c.plural}.crd.projectcalico.org` : `${c.plural} (${c.base})`;
  return new DatastoreError(
    'config',
    `${what}: the API server does not serve ${crd}; install Calico's CRDs (kubectl apply --server-side -f deploy/crds/calico-crds.yaml)`,
    { cause },
  );
}

/** Whether a collection is one of Calico's CRDs (crd.projectcalico.org). */
export function isCrdCollection(c: Collection): boolean {
  return c.base.startsWith('/apis/crd.projectcalico.org/');
}

/**
 * How a collection's answers are decoded (kube-http.ts): integers beyond 2^53 exact for IPAM
 * blocks, and for the Kubernetes objects a `merge` write puts back whole (a Pod's or Node's own
 * numbers must not be rounded by the write); everything else with JSON.parse, as the etcd
 * backend reads resources, without the scan exactness costs.
 */
export function wireReadOptions(c: Collection): { exact: boolean } {
  return { exact: c.exactIntegers === true || c.write === 'merge' };
}

/** The REST path of a collection (all namespaces, or one) or of one object in it. */
export function restPath(c: Collection, namespace?: string, name?: string): string {
  const ns = c.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const obj = name === undefined ? '' : `/${encodeURIComponent(name)}`;
  return `${c.base}${ns}/${c.plural}${obj}`;
}
