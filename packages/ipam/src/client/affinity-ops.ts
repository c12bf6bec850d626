/**
 * The block-affinity protocol (upstream `ipam_block_reader_writer.go`), as single attempts: each
 * function either completes its step or throws, and the caller's retry loop decides what to do.
 *
 * Claiming block B for host H:
 *   1. affinity H/B written `pending` (created, or an existing unconfirmed one re-marked);
 *   2. block B created with `affinity: host:H` — compare-and-swap on absence, so exactly one host wins;
 *   3. affinity confirmed. A host that lost step 2 deletes its pending affinity (`BlockClaimConflict`).
 * Releasing: affinity → `pendingDeletion`, then the block is deleted (if empty) or its affinity
 * cleared, then the affinity record is deleted. A crash between steps leaves records the next
 * claim or release of that block repairs.
 */
import { formatCidr } from '@calico-ts/api/net';
import type { BlockAffinity, Versioned } from '@calico-ts/datastore';
import { affinityForHost, isBlockEmpty, newBlock } from '../block/allocation-block.js';
import type { Cidr } from '../block/ip-math.js';
import type { AllocationBlock } from '../block/types.js';
import type { IpamStore } from '../store/ipam-store.js';
import { isAlreadyExists, isConflict, isNotFound, raceLost } from './retry.js';

/** Another host owns the block; look elsewhere. */
export class BlockClaimConflict extends Error {
  constructor(readonly cidr: string) {
    super(`block ${cidr} is affine to another host`);
  }
}

/** The affinity record pointed at a block affine to someone else; it was removed. */
export class StaleAffinity extends Error {
  constructor(readonly cidr: string) {
    super(`affinity for block ${cidr} was stale`);
  }
}

export class BlockNotEmpty extends Error {
  constructor(readonly cidr: string) {
    super(`block ${cidr} is not empty`);
  }
}

/** The block changed since the caller looked at it (reclaim of an empty block lost a race). */
export class BlockChanged extends Error {
  constructor(readonly cidr: string) {
    super(`block ${cidr} changed since it was read`);
  }
}

/** The host holds no affinity for this block. */
export class AffinityMissing extends Error {
  constructor(
    readonly host: string,
    readonly cidr: string,
  ) {
    super(`host ${host} has no affinity for block ${cidr}`);
  }
}

export interface AffinityContext {
  store: IpamStore;
  /** Creation time of a new block, in ns (its first sequence number). */
  nowNs: () => bigint;
  /** RFC 3339 time for `affinityClaimTime`. */
  nowText: () => string;
}

const confirmed = { state: 'confirmed', deleted: false } as const;

/** Step 1: a pending affinity for host/cidr, or the existing one if already confirmed. */
export async function getPendingAffinity(
  ctx: AffinityContext,
  host: string,
  cidr: string,
): Promise<Versioned<BlockAffinity>> {
  try {
    return await ctx.store.createAffinity({ host, cidr, state: 'pending', deleted: false });
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
  }
  const existing = await ctx.store.getAffinity(host, cidr);
  if (!existing) throw raceLost(`affinity ${host}/${cidr}`);
  // Writing an unchanged state would only invalidate what concurrent claimers have read.
  if (existing.value.state === 'confirmed' || existing.value.state === 'pending') return existing;
  return ctx.store.updateAffinity({ ...existing.value, state: 'pending' }, existing.revision);
}

async function confirmAffinity(
  ctx: AffinityContext,
  host: string,
  cidr: string,
  aff: Versioned<BlockAffinity>,
): Promise<Versioned<BlockAffinity>> {
  try {
    return await ctx.store.updateAffinity({ ...aff.value, host, cidr, ...confirmed }, aff.revision);
  } catch (e) {
    const now = await ctx.store.getAffinity(host, cidr);
    if (now?.value.state === 'confirmed') return now;
    throw e;
  }
}

/** Steps 2 and 3, given a pending affinity. */
export async function claimAffineBlock(
  ctx: AffinityContext,
  host: string,
  cidr: Cidr,
  aff: Versioned<BlockAffinity>,
): Promise<Versioned<AllocationBlock>> {
  const text = formatCidr(cidr);
  const mine = affinityForHost(host);
  const block = newBlock(cidr, {
    affinity: mine,
    sequenceNumber: ctx.nowNs(),
    affinityClaimTime: ctx.nowText(),
  });
  let created: Versioned<AllocationBlock>;
  try {
    created = await ctx.store.createBlock(block);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    const existing = await ctx.store.getBlock(text);
    if (!existing) throw raceLost(`block ${text}`);
    if (existing.value.affinity === mine) {
      // Another request of this host claimed it first.
      await confirmAffinity(ctx, host, text, aff);
      return existing;
    }
    await ctx.store.deleteAffinity(host, text, aff.revision).catch(() => undefined);
    throw new BlockClaimConflict(text);
  }
  await confirmAffinity(ctx, host, text, aff);
  return created;
}

/**
 * The block an affinity refers to: created if missing, its affinity confirmed if not yet, and a
 * stale affinity (block owned by someone else) deleted with `StaleAffinity`.
 */
export async function getBlockFromAffinity(
  ctx: AffinityContext,
  host: string,
  cidr: Cidr,
  aff: Versioned<BlockAffinity>,
): Promise<Versioned<AllocationBlock>> {
  const text = formatCidr(cidr);
  const block = await ctx.store.getBlock(text);
  if (!block) {
    const p =
      aff.value.state === 'pending'
        ? aff
        : await ctx.store.updateAffinity({ ...aff.value, host, cidr: text, state: 'pending' }, aff.revision);
    return claimAffineBlock(ctx, host, cidr, p);
  }
  if (block.value.affinity !== affinityForHost(host)) {
    // Another request of this host may have found it stale first and removed it, or changed it:
    // either way it is not this host's block.
    await ctx.store.deleteAffinity(host, text, aff.revision).catch((e: unknown) => {
      if (!isNotFound(e) && !isConflict(e)) throw e;
    });
    throw new StaleAffinity(text);
  }
  if (aff.value.state === 'pending') {
    // A claim of this host in progress (no release marks `pending`): finish it.
    await confirmAffinity(ctx, host, text, aff);
    return block;
  }
  if (aff.value.state !== 'confirmed') {
    // pendingDeletion (or unknown): a release may be half done. Re-mark pending and rewrite the block
    // so the releaser's remaining compare-and-swaps fail, then confirm (upstream's sequence).
    const p = await ctx.store.updateAffinity(
      { ...aff.value, host, cidr: text, state: 'pending' },
      aff.revision,
    );
    const rewritten = await ctx.store.updateBlock(
      { ...block.value, sequenceNumber: block.value.sequenceNumber + 1n },
      block.revision,
    );
    await ctx.store.updateAffinity({ ...p.value, ...confirmed }, p.revision);
    return rewritten;
  }
  return block;
}

export interface ReleaseAffinityOptions {
  requireEmpty?: boolean;
  /** Abort with `BlockChanged` unless the block still has this sequence number. */
  requiredSequenceNumber?: bigint;
}

/**
 * Give up host's affinity to the block at `cidr`: delete the block if empty, otherwise leave it
 * with no affinity (its addresses stay assigned). Throws `AffinityMissing` if the host has no such
 * affinity (an affinity without its block is simply removed), `BlockClaimConflict` if the block is someone else's (the stale record is
 * removed), `BlockNotEmpty` when `requireEmpty` and it is in use.
 */
export async function releaseBlockAffinity(
  ctx: AffinityContext,
  host: string,
  cidr: string,
  opts: ReleaseAffinityOptions = {},
): Promise<void> {
  const aff = await ctx.store.getAffinity(host, cidr);
  const block = await ctx.store.getBlock(cidr);
  if (!aff) throw new AffinityMissing(host, cidr);
  if (!block) {
    await ignoreNotFound(ctx.store.deleteAffinity(host, cidr, aff.revision));
    return;
  }
  if (
    opts.requiredSequenceNumber !== undefined &&
    block.value.sequenceNumber !== opts.requiredSequenceNumber
  ) {
    throw new BlockChanged(cidr);
  }
  if (block.value.affinity !== affinityForHost(host)) {
    await ctx.store.deleteAffinity(host, cidr, aff.revision).catch(() => undefined);
    throw new BlockClaimConflict(cidr);
  }
  const empty = isBlockEmpty(block.value);
  if (opts.requireEmpty && !empty) throw new BlockNotEmpty(cidr);
  const marked = await ctx.store.updateAffinity({ ...aff.value, state: 'pendingDeletion' }, aff.revision);
  if (empty) {
    await ignoreNotFound(ctx.store.deleteBlock(cidr, block.revision));
  } else {
    const { affinity_claim_time: _dropped, ...rest } = block.value;
    await ctx.store.updateBlock(
      { ...rest, affinity: null, sequenceNumber: block.value.sequenceNumber + 1n },
      block.revision,
    );
  }
  await ignoreNotFound(ctx.store.deleteAffinity(host, cidr, marked.revision));
}

async function ignoreNotFound(p: Promise<void>): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}
