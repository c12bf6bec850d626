/**
 * The IPAM records in the datastore, read and written with compare-and-swap, over any `KVStore`
 * (etcd, Kubernetes, memory) in upstream's key layout and value JSON (the model:
 * `@calico-ts/datastore`'s ipam-records.ts). What `IpamClient` stands on; also the raw records
 * `calicoctl ipam` and kube-controllers read.
 *
 * API: reads return `{ value, revision }` (undefined when absent); writes take the revision they
 * read and fail `conflict` if the record changed since, `not-found` if it is gone; creates fail
 * `already-exists`. Errors name the record. Allocation logic is in client/ and block/; this is
 * storage only.
 * Design: every read and write of blocks, and every affinity and config write, feeds `cache`, the
 * one IPAM cache (ipam-cache.ts: what it holds and when an entry goes). Lists do not feed it.
 * Thread-safety: single-threaded; stateless over the store apart from `cache`.
 */

import {
  type AffinityInput,
  type AffinityType,
  type AllocationBlock,
  type BlockAffinity,
  DatastoreError,
  type IPAMConfig,
  type IPAMHandle,
  type KVStore,
  type Versioned,
  type VersionedList,
} from '@calico-ts/datastore';
import {
  affinityKey,
  affinityPrefix,
  blockData,
  blockKey,
  blockPrefix,
  checkKeySegment,
  cidrOfBlockKey,
  decodeAffinity,
  decodeBlock,
  decodeConfig,
  decodeHandle,
  encodeAffinity,
  encodeBlock,
  encodeConfig,
  encodeHandle,
  handleKey,
  IPAM_CONFIG_KEY,
  IPAM_HANDLE_ROOT,
  isAffinityKey,
  isBlockKey,
  isHandleKey,
} from '@calico-ts/datastore/internal';
import {
  type AssignEnvRecords,
  assignEnvReads,
  decodeAll,
  decodeAssignEnv,
  deriveAssignEnv,
  type EnvRead,
} from './assign-env.js';
import { BlockTurns } from './block-turns.js';
import { IpamCache } from './ipam-cache.js';

/** What every delete here asks of the store: the record gone, its old value never read. */
const NO_VALUE = { value: false } as const;

/** The IPAM records over one KVStore, with compare-and-swap, and the IPAM cache they feed. */
export class IpamStore {
  /** What this store has read and written, kept for the allocator (ipam-cache.ts). */
  readonly cache = new IpamCache();
  /** One writer of a block at a time among this store's users (block-turns.ts). */
  readonly blockTurns = new BlockTurns();

  constructor(private readonly store: KVStore) {}

  // Blocks

  /** The block at `cidr`, or undefined when there is none. */
  async getBlock(cidr: string): Promise<Versioned<AllocationBlock> | undefined> {
    const kv = await this.store.get(blockKey(cidr));
    const b = kv ? { value: decodeBlock(kv), revision: kv.modRevision } : undefined;
    this.cache.noteBlock(cidr, b);
    return b;
  }

  /** Every block, or the blocks of one IP family. As upstream, entries that do not decode are left out. */
  async listBlocks(family?: 4 | 6): Promise<VersionedList<AllocationBlock>> {
    const res = await this.store.list(blockPrefix(family));
    const items = decodeAll(
      res.kvs.filter((kv) => isBlockKey(kv.key)),
      decodeBlock,
    );
    return { items, revision: res.revision };
  }

  /**
   * The CIDRs of every block (or of one family's), from the keys alone: no values are sent or
   * decoded. Canonical text, sorted as the keys are; keys that name no CIDR are left out.
   */
  async listBlockCidrs(family?: 4 | 6): Promise<string[]> {
    const prefix = blockPrefix(family);
    const { results } = await this.store.readAll([{ key: prefix, prefix: true, keysOnly: true }]);
    const out: string[] = [];
    for (const kv of results[0] ?? []) {
      const cidr = cidrOfBlockKey(kv.key);
      if (cidr) out.push(cidr);
    }
    return out;
  }

  /** The blocks of these CIDRs that exist, in one request; ones that do not decode are left out. */
  async getBlocks(cidrs: readonly string[]): Promise<Versioned<AllocationBlock>[]> {
    if (cidrs.length === 0) return [];
    const { results } = await this.store.readAll(cidrs.map((c) => ({ key: blockKey(c) })));
    const read = decodeAll(results.flat(), decodeBlock);
    for (const b of read) this.cache.noteBlock(b.value.cidr, b);
    return read;
  }

  /** Creates a block; fails `already-exists` if one is there. */
  async createBlock(block: AllocationBlock): Promise<Versioned<AllocationBlock>> {
    const kv = await this.store
      .create(blockKey(block.cidr), encodeBlock(block), blockData(block))
      .catch(named(`block ${block.cidr}`));
    const b = { value: decodeBlock(kv), revision: kv.modRevision };
    this.cache.noteBlock(block.cidr, b);
    return b;
  }

  /** Resolves the block as written (not decoded again: decoding a block costs more than its write). */
  async updateBlock(block: AllocationBlock, revision: string): Promise<Versioned<AllocationBlock>> {
    const kv = await this.store
      .update(blockKey(block.cidr), encodeBlock(block), revision, blockData(block))
      .catch((e: unknown) => {
        this.cache.forgetBlock(block.cidr);
        return named(`block ${block.cidr}`)(e);
      });
    const b = { value: block, revision: kv.modRevision };
    this.cache.noteBlock(block.cidr, b);
    return b;
  }

  /** Deletes a block (compare-and-swap on `revision` when given). */
  async deleteBlock(cidr: string, revision?: string): Promise<void> {
    this.cache.forgetBlock(cidr);
    await this.store.delete(blockKey(cidr), revision, NO_VALUE).catch(named(`block ${cidr}`));
  }

  // Affinities

  /** One host's (or virtual owner's) affinity for a block, or undefined. */
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
    const res = await this.store.list(affinityPrefix(host, type));
    const items = decodeAll(
      res.kvs.filter((kv) => isAffinityKey(kv.key)),
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
    const prefix = affinityPrefix(host, options.type ?? 'host');
    for await (const m of this.store.watch(prefix, {
      ...(options.fromRevision !== undefined ? { fromRevision: options.fromRevision } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    })) {
      if (m.kind === 'events' && m.events.some((e) => isAffinityKey(e.kind === 'put' ? e.kv.key : e.key))) {
        yield m.revision;
      } else if (m.kind === 'resync') {
        yield m.list.revision;
      }
    }
  }

  /** Creates an affinity; fails `already-exists` if one is there. */
  async createAffinity(affinity: AffinityInput): Promise<Versioned<BlockAffinity>> {
    const key = affinityKey(affinity.host, affinity.cidr, affinity.type);
    const kv = await this.store
      .create(key, encodeAffinity(affinity))
      .catch(named(`affinity of ${affinity.host} for ${affinity.cidr}`));
    this.cache.notePut(kv);
    return { value: decodeAffinity(kv), revision: kv.modRevision };
  }

  /** Replaces an affinity by compare-and-swap on `revision`. */
  async updateAffinity(affinity: AffinityInput, revision: string): Promise<Versioned<BlockAffinity>> {
    const key = affinityKey(affinity.host, affinity.cidr, affinity.type);
    const kv = await this.store
      .update(key, encodeAffinity(affinity), revision)
      .catch(named(`affinity of ${affinity.host} for ${affinity.cidr}`));
    this.cache.notePut(kv);
    return { value: decodeAffinity(kv), revision: kv.modRevision };
  }

  /** Deletes an affinity (compare-and-swap on `revision` when given). */
  async deleteAffinity(
    host: string,
    cidr: string,
    revision?: string,
    type: AffinityType = 'host',
  ): Promise<void> {
    const key = affinityKey(host, cidr, type);
    const prev = await this.store
      .delete(key, revision, NO_VALUE)
      .catch(named(`affinity of ${host} for ${cidr}`));
    this.cache.noteDelete(key, prev.modRevision);
  }

  // Handles

  /** The handle `handleId`, or undefined. */
  async getHandle(handleId: string): Promise<Versioned<IPAMHandle> | undefined> {
    const kv = await this.store.get(handleKey(handleId));
    return kv ? { value: decodeHandle(kv), revision: kv.modRevision } : undefined;
  }

  /** Every handle; entries that do not decode are left out. */
  async listHandles(): Promise<VersionedList<IPAMHandle>> {
    const res = await this.store.list(IPAM_HANDLE_ROOT);
    const items = decodeAll(
      res.kvs.filter((kv) => isHandleKey(kv.key)),
      decodeHandle,
    );
    return { items, revision: res.revision };
  }

  /** Creates a handle; fails `already-exists` if one is there. */
  async createHandle(handle: IPAMHandle): Promise<Versioned<IPAMHandle>> {
    const kv = await this.store
      .create(handleKey(handle.handleId), encodeHandle(handle))
      .catch(named(`handle ${handle.handleId}`));
    return { value: decodeHandle(kv), revision: kv.modRevision };
  }

  /** Replaces a handle by compare-and-swap on `revision`. */
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
        {
          key: blockKey(block.cidr),
          value: encodeBlock(block),
          data: blockData(block),
          modRevision: blockRevision,
        },
      ])
      .catch((e: unknown) => {
        this.cache.forgetBlock(block.cidr);
        return named(`handle ${handle.handleId} and block ${block.cidr}`)(e);
      });
    const written = { value: block, revision: b!.modRevision };
    this.cache.noteBlock(block.cidr, written);
    return { handle: { value: decodeHandle(h!), revision: h!.modRevision }, block: written };
  }

  /** Deletes a handle (compare-and-swap on `revision` when given). */
  async deleteHandle(handleId: string, revision?: string): Promise<void> {
    await this.store.delete(handleKey(handleId), revision, NO_VALUE).catch(named(`handle ${handleId}`));
  }

  // The assignment environment

  /**
   * What an address assignment for `host` starts from, read in one request at one revision: the
   * host's Node (undefined when there is none), every IPPool and IPReservation (entries that do not
   * decode are left out, as lists do), the IPAM config and the host's block affinities. From
   * memory while `mirrorAssignEnv(host)` is on and its watches are up (the same records until
   * something changes: callers must not modify them).
   */
  async readAssignEnv(host: string): Promise<AssignEnvRecords> {
    checkKeySegment('host', host);
    const cached = this.cache.records(host);
    if (cached) return cached;
    return decodeAssignEnv((await this.store.readAll(assignEnvReads(host))).results);
  }

  /**
   * `readAssignEnv(host)` derived into what the allocator starts from (assign-env.ts): from the
   * cache, derived once per version, while `host` is mirrored; else read and derived now. Throws
   * `not-found` when the host has no Node. For `IpamClient`; the result must not be modified.
   */
  async readAssignEnvDerived(host: string): Promise<EnvRead> {
    checkKeySegment('host', host);
    const cached = this.cache.env(host);
    if (cached) return cached;
    return deriveAssignEnv(host, decodeAssignEnv((await this.store.readAll(assignEnvReads(host))).results));
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
    checkKeySegment('host', host);
    return this.cache.mirror(this.store, host);
  }

  // Config

  /** The IPAM config, or undefined when none is stored (the defaults apply). */
  async getConfig(): Promise<Versioned<IPAMConfig> | undefined> {
    const kv = await this.store.get(IPAM_CONFIG_KEY);
    return kv ? { value: decodeConfig(kv), revision: kv.modRevision } : undefined;
  }

  /** Create the config (no revision: fails `already-exists` if there is one) or replace it by CAS. */
  async setConfig(config: IPAMConfig, revision?: string): Promise<Versioned<IPAMConfig>> {
    const text = encodeConfig(config);
    const kv = await (revision === undefined
      ? this.store.create(IPAM_CONFIG_KEY, text)
      : this.store.update(IPAM_CONFIG_KEY, text, revision)
    ).catch(named('IPAM config'));
    this.cache.notePut(kv);
    return { value: decodeConfig(kv), revision: kv.modRevision };
  }

  /** Deletes the IPAM config (compare-and-swap on `revision` when given). */
  async deleteConfig(revision?: string): Promise<void> {
    await this.store.delete(IPAM_CONFIG_KEY, revision, NO_VALUE).catch(named('IPAM config'));
  }
}

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
