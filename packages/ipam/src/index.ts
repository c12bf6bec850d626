export * from './block/index.js';
export * from './check/check-report.js';
export * from './check/gc-plan.js';
export * from './errors.js';
export * from './ipam-client.js';
export { type PoolRequest, poolForIp, selectPools, type UsablePool, usablePools } from './pools.js';
export {
  type AffinityState,
  type AffinityValue,
  DEFAULT_IPAM_CONFIG,
  type IpamConfigValue,
} from './store/ipam-records.js';
