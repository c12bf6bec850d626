/**
 * The IPAM records' model: upstream's etcd key layout and value JSON
 * (`libcalico-go/lib/backend/model/block.go`, `block_affinity.go`, `ipam_handle.go`,
 * `ipam_config.go`), as types, keys and codecs:
 *
 *   /calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26   AllocationBlock
 *   /calico/ipam/v2/host/<node>/ipv4/block/10.0.0.0-26  BlockAffinity (`virtual` instead of `host` for virtual owners)
 *   /calico/ipam/v2/handle/<handleID>                   IPAMHandle
 *   /calico/ipam/v2/config                              IPAMConfig
 *
 * Why here and not in @calico-ts/ipam: the model is the datastore's vocabulary, as upstream's
 * `backend/model` is. Components that only watch IPAM records (Felix's routes, BIRD's blocks,
 * Typha's fan-out) decode them with these codecs and need no IPAM logic. The store that reads and
 * writes them with compare-and-swap, and every cache of them, is `IpamStore` in
 * `@calico-ts/ipam` (docs/redesign/ipam.md).
 *
 * Design: fields this version does not know are kept in `extra` and written back unchanged, so a
 * read-modify-write never drops what a newer upstream wrote. Sequence numbers are uint64 in Go and
 * nanosecond timestamps in practice, so they are `bigint` here. Pure: no I/O.
 */

import { formatCidr, parseCidr } from '@calico-ts/api/net';
import { DatastoreError } from './errors.js';
import { goJson } from './go-json.js';
import type { KV } from './kv/kv-store.js';
import { kvJsonExact } from './kv/parsed-kv.js';

export const IPAM_ROOT = '/calico/ipam/v2/';
/** Where the blocks of both families are. */
export const IPAM_BLOCK_ROOT = `${IPAM_ROOT}assignment/`;
/** Where the handles are: `<root><handleID>`. */
export const IPAM_HANDLE_ROOT = `${IPAM_ROOT}handle/`;
export const IPAM_CONFIG_KEY = `${IPAM_ROOT}config`;
const BLOCK_ROOT = IPAM_BLOCK_ROOT;
const HANDLE_ROOT = IPAM_HANDLE_ROOT;

export interface Versioned<T> {
  value: T;
  /** The record's mod revision: pass it back to update or delete it. */
  revision: string;
}

export interface VersionedList<T> {
  items: Versioned<T>[];
  /** Store revision of the list. */
  revision: string;
}

export interface AllocationAttribute {
  handle_id: string | null;
  secondary: Record<string, string> | null;
  alternateOwnerAttrs?: Record<string, string> | null;
  /** Fields this version does not know, kept as read. */
  extra?: Record<string, unknown>;
}

export interface AllocationBlock {
  /** Canonical CIDR, e.g. `10.0.0.0/26`. */
  cidr: string;
  /** `host:<node>` or `virtual:<name>`, or null for a block without affinity. */
  affinity: string | null;
  /** RFC 3339 time the affinity was claimed; absent on blocks written by older versions. */
  affinity_claim_time?: string | null;
  /** Per ordinal: index into `attributes`, or null when free. */
  allocations: (number | null)[];
  /** Free ordinals in allocation order. */
  unallocated: number[];
  attributes: AllocationAttribute[];
  sequenceNumber: bigint;
  /** Ordinal (as a decimal string) → block sequence number when it was allocated; null until the first allocation. */
  sequenceNumberForAllocation: Record<string, bigint> | null;
  deleted: boolean;
  extra?: Record<string, unknown>;
}

export const AFFINITY_STATES = ['confirmed', 'pending', 'pendingDeletion'] as const;
export type AffinityState = (typeof AFFINITY_STATES)[number];
export type AffinityType = 'host' | 'virtual';

export interface BlockAffinity {
  /** Node (or virtual owner) name: from the key. */
  host: string;
  /** Canonical block CIDR: from the key. */
  cidr: string;
  /** Key segment: `host` for nodes, `virtual` for virtual owners. */
  type: AffinityType;
  state: AffinityState | (string & {});
  deleted: boolean;
  extra?: Record<string, unknown>;
}

export interface IPAMHandle {
  /** From the key. */
  handleId: string;
  /** Block CIDR → number of addresses this handle holds in it. */
  block: Record<string, number>;
  deleted: boolean;
  extra?: Record<string, unknown>;
}

export interface IPAMConfig {
  strict_affinity: boolean;
  auto_allocate_blocks: boolean;
  maxBlocksPerHost: number;
  kubeVirtVMAddressPersistence?: string;
  extra?: Record<string, unknown>;
}

// ---- keys -------------------------------------------------------------------------------------

function canonicalBlockCidr(cidr: string): { text: string; family: 4 | 6 } {
  const c = typeof cidr === 'string' ? parseCidr(cidr) : undefined;
  if (!c) throw new DatastoreError('invalid', `not a CIDR: ${JSON.stringify(cidr)}`);
  return { text: formatCidr(c), family: c.family };
}

export function blockKey(cidr: string): string {
  const c = canonicalBlockCidr(cidr);
  return `${BLOCK_ROOT}ipv${c.family}/block/${c.text.replace('/', '-')}`;
}

export function affinityKey(host: string, cidr: string, type: AffinityType = 'host'): string {
  checkSegment('host', host);
  if (type !== 'host' && type !== 'virtual')
    throw new DatastoreError('invalid', `affinity type must be host or virtual`);
  const c = canonicalBlockCidr(cidr);
  return `${IPAM_ROOT}${type}/${host}/ipv${c.family}/block/${c.text.replace('/', '-')}`;
}

/** The etcd key of an IPAM handle, `/calico/ipam/v2/handle/<handleId>`. */
export function handleKey(handleId: string): string {
  checkSegment('handle ID', handleId);
  return `${HANDLE_ROOT}${handleId}`;
}

const BLOCK_KEY_RE = /^\/calico\/ipam\/v2\/assignment\/ipv([46])\/block\/([^/]+)$/;
const AFFINITY_KEY_RE = /^\/calico\/ipam\/v2\/(host|virtual)\/([^/]+)\/ipv([46])\/block\/([^/]+)$/;

/** The prefix of every block (`family` undefined) or of one family's blocks. */
export function blockPrefix(family?: 4 | 6): string {
  if (family !== undefined && family !== 4 && family !== 6)
    throw new DatastoreError('invalid', 'family must be 4 or 6');
  return family ? `${BLOCK_ROOT}ipv${family}/block/` : BLOCK_ROOT;
}

/** Whether `key` is a block's key (and not something else stored under the blocks' prefix). */
export function isBlockKey(key: string): boolean {
  return BLOCK_KEY_RE.test(key);
}

/** The canonical CIDR a block key names, or undefined when it names none. */
export function cidrOfBlockKey(key: string): string | undefined {
  const m = BLOCK_KEY_RE.exec(key);
  return m ? cidrFromKeySegment(m[2]!) : undefined;
}

/** The prefix of one host's affinities (or every host's), for one affinity type. */
export function affinityPrefix(host?: string, type: AffinityType = 'host'): string {
  if (host !== undefined) checkSegment('host', host);
  return host === undefined ? `${IPAM_ROOT}${type}/` : `${IPAM_ROOT}${type}/${host}/`;
}

/** Whether `key` is a block affinity's key. */
export function isAffinityKey(key: string): boolean {
  return AFFINITY_KEY_RE.test(key);
}

/** Whether `key` is a handle's key (one segment below the handles' root). */
export function isHandleKey(key: string): boolean {
  return key.startsWith(HANDLE_ROOT) && !key.slice(HANDLE_ROOT.length).includes('/');
}

/** Throws `invalid` unless `value` can be one segment of a key (a host name, a handle ID). */
export function checkKeySegment(what: string, value: string): void {
  checkSegment(what, value);
}

function cidrFromKeySegment(seg: string): string | undefined {
  const c = parseCidr(seg.replace('-', '/'));
  return c ? formatCidr(c) : undefined;
}

function checkSegment(what: string, value: string): void {
  if (typeof value !== 'string' || value === '' || value.includes('/')) {
    throw new DatastoreError('invalid', `${what} ${JSON.stringify(value)} cannot be used in a key`);
  }
}

// ---- codecs -----------------------------------------------------------------------------------

function parseObject(kv: KV, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = kvJsonExact(kv);
  } catch (e) {
    throw new DatastoreError('invalid', `${kv.key}: stored ${what} is not JSON: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new DatastoreError('invalid', `${kv.key}: stored ${what} is not a JSON object`);
  }
  return v as Record<string, unknown>;
}

function rest(o: Record<string, unknown>, known: readonly string[]): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(o)) {
    if (known.includes(k)) continue;
    out ??= {};
    out[k] = v;
  }
  return out;
}

function withExtra<T extends object>(value: T, extra: Record<string, unknown> | undefined): T {
  return extra ? { ...value, extra } : value;
}

function bad(kv: KV, field: string, want: string): never {
  throw new DatastoreError('invalid', `${kv.key}: field ${field} must be ${want}`);
}

function toBig(kv: KV, field: string, v: unknown): bigint {
  if (v === undefined || v === null) return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return bad(kv, field, 'an integer');
}

function stringMap(kv: KV, field: string, v: unknown): Record<string, string> | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'object' || Array.isArray(v)) return bad(kv, field, 'an object of strings');
  for (const x of Object.values(v)) if (typeof x !== 'string') bad(kv, field, 'an object of strings');
  return v as Record<string, string>;
}

/** `m` with its keys in Go's map order (bytes of the UTF-8 encoding). */
function sortedMap<V>(m: Record<string, V> | null | undefined): Record<string, V> | null {
  if (m === null || m === undefined) return null;
  const keys = Object.keys(m);
  // UTF-16 order is UTF-8 byte order unless a key holds a surrogate or a character from U+E000 on;
  // anything this store decoded was written sorted and is used as it is.
  let sorted = true;
  let plain = true;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (plain && HIGH_CHARS.test(k)) plain = false;
    if (i > 0 && !(keys[i - 1]! < k)) sorted = false;
  }
  if (sorted && plain) return m;
  if (plain) keys.sort();
  else keys.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const out: Record<string, V> = {};
  for (const k of keys) out[k] = m[k]!;
  return out;
}
const HIGH_CHARS = /[\uD800-\uFFFF]/;

const BLOCK_FIELDS = [
  'cidr',
  'affinity',
  'affinity_claim_time',
  'allocations',
  'unallocated',
  'attributes',
  'sequenceNumber',
  'sequenceNumberForAllocation',
  'deleted',
] as const;
const ATTRIBUTE_FIELDS = ['handle_id', 'secondary', 'alternateOwnerAttrs'] as const;

export function decodeBlock(kv: KV): AllocationBlock {
  const o = parseObject(kv, 'block');
  const parsed = typeof o.cidr === 'string' ? parseCidr(o.cidr) : undefined;
  if (!parsed) bad(kv, 'cidr', 'a CIDR');
  const cidr = formatCidr(parsed!);
  const ints = (field: string, v: unknown, nullable: boolean): (number | null)[] => {
    if (v === null || v === undefined) return [];
    if (!Array.isArray(v)) return bad(kv, field, 'a list');
    for (const x of v) {
      if (!(Number.isInteger(x) || (nullable && x === null)))
        bad(kv, field, nullable ? 'a list of integers or nulls' : 'a list of integers');
    }
    return v as (number | null)[];
  };
  const attrsIn = o.attributes ?? [];
  if (!Array.isArray(attrsIn)) bad(kv, 'attributes', 'a list');
  const attributes = (attrsIn as unknown[]).map((a, i): AllocationAttribute => {
    if (a === null || typeof a !== 'object' || Array.isArray(a))
      return bad(kv, `attributes[${i}]`, 'an object');
    const ao = a as Record<string, unknown>;
    if (ao.handle_id !== null && ao.handle_id !== undefined && typeof ao.handle_id !== 'string') {
      bad(kv, `attributes[${i}].handle_id`, 'a string or null');
    }
    const attr: AllocationAttribute = {
      handle_id: (ao.handle_id as string | null | undefined) ?? null,
      secondary: stringMap(kv, `attributes[${i}].secondary`, ao.secondary),
    };
    if ('alternateOwnerAttrs' in ao)
      attr.alternateOwnerAttrs = stringMap(
        kv,
        `attributes[${i}].alternateOwnerAttrs`,
        ao.alternateOwnerAttrs,
      );
    return withExtra(attr, rest(ao, ATTRIBUTE_FIELDS));
  });
  let seqFor: Record<string, bigint> | null = null;
  if (o.sequenceNumberForAllocation !== null && o.sequenceNumberForAllocation !== undefined) {
    const m = o.sequenceNumberForAllocation;
    if (typeof m !== 'object' || Array.isArray(m)) bad(kv, 'sequenceNumberForAllocation', 'an object');
    seqFor = {};
    for (const [k, v] of Object.entries(m as Record<string, unknown>))
      seqFor[k] = toBig(kv, `sequenceNumberForAllocation.${k}`, v);
  }
  if (o.affinity !== null && o.affinity !== undefined && typeof o.affinity !== 'string')
    bad(kv, 'affinity', 'a string or null');
  const block: AllocationBlock = {
    cidr,
    affinity: (o.affinity as string | null | undefined) ?? null,
    allocations: ints('allocations', o.allocations, true),
    unallocated: ints('unallocated', o.unallocated, false) as number[],
    attributes,
    sequenceNumber: toBig(kv, 'sequenceNumber', o.sequenceNumber),
    sequenceNumberForAllocation: seqFor,
    deleted: o.deleted === true,
  };
  if ('affinity_claim_time' in o) {
    const t = o.affinity_claim_time;
    if (t !== null && typeof t !== 'string') bad(kv, 'affinity_claim_time', 'a timestamp or null');
    block.affinity_claim_time = t as string | null;
  }
  return withExtra(block, rest(o, BLOCK_FIELDS));
}

/** Block JSON in upstream's field order (Go struct order), unknown fields after. */
/**
 * Upstream's JSON for a block, written field by field in its order: the sequence numbers are 64-bit
 * integers that `JSON.stringify` cannot write, and writing them directly costs a fraction of
 * marking them for it (a block is encoded on every allocation).
 */
export function encodeBlock(b: AllocationBlock): string {
  let s = `{"cidr":${goJson(canonicalBlockCidr(b.cidr).text)},"affinity":${goJson(b.affinity ?? null)}`;
  if (b.affinity_claim_time !== undefined && b.affinity_claim_time !== null)
    s += `,"affinity_claim_time":${goJson(b.affinity_claim_time)}`;
  s += `,"allocations":${goJson(b.allocations)},"unallocated":${goJson(b.unallocated)}`;
  s += `,"attributes":${goJson(b.attributes.map(attributeJsonValue))}`;
  s += `,"sequenceNumber":${BigInt(b.sequenceNumber)}`;
  s += `,"sequenceNumberForAllocation":${sequenceMapJson(b.sequenceNumberForAllocation)}`;
  s += `,"deleted":${b.deleted === true}`;
  if (b.extra) {
    for (const [k, v] of Object.entries(b.extra)) if (v !== undefined) s += `,${goJson(k)}:${goJson(v)}`;
  }
  return `${s}}`;
}

/**
 * The block as data: what `parseJsonExact(encodeBlock(b))` holds, `goJson` of it writes the same
 * text. For a store that builds objects from values (Kubernetes), which then need not parse
 * `encodeBlock`'s text back (`KVWrite.data`).
 */
export function blockData(b: AllocationBlock): Record<string, unknown> {
  const o: Record<string, unknown> = {
    cidr: canonicalBlockCidr(b.cidr).text,
    affinity: b.affinity ?? null,
  };
  if (b.affinity_claim_time !== undefined && b.affinity_claim_time !== null)
    o.affinity_claim_time = b.affinity_claim_time;
  o.allocations = b.allocations;
  o.unallocated = b.unallocated;
  o.attributes = b.attributes.map(attributeJsonValue);
  o.sequenceNumber = BigInt(b.sequenceNumber);
  const seq = sortedMap(b.sequenceNumberForAllocation);
  if (seq === null) o.sequenceNumberForAllocation = null;
  else {
    const m: Record<string, bigint> = {};
    for (const k in seq) m[k] = BigInt(seq[k]!);
    o.sequenceNumberForAllocation = m;
  }
  o.deleted = b.deleted === true;
  if (b.extra) for (const [k, v] of Object.entries(b.extra)) if (v !== undefined && !(k in o)) o[k] = v;
  return o;
}

function attributeJsonValue(a: AllocationAttribute): Record<string, unknown> {
  const ao: Record<string, unknown> = { handle_id: a.handle_id ?? null, secondary: sortedMap(a.secondary) };
  if (a.alternateOwnerAttrs !== undefined && a.alternateOwnerAttrs !== null)
    ao.alternateOwnerAttrs = sortedMap(a.alternateOwnerAttrs);
  return a.extra ? { ...ao, ...a.extra } : ao;
}

/** `{"<ordinal>":<sequence number>,…}` in Go's map order, or `null`. */
function sequenceMapJson(m: Record<string, bigint> | null): string {
  const sorted = sortedMap(m);
  if (sorted === null) return 'null';
  let s = '';
  for (const k in sorted) s += `${s === '' ? '{' : ','}${goJson(k)}:${BigInt(sorted[k]!)}`;
  return s === '' ? '{}' : `${s}}`;
}

const AFFINITY_FIELDS = ['state', 'deleted'] as const;

export function decodeAffinity(kv: KV): BlockAffinity {
  const m = AFFINITY_KEY_RE.exec(kv.key);
  const cidr = m ? cidrFromKeySegment(m[4]!) : undefined;
  if (!m || !cidr) throw new DatastoreError('invalid', `${kv.key} is not a block affinity key`);
  const base = { host: m[2]!, cidr, type: m[1] as AffinityType };
  // Affinities written before states existed have an empty value: they are confirmed.
  if (kv.value === '') return { ...base, state: 'confirmed', deleted: false };
  const o = parseObject(kv, 'block affinity');
  if (o.state !== undefined && typeof o.state !== 'string') bad(kv, 'state', 'a string');
  const value: BlockAffinity = {
    ...base,
    state: (o.state as string | undefined) || 'confirmed',
    deleted: o.deleted === true,
  };
  return withExtra(value, rest(o, AFFINITY_FIELDS));
}

export function encodeAffinity(a: Pick<BlockAffinity, 'state' | 'deleted' | 'extra'>): string {
  return goJson({ state: a.state, deleted: a.deleted, ...a.extra });
}

const HANDLE_FIELDS = ['block', 'deleted'] as const;

export function decodeHandle(kv: KV): IPAMHandle {
  if (!kv.key.startsWith(HANDLE_ROOT))
    throw new DatastoreError('invalid', `${kv.key} is not an IPAM handle key`);
  const o = parseObject(kv, 'IPAM handle');
  const block: Record<string, number> = {};
  if (o.block !== null && o.block !== undefined) {
    if (typeof o.block !== 'object' || Array.isArray(o.block)) bad(kv, 'block', 'an object');
    for (const [k, v] of Object.entries(o.block as Record<string, unknown>)) {
      if (!Number.isInteger(v)) bad(kv, `block.${k}`, 'an integer');
      block[k] = v as number;
    }
  }
  const value: IPAMHandle = {
    handleId: kv.key.slice(HANDLE_ROOT.length),
    block,
    deleted: o.deleted === true,
  };
  return withExtra(value, rest(o, HANDLE_FIELDS));
}

export function encodeHandle(h: Pick<IPAMHandle, 'block' | 'deleted' | 'extra'>): string {
  return goJson({ block: sortedMap(h.block) ?? {}, deleted: h.deleted, ...h.extra });
}

const CONFIG_FIELDS = [
  'strict_affinity',
  'auto_allocate_blocks',
  'maxBlocksPerHost',
  'kubeVirtVMAddressPersistence',
] as const;

export function decodeConfig(kv: KV): IPAMConfig {
  const o = parseObject(kv, 'IPAM config');
  const cfg: IPAMConfig = {
    strict_affinity: o.strict_affinity === true,
    auto_allocate_blocks: o.auto_allocate_blocks === true,
    maxBlocksPerHost: typeof o.maxBlocksPerHost === 'number' ? o.maxBlocksPerHost : 0,
  };
  if (typeof o.kubeVirtVMAddressPersistence === 'string')
    cfg.kubeVirtVMAddressPersistence = o.kubeVirtVMAddressPersistence;
  return withExtra(cfg, rest(o, CONFIG_FIELDS));
}

export function encodeConfig(c: IPAMConfig): string {
  const out: Record<string, unknown> = {
    strict_affinity: c.strict_affinity,
    auto_allocate_blocks: c.auto_allocate_blocks,
    maxBlocksPerHost: c.maxBlocksPerHost,
  };
  if (c.kubeVirtVMAddressPersistence !== undefined)
    out.kubeVirtVMAddressPersistence = c.kubeVirtVMAddressPersistence;
  return goJson({ ...out, ...c.extra });
}

export type AffinityInput = Pick<BlockAffinity, 'host' | 'cidr' | 'state' | 'deleted' | 'extra'> & {
  type?: AffinityType;
};
