/**
 * Typed IPAM records in etcd, with compare-and-swap, in upstream's key layout and value JSON
 * (`libcalico-go/lib/backend/model/block.go`, `block_affinity.go`, `ipam_handle.go`,
 * `ipam_config.go`):
 *
 *   /calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26   AllocationBlock
 *   /calico/ipam/v2/host/<node>/ipv4/block/10.0.0.0-26  BlockAffinity (`virtual` instead of `host` for virtual owners)
 *   /calico/ipam/v2/handle/<handleID>                   IPAMHandle
 *   /calico/ipam/v2/config                              IPAMConfig
 *
 * API: reads return `{ value, revision }` (undefined when absent); writes take the revision they
 * read and fail `conflict` if the record changed since, `not-found` if it is gone; creates fail
 * `already-exists`. Allocation logic lives in @calico-ts/ipam; this is storage only.
 * Design: fields this version does not know are kept in `extra` and written back unchanged, so a
 * read-modify-write never drops what a newer upstream wrote. Sequence numbers are uint64 in Go and
 * nanosecond timestamps in practice, so they are `bigint` here.
 * Thread-safety: stateless over the store.
 */

import type { Resource } from '@calico-ts/api';
import { formatCidr, parseCidr } from '@calico-ts/api/net';
import { DatastoreError } from './errors.js';
import { goJson } from './go-json.js';
import type { KV, KVRead, KVStore } from './kv/kv-store.js';
import { kvJsonExact } from './kv/parsed-kv.js';
import { KVReadMirror } from './kv/read-mirror.js';
import { decodeResource } from './resource-codec.js';
import { parseResourceKey, resourceKey, resourcePrefix } from './resource-keys.js';

export const IPAM_ROOT = '/calico/ipam/v2/';
const BLOCK_ROOT = `${IPAM_ROOT}assignment/`;
const HANDLE_ROOT = `${IPAM_ROOT}handle/`;
const CONFIG_KEY = `${IPAM_ROOT}config`;

/** `IpamStore.readAssignEnv`'s records. */
export interface AssignEnvRecords {
  node?: Resource;
  pools: Resource[];
  reservations: Resource[];
  config?: Versioned<IPAMConfig>;
  affinities: Versioned<BlockAffinity>[];
}

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

// ---- the store --------------------------------------------------------------------------------

export class IpamStore {
  /** `mirrorAssignEnv`'s mirrors, per host, with their last decoding. */
  readonly #mirrors = new Map<
    string,
    { mirror: KVReadMirror; decoded?: { version: number; records: AssignEnvRecords } }
  >();
  readonly #mirrorsOpening = new Map<string, Promise<KVReadMirror>>();

  constructor(private readonly store: KVStore) {}

  // Blocks

  async getBlock(cidr: string): Promise<Versioned<AllocationBlock> | undefined> {
    const kv = await this.store.get(blockKey(cidr));
    return kv ? { value: decodeBlock(kv), revision: kv.modRevision } : undefined;
  }

  /** Every block, or the blocks of one IP family. As upstream, entries that do not decode are left out. */
  async listBlocks(family?: 4 | 6): Promise<VersionedList<AllocationBlock>> {
    if (family !== undefined && family !== 4 && family !== 6)
      throw new DatastoreError('invalid', 'family must be 4 or 6');
    const res = await this.store.list(family ? `${BLOCK_ROOT}ipv${family}/block/` : BLOCK_ROOT);
    const items = decodeAll(
      res.kvs.filter((kv) => BLOCK_KEY_RE.test(kv.key)),
      decodeBlock,
    );
    return { items, revision: res.revision };
  }

  /**
   * The CIDRs of every block (or of one family's), from the keys alone: no values are sent or
   * decoded. Canonical text, sorted as the keys are; keys that name no CIDR are left out.
   */
  async listBlockCidrs(family?: 4 | 6): Promise<string[]> {
    if (family !== undefined && family !== 4 && family !== 6)
      throw new DatastoreError('invalid', 'family must be 4 or 6');
    const prefix = family ? `${BLOCK_ROOT}ipv${family}/block/` : BLOCK_ROOT;
    const { results } = await this.store.readAll([{ key: prefix, prefix: true, keysOnly: true }]);
    const out: string[] = [];
    for (const kv of results[0] ?? []) {
      const m = BLOCK_KEY_RE.exec(kv.key);
      const c = m ? parseCidr(m[2]!.replace('-', '/')) : undefined;
      if (c) out.push(formatCidr(c));
    }
    return out;
  }

  /** The blocks of these CIDRs that exist, in one request; ones that do not decode are left out. */
  async getBlocks(cidrs: readonly string[]): Promise<Versioned<AllocationBlock>[]> {
    if (cidrs.length === 0) return [];
    const { results } = await this.store.readAll(cidrs.map((c) => ({ key: blockKey(c) })));
    return decodeAll(results.flat(), decodeBlock);
  }

  async createBlock(block: AllocationBlock): Promise<Versioned<AllocationBlock>> {
    const kv = await this.store
      .create(blockKey(block.cidr), encodeBlock(block))
      .catch(named(`block ${block.cidr}`));
    return { value: decodeBlock(kv), revision: kv.modRevision };
  }

  /** Resolves the block as written (not decoded again: decoding a block costs more than its write). */
  async updateBlock(block: AllocationBlock, revision: string): Promise<Versioned<AllocationBlock>> {
    const kv = await this.store
      .update(blockKey(block.cidr), encodeBlock(block), revision)
      .catch(named(`block ${block.cidr}`));
    return { value: block, revision: kv.modRevision };
  }

  async deleteBlock(cidr: string, revision?: string): Promise<void> {
    await this.store.delete(blockKey(cidr), revision).catch(named(`block ${cidr}`));
  }

  // Affinities

  async getAffinity(
    host: string,
    cidr: string,
    type: AffinityType = 'host',
  ): Promise<Versioned<BlockAffinity> | undefined> {
    const kv = await this.store.get(affinityKey(host, cidr, type));
    return kv ? { value: decodeAffinity(kv), revision: kv.modRevision } : undefined;
  }

  /** Every affinity of one host (or of all hosts), for one affinity type. */
  async listAffinities(host?: string, type: AffinityType = 'host'): Promise<VersionedList<BlockAffinity>> {
    if (host !== undefined) checkSegment('host', host);
    const res = await this.store.list(
      host === undefined ? `${IPAM_ROOT}${type}/` : `${IPAM_ROOT}${type}/${host}/`,
    );
    const items = decodeAll(
      res.kvs.filter((kv) => AFFINITY_KEY_RE.test(kv.key)),
      decodeAffinity,
    );
    return { items, revision: res.revision };
  }

  /**
   * The revisions at which one host's affinities (or every host's) changed, from `fromRevision`
   * (inclusive; default: from now). A consumer re-lists on each: the events say only that
   * something changed. A compacted start revision yields a change too, at the store's revision.
   * Ends when `signal` aborts.
   */
  async *watchAffinityChanges(
    host?: string,
    options: { fromRevision?: string; signal?: AbortSignal; type?: AffinityType } = {},
  ): AsyncIterable<string> {
    if (host !== undefined) checkSegment('host', host);
    const type = options.type ?? 'host';
    const prefix = host === undefined ? `${IPAM_ROOT}${type}/` : `${IPAM_ROOT}${type}/${host}/`;
    for await (const m of this.store.watch(prefix, {
      ...(options.fromRevision !== undefined ? { fromRevision: options.fromRevision } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    })) {
      if (
        m.kind === 'events' &&
        m.events.some((e) => AFFINITY_KEY_RE.test(e.kind === 'put' ? e.kv.key : e.key))
      ) {
        yield m.revision;
      } else if (m.kind === 'resync') {
        yield m.list.revision;
      }
    }
  }

  async createAffinity(affinity: AffinityInput): Promise<Versioned<BlockAffinity>> {
    const key = affinityKey(affinity.host, affinity.cidr, affinity.type);
    const kv = await this.store
      .create(key, encodeAffinity(affinity))
      .catch(named(`affinity of ${affinity.host} for ${affinity.cidr}`));
    this.#notePut(kv);
    return { value: decodeAffinity(kv), revision: kv.modRevision };
  }

  async updateAffinity(affinity: AffinityInput, revision: string): Promise<Versioned<BlockAffinity>> {
    const key = affinityKey(affinity.host, affinity.cidr, affinity.type);
    const kv = await this.store
      .update(key, encodeAffinity(affinity), revision)
      .catch(named(`affinity of ${affinity.host} for ${affinity.cidr}`));
    this.#notePut(kv);
    return { value: decodeAffinity(kv), revision: kv.modRevision };
  }

  async deleteAffinity(
    host: string,
    cidr: string,
    revision?: string,
    type: AffinityType = 'host',
  ): Promise<void> {
    const key = affinityKey(host, cidr, type);
    const prev = await this.store.delete(key, revision).catch(named(`affinity of ${host} for ${cidr}`));
    for (const m of this.#mirrors.values()) m.mirror.noteDelete(key, prev.modRevision);
  }

  // Handles

  async getHandle(handleId: string): Promise<Versioned<IPAMHandle> | undefined> {
    const kv = await this.store.get(handleKey(handleId));
    return kv ? { value: decodeHandle(kv), revision: kv.modRevision } : undefined;
  }

  async listHandles(): Promise<VersionedList<IPAMHandle>> {
    const res = await this.store.list(HANDLE_ROOT);
    const items = decodeAll(
      res.kvs.filter((kv) => !kv.key.slice(HANDLE_ROOT.length).includes('/')),
      decodeHandle,
    );
    return { items, revision: res.revision };
  }

  async createHandle(handle: IPAMHandle): Promise<Versioned<IPAMHandle>> {
    const kv = await this.store
      .create(handleKey(handle.handleId), encodeHandle(handle))
      .catch(named(`handle ${handle.handleId}`));
    return { value: decodeHandle(kv), revision: kv.modRevision };
  }

  async updateHandle(handle: IPAMHandle, revision: string): Promise<Versioned<IPAMHandle>> {
    const kv = await this.store
      .update(handleKey(handle.handleId), encodeHandle(handle), revision)
      .catch(named(`handle ${handle.handleId}`));
    return { value: decodeHandle(kv), revision: kv.modRevision };
  }

  /**
   * An allocation's two records in one transaction: the handle (created when `handleRevision` is
   * undefined, else compare-and-swapped) and the block (compare-and-swapped). Both or neither; a
   * lost race fails `conflict` or `already-exists` naming the record, as the single writes do.
   */
  async writeHandleAndBlock(
    handle: IPAMHandle,
    handleRevision: string | undefined,
    block: AllocationBlock,
    blockRevision: string,
  ): Promise<{ handle: Versioned<IPAMHandle>; block: Versioned<AllocationBlock> }> {
    const [h, b] = await this.store
      .writeAll([
        {
          key: handleKey(handle.handleId),
          value: encodeHandle(handle),
          ...(handleRevision !== undefined ? { modRevision: handleRevision } : {}),
        },
        { key: blockKey(block.cidr), value: encodeBlock(block), modRevision: blockRevision },
      ])
      .catch(named(`handle ${handle.handleId} and block ${block.cidr}`));
    return {
      handle: { value: decodeHandle(h!), revision: h!.modRevision },
      block: { value: block, revision: b!.modRevision },
    };
  }

  async deleteHandle(handleId: string, revision?: string): Promise<void> {
    await this.store.delete(handleKey(handleId), revision).catch(named(`handle ${handleId}`));
  }

  // Config

  /**
   * What an address assignment for `host` starts from, read in one request at one revision: the
   * host's Node (undefined when there is none), every IPPool and IPReservation (entries that do not
   * decode are left out, as lists do), the IPAM config and the host's block affinities. From
   * memory while `mirrorAssignEnv(host)` is on and its watches are up (the same records until
   * something changes: callers must not modify them).
   */
  async readAssignEnv(host: string): Promise<AssignEnvRecords> {
    checkSegment('host', host);
    const mirrored = this.#mirrors.get(host);
    const results = mirrored?.mirror.results();
    if (mirrored && results) {
      if (mirrored.decoded?.version !== mirrored.mirror.version)
        mirrored.decoded = { version: mirrored.mirror.version, records: decodeAssignEnv(results) };
      return mirrored.decoded.records;
    }
    return decodeAssignEnv((await this.store.readAll(assignEnvReads(host))).results);
  }

  /**
   * Keeps what `readAssignEnv(host)` reads in memory, followed by watches, for a long-lived caller
   * that assigns addresses on `host` again and again (the CNI plugin service): an assignment then
   * starts without a request. While a watch is down `readAssignEnv` reads the store as before.
   * Affinity and config writes made through this store are applied as they resolve, so a read never
   * misses this store's own last write. Resolves once the first read is in (rejects as that read
   * does); the result's `close()` stops the mirror. One mirror per host: a second call shares it,
   * and either `close()` stops it.
   */
  async mirrorAssignEnv(host: string): Promise<{ close(): void }> {
    checkSegment('host', host);
    let opening = this.#mirrorsOpening.get(host);
    if (!opening) {
      opening = KVReadMirror.open(this.store, assignEnvReads(host)).then((mirror) => {
        this.#mirrors.set(host, { mirror });
        return mirror;
      });
      this.#mirrorsOpening.set(host, opening);
      opening.catch(() => this.#mirrorsOpening.delete(host));
    }
    const mirror = await opening;
    return {
      close: () => {
        mirror.close();
        if (this.#mirrors.get(host)?.mirror === mirror) {
          this.#mirrors.delete(host);
          this.#mirrorsOpening.delete(host);
        }
      },
    };
  }

  #notePut(kv: KV): void {
    for (const m of this.#mirrors.values()) m.mirror.notePut(kv);
  }

  async getConfig(): Promise<Versioned<IPAMConfig> | undefined> {
    const kv = await this.store.get(CONFIG_KEY);
    return kv ? { value: decodeConfig(kv), revision: kv.modRevision } : undefined;
  }

  /** Create the config (no revision: fails `already-exists` if there is one) or replace it by CAS. */
  async setConfig(config: IPAMConfig, revision?: string): Promise<Versioned<IPAMConfig>> {
    const text = encodeConfig(config);
    const kv = await (revision === undefined
      ? this.store.create(CONFIG_KEY, text)
      : this.store.update(CONFIG_KEY, text, revision)
    ).catch(named('IPAM config'));
    this.#notePut(kv);
    return { value: decodeConfig(kv), revision: kv.modRevision };
  }

  async deleteConfig(revision?: string): Promise<void> {
    await this.store.delete(CONFIG_KEY, revision).catch(named('IPAM config'));
  }
}

/** What `readAssignEnv(host)` reads, in one request. */
function assignEnvReads(host: string): KVRead[] {
  return [
    { key: resourceKey('Node', host) },
    { key: resourcePrefix('IPPool'), prefix: true },
    { key: resourcePrefix('IPReservation'), prefix: true },
    { key: CONFIG_KEY },
    { key: `${IPAM_ROOT}host/${host}/`, prefix: true },
  ];
}

/** `assignEnvReads`' results as records; pools and reservations that do not decode are left out. */
function decodeAssignEnv(results: KV[][]): AssignEnvRecords {
  const [nodes, pools, reservations, configs, affinities] = results as [KV[], KV[], KV[], KV[], KV[]];
  const resources = (kvs: KV[], kind: string): Resource[] => {
    const out: Resource[] = [];
    for (const kv of kvs) {
      const parts = parseResourceKey(kv.key);
      if (!parts || parts.kind !== kind) continue;
      try {
        out.push(decodeResource(kv, parts));
      } catch {
        // left out, as a list leaves it out
      }
    }
    return out;
  };
  const node = nodes[0];
  const config = configs[0];
  return {
    ...(node ? { node: decodeResource(node, parseResourceKey(node.key)!) } : {}),
    pools: resources(pools, 'IPPool'),
    reservations: resources(reservations, 'IPReservation'),
    ...(config ? { config: { value: decodeConfig(config), revision: config.modRevision } } : {}),
    affinities: decodeAll(
      affinities.filter((kv) => AFFINITY_KEY_RE.test(kv.key)),
      decodeAffinity,
    ),
  };
}

function decodeAll<T>(kvs: KV[], decode: (kv: KV) => T): Versioned<T>[] {
  const out: Versioned<T>[] = [];
  for (const kv of kvs) {
    try {
      out.push({ value: decode(kv), revision: kv.modRevision });
    } catch {
      // Skipped, as upstream's list does; a get of the same record reports the problem.
    }
  }
  return out;
}

export type AffinityInput = Pick<BlockAffinity, 'host' | 'cidr' | 'state' | 'deleted' | 'extra'> & {
  type?: AffinityType;
};

/** Name the record in store errors; other errors pass through. */
function named(what: string): (e: unknown) => never {
  return (e: unknown) => {
    if (e instanceof DatastoreError) {
      const msg: Partial<Record<string, string>> = {
        'already-exists': `${what} already exists`,
        'not-found': `${what} not found`,
        conflict: `${what} was changed since it was read`,
      };
      const m = msg[e.code];
      if (m) throw new DatastoreError(e.code, m, { cause: e });
    }
    throw e;
  };
}
