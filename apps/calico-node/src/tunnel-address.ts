/**
 * This node's tunnel addresses (upstream `calico-node -allocate-tunnel-addrs`): Felix's
 * `ensureVxlanTunnelAddress` / `ensureIpipTunnelAddress` hold one IPAM address per encapsulation
 * its pools use (`Node.spec.ipv4VXLANTunnelAddr`, `spec.ipv6VXLANTunnelAddr`, `spec.bgp.ipv4IPIPTunnelAddr`) and release it when
 * no pool needs it. calico-node runs them at start-up and then every minute (the periodic check
 * reads the IP pools from an informer, `reads.pools`, instead of listing them three times).
 */
import type { Logger } from '@calico-ts/api/log';
import type { Datastore } from '@calico-ts/datastore';
import {
  ensureIpipTunnelAddress,
  ensureVxlanTunnelAddress,
  ensureVxlanV6TunnelAddress,
  type TunnelAddressReads,
  type TunnelIpam,
} from '@calico-ts/felix';

export type { TunnelAddressReads, TunnelIpam };

/** Every tunnel address made right; logs what changed. Resolves to the (IPv4) VXLAN address, if any. */
export async function reconcileTunnelAddresses(
  ds: Datastore,
  ipam: TunnelIpam,
  nodeName: string,
  log: Logger,
  reads: TunnelAddressReads = {},
): Promise<string | undefined> {
  const vxlan = await ensureVxlanTunnelAddress(ds, ipam, nodeName, reads);
  const vxlan6 = await ensureVxlanV6TunnelAddress(ds, ipam, nodeName, reads);
  const ipip = await ensureIpipTunnelAddress(ds, ipam, nodeName, reads);
  for (const [kind, r] of [
    ['VXLAN', vxlan],
    ['IPv6 VXLAN', vxlan6],
    ['IPIP', ipip],
  ] as const) {
    if (r.action === 'assigned' || r.action === 'removed') {
      log.info(
        { node: nodeName, address: r.address, previous: r.previous },
        `${kind} tunnel address ${r.action}`,
      );
    }
  }
  return vxlan.address;
}
