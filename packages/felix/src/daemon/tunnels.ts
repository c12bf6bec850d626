/**
 * The daemon's side of the tunnels: the graph's tunnel parameters from Felix's configuration and
 * the host MTU (read from the kernel, the graph being pure), and the log lines of a tunnel change.
 *
 *   FelixConfig + host MTU (ip link, MTUIfacePattern) ──► encapConfigOf ──► CalcGraph.setEncapConfig
 *   DataplaneDiff.vxlan / vxlanV6 / ipip ──► logTunnelChanges ──► "VXLAN state changed" ...
 *
 * Thread-safety: one event loop.
 */
import type { EncapConfig } from '../calc/encap-resolver.js';
import type { DataplaneDiff } from '../calc/types.js';
import { hostMtuOf } from '../config/derived.js';
import type { FelixConfig } from '../config/params.js';
import type { DataplaneNetOps } from '../dataplane/linux-dataplane.js';
import { errorMessage, type Logger } from '../logging.js';

/** The tunnels' parameters of a Felix configuration, with the host MTU. */
export function encapConfigOf(cfg: FelixConfig, hostMtu: number): EncapConfig {
  return {
    vxlanEnabled: cfg.VXLANEnabled,
    vxlanVni: cfg.VXLANVNI,
    vxlanPort: cfg.VXLANPort,
    vxlanMtu: cfg.VXLANMTU,
    vxlanMtuV6: cfg.VXLANMTUV6,
    ipipEnabled: cfg.IpInIpEnabled,
    ipipMtu: cfg.IpInIpMtu,
    programClusterRoutes: cfg.ProgramClusterRoutes === 'Enabled',
    ipv6Support: cfg.Ipv6Support,
    externalNodes: cfg.ExternalNodesCIDRList,
    natExcludeHosts: cfg.NATOutgoingExclusions === 'IPPoolsAndHostIPs',
    hostMtu,
  };
}

/** The host MTU now; 1500 (logged) when the interfaces cannot be listed. */
export async function readHostMtu(
  cfg: FelixConfig,
  net: Pick<DataplaneNetOps, 'listLinks'>,
  netns: string | undefined,
  log: Logger,
): Promise<number> {
  try {
    return hostMtuOf(cfg, await net.listLinks(netns));
  } catch (e) {
    log.warn({ err: errorMessage(e) }, 'listing interfaces for the host MTU failed; assuming 1500');
    return 1500;
  }
}

/** One line per tunnel whose state changed and is on. */
export function logTunnelChanges(log: Logger, diff: DataplaneDiff): void {
  const ipip = diff.ipip;
  if (ipip?.enabled) {
    log.info(
      {
        device: ipip.device?.name,
        mtu: ipip.device?.mtu,
        tunnelAddress: ipip.device?.tunnelAddress,
        routes: ipip.routes.length,
        ...(ipip.waiting.length > 0 ? { waiting: ipip.waiting } : {}),
      },
      'IPIP state changed',
    );
  }
  for (const [state, what] of [
    [diff.vxlanV6, 'IPv6 VXLAN state changed'],
    [diff.vxlan, 'VXLAN state changed'],
  ] as const) {
    if (!state?.enabled) continue;
    log.info(
      {
        device: state.device?.name,
        tunnelAddress: state.device?.tunnelAddress,
        routes: state.routes.length,
        vteps: state.fdb.length,
        ...(state.waiting.length > 0 ? { waiting: state.waiting } : {}),
      },
      what,
    );
  }
}
