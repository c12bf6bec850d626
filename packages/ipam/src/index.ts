/**
 * `@calico-ts/ipam`: Calico's block-affinity IP address management on a `@calico-ts/datastore`
 * `IpamStore`: assign and release addresses by handle, claim and release block affinities, garbage
 * collection and the consistency check behind `calicoctl ipam check`.
 */
export {
  type AffinityRecord,
  buildCheckReport,
  type CheckReport,
  type HandleCountMismatch,
  type IpamSnapshot,
  type LeakedAddress,
} from './check/check-report.js';
export { IPAM_ERROR_CODES, IpamError, type IpamErrorCode, isIpamError } from './errors.js';
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
  IpamClient,
  type IpamClientOptions,
  type ReleaseIPsResult,
  type ReleaseSpec,
} from './ipam-client.js';
export { DEFAULT_IPAM_CONFIG, type IpamConfigValue } from './store/ipam-records.js';
