/**
 * `@calico-ts/api`: the projectcalico.org/v3 resource model. Types of every kind, validation with
 * every error, upstream's defaults, the selector language, and the conversions from v1 documents
 * and Kubernetes NetworkPolicy. Pure: no I/O. CIDR and label helpers are in `@calico-ts/api/net`;
 * CRD manifests in `@calico-ts/api/crds`.
 */
export {
  convertK8sNetworkPolicy,
  isK8sNetworkPolicy,
  K8S_NETWORK_POLICY_NAME_PREFIX,
  type K8sIPBlock,
  type K8sLabelSelector,
  type K8sLabelSelectorRequirement,
  type K8sNetworkPolicy,
  type K8sNetworkPolicyConversion,
  type K8sNetworkPolicyEgressRule,
  type K8sNetworkPolicyIngressRule,
  type K8sNetworkPolicyPeer,
  type K8sNetworkPolicyPort,
  type K8sNetworkPolicySpec,
  type K8sObjectMeta,
  k8sLabelSelectorToCalico,
} from './convert/k8s-network-policy.js';
export {
  ENDPOINT_SLICE_SERVICE_LABEL,
  endpointSliceService,
  type K8sEndpoint,
  type K8sEndpointPort,
  type K8sEndpointSlice,
  type K8sService,
  type K8sServicePort,
} from './convert/k8s-service.js';
export {
  convertV1ToV3,
  isV1Document,
  V1_KINDS,
  type V1ConversionResult,
  type V1Kind,
} from './convert/v1-to-v3.js';
export {
  API_ERROR_CODES,
  ApiError,
  type ApiErrorCode,
  type FieldError,
  formatFieldError,
  SelectorError,
  ValidationError,
} from './errors.js';
export {
  API_GROUP,
  API_VERSION,
  isKind,
  KIND_NAMES,
  KINDS,
  type Kind,
  type KindInfo,
  POLICY_KINDS,
  resolveKind,
} from './kinds.js';
export type { ObjectMeta, ResourceObject } from './meta.js';
export {
  type ASNumber,
  type BGPConfiguration,
  type BGPConfigurationSpec,
  type BGPFilter,
  type BGPFilterRuleV4,
  type BGPFilterRuleV6,
  type BGPFilterSpec,
  type BGPPeer,
  type BGPPeerSpec,
  LOG_LEVELS,
} from './resources/bgp.js';
export type {
  ClusterInformation,
  ClusterInformationSpec,
  FelixConfiguration,
  FelixConfigurationSpec,
  KubeControllersConfiguration,
  KubeControllersConfigurationSpec,
  KubeControllersConfigurationStatus,
} from './resources/config.js';
export { decodeDocuments, emptyDocuments } from './resources/decode.js';
export {
  type EndpointPort,
  type GlobalNetworkSet,
  type GlobalNetworkSetSpec,
  type HostEndpoint,
  type HostEndpointSpec,
  NAMESPACE_LABEL,
  type NetworkSet,
  type NetworkSetSpec,
  type Node,
  type NodeBGPSpec,
  type NodeSpec,
  type NodeStatus,
  ORCHESTRATOR_LABEL,
  type QoSControls,
  type WorkloadEndpoint,
  type WorkloadEndpointPort,
  type WorkloadEndpointSpec,
} from './resources/endpoints.js';
export {
  DEFAULT_BLOCK_SIZE_V4,
  DEFAULT_BLOCK_SIZE_V6,
  ENCAP_MODES,
  type EncapMode,
  IPPOOL_ALLOWED_USES,
  type IPPool,
  type IPPoolAllowedUse,
  type IPPoolSpec,
  type IPReservation,
  type IPReservationSpec,
} from './resources/ippool.js';
export {
  type CalicoNodeStatus,
  type CalicoNodeStatusSpec,
  type CalicoNodeStatusStatus,
  NODE_STATUS_CLASSES,
} from './resources/node-status.js';
export {
  DEFAULT_TIER,
  DEFAULT_TIER_ORDER,
  type GlobalNetworkPolicy,
  type GlobalNetworkPolicySpec,
  type NetworkPolicy,
  type NetworkPolicySpec,
  type Profile,
  type ProfileSpec,
  TIER_LABEL,
  type Tier,
  type TierSpec,
  WELL_KNOWN_TIERS,
} from './resources/policy.js';
export type { Resource, ResourceMap, ResourceOf } from './resources/registry.js';
export {
  ACTIONS,
  type Action,
  type EntityRule,
  type HTTPMatch,
  type HTTPPath,
  type ICMPFields,
  POLICY_TYPES,
  type PolicyType,
  type Port,
  PROTOCOL_NAMES,
  type Protocol,
  type Rule,
  type RuleMetadata,
  type ServiceAccountMatch,
  type ServiceMatch,
} from './resources/rule.js';
export type { RuleDirection } from './resources/rule-checks.js';
export {
  STAGED_ACTIONS,
  type StagedAction,
  type StagedGlobalNetworkPolicy,
  type StagedGlobalNetworkPolicySpec,
  type StagedKubernetesNetworkPolicy,
  type StagedKubernetesNetworkPolicySpec,
  type StagedNetworkPolicy,
  type StagedNetworkPolicySpec,
} from './resources/staged.js';
export {
  applyDefaults,
  type ValidateOptions,
  type ValidationResult,
  validateResource,
  validateResourceOrThrow,
} from './resources/validate.js';
export type { SelectorNode } from './selector/ast.js';
export { printSelector } from './selector/printer.js';
export {
  andSelectors,
  canonicalSelector,
  parseSelector,
  prefixSelectorLabels,
  type Selector,
  selectorMatches,
  validateSelector,
} from './selector/selector.js';
