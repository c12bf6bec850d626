/**
 * The IPAM records as the block logic sees them: upstream's JSON field names and meaning
 * (`libcalico-go/lib/backend/model/block.go`, `ipam_handle.go`), with the 64-bit sequence numbers as
 * bigints so that incrementing one near 2^60 (a creation time in ns) really changes it.
 */

/**
 * A block and its attribute entries are the datastore's record model (`@calico-ts/datastore`'s
 * ipam-records.ts, stored by store/ipam-store.ts), used here unchanged: `allocations`, `unallocated`, `attributes` (`handle_id`, `secondary`),
 * `sequenceNumber`, `sequenceNumberForAllocation`, `affinity`, `affinity_claim_time`, `deleted`,
 * and `extra` for fields a newer writer added.
 */
export type { AllocationAttribute, AllocationBlock } from '@calico-ts/datastore';

/**
 * `/calico/ipam/v2/handle/<id>`: how many addresses the handle holds in each block. The stored
 * record (`IPAMHandle`) is this plus its `handleId`.
 */
export interface IpamHandle {
  /** Block CIDR text → count. */
  block: Record<string, number>;
  deleted: boolean;
  /** Fields this version does not know, written back unchanged. */
  extra?: Record<string, unknown>;
}

/** The attributes a caller records with an assignment. */
export interface AssignmentAttrs {
  node: string;
  namespace?: string;
  pod?: string;
  timestamp?: string;
  type?: string;
  /** Any further upstream-style attribute (e.g. `service`). */
  [key: string]: string | undefined;
}
