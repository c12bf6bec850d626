/**
 * Finding a block to assign from, for one host and family (upstream `autoAssign`'s block loop):
 *
 *   the host's affine blocks ─► a new block: the first CIDR with no block on the host's seeded
 *   (listed with the env)       walk of each pool, or one of its own with room, or an empty block
 *                               of another host claimed over a minute ago (its affinity released)
 *
 * An affine block's first try starts from the IPAM cache's version of it (store/ipam-cache.ts)
 * and the affinity the environment listed; a retry reads both. Also here: giving up empty blocks
 * of pools whose nodeSelector no longer matches the host.
 */
import type { IPPoolAllowedUse } from '@calico-ts/api';
import { cidrContains, formatCidr, type IPFamily } from '@calico-ts/api/net';
import type { BlockAffinity, Versioned } from '@calico-ts/datastore';
import { affinityForHost, blockCidrOf, countFree, isBlockEmpty } from '../block/allocation-block.js';
import { blockSearchSeed, blocksFromSeed } from '../block/block-cidrs.js';
import type { Cidr } from '../block/ip-math.js';
import type { AllocationBlock } from '../block/types.js';
import { poolSelectsNode, type UsablePool } from '../pools.js';
import type { AssignEnv } from '../store/assign-env.js';
import {
  AffinityMissing,
  BlockChanged,
  BlockClaimConflict,
  BlockNotEmpty,
  getBlockFromAffinity,
  getPendingAffinity,
  releaseBlockAffinity,
  StaleAffinity,
} from './affinity-ops.js';
import type { ClientContext } from './context.js';
import { isConflict, isNotFound, raceLost, withRetries } from './retry.js';
import { EMPTY_BLOCK_MIN_RECLAIM_AGE_MS } from './types.js';

/** Blocks read by CIDR in one request at most (etcd's default limit is 128 operations a Txn). */
const MAX_BLOCKS_READ_TOGETHER = 64;

/** One family's part of an `autoAssign`. */
export interface FamilyRequest {
  family: IPFamily;
  num: number;
  host: string;
  handleId: string;
  secondary: Record<string, string>;
  requested: readonly string[] | undefined;
  namespaceLabels: Record<string, string> | undefined;
  maxBlocksPerHost: number;
  use: IPPoolAllowedUse;
}

export type FoundBlock =
  | { kind: 'block'; block: Versioned<AllocationBlock>; newlyClaimed: boolean }
  | { kind: 'no-free-blocks' }
  | { kind: 'block-limit' };

/**
 * Give up this host's empty blocks in enabled pools whose nodeSelector no longer matches it (its
 * labels changed), so other hosts can use them. Best effort, as upstream: failures are ignored.
 */
export async function releaseUnselectedBlocks(
  ctx: ClientContext,
  host: string,
  blocks: Cidr[],
  env: AssignEnv,
): Promise<void> {
  for (const c of blocks) {
    const pool = env.pools.find((p) => !p.disabled && cidrContains(p.cidr, c));
    if (!pool || poolSelectsNode(pool, env.nodeLabels)) continue;
    await releaseBlockAffinity(ctx.affinity, host, formatCidr(c), { requireEmpty: true }).catch(
      () => undefined,
    );
  }
}

/** A block of this host with a free address: an affine one, else a newly claimed one. */
export async function findOrClaimBlock(
  ctx: ClientContext,
  req: FamilyRequest,
  pools: UsablePool[],
  env: AssignEnv,
  remainingAffine: Cidr[],
  allowNewClaim: boolean,
  listedAffinity: Map<string, Versioned<BlockAffinity>>,
): Promise<FoundBlock> {
  while (remainingAffine.length > 0) {
    const cidr = remainingAffine.shift() as Cidr;
    if (env.reserved.matchesWholeCidr(cidr)) continue;
    const text = formatCidr(cidr);
    const block = await withRetries(`loading affine block ${text} of ${req.host}`, ctx.retry, async (i) => {
      const aff =
        (i === 0 ? listedAffinity.get(text) : undefined) ?? (await ctx.store.getAffinity(req.host, text));
      if (!aff) return undefined;
      const known = i === 0 ? ctx.store.cache.block(text) : undefined;
      if (known && aff.value.state === 'confirmed' && known.value.affinity === affinityForHost(req.host)) {
        return known;
      }
      try {
        return await getBlockFromAffinity(ctx.affinity, req.host, cidr, aff);
      } catch (e) {
        if (e instanceof StaleAffinity || e instanceof BlockClaimConflict) return undefined;
        throw e;
      }
    });
    if (block && countFree(block.value, env.reserved) > 0)
      return { kind: 'block', block, newlyClaimed: false };
  }

  if (!allowNewClaim) return { kind: 'block-limit' };
  if (!env.config.autoAllocateBlocks) return { kind: 'no-free-blocks' };

  return withRetries(`claiming a new IPv${req.family} block for ${req.host}`, ctx.retry, async () => {
    const subnet = await findUsableBlock(ctx, req, pools, env);
    if (!subnet) return { kind: 'no-free-blocks' } as const;
    const text = formatCidr(subnet);
    try {
      const block = await withRetries(`claiming block ${text} for ${req.host}`, ctx.retry, async () => {
        const pa = await getPendingAffinity(ctx.affinity, req.host, text);
        return getBlockFromAffinity(ctx.affinity, req.host, subnet, pa);
      });
      if (countFree(block.value, env.reserved) === 0) throw raceLost(`block ${text}`);
      return { kind: 'block', block, newlyClaimed: true } as const;
    } catch (e) {
      // Someone else got the block: look for another.
      if (e instanceof BlockClaimConflict || e instanceof StaleAffinity) throw raceLost(`block ${text}`);
      throw e;
    }
  });
}

/**
 * A block CIDR this host can claim (no block yet), or one of its own with room; failing that, an
 * empty block claimed by another host long enough ago, whose affinity is then released.
 */
export async function findUsableBlock(
  ctx: ClientContext,
  req: FamilyRequest,
  pools: UsablePool[],
  env: AssignEnv,
): Promise<Cidr | undefined> {
  // The walk order decides. Most walks end at a CIDR with no block after passing few or none, so
  // the block keys are listed alone and only the blocks passed on the way are read.
  const existing = new Set(await ctx.store.listBlockCidrs(req.family));
  const passed: Cidr[] = [];
  let unclaimed: Cidr | undefined;
  walk: for (const pool of pools) {
    const seed = blockSearchSeed(req.host, pool.cidr, pool.blockSize, Math.floor(ctx.random() * 2 ** 32));
    for (const subnet of blocksFromSeed(pool.cidr, pool.blockSize, seed)) {
      if (env.reserved.matchesWholeCidr(subnet)) continue;
      if (!existing.has(formatCidr(subnet))) {
        unclaimed = subnet;
        break walk;
      }
      passed.push(subnet);
    }
  }
  const read =
    unclaimed && passed.length <= MAX_BLOCKS_READ_TOGETHER
      ? await ctx.store.getBlocks(passed.map(formatCidr))
      : passed.length > 0
        ? (await ctx.store.listBlocks(req.family)).items
        : [];
  const blocks = new Map(read.map((b) => [b.value.cidr, b.value]));
  const mine = affinityForHost(req.host);
  const empties: AllocationBlock[] = [];
  for (const subnet of passed) {
    const b = blocks.get(formatCidr(subnet));
    if (!b) return subnet;
    const free = countFree(b, env.reserved);
    if (b.affinity === mine && free > 0) return subnet;
    if (b.affinity?.startsWith('host:') && b.affinity !== mine && free > 0 && isBlockEmpty(b))
      empties.push(b);
  }
  if (unclaimed) return unclaimed;
  const now = ctx.now().getTime();
  for (const b of empties) {
    const claimed = b.affinity_claim_time ? Date.parse(b.affinity_claim_time) : 0;
    if (now - (Number.isNaN(claimed) ? 0 : claimed) < EMPTY_BLOCK_MIN_RECLAIM_AGE_MS) continue;
    const owner = (b.affinity as string).slice('host:'.length);
    try {
      await releaseBlockAffinity(ctx.affinity, owner, b.cidr, {
        requireEmpty: true,
        requiredSequenceNumber: b.sequenceNumber,
      });
      return blockCidrOf(b);
    } catch (e) {
      if (
        e instanceof BlockChanged ||
        e instanceof BlockNotEmpty ||
        e instanceof BlockClaimConflict ||
        e instanceof AffinityMissing ||
        isConflict(e) ||
        isNotFound(e)
      ) {
        continue;
      }
      throw e;
    }
  }
  return undefined;
}
