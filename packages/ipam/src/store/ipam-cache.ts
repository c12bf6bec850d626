/**
 * The IPAM cache: the one place a process keeps IPAM records between requests. Each `IpamStore`
 * owns one; everything that reads or writes through that store feeds it, and the allocator asks
 * it before it asks the datastore.
 *
 * It holds two kinds of entry:
 *
 *   host environments   for each host `mirror(host)` was called for (the CNI plugin service's
 *                       nodes): the host's Node, every IPPool and IPReservation, the IPAM config
 *                       and the host's affinities, as raw KVs fed by watches (a KVReadMirror,
 *                       kv-read-mirror.ts), decoded and derived (assign-env.ts) at most once per
 *                       version of those KVs.
 *   blocks              the newest version of each block this store has read by key (`getBlock`,
 *                       `getBlocks`) or written (create, update, `writeHandleAndBlock`).
 *
 *   watch events ───────┐
 *   own affinity and    ├─► KVReadMirror ─► version n ─► decoded + derived once ─► readAssignEnv,
 *   config writes ──────┘    (per host)                                            readAssignEnvDerived
 *   block reads and writes ─► newest version per CIDR ─► an affine block's first try (block-search.ts)
 *
 * Invalidation rule, the same for both: an entry is replaced by its record as this process last
 * read or wrote it, or (host entries) heard of from a watch, where a change older than the one
 * held for that key is ignored; it is dropped when its record is deleted through this store, a read
 * finds it gone, or a write of it fails (its stored version is then unknown). A host environment
 * is not served while any of its watches is down, nor after its mirror is closed: reads then go to
 * the datastore. Nothing expires by time, and a derivation is redone only when the version it was
 * made from has moved.
 *
 * Why that is enough: every entry is a starting point, never a proof. Each write that relies on
 * one is a compare-and-swap on the revision the entry carries, so an entry made stale by another
 * writer costs one lost compare-and-swap, after which the allocator reads the record afresh (and
 * that read replaces the entry). It can never make two hosts hand out one address.
 *
 * Thread-safety: single-threaded (the event loop); `mirror(host)` is idempotent while it opens.
 */
import type { AllocationBlock, KV, KVStore, Versioned } from '@calico-ts/datastore';
import {
  type AssignEnvRecords,
  assignEnvReads,
  decodeAssignEnv,
  deriveAssignEnv,
  type EnvRead,
} from './assign-env.js';
import { KVReadMirror } from './kv-read-mirror.js';

interface HostEntry {
  mirror: KVReadMirror;
  /** The records and derived environment of one mirror version. */
  at?: { version: number; records: AssignEnvRecords; derived?: EnvRead };
}

export class IpamCache {
  readonly #hosts = new Map<string, HostEntry>();
  readonly #opening = new Map<string, Promise<KVReadMirror>>();
  readonly #blocks = new Map<string, Versioned<AllocationBlock>>();

  // ---- blocks ---------------------------------------------------------------------------------

  /** The newest version of the block at `cidr` (canonical text) this store has seen, if any. */
  block(cidr: string): Versioned<AllocationBlock> | undefined {
    return this.#blocks.get(cidr);
  }

  /** A block as read or written; `undefined` (a read that found none) drops the entry. */
  noteBlock(cidr: string, b: Versioned<AllocationBlock> | undefined): void {
    if (b) this.#blocks.set(b.value.cidr, b);
    else this.#blocks.delete(cidr);
  }

  /** The block was deleted, or a write of it failed: its stored version is no longer known. */
  forgetBlock(cidr: string): void {
    this.#blocks.delete(cidr);
  }

  // ---- host environments ----------------------------------------------------------------------

  /**
   * Starts mirroring `host`'s environment from `store`; resolves once the first read is in (rejects
   * as that read does). One mirror per host: a second call shares it, and either `close()` stops it.
   */
  async mirror(store: KVStore, host: string): Promise<{ close(): void }> {
    let opening = this.#opening.get(host);
    if (!opening) {
      opening = KVReadMirror.open(store, assignEnvReads(host)).then((mirror) => {
        this.#hosts.set(host, { mirror });
        return mirror;
      });
      this.#opening.set(host, opening);
      opening.catch(() => this.#opening.delete(host));
    }
    const mirror = await opening;
    return {
      close: () => {
        mirror.close();
        if (this.#hosts.get(host)?.mirror === mirror) {
          this.#hosts.delete(host);
          this.#opening.delete(host);
        }
      },
    };
  }

  /** `host`'s records from memory, or undefined when it is not mirrored or a watch is down. */
  records(host: string): AssignEnvRecords | undefined {
    return this.#current(host)?.records;
  }

  /**
   * `host`'s derived environment from memory (derived once per version; a derivation that throws
   * is not kept), or undefined when it is not mirrored or a watch is down.
   */
  env(host: string): EnvRead | undefined {
    const at = this.#current(host);
    if (!at) return undefined;
    at.derived ??= deriveAssignEnv(host, at.records);
    return at.derived;
  }

  /** This store wrote `kv` (an affinity or the config): mirrors that hold its key apply it now. */
  notePut(kv: KV): void {
    for (const h of this.#hosts.values()) h.mirror.notePut(kv);
  }

  /** This store deleted `key`, which was at `prevRevision`. */
  noteDelete(key: string, prevRevision: string): void {
    for (const h of this.#hosts.values()) h.mirror.noteDelete(key, prevRevision);
  }

  #current(host: string): HostEntry['at'] {
    const h = this.#hosts.get(host);
    const results = h?.mirror.results();
    if (!h || !results) return undefined;
    if (h.at?.version !== h.mirror.version)
      h.at = { version: h.mirror.version, records: decodeAssignEnv(results) };
    return h.at;
  }
}
