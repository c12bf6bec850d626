/**
 * `@calico-ts/api/internal`: what the sibling `@calico-ts/*` packages share with this one and
 * users do not need: Go encoding tables, per-kind zod schemas, field enforcement tables. No
 * stability promise: it changes with the packages that import it, in the same release.
 */
export { convertK8sNetworkPolicyPartial } from './convert/k8s-network-policy.js';
export { assertNever } from './errors.js';
export {
  asNumberSchema,
  bgpConfigurationSpecSchema,
  bgpFilterRuleV4Schema,
  bgpFilterRuleV6Schema,
  bgpFilterSpecSchema,
  bgpPeerSpecSchema,
  parsePeerIP,
} from './resources/bgp.js';
export {
  clusterInformationSpecSchema,
  felixConfigurationSpecSchema,
  kubeControllersConfigurationSpecSchema,
  kubeControllersConfigurationStatusSchema,
} from './resources/config.js';
export {
  endpointPortSchema,
  globalNetworkSetSpecSchema,
  hostEndpointSpecSchema,
  networkSetSpecSchema,
  nodeBGPSpecSchema,
  nodeSpecSchema,
  nodeStatusSchema,
  qosControlsSchema,
  workloadEndpointPortSchema,
  workloadEndpointSpecSchema,
} from './resources/endpoints.js';
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
} from './resources/enforcement.js';
export { type FoldedField, foldFieldCase } from './resources/field-case.js';
export {
  GO_VALUE_FORMS,
  type GoFieldInfo,
  type GoOmit,
  type GoValue,
  goFieldInfo,
} from './resources/go-encoding.js';
export { defaultIPPool, ipPoolSpecSchema, ipReservationSpecSchema } from './resources/ippool.js';
export { objectMetaSchema } from './resources/metadata.js';
export { calicoNodeStatusSpecSchema, calicoNodeStatusStatusSchema } from './resources/node-status.js';
export {
  defaultPolicyTypes,
  globalNetworkPolicySpecSchema,
  networkPolicySpecSchema,
  profileSpecSchema,
  tierSpecSchema,
} from './resources/policy.js';
export { KIND_DEFINITIONS, resourceSchemas } from './resources/registry.js';
export {
  entityRuleSchema,
  httpMatchSchema,
  httpPathSchema,
  icmpFieldsSchema,
  isNamedPort,
  portSchema,
  protocolSchema,
  ruleMetadataSchema,
  ruleSchema,
  serviceAccountMatchSchema,
  serviceMatchSchema,
} from './resources/rule.js';
export {
  stagedGlobalNetworkPolicySpecSchema,
  stagedKubernetesNetworkPolicySpecSchema,
  stagedNetworkPolicySpecSchema,
} from './resources/staged.js';
export { type StringScalar, storeStringScalars } from './resources/string-scalars.js';
