/**
 * The subset of Felix configuration the rule renderer needs, with upstream's defaults
 * (`felix/config/config_params.go`), and the mark bits carved out of the mark mask
 * (`felix/dataplane/driver.go`: allocated lowest bit first).
 */
import type { FelixConfigurationSpec } from '@calico-ts/api';
import { parsePortRange } from '../config/values.js';

export interface ProtoPort {
  readonly protocol: 'tcp' | 'udp' | 'sctp';
  readonly port: number;
  /** Optional CIDR the failsafe is limited to (source for inbound, destination for outbound). */
  readonly net?: string;
}

export interface RulesConfig {
  /** Interface name prefixes of workload interfaces (`cali`). */
  readonly interfacePrefixes: readonly string[];
  readonly ipv6Support: boolean;
  /** What happens to workload → host traffic after the workload's egress policy allowed it. */
  readonly defaultEndpointToHostAction: 'Drop' | 'Accept' | 'Return';
  readonly failsafeInboundHostPorts: readonly ProtoPort[];
  readonly failsafeOutboundHostPorts: readonly ProtoPort[];
  /** The bits of the packet mark Felix may use. */
  readonly markMask: number;
  readonly logPrefix: string;
  readonly vxlanPort: number;
  readonly allowVXLANPacketsFromWorkloads: boolean;
  readonly allowIPIPPacketsFromWorkloads: boolean;
  /** SNAT to this address instead of MASQUERADE for NAT outgoing. */
  readonly natOutgoingAddress?: string;
  /** NAT outgoing picks TCP and UDP source ports from this range (upstream `natPortRange`). */
  readonly natPortRange?: {
    /** The first port of the range. */
    readonly min: number;
    /** The last port of the range. */
    readonly max: number;
  };
  /** What NAT outgoing leaves alone: traffic to IP pools, or to pools and every node's address. */
  readonly natOutgoingExclusions: 'IPPoolsOnly' | 'IPPoolsAndHostIPs';
  /** NAT outgoing only through this output interface (`eth+` is a prefix); unset: any. */
  readonly natOutgoingInterfaceFilter?: string;
}

const tcp = (port: number): ProtoPort => ({ protocol: 'tcp', port });
const udp = (port: number): ProtoPort => ({ protocol: 'udp', port });

export const DEFAULT_RULES_CONFIG: RulesConfig = {
  interfacePrefixes: ['cali'],
  ipv6Support: true,
  defaultEndpointToHostAction: 'Drop',
  failsafeInboundHostPorts: [
    tcp(22),
    udp(68),
    tcp(179),
    tcp(2379),
    tcp(2380),
    tcp(5473),
    tcp(6443),
    tcp(6666),
    tcp(6667),
  ],
  failsafeOutboundHostPorts: [
    udp(53),
    udp(67),
    tcp(179),
    tcp(2379),
    tcp(2380),
    tcp(5473),
    tcp(6443),
    tcp(6666),
    tcp(6667),
  ],
  markMask: 0xffff0000,
  logPrefix: 'calico-packet',
  vxlanPort: 4789,
  allowVXLANPacketsFromWorkloads: false,
  allowIPIPPacketsFromWorkloads: false,
  natOutgoingExclusions: 'IPPoolsOnly',
};

function protoPorts(list: readonly { protocol?: string; port: number; net?: string }[]): ProtoPort[] {
  return list.map((p) => {
    const protocol = (p.protocol ?? 'tcp').toLowerCase() as ProtoPort['protocol'];
    return p.net ? { protocol, port: p.port, net: p.net } : { protocol, port: p.port };
  });
}

/** The rules config for a (merged) FelixConfiguration spec; unset fields take upstream defaults. */
export function rulesConfigFromFelix(spec: FelixConfigurationSpec): RulesConfig {
  const s = spec as Partial<Record<string, unknown>> & FelixConfigurationSpec;
  const cfg: RulesConfig = {
    interfacePrefixes:
      typeof s.interfacePrefix === 'string' && s.interfacePrefix !== ''
        ? s.interfacePrefix.split(',').map((p) => p.trim())
        : DEFAULT_RULES_CONFIG.interfacePrefixes,
    ipv6Support: typeof s.ipv6Support === 'boolean' ? s.ipv6Support : DEFAULT_RULES_CONFIG.ipv6Support,
    defaultEndpointToHostAction:
      (s.defaultEndpointToHostAction as RulesConfig['defaultEndpointToHostAction'] | undefined) ??
      DEFAULT_RULES_CONFIG.defaultEndpointToHostAction,
    failsafeInboundHostPorts: Array.isArray(s.failsafeInboundHostPorts)
      ? protoPorts(s.failsafeInboundHostPorts as { protocol?: string; port: number; net?: string }[])
      : DEFAULT_RULES_CONFIG.failsafeInboundHostPorts,
    failsafeOutboundHostPorts: Array.isArray(s.failsafeOutboundHostPorts)
      ? protoPorts(s.failsafeOutboundHostPorts as { protocol?: string; port: number; net?: string }[])
      : DEFAULT_RULES_CONFIG.failsafeOutboundHostPorts,
    markMask:
      typeof s.nftablesMarkMask === 'number'
        ? s.nftablesMarkMask
        : typeof s.iptablesMarkMask === 'number'
          ? s.iptablesMarkMask
          : DEFAULT_RULES_CONFIG.markMask,
    logPrefix: typeof s.logPrefix === 'string' ? s.logPrefix : DEFAULT_RULES_CONFIG.logPrefix,
    vxlanPort: typeof s.vxlanPort === 'number' ? s.vxlanPort : DEFAULT_RULES_CONFIG.vxlanPort,
    allowVXLANPacketsFromWorkloads: s.allowVXLANPacketsFromWorkloads === true,
    allowIPIPPacketsFromWorkloads: s.allowIPIPPacketsFromWorkloads === true,
    natOutgoingExclusions:
      s.natOutgoingExclusions === 'IPPoolsAndHostIPs' ? 'IPPoolsAndHostIPs' : 'IPPoolsOnly',
  };
  const natPortRange = s.natPortRange === undefined ? undefined : parsePortRange(String(s.natPortRange));
  const iface = s.iptablesNATOutgoingInterfaceFilter;
  return {
    ...cfg,
    ...(typeof s.natOutgoingAddress === 'string' && s.natOutgoingAddress !== ''
      ? { natOutgoingAddress: s.natOutgoingAddress }
      : {}),
    ...(natPortRange ? { natPortRange } : {}),
    ...(typeof iface === 'string' && iface !== '' ? { natOutgoingInterfaceFilter: iface } : {}),
  };
}

export interface MarkBits {
  readonly accept: number;
  readonly pass: number;
  readonly drop: number;
  readonly scratch0: number;
  readonly scratch1: number;
  /** What is left of the mask, for endpoint marks. */
  readonly endpoint: number;
}

/** Allocates the policy mark bits from `mask`, lowest first; throws if the mask has fewer than 5 bits. */
export function allocateMarks(mask: number): MarkBits {
  const bits: number[] = [];
  for (let b = 0; b < 32; b++) {
    const bit = (1 << b) >>> 0;
    if ((mask & bit) !== 0) bits.push(bit);
  }
  if (bits.length < 5) {
    throw new RangeError(
      `mark mask 0x${(mask >>> 0).toString(16)} has ${bits.length} bits; Felix needs at least 5`,
    );
  }
  const [accept, pass, drop, scratch0, scratch1] = bits as [number, number, number, number, number];
  const endpoint = bits.slice(5).reduce((a, b) => (a | b) >>> 0, 0);
  return { accept, pass, drop, scratch0, scratch1, endpoint };
}
