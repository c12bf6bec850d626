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
export { decodeDocuments, emptyDocuments } from './decode.js';
export * from './endpoints.js';
export {
  ENTITY_RULE_FIELDS,
  type FieldHandling,
  GLOBAL_NETWORK_POLICY_SPEC_FIELDS,
  HOST_ENDPOINT_SPEC_FIELDS,
  HTTP_MATCH_FIELDS,
  ICMP_FIELDS,
  NETWORK_POLICY_SPEC_FIELDS,
  PROFILE_SPEC_FIELDS,
  RULE_FIELDS,
  SERVICE_ACCOUNT_MATCH_FIELDS,
  SERVICE_MATCH_FIELDS,
  type UnenforcedField,
  type UnenforcedRuleField,
  unenforcedConsequence,
  unenforcedPolicyFields,
  unenforcedRuleFields,
  WORKLOAD_ENDPOINT_SPEC_FIELDS,
} from './enforcement.js';
export { type FoldedField, foldFieldCase } from './field-case.js';
export * from './go-encoding.js';
export * from './ippool.js';
export { objectMetaSchema } from './metadata.js';
export {
  type CalicoNodeStatus,
  type CalicoNodeStatusSpec,
  type CalicoNodeStatusStatus,
  calicoNodeStatusSpecSchema,
  calicoNodeStatusStatusSchema,
  NODE_STATUS_CLASSES,
} from './node-status.js';
export * from './policy.js';
export {
  KIND_DEFINITIONS,
  type Resource,
  type ResourceMap,
  type ResourceOf,
  resourceSchemas,
} from './registry.js';
export * from './rule.js';
export { checkRule, checkRules, type RuleCheckOptions, type RuleDirection } from './rule-checks.js';
export {
  STAGED_ACTIONS,
  type StagedAction,
  type StagedGlobalNetworkPolicy,
  type StagedGlobalNetworkPolicySpec,
  type StagedKubernetesNetworkPolicy,
  type StagedKubernetesNetworkPolicySpec,
  type StagedNetworkPolicy,
  type StagedNetworkPolicySpec,
  stagedGlobalNetworkPolicySpecSchema,
  stagedKubernetesNetworkPolicySpecSchema,
  stagedNetworkPolicySpecSchema,
} from './staged.js';
export { type StringScalar, storeStringScalars } from './string-scalars.js';
export {
  applyDefaults,
  formatPath,
  type ValidateOptions,
  type ValidationResult,
  validateResource,
  validateResourceOrThrow,
} from './validate.js';
