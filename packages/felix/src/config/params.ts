/**
 * The Felix configuration parameters this implementation reads: upstream's names, types and
 * defaults (`felix/config/config_params.go`), the FelixConfiguration field each comes from
 * (`updateprocessors/configurationprocessor.go`: the v1 name is the field name capitalised, or its
 * `confignamev1` tag), and which are "local" (only env and config file may set them). Pure data.
 */
import type { PortRange, ProtoPort } from './values.js';

export type ParamKind =
  | { readonly t: 'bool' }
  | { readonly t: 'optbool' }
  | { readonly t: 'int'; readonly min?: number; readonly max?: number }
  | { readonly t: 'seconds' }
  | { readonly t: 'string' }
  | { readonly t: 'oneof'; readonly options: readonly string[] }
  | { readonly t: 'ports' }
  | { readonly t: 'ifaces' }
  | { readonly t: 'endpoints' }
  | { readonly t: 'mark' }
  | { readonly t: 'ipv4' }
  | { readonly t: 'portrange' }
  | { readonly t: 'iface' }
  | { readonly t: 'ipv4nets' }
  | { readonly t: 'regexp' }
  | { readonly t: 'authority' }
  | { readonly t: 'hostname' }
  | { readonly t: 'hostaddr' };

export interface ParamDef {
  readonly name: keyof FelixConfig;
  readonly kind: ParamKind;
  /** Upstream's default, as raw text ('' = unset). */
  readonly default: string;
  /** Only env and the config file may set it. */
  readonly local?: boolean;
  /** An empty value does not count as set (upstream `non-zero`). */
  readonly nonZero?: boolean;
  /** The FelixConfiguration spec field, when the datastore can set it. */
  readonly field?: string;
}

/** The parsed configuration. Durations are in seconds. */
export interface FelixConfig {
  FelixHostname: string;
  DatastoreType: string;
  EtcdAddr: string;
  EtcdScheme: string;
  EtcdEndpoints: string[];
  EtcdKeyFile: string;
  EtcdCertFile: string;
  EtcdCaFile: string;
  /** Typha's `host:port`; set (or TyphaK8sServiceName), Felix follows the datastore through Typha. */
  TyphaAddr: string;
  /** The Kubernetes Service whose Endpoints (port `calico-typha`) are Typha's addresses. */
  TyphaK8sServiceName: string;
  /** The namespace of TyphaK8sServiceName (default kube-system). */
  TyphaK8sNamespace: string;
  /** Seconds without a message from Typha after which Felix reconnects (default 30). */
  TyphaReadTimeout: number;
  /** Seconds a write to Typha may take (default 10); read, not applied: Felix writes only its hello and pongs. */
  TyphaWriteTimeout: number;
  /** Felix's private key for TLS to Typha. */
  TyphaKeyFile: string;
  /** Felix's certificate for TLS to Typha. */
  TyphaCertFile: string;
  /** The CA Typha's certificate must chain to. */
  TyphaCAFile: string;
  /** The common name Typha's certificate must have (or TyphaURISAN). */
  TyphaCN: string;
  /** The URI SAN Typha's certificate must have (or TyphaCN). */
  TyphaURISAN: string;
  LogSeverityScreen: string;
  LogSeverityFile: string;
  LogFilePath: string;
  LogPrefix: string;
  HealthEnabled: boolean;
  HealthHost: string;
  HealthPort: number;
  PrometheusMetricsEnabled: boolean;
  PrometheusMetricsHost: string;
  PrometheusMetricsPort: number;
  ReportingIntervalSecs: number;
  ReportingTTLSecs: number;
  NftablesRefreshInterval: number;
  RouteRefreshInterval: number;
  InterfacePrefix: string[];
  DefaultEndpointToHostAction: string;
  FailsafeInboundHostPorts: ProtoPort[];
  FailsafeOutboundHostPorts: ProtoPort[];
  Ipv6Support: boolean;
  VXLANEnabled: boolean | undefined;
  VXLANPort: number;
  VXLANVNI: number;
  VXLANMTU: number;
  VXLANMTUV6: number;
  IpInIpEnabled: boolean | undefined;
  IpInIpMtu: number;
  /** `Enabled`: Felix programs the IPIP (and unencapsulated) pools' routes; `Disabled`: BIRD does. */
  ProgramClusterRoutes: 'Enabled' | 'Disabled';
  WireguardEnabled: boolean;
  WireguardMTU: number;
  MTUIfacePattern: RegExp;
  NATOutgoingAddress: string;
  /** `Enabled`: Felix turns on IP forwarding in the host (IPv4, and IPv6 with Ipv6Support). */
  IPForwarding: 'Enabled' | 'Disabled';
  /** The source ports NAT outgoing picks from for TCP and UDP; undefined: the kernel's choice. */
  NATPortRange: PortRange | undefined;
  /** What NAT outgoing leaves alone: traffic to IP pools, or to pools and every node's address. */
  NATOutgoingExclusions: 'IPPoolsOnly' | 'IPPoolsAndHostIPs';
  /** NAT outgoing only for traffic leaving through this interface ('' = any). */
  IptablesNATOutgoingInterfaceFilter: string;
  NftablesMarkMask: number;
  DeviceRouteProtocol: number;
  AllowVXLANPacketsFromWorkloads: boolean;
  AllowIPIPPacketsFromWorkloads: boolean;
  /** Hosts (IPv4 addresses or CIDRs) that are not nodes but may send VXLAN and IPIP packets here. */
  ExternalNodesCIDRList: string[];
  OpenstackRegion: string;
  /** calico-ts: where the pod MTU is written (upstream always uses /var/lib/calico/mtu). */
  MTUFilePath: string;
}

const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARNING', 'ERROR', 'FATAL'] as const;

export const PARAMS: readonly ParamDef[] = [
  { name: 'FelixHostname', kind: { t: 'hostname' }, default: '', local: true, nonZero: true },
  {
    name: 'DatastoreType',
    kind: { t: 'oneof', options: ['kubernetes', 'etcdv3'] },
    default: 'etcdv3',
    local: true,
    nonZero: true,
  },
  { name: 'EtcdAddr', kind: { t: 'authority' }, default: '127.0.0.1:2379', local: true },
  { name: 'EtcdScheme', kind: { t: 'oneof', options: ['http', 'https'] }, default: 'http', local: true },
  { name: 'EtcdEndpoints', kind: { t: 'endpoints' }, default: '', local: true },
  { name: 'EtcdKeyFile', kind: { t: 'string' }, default: '', local: true },
  { name: 'EtcdCertFile', kind: { t: 'string' }, default: '', local: true },
  { name: 'EtcdCaFile', kind: { t: 'string' }, default: '', local: true },
  // Typha: set an address or a Kubernetes Service and Felix follows the datastore through it.
  { name: 'TyphaAddr', kind: { t: 'authority' }, default: '', local: true },
  { name: 'TyphaK8sServiceName', kind: { t: 'string' }, default: '', local: true },
  { name: 'TyphaK8sNamespace', kind: { t: 'string' }, default: 'kube-system', local: true, nonZero: true },
  { name: 'TyphaReadTimeout', kind: { t: 'seconds' }, default: '30', local: true },
  { name: 'TyphaWriteTimeout', kind: { t: 'seconds' }, default: '10', local: true },
  { name: 'TyphaKeyFile', kind: { t: 'string' }, default: '', local: true },
  { name: 'TyphaCertFile', kind: { t: 'string' }, default: '', local: true },
  { name: 'TyphaCAFile', kind: { t: 'string' }, default: '', local: true },
  { name: 'TyphaCN', kind: { t: 'string' }, default: '', local: true },
  { name: 'TyphaURISAN', kind: { t: 'string' }, default: '', local: true },
  {
    name: 'LogSeverityScreen',
    kind: { t: 'oneof', options: LOG_LEVELS },
    default: 'INFO',
    field: 'logSeverityScreen',
  },
  {
    name: 'LogSeverityFile',
    kind: { t: 'oneof', options: LOG_LEVELS },
    default: 'INFO',
    field: 'logSeverityFile',
  },
  { name: 'LogFilePath', kind: { t: 'string' }, default: '/var/log/calico/felix.log', field: 'logFilePath' },
  { name: 'LogPrefix', kind: { t: 'string' }, default: 'calico-packet', field: 'logPrefix' },
  { name: 'HealthEnabled', kind: { t: 'bool' }, default: 'false', field: 'healthEnabled' },
  { name: 'HealthHost', kind: { t: 'hostaddr' }, default: 'localhost', field: 'healthHost' },
  { name: 'HealthPort', kind: { t: 'int', min: 0, max: 65535 }, default: '9099', field: 'healthPort' },
  {
    name: 'PrometheusMetricsEnabled',
    kind: { t: 'bool' },
    default: 'false',
    field: 'prometheusMetricsEnabled',
  },
  { name: 'PrometheusMetricsHost', kind: { t: 'hostaddr' }, default: '', field: 'prometheusMetricsHost' },
  {
    name: 'PrometheusMetricsPort',
    kind: { t: 'int', min: 0, max: 65535 },
    default: '9091',
    field: 'prometheusMetricsPort',
  },
  { name: 'ReportingIntervalSecs', kind: { t: 'seconds' }, default: '30', field: 'reportingInterval' },
  { name: 'ReportingTTLSecs', kind: { t: 'seconds' }, default: '90', field: 'reportingTTL' },
  {
    name: 'NftablesRefreshInterval',
    kind: { t: 'seconds' },
    default: '180',
    field: 'nftablesRefreshInterval',
  },
  { name: 'RouteRefreshInterval', kind: { t: 'seconds' }, default: '90', field: 'routeRefreshInterval' },
  {
    name: 'InterfacePrefix',
    kind: { t: 'ifaces' },
    default: 'cali',
    nonZero: true,
    field: 'interfacePrefix',
  },
  {
    name: 'DefaultEndpointToHostAction',
    kind: { t: 'oneof', options: ['DROP', 'RETURN', 'ACCEPT'] },
    default: 'DROP',
    nonZero: true,
    field: 'defaultEndpointToHostAction',
  },
  {
    name: 'FailsafeInboundHostPorts',
    kind: { t: 'ports' },
    default: 'tcp:22,udp:68,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667',
    field: 'failsafeInboundHostPorts',
  },
  {
    name: 'FailsafeOutboundHostPorts',
    kind: { t: 'ports' },
    default: 'udp:53,udp:67,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667',
    field: 'failsafeOutboundHostPorts',
  },
  { name: 'Ipv6Support', kind: { t: 'bool' }, default: 'true', field: 'ipv6Support' },
  { name: 'VXLANEnabled', kind: { t: 'optbool' }, default: '', field: 'vxlanEnabled' },
  { name: 'VXLANPort', kind: { t: 'int', min: 0, max: 65535 }, default: '4789', field: 'vxlanPort' },
  { name: 'VXLANVNI', kind: { t: 'int', min: 0, max: 16777215 }, default: '4096', field: 'vxlanVNI' },
  { name: 'VXLANMTU', kind: { t: 'int', min: 0 }, default: '0', field: 'vxlanMTU' },
  { name: 'VXLANMTUV6', kind: { t: 'int', min: 0 }, default: '0', field: 'vxlanMTUV6' },
  { name: 'IpInIpEnabled', kind: { t: 'optbool' }, default: '', field: 'ipipEnabled' },
  { name: 'IpInIpMtu', kind: { t: 'int', min: 0 }, default: '0', field: 'ipipMTU' },
  {
    name: 'ProgramClusterRoutes',
    kind: { t: 'oneof', options: ['Enabled', 'Disabled'] },
    default: 'Disabled',
    field: 'programClusterRoutes',
  },
  { name: 'WireguardEnabled', kind: { t: 'bool' }, default: 'false', field: 'wireguardEnabled' },
  { name: 'WireguardMTU', kind: { t: 'int', min: 0 }, default: '0', field: 'wireguardMTU' },
  {
    name: 'MTUIfacePattern',
    kind: { t: 'regexp' },
    default: '^((en|wl|ww|sl|ib)[Pcopsvx].*|(eth|wlan|wwan).*)',
    field: 'mtuIfacePattern',
  },
  { name: 'NATOutgoingAddress', kind: { t: 'ipv4' }, default: '', field: 'natOutgoingAddress' },
  {
    name: 'IPForwarding',
    kind: { t: 'oneof', options: ['Enabled', 'Disabled'] },
    default: 'Enabled',
    nonZero: true,
    field: 'ipForwarding',
  },
  { name: 'NATPortRange', kind: { t: 'portrange' }, default: '', field: 'natPortRange' },
  {
    name: 'NATOutgoingExclusions',
    kind: { t: 'oneof', options: ['IPPoolsOnly', 'IPPoolsAndHostIPs'] },
    default: 'IPPoolsOnly',
    nonZero: true,
    field: 'natOutgoingExclusions',
  },
  {
    name: 'IptablesNATOutgoingInterfaceFilter',
    kind: { t: 'iface' },
    default: '',
    field: 'iptablesNATOutgoingInterfaceFilter',
  },
  {
    name: 'NftablesMarkMask',
    kind: { t: 'mark' },
    default: '0xffff0000',
    nonZero: true,
    field: 'nftablesMarkMask',
  },
  {
    name: 'DeviceRouteProtocol',
    kind: { t: 'int', min: 0, max: 255 },
    default: '3',
    field: 'deviceRouteProtocol',
  },
  {
    name: 'AllowVXLANPacketsFromWorkloads',
    kind: { t: 'bool' },
    default: 'false',
    field: 'allowVXLANPacketsFromWorkloads',
  },
  {
    name: 'AllowIPIPPacketsFromWorkloads',
    kind: { t: 'bool' },
    default: 'false',
    field: 'allowIPIPPacketsFromWorkloads',
  },
  { name: 'ExternalNodesCIDRList', kind: { t: 'ipv4nets' }, default: '', field: 'externalNodesList' },
  { name: 'OpenstackRegion', kind: { t: 'string' }, default: '', field: 'openstackRegion' },
  { name: 'MTUFilePath', kind: { t: 'string' }, default: '/var/lib/calico/mtu', local: true },
];

export const PARAMS_BY_LOWER_NAME: ReadonlyMap<string, ParamDef> = new Map(
  PARAMS.map((p) => [p.name.toLowerCase(), p]),
);
