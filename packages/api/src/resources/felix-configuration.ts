/**
 * FelixConfiguration (upstream `felixconfig.go` and its v3 CRD, validator
 * `validateFelixConfigSpec`, clientv3's defaulting). Every FelixConfiguration field upstream has
 * is typed; an unknown one is an error like anywhere else. The fields are one table in upstream's
 * Go order, which is also the order they are stored in.
 */
import * as z from 'zod';
import type { ResourceObject } from '../meta.js';
import { parseIP } from '../net/cidr.js';
import { LOG_LEVELS } from './bgp.js';
import {
  asArr,
  asObj,
  type CheckContext,
  cidrOrIP,
  duration,
  enabledDisabled,
  int,
  intBetween,
  intOrString,
  nonEmpty,
  oneOf,
  oneOfAnyCase,
  selector,
  uint32,
} from './common.js';
import { goAlways, goField, goPtr } from './go-encoding.js';
import { lazyArray, lazyObject, lazySchema } from './lazy-schema.js';
import { portSchema } from './rule.js';

const bool = () => z.boolean();
const str = () => z.string();
const dur = () => duration();
const logLevel = () => oneOf(LOG_LEVELS);

const protoPort = () =>
  z.strictObject({
    protocol: z
      .string()
      .refine((s) => /^(tcp|udp|sctp)$/i.test(s), { error: 'must be TCP, UDP or SCTP' })
      .optional(),
    port: goAlways(intBetween(0, 65535)),
    net: cidrOrIP().optional(),
  });

const routeTableRange = () => z.strictObject({ min: goAlways(int()), max: goAlways(int()) });
const conntrackTimeout = () =>
  z.string().refine((s) => s === 'Auto' || /^((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$/.test(s), {
    error: 'must be a duration such as "30s" or "Auto"',
  });

/**
 * Field name → schema, in the order of upstream's Go struct `FelixConfigurationSpec`, which is the
 * order upstream stores them in. Most fields are Go pointers (an unset field is left out, a set
 * one is stored as given); `FELIX_GO_VALUE_FIELDS` are Go values with `omitempty` ("" and empty
 * lists are left out); `bpfLogLevel` has no `omitempty` at all and is always stored.
 */
const felixFields = lazyObject(() => ({
  useInternalDataplaneDriver: bool(),
  dataplaneDriver: str(),
  dataplaneWatchdogTimeout: dur(),
  ipv6Support: bool(),
  routeRefreshInterval: dur(),
  interfaceRefreshInterval: dur(),
  iptablesRefreshInterval: dur(),
  iptablesPostWriteCheckInterval: dur(),
  iptablesLockFilePath: str(),
  iptablesLockTimeout: dur(),
  iptablesLockProbeInterval: dur(),
  featureDetectOverride: z
    .string()
    .refine((s) => /^([a-zA-Z0-9-_]+=(true|false|),)*([a-zA-Z0-9-_]+=(true|false|))?$/.test(s), {
      error:
        'must be a comma-separated list of Feature=true|false, e.g. "SNATFullyRandom=true,MASQFullyRandom=false"',
    }),
  featureGates: z.string().refine((s) => /^([a-zA-Z0-9-_]+=([^=,]+),)*([a-zA-Z0-9-_]+=([^=,]+))?$/.test(s), {
    error:
      'must be a comma-separated list of Name=value, e.g. "BPFConnectTimeLoadBalancingWorkaround=enabled"',
  }),
  ipsetsRefreshInterval: dur(),
  maxIpsetSize: int(),
  iptablesBackend: oneOf(['Legacy', 'NFT', 'Auto']),
  xdpRefreshInterval: dur(),
  netlinkTimeout: dur(),
  metadataAddr: str(),
  metadataPort: intBetween(0, 65535),
  openstackRegion: str(),
  interfacePrefix: str(),
  interfaceExclude: str(),
  chainInsertMode: oneOfAnyCase(['Insert', 'Append']),
  defaultEndpointToHostAction: oneOf(['Drop', 'Accept', 'Return']),
  iptablesFilterAllowAction: oneOf(['Accept', 'Return']),
  iptablesMangleAllowAction: oneOf(['Accept', 'Return']),
  iptablesFilterDenyAction: oneOf(['Drop', 'Reject']),
  logPrefix: z.string().refine((s) => /^[a-zA-Z0-9%: /_-]*$/.test(s), {
    error: "must consist of letters, digits, spaces and '%', ':', '/', '_', '-'",
  }),
  logFilePath: str(),
  logSeverityFile: logLevel(),
  logSeverityScreen: logLevel(),
  logSeveritySys: oneOf([...LOG_LEVELS, 'None']),
  logDebugFilenameRegex: str(),
  // (position inferred, see FELIX_POSITION_INFERRED)
  logActionRateLimit: z.string().refine((s) => /^[1-9]\d{0,3}\/(second|minute|hour|day)$/.test(s), {
    error: 'must be "N/unit" with N from 1 to 9999 and unit second, minute, hour or day, e.g. "10/second"',
  }),
  logActionRateLimitBurst: intBetween(0, 9999),
  ipipEnabled: bool(),
  ipipMTU: int(),
  vxlanEnabled: bool(),
  vxlanMTU: int(),
  vxlanMTUV6: int(),
  vxlanPort: intBetween(0, 65535),
  vxlanVNI: intBetween(0, 16777215),
  allowVXLANPacketsFromWorkloads: bool(),
  allowIPIPPacketsFromWorkloads: bool(),
  reportingInterval: dur(),
  reportingTTL: dur(),
  endpointReportingEnabled: bool(),
  endpointReportingDelay: dur(),
  endpointStatusPathPrefix: str(),
  iptablesMarkMask: uint32(),
  disableConntrackInvalidCheck: bool(),
  healthEnabled: bool(),
  healthHost: str(),
  healthPort: intBetween(0, 65535),
  healthTimeoutOverrides: z.array(
    z.strictObject({
      name: goAlways(
        z.string().refine((s) => /^[a-zA-Z0-9_ -]+$/.test(s), {
          error: "must consist of letters, digits, '_', '-' and spaces",
        }),
      ),
      timeout: goAlways(dur()),
    }),
  ),
  prometheusMetricsEnabled: bool(),
  prometheusMetricsHost: str(),
  prometheusMetricsPort: intBetween(0, 65535),
  prometheusGoMetricsEnabled: bool(),
  prometheusProcessMetricsEnabled: bool(),
  prometheusWireGuardMetricsEnabled: bool(),
  // (position inferred, see FELIX_POSITION_INFERRED)
  prometheusMetricsCertFile: str(),
  prometheusMetricsKeyFile: str(),
  prometheusMetricsCAFile: str(),
  prometheusMetricsClientAuth: str(),
  failsafeInboundHostPorts: z.array(protoPort()),
  failsafeOutboundHostPorts: z.array(protoPort()),
  kubeNodePortRanges: z.array(portSchema).max(7, { error: 'must list at most 7 port ranges' }),
  policySyncPathPrefix: str(),
  usageReportingEnabled: bool(),
  usageReportingInitialDelay: dur(),
  usageReportingInterval: dur(),
  natPortRange: goField(intOrString(), { value: 'port' }),
  natOutgoingAddress: str(),
  natOutgoingExclusions: oneOf(['IPPoolsOnly', 'IPPoolsAndHostIPs']),
  deviceRouteSourceAddress: str(),
  deviceRouteSourceAddressIPv6: str(),
  deviceRouteProtocol: intBetween(0, 255),
  removeExternalRoutes: bool(),
  // (position inferred, see FELIX_POSITION_INFERRED)
  ipv4NormalRoutePriority: int(),
  ipv4ElevatedRoutePriority: int(),
  ipv6NormalRoutePriority: int(),
  ipv6ElevatedRoutePriority: int(),
  localSubnetL2Reachability: oneOf(['Disabled', 'PodsAndLoadBalancers']),
  localSubnetL2ReachabilityRefreshInterval: dur(),
  liveMigrationRouteConvergenceTime: dur(),
  programClusterRoutes: enabledDisabled(),
  ipForwarding: enabledDisabled(),
  externalNodesList: z.array(str()),
  debugMemoryProfilePath: str(),
  debugDisableLogDropping: bool(),
  debugSimulateCalcGraphHangAfter: dur(),
  debugSimulateDataplaneHangAfter: dur(),
  debugSimulateDataplaneApplyDelay: dur(),
  debugHost: str(),
  debugPort: intBetween(0, 65535),
  iptablesNATOutgoingInterfaceFilter: str(),
  sidecarAccelerationEnabled: bool(),
  xdpEnabled: bool(),
  genericXDPEnabled: bool(),
  nftablesMode: oneOf(['Disabled', 'Enabled', 'Auto']),
  nftablesRefreshInterval: dur(),
  nftablesFilterAllowAction: oneOfAnyCase(['Accept', 'Return']),
  nftablesMangleAllowAction: oneOfAnyCase(['Accept', 'Return']),
  nftablesFilterDenyAction: oneOfAnyCase(['Drop', 'Reject']),
  nftablesMarkMask: uint32(),
  bpfEnabled: bool(),
  bpfDisableUnprivileged: bool(),
  // Always stored, "" when unset (no omitempty upstream), so "" reads back and must validate.
  bpfLogLevel: z.enum(['Off', 'Info', 'Debug', ''], { error: 'must be one of: Off, Info, Debug' }),
  bpfConntrackLogLevel: oneOf(['Off', 'Debug']),
  bpfConntrackMode: oneOf(['Auto', 'Userspace', 'BPFProgram']),
  bpfConntrackTimeouts: z.strictObject({
    creationGracePeriod: goPtr(conntrackTimeout()),
    tcpSynSent: goPtr(conntrackTimeout()),
    tcpEstablished: goPtr(conntrackTimeout()),
    tcpFinsSeen: goPtr(conntrackTimeout()),
    tcpResetSeen: goPtr(conntrackTimeout()),
    udpTimeout: goPtr(conntrackTimeout()),
    genericTimeout: goPtr(conntrackTimeout()),
    icmpTimeout: goPtr(conntrackTimeout()),
  }),
  bpfLogFilters: z.record(str(), str()),
  bpfCTLBLogFilter: str(),
  bpfDataIfacePattern: str(),
  bpfL3IfacePattern: str(),
  bpfConnectTimeLoadBalancingEnabled: bool(),
  bpfConnectTimeLoadBalancing: oneOf(['TCP', 'Enabled', 'Disabled']),
  bpfHostNetworkedNATWithoutCTLB: enabledDisabled(),
  bpfExternalServiceMode: oneOf(['Tunnel', 'DSR']),
  bpfDSROptoutCIDRs: z.array(cidrOrIP()),
  bpfExtToServiceConnmark: int(),
  bpfKubeProxyIptablesCleanupEnabled: bool(),
  bpfKubeProxyMinSyncPeriod: dur(),
  // (position inferred, see FELIX_POSITION_INFERRED)
  bpfKubeProxyHealthzPort: intBetween(0, 65535),
  bpfKubeProxyEndpointSlicesEnabled: bool(),
  bpfPSNATPorts: goField(intOrString(), { value: 'port' }),
  bpfMapSizeNATFrontend: int(),
  bpfMapSizeNATBackend: int(),
  bpfMapSizeNATAffinity: int(),
  bpfMapSizeRoute: int(),
  bpfMapSizeConntrack: int(),
  bpfMapSizePerCpuConntrack: int(),
  bpfMapSizeConntrackScaling: oneOfAnyCase(['Disabled', 'DoubleIfFull']),
  bpfMapSizeConntrackCleanupQueue: int().min(1, { error: 'must be at least 1' }),
  bpfMapSizeIPSets: int(),
  bpfMapSizeIfState: int(),
  bpfHostConntrackBypass: bool(),
  bpfEnforceRPF: oneOfAnyCase(['Disabled', 'Strict', 'Loose']),
  bpfPolicyDebugEnabled: bool(),
  bpfForceTrackPacketsFromIfaces: z.array(str()),
  bpfDisableGROForIfaces: str(),
  bpfExcludeCIDRsFromNAT: z.array(cidrOrIP()),
  bpfExportBufferSizeMB: int(),
  // (position inferred, see FELIX_POSITION_INFERRED)
  cgroupV2Path: str(),
  bpfAttachType: oneOf(['TC', 'TCX']),
  bpfJITHardening: oneOf(['Auto', 'Strict']),
  bpfIPFragmentReassemblyEnabled: bool(),
  bpfIPFragTimeout: dur(),
  bpfOverlayHostSourceIP: oneOf(['TunnelAddress', 'HostAddress']),
  bpfMaglevMaxServices: int(),
  bpfMaglevMaxEndpointsPerService: int(),
  flowLogsPolicyEvaluationMode: oneOf(['None', 'Continuous']),
  bpfRedirectToPeer: oneOf(['Enabled', 'Disabled', 'L2Only']),
  flowLogsFlushInterval: dur(),
  flowLogsCollectorDebugTrace: bool(),
  flowLogsGoldmaneServer: str(),
  flowLogsLocalReporter: enabledDisabled(),
  bpfProfiling: enabledDisabled(),
  routeSource: oneOfAnyCase(['WorkloadIPs', 'CalicoIPAM']),
  routeTableRanges: z.array(routeTableRange()),
  routeTableRange: routeTableRange(),
  routeSyncDisabled: bool(),
  wireguardEnabled: bool(),
  wireguardEnabledV6: bool(),
  wireguardThreadingEnabled: bool(),
  wireguardListeningPort: intBetween(0, 65535),
  wireguardListeningPortV6: intBetween(0, 65535),
  wireguardRoutingRulePriority: int(),
  wireguardInterfaceName: str(),
  wireguardInterfaceNameV6: str(),
  wireguardMTU: int(),
  wireguardMTUV6: int(),
  wireguardHostEncryptionEnabled: bool(),
  wireguardKeepAlive: dur(),
  awsSrcDstCheck: oneOf(['DoNothing', 'Enable', 'Disable']),
  serviceLoopPrevention: oneOfAnyCase(['Drop', 'Reject', 'Disabled']),
  workloadSourceSpoofing: oneOfAnyCase(['Disabled', 'Any']),
  mtuIfacePattern: str(),
  floatingIPs: enabledDisabled(),
  windowsManageFirewallRules: enabledDisabled(),
  goGCThreshold: int(),
  goMemoryLimitMB: int(),
  goMaxProcs: int(),
  requireMTUFile: bool(),
  // (position inferred, see FELIX_POSITION_INFERRED)
  istioAmbientMode: enabledDisabled(),
  istioDSCPMark: goField(intOrString(), { value: 'uint8OrString' }),
  nodeSelector: selector(),
}));

/** Felix fields of a Go value type (`string`, `[]T`) with `omitempty`. */
const FELIX_GO_VALUE_FIELDS: ReadonlySet<string> = new Set([
  'dataplaneDriver',
  'iptablesLockFilePath',
  'featureDetectOverride',
  'featureGates',
  'metadataAddr',
  'openstackRegion',
  'interfacePrefix',
  'interfaceExclude',
  'chainInsertMode',
  'defaultEndpointToHostAction',
  'iptablesFilterAllowAction',
  'iptablesMangleAllowAction',
  'iptablesFilterDenyAction',
  'logPrefix',
  'logFilePath',
  'logSeverityFile',
  'logSeverityScreen',
  'logSeveritySys',
  'logDebugFilenameRegex',
  'endpointStatusPathPrefix',
  'healthTimeoutOverrides',
  'prometheusMetricsHost',
  'policySyncPathPrefix',
  'natOutgoingAddress',
  'deviceRouteSourceAddress',
  'deviceRouteSourceAddressIPv6',
  'ipForwarding',
  'debugMemoryProfilePath',
  'iptablesNATOutgoingInterfaceFilter',
  'nftablesFilterAllowAction',
  'nftablesMangleAllowAction',
  'nftablesFilterDenyAction',
  'bpfConntrackLogLevel',
  'bpfCTLBLogFilter',
  'bpfDataIfacePattern',
  'bpfL3IfacePattern',
  'bpfExternalServiceMode',
  'bpfMapSizeConntrackScaling',
  'bpfEnforceRPF',
  'bpfDisableGROForIfaces',
  'bpfRedirectToPeer',
  'bpfProfiling',
  'routeSource',
  'wireguardInterfaceName',
  'wireguardInterfaceNameV6',
  'serviceLoopPrevention',
  'workloadSourceSpoofing',
  'mtuIfacePattern',
  'logActionRateLimit',
  'prometheusMetricsCertFile',
  'prometheusMetricsKeyFile',
  'prometheusMetricsCAFile',
  'prometheusMetricsClientAuth',
  'localSubnetL2Reachability',
  'cgroupV2Path',
  'bpfOverlayHostSourceIP',
  'istioAmbientMode',
  'nodeSelector',
]);

/**
 * Fields added in v3.32 whose place in the Go struct could not be read from upstream's source
 * here: each sits next to the fields it belongs with. Every other field's position is upstream's.
 */
export const FELIX_POSITION_INFERRED: readonly string[] = [
  'logActionRateLimit',
  'logActionRateLimitBurst',
  'prometheusMetricsCertFile',
  'prometheusMetricsKeyFile',
  'prometheusMetricsCAFile',
  'prometheusMetricsClientAuth',
  'ipv4NormalRoutePriority',
  'ipv4ElevatedRoutePriority',
  'ipv6NormalRoutePriority',
  'ipv6ElevatedRoutePriority',
  'localSubnetL2Reachability',
  'localSubnetL2ReachabilityRefreshInterval',
  'liveMigrationRouteConvergenceTime',
  'bpfKubeProxyHealthzPort',
  'cgroupV2Path',
  'bpfAttachType',
  'bpfJITHardening',
  'bpfIPFragmentReassemblyEnabled',
  'bpfIPFragTimeout',
  'bpfOverlayHostSourceIP',
  'bpfMaglevMaxServices',
  'bpfMaglevMaxEndpointsPerService',
  'istioAmbientMode',
  'istioDSCPMark',
  'nodeSelector',
];

type Optionalize<T extends Record<string, z.ZodType>> = { [K in keyof T]: z.ZodOptional<T[K]> };
function allOptional<T extends Record<string, z.ZodType>>(fields: T): Optionalize<T> {
  const out: Record<string, z.ZodType> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (k === 'bpfLogLevel') out[k] = goAlways(v.optional());
    else if (FELIX_GO_VALUE_FIELDS.has(k)) out[k] = v.optional();
    else out[k] = goPtr(v);
  }
  return out as Optionalize<T>;
}

export const felixConfigurationSpecSchema = lazySchema(() => z.strictObject(allOptional(felixFields)));
/** Felix's settings: every field optional, an unset one leaves Felix's own default. */
export type FelixConfigurationSpec = z.infer<typeof felixConfigurationSpecSchema>;
/** A `projectcalico.org/v3` FelixConfiguration: `default`, `node.<name>`, or one with a nodeSelector. */
export type FelixConfiguration = ResourceObject<'FelixConfiguration', FelixConfigurationSpec>;

/** Every FelixConfiguration spec field name. */
export const FELIX_CONFIGURATION_FIELDS = lazyArray(() =>
  Object.keys(felixFields),
) as (keyof FelixConfigurationSpec)[];

export function checkFelixConfiguration(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  const { add } = ctx;
  if (nonEmpty(s.nodeSelector) !== undefined && (ctx.name === 'default' || ctx.name?.startsWith('node.'))) {
    add(
      'spec.nodeSelector',
      "must not be set on the 'default' or a per-node ('node.<name>') FelixConfiguration",
    );
  }
  const ports = asArr(s.kubeNodePortRanges);
  ports?.forEach((p, i) => {
    if (typeof p === 'string' && !/^[0-9]+(:[0-9]+)?$/.test(p)) {
      add(`spec.kubeNodePortRanges[${i}]`, 'must be a port number or range, not a port name');
    }
  });
  asArr(s.externalNodesList)?.forEach((c, i) => {
    if (typeof c !== 'string') return;
    const family = (c.includes('/') ? c.split('/')[0] : c) ?? '';
    const ip = parseIP(family);
    if (!ip || (c.includes('/') && !/^\d{1,3}$/.test(c.split('/')[1] ?? ''))) {
      add(`spec.externalNodesList[${i}]`, 'must be a valid IPv4 CIDR or address');
    } else if (ip.family !== 4)
      add(`spec.externalNodesList[${i}]`, 'must be an IPv4 CIDR (IPv6 is not supported here)');
  });
  const region = nonEmpty(s.openstackRegion);
  if (region !== undefined) {
    if (region.length > 63 - 'openstack-region-'.length)
      add('spec.openstackRegion', 'is too long (at most 46 characters)');
    else if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(region)) {
      add('spec.openstackRegion', "must be a DNS-1123 label: lower-case letters, digits and '-'");
    }
  }
  for (const [f, fam] of [
    ['natOutgoingAddress', 4],
    ['deviceRouteSourceAddress', 4],
    ['deviceRouteSourceAddressIPv6', 6],
  ] as const) {
    const v = nonEmpty(s[f]);
    if (v !== undefined && parseIP(v)?.family !== fam) add(`spec.${f}`, `must be a valid IPv${fam} address`);
  }
  if (s.routeTableRange !== undefined && s.routeTableRanges !== undefined) {
    add(
      'spec.routeTableRange',
      'cannot be set together with routeTableRanges (it is deprecated; use routeTableRanges)',
    );
  }
  const rtr = asObj(s.routeTableRange);
  if (rtr && typeof rtr.min === 'number' && typeof rtr.max === 'number') {
    if (!(rtr.min >= 1 && rtr.max >= rtr.min && rtr.max <= 250)) {
      add('spec.routeTableRange', 'must be a range of route table indices within 1..250 with min <= max');
    }
  }
  let tables = 0;
  asArr(s.routeTableRanges)?.forEach((r, i) => {
    const o = asObj(r);
    if (!o || typeof o.min !== 'number' || typeof o.max !== 'number') return;
    if (o.min < 1) add(`spec.routeTableRanges[${i}].min`, 'must be at least 1');
    if (o.max > 0xffffffff) add(`spec.routeTableRanges[${i}].max`, 'must be at most 4294967295');
    if (o.min > o.max) add(`spec.routeTableRanges[${i}]`, 'min must not be greater than max');
    else tables += o.max - o.min + 1;
  });
  if (tables > 0xffff) add('spec.routeTableRanges', 'targets too many tables (at most 65535 in total)');
  const bpfLogFilters = asObj(s.bpfLogFilters);
  if (bpfLogFilters) {
    for (const k of Object.keys(bpfLogFilters)) {
      if (!/^[a-zA-Z0-9_.-]{1,15}$/.test(k)) {
        add(`spec.bpfLogFilters["${k}"]`, 'must be keyed by an interface name, "all", "weps" or "heps"');
      }
    }
  }
}

/**
 * clientv3's FelixConfiguration defaulting (`setDefaults` in `libcalico-go/lib/clientv3/felixconfig.go`;
 * the CRD would default these in Kubernetes mode): floatingIPs `Disabled`, connect-time load balancing
 * `TCP` with host-networked NAT `Enabled`; the deprecated bpfConnectTimeLoadBalancingEnabled, when set,
 * decides both instead.
 */
export function defaultFelixConfiguration(c: FelixConfiguration): FelixConfiguration {
  const spec = { ...c.spec };
  spec.floatingIPs ??= 'Disabled';
  spec.bpfConnectTimeLoadBalancing ??= 'TCP';
  spec.bpfHostNetworkedNATWithoutCTLB ??= 'Enabled';
  if (spec.bpfConnectTimeLoadBalancingEnabled !== undefined) {
    spec.bpfHostNetworkedNATWithoutCTLB = 'Disabled';
    spec.bpfConnectTimeLoadBalancing = spec.bpfConnectTimeLoadBalancingEnabled ? 'Enabled' : 'Disabled';
  }
  return { ...c, spec };
}
