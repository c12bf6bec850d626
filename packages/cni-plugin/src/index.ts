/**
 * `@calico-ts/cni-plugin`: the `calico` and `calico-ipam` CNI plugins (spec 0.1.0 to 1.1.0). The
 * executables are built into bin/ (see scripts/bundle.mjs); this module exposes the pieces for
 * embedding: `runPlugin` with injected effects, the network config and result codecs, the CNI
 * error numbers, upstream's naming of veths, endpoints and IPAM handles.
 */
export {
  CNI_PLUGIN_ERROR_CODES,
  CniPluginError,
  type CniPluginErrorCode,
  isCniPluginError,
} from './errors.js';
export type { HostInfo, PluginContext } from './handlers/context.js';
export type {
  AssignIpRequest,
  AutoAssignRequest,
  DeletePrecondition,
  PluginBackend,
  PoolCapacity,
  Readiness,
} from './io/backend.js';
export {
  type Dataplane,
  HOST_VETH_MAC,
  IPV4_GATEWAY,
  IPV6_GATEWAY,
  type ObservedInterface,
  type ObservedRoute,
  type ObservedWorkload,
  type VethPairSpec,
  type WorkloadNetwork,
  type WorkloadNetworkSpec,
} from './io/dataplane.js';
export { type DelegateRunner, ExecDelegateRunner } from './io/delegate.js';
export { LinuxDataplane, type NetOps } from './io/linux-dataplane.js';
export { createLogger, type LineLogger } from './io/logger.js';
export {
  containerIdOfHandle,
  DEFAULT_INTERFACE_PREFIX,
  hostVethName,
  interfacePrefix,
  ipamHandleId,
  legacyHandleId,
  splitWorkloadEndpointName,
  type VethNameInput,
  type WorkloadEndpointIds,
  workloadEndpointName,
  workloadEndpointNamePrefix,
} from './naming.js';
export { type PluginEffects, type PluginOutput, runPlugin } from './plugin.js';
export { type Program, programFromPath } from './program.js';
export {
  type CniArgs,
  type Orchestrator,
  parseCniArgs,
  type WorkloadIdentity,
  workloadIdentity,
} from './spec/cni-args.js';
export { type Env, type Invocation, parseCommand, parseInvocation } from './spec/env.js';
export {
  CNI_ERROR_NUMBERS,
  type CniErrorObject,
  cniErrorNumber,
  INTERNAL_ERROR_NUMBER,
  toCniErrorObject,
} from './spec/error.js';
export {
  type GcAttachment,
  type IpamConf,
  type KubeApiConf,
  type LogLevel,
  type NetConf,
  parseNetConf,
} from './spec/netconf.js';
export {
  type CniDns,
  type CniInterface,
  type CniIPConfig,
  type CniResult,
  type CniRoute,
  decodeResult,
  emptyResult,
  encodeResult,
} from './spec/result.js';
export {
  CNI_COMMANDS,
  type CniCommand,
  type CniVersion,
  DEFAULT_VERSION,
  isSupportedVersion,
  LATEST_VERSION,
  negotiateVersion,
  SUPPORTED_VERSIONS,
} from './spec/versions.js';
export { buildWorkloadEndpoint, type WorkloadEndpointInput } from './workload.js';
