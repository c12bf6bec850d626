/**
 * Public surface of the resource model: per-kind types and schemas, shared rule types, validation,
 * defaulting, document decoding, and the CIDR helpers other packages use.
 */
export {
  type Cidr,
  cidrContains,
  cidrSize,
  cidrsOverlap,
  formatCidr,
  formatIP,
  type IPAddress,
  type IPFamily,
  ipFamily,
  isStrictlyMasked,
  parseCidr,
  parseCidrOrIP,
  parseIP,
  prefixMask,
} from '../net/cidr.js';
export * from './bgp.js';
export {
  cidrOrIP,
  DURATION_RULE,
  duration,
  isDnsLabel,
  isDnsSubdomain,
  isDuration,
  labelValueProblem,
  qualifiedNameProblem,
} from './common.js';
export * from './config.js';
export { decodeDocuments } from './decode.js';
export * from './endpoints.js';
export * from './go-encoding.js';
export * from './ippool.js';
export { objectMetaSchema } from './metadata.js';
export * from './policy.js';
export {
  KIND_DEFINITIONS,
  type Resource,
  type ResourceMap,
  type ResourceOf,
  resourceSchemas,
} from './registry.js';
export * from './rule.js';
export {
  applyDefaults,
  formatPath,
  type ValidateOptions,
  type ValidationResult,
  validateResource,
  validateResourceOrThrow,
} from './validate.js';
