/**
 * Block affinities on request (upstream `ClaimAffinity`, `ReleaseAffinity`,
 * `ReleaseHostAffinities`, `ReleasePoolAffinities`): which blocks a call covers, each claimed or
 * released by the protocol in affinity-ops.ts inside its own retry loop.
 */
import { cidrContains, formatCidr } from '@calico-ts/api/net';
import { blocksWithin } from '../block/block-cidrs.js';
import { type Cidr, parseNetwork, parseStrictCidr } from '../block/ip-math.js';
import { IpamError } from '../errors.js';
import { type UsablePool, usablePools } from '../pools.js';
import {
  AffinityMissing,
  BlockClaimConflict,
  BlockNotEmpty,
  claimAffineBlock,
  getPendingAffinity,
  releaseBlockAffinity,
} from './affinity-ops.js';
import type { ClientContext } from './context.js';
import { asIpamError, withRetries } from './retry.js';
import type { AffinityReleaseResult } from './types.js';

/**
 * Claim every block inside `cidr` (which must lie in an enabled pool and be at least a block) for
 * `host`. Blocks that exist already for another host are listed in `failed`.
 */
export async function claimAffinity(
  ctx: ClientContext,
  host: string,
  cidr: string,
): Promise<{ claimed: string[]; failed: string[] }> {
  const claimed: string[] = [];
  const failed: string[] = [];
  try {
    const { range, pool } = await poolRange(ctx, cidr);
    for (const block of blocksWithin(range, pool.blockSize)) {
      const text = formatCidr(block);
      const ok = await withRetries(`claiming block ${text} for ${host}`, ctx.retry, async () => {
        const pa = await getPendingAffinity(ctx.affinity, host, text);
        try {
          await claimAffineBlock(ctx.affinity, host, block, pa);
          return true;
        } catch (e) {
          if (e instanceof BlockClaimConflict) return false;
          throw e;
        }
      });
      (ok ? claimed : failed).push(text);
    }
    return { claimed, failed };
  } catch (e) {
    throw asIpamError(e, `claiming ${cidr} for ${host}`);
  }
}

/** Release `host`'s affinity for every block inside `cidr`; blocks of other hosts are left alone. */
export async function releaseAffinity(
  ctx: ClientContext,
  host: string,
  cidr: string,
  opts: { mustBeEmpty?: boolean } = {},
): Promise<AffinityReleaseResult> {
  try {
    const { range, pool } = await poolRange(ctx, cidr);
    return await releaseAffinities(ctx, host, [...blocksWithin(range, pool.blockSize)].map(formatCidr), opts);
  } catch (e) {
    throw asIpamError(e, `releasing ${host}'s affinity for ${cidr}`);
  }
}

/** Release every block affinity `host` holds (both families), e.g. when the node goes away. */
export async function releaseHostAffinities(
  ctx: ClientContext,
  host: string,
  opts: { mustBeEmpty?: boolean } = {},
): Promise<AffinityReleaseResult> {
  try {
    const affs = (await ctx.store.listAffinities(host)).items;
    return await releaseAffinities(
      ctx,
      host,
      affs.map((a) => a.value.cidr),
      opts,
    );
  } catch (e) {
    throw asIpamError(e, `releasing the affinities of ${host}`);
  }
}

/**
 * Release every host's affinity for the blocks inside `cidr`, enabled pool or not (upstream's
 * `ReleasePoolAffinities`, used when a pool is deleted after it was disabled). Empty blocks are
 * deleted; blocks in use keep their addresses and lose their affinity.
 */
export async function releasePoolAffinities(
  ctx: ClientContext,
  cidr: string,
): Promise<AffinityReleaseResult> {
  const range = parseNetwork(cidr);
  if (!range) throw new IpamError('invalid', `"${cidr}" is not a CIDR`);
  try {
    const byHost = new Map<string, string[]>();
    for (const { value: a } of (await ctx.store.listAffinities()).items) {
      const c = parseStrictCidr(a.cidr);
      if (!c || c.family !== range.family || !cidrContains(range, c)) continue;
      const list = byHost.get(a.host);
      if (list) list.push(a.cidr);
      else byHost.set(a.host, [a.cidr]);
    }
    const out: AffinityReleaseResult = { released: [], notEmpty: [] };
    for (const [host, cidrs] of byHost) {
      const r = await releaseAffinities(ctx, host, cidrs, {});
      out.released.push(...r.released);
      out.notEmpty.push(...r.notEmpty);
    }
    return out;
  } catch (e) {
    throw asIpamError(e, `releasing the block affinities in ${cidr}`);
  }
}

export async function releaseAffinities(
  ctx: ClientContext,
  host: string,
  cidrs: string[],
  opts: { mustBeEmpty?: boolean },
): Promise<AffinityReleaseResult> {
  const out: AffinityReleaseResult = { released: [], notEmpty: [] };
  for (const text of cidrs) {
    const r = await withRetries(`releasing ${host}'s affinity for ${text}`, ctx.retry, async () => {
      try {
        await releaseBlockAffinity(ctx.affinity, host, text, {
          requireEmpty: opts.mustBeEmpty === true,
        });
        return 'released' as const;
      } catch (e) {
        if (e instanceof BlockNotEmpty) return 'not-empty' as const;
        if (e instanceof AffinityMissing || e instanceof BlockClaimConflict) return 'skip' as const;
        throw e;
      }
    });
    if (r === 'released') out.released.push(text);
    else if (r === 'not-empty') out.notEmpty.push(text);
  }
  return out;
}

export async function poolRange(
  ctx: ClientContext,
  cidr: string,
): Promise<{ range: Cidr; pool: UsablePool }> {
  const range = parseNetwork(cidr);
  if (!range) throw new IpamError('invalid', `"${cidr}" is not a CIDR`);
  const pools = usablePools((await ctx.ds.list('IPPool')).items).filter((p) => !p.disabled);
  const pool = pools.find((p) => cidrContains(p.cidr, range));
  if (!pool) throw new IpamError('invalid', `${formatCidr(range)} is not inside any enabled IP pool`);
  if (range.prefix > pool.blockSize) {
    throw new IpamError(
      'invalid',
      `${formatCidr(range)} is smaller than a block of pool ${pool.name} (/${pool.blockSize})`,
    );
  }
  return { range, pool };
}
