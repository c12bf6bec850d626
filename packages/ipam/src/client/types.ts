/**
 * The IPAM client's public vocabulary: requests, results and options of its operations, and the
 * small helpers that build results. Shared by the operations (assign.ts, release.ts, ...) and
 * re-exported by the facade (ipam-client.ts) and the package index.
 */
import type { IPPoolAllowedUse } from '@calico-ts/api';
import { formatCidr, formatIP, type IPAddress, type IPFamily } from '@calico-ts/api/net';
import type { Cidr } from '../block/ip-math.js';
import type { AssignmentAttrs } from '../block/types.js';
import type { GcState } from '../check/gc-plan.js';

/** Upstream's safety limit when neither the request nor the IPAM config sets `maxBlocksPerHost`. */
export const DEFAULT_MAX_BLOCKS_PER_HOST = 20;
/** An empty block claimed less than this long ago is not reclaimed from its host (upstream: 1 min). */
export const EMPTY_BLOCK_MIN_RECLAIM_AGE_MS = 60_000;

export interface IpamClientOptions {
  /** Compare-and-swap attempts per step before giving up. Default 100. */
  maxRetries?: number;
  now?: () => Date;
  /** Uniform in [0, 1); used for retry jitter and the start block of single-address blocks. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** One assigned address with its block's prefix length, e.g. `198.19.0.5/26`. */
export interface AssignedIP {
  family: IPFamily;
  address: string;
  prefixLength: number;
  /** `address/prefixLength`, as a CNI IPAM result carries it. */
  cidr: string;
  /** The block it came from, e.g. `198.19.0.0/26`. */
  block: string;
}

export interface AutoAssignRequest {
  num4: number;
  num6: number;
  handleId: string;
  attrs: AssignmentAttrs;
  /** The Calico Node name the addresses are for (its labels feed pool nodeSelectors). */
  hostname: string;
  /** Pool names or CIDRs to use instead of selector-based choice. */
  ipv4Pools?: readonly string[];
  ipv6Pools?: readonly string[];
  /** Labels of the pod's namespace, for pool namespaceSelectors. */
  namespaceLabels?: Record<string, string>;
  /** Per-request block limit; the stricter of this and the IPAM config's applies. */
  maxBlocksPerHost?: number;
  /** What the addresses are for. Default `Workload`. */
  use?: IPPoolAllowedUse;
}

export interface AutoAssignResult {
  ipv4: AssignedIP[];
  ipv6: AssignedIP[];
}

export interface AssignIPRequest {
  handleId: string;
  attrs: AssignmentAttrs;
  hostname: string;
}

export interface ReleaseSpec {
  ip: string;
  /** Release only if the address still belongs to this handle. */
  handleId?: string;
  /** Release only if the allocation still has this sequence number. */
  sequenceNumber?: bigint;
}

export interface ReleaseIPsResult {
  released: string[];
  /** Addresses that were not assigned (already free, or in no block). */
  notAssigned: string[];
  /** Addresses left alone because a handle or sequence-number precondition did not hold. */
  mismatched: string[];
}

export interface AssignmentAttributes {
  handleId: string | null;
  attrs: Record<string, string>;
  block: string;
  sequenceNumber: bigint;
}

export interface AffinityReleaseResult {
  /** Blocks whose affinity was released (deleted when empty). */
  released: string[];
  /** Blocks left alone: not empty when emptiness was required. */
  notEmpty: string[];
}

export interface GcOptions {
  /** Whether the owner an allocation's attributes describe (pod, node, tunnel) still exists. */
  isOwnerAlive: (
    attrs: Record<string, string>,
    allocation: { ip: string; handleId: string | null },
  ) => Promise<boolean>;
  gracePeriodMs: number;
  /** Time of this scan (ms since the epoch, or a Date). Default: the client's clock. */
  now?: number | Date;
  /** First-seen times from earlier scans, kept in memory by the caller; updated in place. */
  state: GcState;
}

export interface GcResult {
  released: string[];
  /** Candidates still inside their grace period, with when they become releasable (ms). */
  pending: { ip: string; handleId: string | null; releaseAt: number }[];
}

/** One assigned address as the API reports it. */
export function assigned(ip: IPAddress, block: Cidr): AssignedIP {
  const address = formatIP(ip);
  return {
    family: ip.family,
    address,
    prefixLength: block.prefix,
    cidr: `${address}/${block.prefix}`,
    block: formatCidr(block),
  };
}

/** The stricter of the request's and the config's limit; 0 everywhere means the safety limit. */
export function effectiveMaxBlocks(perRequest: number, configured: number): number {
  let max = perRequest;
  if (configured > 0 && (max === 0 || max > configured)) max = configured;
  return max > 0 ? max : DEFAULT_MAX_BLOCKS_PER_HOST;
}
