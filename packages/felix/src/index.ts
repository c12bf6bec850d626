/**
 * Felix, Calico's per-node agent. `calc/` turns datastore resources into the desired dataplane
 * state (pure); `rules/` renders that state as nftables JSON and diffs it (pure); `dataplane/`
 * programs the kernel; `config/` resolves the parameters; `daemon/` runs it all.
 */
export { CalcGraph, type CalcGraphOptions, DEFAULT_ALLOW_PROFILE } from './calc/calc-graph.js';
export { applyDataplaneDiff, emptyDataplaneState, isEmptyDiff } from './calc/dataplane-state.js';
export { lengthLimitedID, makeUniqueID } from './calc/hash.js';
export {
  IPSET_ID_ALL_HOSTS,
  IPSET_ID_ALL_POOLS,
  IPSET_ID_ALL_VXLAN_SOURCES,
  IPSET_ID_MASQ_POOLS,
  namedPortIPSetId,
  policyId,
  selectorIPSetId,
} from './calc/ids.js';
export {
  hostAddresses,
  IPIP_DEVICE,
  type IpipConfig,
  type IpipDevice,
  type IpipState,
  ipipEnabled,
  resolveIpip,
} from './calc/ipip-resolver.js';
export {
  type BlockRecord,
  type BlockRoute,
  type BlockRoutes,
  blockRoutesOf,
  type EncapInput,
  encapRouteProtocol,
  type NodeInfo,
  nodeInfoOf,
  type PoolEncap,
  resolveBlockRoutes,
} from './calc/route-resolver.js';
export { entityRuleSelector, type ScannedRules, scanRules } from './calc/rule-scanner.js';
export { type Labels, SelectorIndex, type SelectorIndexCallbacks } from './calc/selector-index.js';
export type * from './calc/types.js';
export {
  type EncapRoute,
  resolveVxlan,
  VXLAN_DEVICE_V4,
  VXLAN_DEVICE_V6,
  type VxlanConfig,
  type VxlanDevice,
  type VxlanFdbEntry,
  type VxlanNeighbour,
  type VxlanState,
  vtepMacFor,
  vxlanEnabled,
} from './calc/vxlan-resolver.js';
export { clientConfigOf, hostMtuOf, podMtu, rulesConfigOf, statusPrefix } from './config/derived.js';
export {
  type ConfigProblem,
  type ConfigSource,
  type ConfigSources,
  changedParams,
  type ResolvedConfig,
  resolveFelixConfig,
} from './config/felix-config.js';
export { parseIni } from './config/ini.js';
export {
  DEFAULT_CONFIG_FILE,
  type LocalConfigSources,
  readLocalSources,
  resolveWith,
} from './config/load-config.js';
export { type FelixConfig, PARAMS, type ParamDef } from './config/params.js';
export {
  CALC_KINDS,
  FelixDaemon,
  type FelixDaemonOptions,
  felixKeySources,
  IPAM_BLOCKS_SOURCE,
  type IpamBlockSource,
} from './daemon/felix-daemon.js';
export { HealthAggregator, type HealthReport, startHealthServer } from './daemon/health.js';
export { FelixMetrics } from './daemon/metrics.js';
export { StatusReporter, type StatusStore } from './daemon/status-reporter.js';
export { InterfaceMonitor, type InterfaceState } from './dataplane/interface-monitor.js';
export {
  type IpipApplyResult,
  IpipManager,
  type IpipManagerOptions,
  type IpipNetOps,
} from './dataplane/ipip-manager.js';
export {
  type DataplaneNetOps,
  LinuxDataplane,
  type LinuxDataplaneOptions,
} from './dataplane/linux-dataplane.js';
export { type NftApplyResult, NftablesDataplane } from './dataplane/nftables-dataplane.js';
export { RouteManager } from './dataplane/route-manager.js';
export {
  type VxlanApplyResult,
  VxlanManager,
  type VxlanManagerOptions,
  type VxlanNetOps,
  vxlanIncompatibility,
} from './dataplane/vxlan-manager.js';
export { type Logger, NOOP_LOGGER } from './logging.js';
export {
  allocateMarks,
  DEFAULT_RULES_CONFIG,
  type MarkBits,
  type ProtoPort,
  type RulesConfig,
  rulesConfigFromFelix,
} from './rules/config.js';
export { type EndpointChainOptions, renderEndpointChain } from './rules/endpoint-renderer.js';
export {
  IncrementalRenderer,
  type RulesetChange,
  type TableChange,
} from './rules/incremental-renderer.js';
export * from './rules/names.js';
export type * from './rules/nft-json.js';
export { type PolicyRenderContext, type RenderedRule, renderPolicyRules } from './rules/policy-renderer.js';
export type * from './rules/ruleset.js';
export { emptyRuleset } from './rules/ruleset.js';
export { diffRuleset, toNftDocument } from './rules/ruleset-diff.js';
export { renderRuleset, type TunnelRules } from './rules/ruleset-renderer.js';
export {
  ensureIpipTunnelAddress,
  ensureTunnelAddress,
  ensureVxlanTunnelAddress,
  TUNNEL_ADDRESS_ERROR_CODES,
  TunnelAddressError,
  type TunnelAddressErrorCode,
  type TunnelAddressResult,
  type TunnelIpam,
  type TunnelKind,
  tunnelHandle,
  tunnelPoolCidrs,
} from './tunnel-addr/tunnel-address.js';
