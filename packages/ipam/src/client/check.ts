/**
 * Consistency (upstream `calicoctl ipam check` and kube-controllers' IPAM garbage collection):
 * `check` reads every IPAM record and reports what disagrees (check/check-report.ts, pure); `gc`
 * asks the caller whether each allocation's owner is alive and releases, conditionally on handle
 * and sequence number, what has been orphaned for the grace period (check/gc-plan.ts, pure).
 */
import { formatIP } from '@calico-ts/api/net';
import { allocationsOf, WINDOWS_RESERVED_HANDLE } from '../block/allocation-block.js';
import { buildCheckReport, type CheckReport } from '../check/check-report.js';
import { type GcObservation, planGc } from '../check/gc-plan.js';
import type { ClientContext } from './context.js';
import { releaseIPs } from './release.js';
import { asIpamError } from './retry.js';
import type { GcOptions, GcResult } from './types.js';

/** Consistency report over all IPAM records (see check/check-report.ts). Read-only. */
export async function check(ctx: ClientContext): Promise<CheckReport> {
  try {
    const [blocks, handles, affinities, nodes] = await Promise.all([
      ctx.store.listBlocks(),
      ctx.store.listHandles(),
      ctx.store.listAffinities(),
      ctx.ds.list('Node'),
    ]);
    return buildCheckReport({
      blocks: blocks.items.map((b) => b.value),
      handles: new Map(handles.items.map((h) => [h.value.handleId, h.value])),
      affinities: affinities.items.map(({ value: a }) => ({ host: a.host, cidr: a.cidr, state: a.state })),
      nodes: new Set(nodes.items.map((n) => n.metadata.name)),
    });
  } catch (e) {
    throw asIpamError(e, 'checking IPAM records');
  }
}

/**
 * One leak-collection scan: ask `isOwnerAlive` about every allocation, and release those whose
 * owner has been gone for `gracePeriodMs`. The release is conditional on the allocation's handle
 * and sequence number, so an address re-assigned meanwhile is never freed.
 */
export async function gc(ctx: ClientContext, opts: GcOptions): Promise<GcResult> {
  try {
    const now =
      opts.now === undefined
        ? ctx.now().getTime()
        : typeof opts.now === 'number'
          ? opts.now
          : opts.now.getTime();
    const observations: GcObservation[] = [];
    for (const { value: block } of (await ctx.store.listBlocks()).items) {
      for (const a of allocationsOf(block)) {
        if (a.handleId?.toLowerCase() === WINDOWS_RESERVED_HANDLE) continue;
        const ip = formatIP(a.ip);
        const ownerAlive = await opts.isOwnerAlive(a.attrs, { ip, handleId: a.handleId });
        observations.push({
          ip,
          block: block.cidr,
          handleId: a.handleId,
          sequenceNumber: a.sequenceNumber,
          attrs: a.attrs,
          ownerAlive,
        });
      }
    }
    const plan = planGc(observations, opts.state.firstSeen, now, opts.gracePeriodMs);
    opts.state.firstSeen = plan.firstSeen;
    const released =
      plan.release.length === 0
        ? []
        : (
            await releaseIPs(
              ctx,
              plan.release.map((o) => ({
                ip: o.ip,
                sequenceNumber: o.sequenceNumber,
                ...(o.handleId !== null ? { handleId: o.handleId } : {}),
              })),
            )
          ).released;
    return {
      released,
      pending: plan.pending.map((p) => ({ ip: p.ip, handleId: p.handleId, releaseAt: p.releaseAt })),
    };
  } catch (e) {
    throw asIpamError(e, 'collecting leaked addresses');
  }
}
