/**
 * `@calico-ts/ipam`: Calico's block-affinity IP address management over a `@calico-ts/datastore`
 * KVStore: `IpamStore` (the IPAM records with compare-and-swap, and the one IPAM cache) and
 * `IpamClient` (assign and release addresses by handle, claim and release block affinities,
 * garbage collection and the consistency check behind `calicoctl ipam check`). The record types
 * are the datastore's, re-exported here.
 */

export type {
  AffinityInput,
  AffinityState,
  AffinityType,
  AllocationAttribute,
  AllocationBlock,
  BlockAffinity,
  IPAMConfig,
  IPAMHandle,
  Versioned,
  VersionedList,
} from '@calico-ts/datastore';
export {
  type AffinityRecord,
  buildCheckReport,
  type CheckReport,
  type HandleCountMismatch,
  type IpamSnapshot,
  type LeakedAddress,
} from './check/check-report.js';
export {
  type AffinityReleaseResult,
  type AssignedIP,
  type AssignIPRequest,
  type AssignmentAttributes,
  type AutoAssignRequest,
  type AutoAssignResult,
  DEFAULT_MAX_BLOCKS_PER_HOST,
  type GcOptions,
  type GcResult,
  type IpamClientOptions,
  type ReleaseIPsResult,
  type ReleaseSpec,
} from './client/types.js';
export { IPAM_ERROR_CODES, IpamError, type IpamErrorCode, isIpamError } from './errors.js';
export { IpamClient } from './ipam-client.js';
export {
  type AssignEnvRecords,
  DEFAULT_IPAM_CONFIG,
  type IpamConfigValue,
} from './store/assign-env.js';
export { IpamStore } from './store/ipam-store.js';
