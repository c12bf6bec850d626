/**
 * How each IP pool of the family is exported to BGP peers and programmed into the kernel:
 * VXLAN pools and (with `programClusterRoutes: Disabled`) every pool are Felix's to program, so
 * BIRD rejects them from the kernel; IPIP pools go through the tunnel; the rest are accepted.
 * Pure.
 */
import type { IPPool } from '@calico-ts/api';
import { formatCidr, parseCidr } from '@calico-ts/api/net';
import type { IPFamily } from '../bgp-input.js';
import type { ModelContext } from './context.js';
import { cmp } from './node-facts.js';
import type { PoolKernelRule, PoolRule } from './types.js';

export function poolRules(ctx: ModelContext): PoolRule[] {
  const felixProgramsClusterRoutes = ctx.global.programClusterRoutes === 'Disabled';
  return ctx.input.pools
    .map((p) => ({ p, c: parseCidr(p.spec.cidr) }))
    .filter(({ c }) => c !== undefined && c.family === ctx.family)
    .map(({ p, c }) => ({
      cidr: formatCidr(c!),
      exportDisabled: p.spec.disableBGPExport === true,
      kernel: kernelRule(p, ctx.family, felixProgramsClusterRoutes),
    }))
    .sort((a, b) => cmp(a.cidr, b.cidr));
}

function kernelRule(p: IPPool, family: IPFamily, felixPrograms: boolean): PoolKernelRule {
  const vx = p.spec.vxlanMode;
  if (vx === 'Always' || vx === 'CrossSubnet') return { kind: 'reject', reason: 'vxlan' };
  if (felixPrograms) return { kind: 'reject', reason: 'felix' };
  const ipip = p.spec.ipipMode;
  if (family === 4 && (ipip === 'Always' || ipip === 'CrossSubnet')) return { kind: 'ipip', mode: ipip };
  return { kind: 'accept' };
}
