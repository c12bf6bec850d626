/**
 * What the IPAM client needs from storage: the four IPAM record types with compare-and-swap.
 * `adaptIpamStore` (ipam-store-adapter.ts) implements it over `@calico-ts/datastore`'s `IpamStore`.
 *
 * Semantics every implementation keeps:
 * - reads return the value and the revision of its last write, or undefined when absent;
 * - `create*` throws DatastoreError `already-exists` if present;
 * - `update*` / `delete*` are compare-and-swap on the revision: `conflict` if it moved,
 *   `not-found` if the record is gone;
 * - block CIDRs are canonical text (`198.19.0.0/26`, `fd00:1::/122`).
 */
import type { Resource } from '@calico-ts/api';
import type { AllocationBlock, IpamHandle } from '../block/types.js';

export interface Versioned<T> {
  value: T;
  revision: string;
}

export type AffinityState = 'pending' | 'confirmed' | 'pendingDeletion';

export interface AffinityValue {
  /** One of `AffinityState`, or whatever a newer writer stored (treated as not confirmed). */
  state: AffinityState | (string & {});
  deleted: boolean;
  /** Fields this version does not know, written back unchanged. */
  extra?: Record<string, unknown>;
}

export interface AffinityEntry extends Versioned<AffinityValue> {
  host: string;
  cidr: string;
}

export interface IpamConfigValue {
  strictAffinity: boolean;
  autoAllocateBlocks: boolean;
  /** 0 = no configured limit (the client then applies its safety limit of 20). */
  maxBlocksPerHost: number;
}

export const DEFAULT_IPAM_CONFIG: IpamConfigValue = {
  strictAffinity: false,
  autoAllocateBlocks: true,
  maxBlocksPerHost: 0,
};

/** What an assignment for a host starts from, read together (`IpamRecords.readAssignEnv`). */
export interface AssignEnvRead {
  /** The host's Node; undefined when it does not exist. */
  node?: Resource;
  pools: Resource[];
  reservations: Resource[];
  /** Undefined when no IPAM config is stored (the defaults apply). */
  config?: IpamConfigValue;
  /** The host's affinities, both families. */
  affinities: AffinityEntry[];
}

export interface IpamRecords {
  /** The host's Node, every pool and reservation, the IPAM config and its affinities: one request. */
  readAssignEnv(host: string): Promise<AssignEnvRead>;
  /**
   * Keeps `readAssignEnv(host)` answered from memory (followed by watches, with this store's own
   * writes applied as they resolve) until `close()`; reads go to storage while that is not possible.
   */
  mirrorAssignEnv(host: string): Promise<{ close(): void }>;
  getBlock(cidr: string): Promise<Versioned<AllocationBlock> | undefined>;
  listBlocks(family?: 4 | 6): Promise<Versioned<AllocationBlock>[]>;
  /** The CIDRs of every block (of one family): what exists, without reading any block. */
  listBlockCidrs(family?: 4 | 6): Promise<string[]>;
  /** The blocks of these CIDRs that exist, in one request. */
  getBlocks(cidrs: readonly string[]): Promise<Versioned<AllocationBlock>[]>;
  createBlock(block: AllocationBlock): Promise<Versioned<AllocationBlock>>;
  updateBlock(block: AllocationBlock, revision: string): Promise<Versioned<AllocationBlock>>;
  deleteBlock(cidr: string, revision: string): Promise<void>;

  getAffinity(host: string, cidr: string): Promise<Versioned<AffinityValue> | undefined>;
  /** Host affinities, of one host and/or family when given. */
  listAffinities(opts?: { host?: string; family?: 4 | 6 }): Promise<AffinityEntry[]>;
  createAffinity(host: string, cidr: string, value: AffinityValue): Promise<Versioned<AffinityValue>>;
  updateAffinity(
    host: string,
    cidr: string,
    value: AffinityValue,
    revision: string,
  ): Promise<Versioned<AffinityValue>>;
  deleteAffinity(host: string, cidr: string, revision: string): Promise<void>;

  getHandle(handleId: string): Promise<Versioned<IpamHandle> | undefined>;
  listHandles(): Promise<Map<string, Versioned<IpamHandle>>>;
  createHandle(handleId: string, handle: IpamHandle): Promise<Versioned<IpamHandle>>;
  updateHandle(handleId: string, handle: IpamHandle, revision: string): Promise<Versioned<IpamHandle>>;
  deleteHandle(handleId: string, revision: string): Promise<void>;
  /**
   * An allocation's handle (created when `handleRevision` is undefined, else compare-and-swapped)
   * and block (compare-and-swapped) in one transaction: both or neither.
   */
  writeHandleAndBlock(
    handleId: string,
    handle: IpamHandle,
    handleRevision: string | undefined,
    block: AllocationBlock,
    blockRevision: string,
  ): Promise<{ handle: Versioned<IpamHandle>; block: Versioned<AllocationBlock> }>;

  /** The global IPAM configuration; undefined when none is stored (defaults apply). */
  getConfig(): Promise<IpamConfigValue | undefined>;
}
