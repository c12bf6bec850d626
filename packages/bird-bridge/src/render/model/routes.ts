/**
 * The routes this node originates or keeps out of the kernel, for one family: its affine IPAM
 * blocks, the service cluster IPs it announces as blackhole static routes, the service ranges
 * BIRD must never program (Felix and kube-proxy own them), and host routes to peers reachable only
 * through a gateway (`reachableBy`). Pure.
 */
import { formatCidr, parseCidr, parseCidrOrIP } from '@calico-ts/api/net';
import type { AffineBlock } from '../bgp-input.js';
import type { ModelContext } from './context.js';
import { cmp, familyOf, uniqueSorted } from './node-facts.js';
import type { Peerings } from './peerings.js';
import type { BirdModel } from './types.js';

/** This node's affine blocks of the family, sorted; `pending` affinities are left out. */
export function affineBlocks(ctx: ModelContext): BirdModel['blocks'] {
  return ctx.input.affineBlocks
    .map((b): AffineBlock => (typeof b === 'string' ? { cidr: b } : b))
    .map((b) => ({ c: parseCidr(b.cidr), state: b.state ?? 'confirmed', text: b.cidr }))
    .filter((b) => {
      if (!b.c) ctx.warnings.push(`affine block ${JSON.stringify(b.text)} is not a CIDR; skipped`);
      return b.c !== undefined && b.c.family === ctx.family && b.state !== 'pending';
    })
    .map((b) => ({ cidr: formatCidr(b.c!), state: b.state }))
    .sort((a, b) => cmp(a.cidr, b.cidr));
}

/** The default BGPConfiguration's service CIDRs: cluster IPs announced, every range rejected. */
export function serviceRoutes(ctx: ModelContext): Pick<BirdModel, 'staticRoutes' | 'rejectCidrs'> {
  const ofFamily = (cidrs: readonly { cidr: string }[] | undefined) =>
    (cidrs ?? [])
      .map((x) => parseCidrOrIP(x.cidr))
      .filter((c) => c !== undefined && c.family === ctx.family)
      .map((c) => formatCidr(c!));
  const { global } = ctx;
  const staticRoutes = uniqueSorted(ofFamily(global.serviceClusterIPs));
  const rejectCidrs = uniqueSorted([
    ...staticRoutes,
    ...ofFamily(global.serviceExternalIPs),
    ...ofFamily(global.serviceLoadBalancerIPs),
  ]);
  return { staticRoutes, rejectCidrs };
}

/** One host route per peer address whose BGPPeer sets a `reachableBy` gateway of the family. */
export function peerRoutes(ctx: ModelContext, peerings: Peerings): BirdModel['peerRoutes'] {
  const routes: BirdModel['peerRoutes'] = [];
  for (const x of [...peerings.global.values(), ...peerings.node.values()]) {
    const via = x.source.spec.reachableBy;
    if (via && familyOf(via) === ctx.family && !routes.some((r) => r.ip === x.ip)) {
      routes.push({ ip: x.ip, via });
    }
  }
  return routes;
}
