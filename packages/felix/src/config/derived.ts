/**
 * What the other parts take from the resolved configuration: the rule renderer's config, the
 * datastore client's config, the status keys, the pod MTU. Pure.
 */
import type { ClientConfig } from '@calico-ts/datastore';
import { DEFAULT_RULES_CONFIG, type RulesConfig } from '../rules/config.js';
import type { FelixConfig } from './params.js';

export function rulesConfigOf(c: FelixConfig): RulesConfig {
  const action = c.DefaultEndpointToHostAction;
  const cfg: RulesConfig = {
    ...DEFAULT_RULES_CONFIG,
    interfacePrefixes: c.InterfacePrefix,
    ipv6Support: c.Ipv6Support,
    defaultEndpointToHostAction: action === 'ACCEPT' ? 'Accept' : action === 'RETURN' ? 'Return' : 'Drop',
    failsafeInboundHostPorts: c.FailsafeInboundHostPorts,
    failsafeOutboundHostPorts: c.FailsafeOutboundHostPorts,
    markMask: c.NftablesMarkMask,
    logPrefix: c.LogPrefix,
    vxlanPort: c.VXLANPort,
    allowVXLANPacketsFromWorkloads: c.AllowVXLANPacketsFromWorkloads,
    allowIPIPPacketsFromWorkloads: c.AllowIPIPPacketsFromWorkloads,
    natOutgoingExclusions: c.NATOutgoingExclusions,
  };
  return {
    ...cfg,
    ...(c.NATOutgoingAddress !== '' ? { natOutgoingAddress: c.NATOutgoingAddress } : {}),
    ...(c.NATPortRange ? { natPortRange: c.NATPortRange } : {}),
    ...(c.IptablesNATOutgoingInterfaceFilter !== ''
      ? { natOutgoingInterfaceFilter: c.IptablesNATOutgoingInterfaceFilter }
      : {}),
  };
}

/** The datastore client config upstream Felix builds from its Etcd* parameters. */
export function clientConfigOf(c: FelixConfig): ClientConfig {
  const endpoints = c.EtcdEndpoints.length > 0 ? c.EtcdEndpoints : [`${c.EtcdScheme}://${c.EtcdAddr}`];
  const cfg: ClientConfig = {
    datastoreType: c.DatastoreType === 'kubernetes' ? 'kubernetes' : 'etcdv3',
    etcdEndpoints: endpoints,
  };
  if (c.EtcdKeyFile !== '') cfg.etcdKeyFile = c.EtcdKeyFile;
  if (c.EtcdCertFile !== '') cfg.etcdCertFile = c.EtcdCertFile;
  if (c.EtcdCaFile !== '') cfg.etcdCACertFile = c.EtcdCaFile;
  return cfg;
}

/** `/calico/felix/v2/<region>/host/<node>`: where this Felix reports its status. */
export function statusPrefix(c: FelixConfig): string {
  const region = c.OpenstackRegion === '' ? 'no-region' : `region-${c.OpenstackRegion}`;
  return `/calico/felix/v2/${region}/host/${c.FelixHostname}`;
}

export interface PoolEncap {
  readonly vxlan: boolean;
  readonly ipip: boolean;
}

/**
 * The pod MTU upstream writes to the MTU file: the smallest MTU of the enabled encapsulations,
 * else the host's. Encapsulation is enabled by config when set, else by any pool using it.
 */
export function podMtu(c: FelixConfig, hostMtu: number, pools: PoolEncap): number {
  const candidates: number[] = [];
  const vxlan = c.VXLANEnabled ?? pools.vxlan;
  const ipip = c.IpInIpEnabled ?? pools.ipip;
  if (vxlan) candidates.push(c.VXLANMTU > 0 ? c.VXLANMTU : hostMtu - 50);
  if (ipip) candidates.push(c.IpInIpMtu > 0 ? c.IpInIpMtu : hostMtu - 20);
  if (c.WireguardEnabled) candidates.push(c.WireguardMTU > 0 ? c.WireguardMTU : hostMtu - 60);
  return candidates.length > 0 ? Math.min(...candidates) : hostMtu;
}

/** The host MTU: the smallest MTU of the interfaces matching MTUIfacePattern (1500 if none). */
export function hostMtuOf(c: FelixConfig, links: readonly { name: string; mtu: number }[]): number {
  const mtus = links.filter((l) => c.MTUIfacePattern.test(l.name)).map((l) => l.mtu);
  return mtus.length > 0 ? Math.min(...mtus) : 1500;
}
