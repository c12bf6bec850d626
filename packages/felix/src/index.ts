/**
 * Felix, Calico's per-node agent. `CalcGraph` turns datastore resources into the desired dataplane
 * state (pure); `renderRuleset` renders that state as nftables JSON and `diffRuleset` diffs it
 * (pure); `LinuxDataplane` and `NftablesDataplane` program the kernel; `resolveFelixConfig`
 * resolves the parameters; `FelixDaemon` runs it all.
 */

// The nftables vocabulary is `@calico-ts/nftables`'; these names stay for existing importers.
export type {
  NftChain,
  NftChainType,
  NftCommand,
  NftDocument,
  NftElement,
  NftExpr as NftExpression,
  NftFamily,
  NftHook,
  NftMap,
  NftMatchOp,
  NftObjectRef as NftObject,
  NftRule,
  NftSet,
  NftStatement,
  NftTable,
  NftVerdict,
} from '@calico-ts/nftables';
export { CalcGraph, type CalcGraphOptions } from './calc/calc-graph.js';
export {
  applyDataplaneDiff,
  changesRules,
  emptyDataplaneState,
  isEmptyDiff,
} from './calc/dataplane-state.js';
export type { EncapConfig } from './calc/encap-resolver.js';
export type {
  CalcKind,
  CalcResource,
  CalcUpdate,
  DataplaneDiff,
  DataplaneState,
  EncapDiff,
  EndpointState,
  EndpointTier,
  ICMPMatch,
  IPAMBlockResource,
  IPSetDefinition,
  IPSetState,
  NamedPortProtocol,
  NormalizedRule,
  PolicyKind,
  PolicyState,
  PoolEncaps,
  PoolState,
  PortRange,
  ProfileState,
  ResourceRef,
  RuleAction,
  RuleProtocol,
  ServiceRef,
  TierDefaultAction,
  TunnelSources,
} from './calc/types.js';
export { vtepMacFor } from './calc/vxlan-resolver.js';
export { clientConfigOf } from './config/derived.js';
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
  FELIX_SYNCER_KINDS,
  FelixDaemon,
  type FelixDaemonOptions,
  type FelixKeySources,
  type FelixSyncer,
  type FelixSyncerFactory,
  felixKeySources,
  felixSyncerSources,
  IPAM_BLOCKS_SOURCE,
} from './daemon/felix-daemon.js';
export { HealthAggregator, type HealthReport, startHealthServer } from './daemon/health.js';
export { FelixMetrics } from './daemon/metrics.js';
export { StatusReporter, type StatusStore } from './daemon/status-reporter.js';
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
export { type Logger, NOOP_LOGGER } from './logging.js';
export {
  allocateMarks,
  DEFAULT_RULES_CONFIG,
  type MarkBits,
  type ProtoPort,
  type RulesConfig,
  rulesConfigFromFelix,
} from './rules/config.js';
export { IncrementalRenderer, type RulesetChange, type TableChange } from './rules/incremental-renderer.js';
export { type IpFamily, TABLE_NAME } from './rules/names.js';
export {
  emptyRuleset,
  type NftBaseChain,
  type NftChainDesired,
  type NftDesired,
  type NftMapDesired,
  type NftRuleDesired,
  type NftSetDesired,
  type NftTableDesired,
} from './rules/ruleset.js';
export { diffRuleset, toNftDocument } from './rules/ruleset-diff.js';
export { renderRuleset, type TunnelRules } from './rules/ruleset-renderer.js';
export {
  ensureIpipTunnelAddress,
  ensureTunnelAddress,
  ensureVxlanTunnelAddress,
  ensureVxlanV6TunnelAddress,
  TUNNEL_ADDRESS_ERROR_CODES,
  TunnelAddressError,
  type TunnelAddressErrorCode,
  type TunnelAddressReads,
  type TunnelAddressResult,
  type TunnelIpam,
  type TunnelKind,
} from './tunnel-addr/tunnel-address.js';
