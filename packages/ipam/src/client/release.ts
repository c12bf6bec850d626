/**
 * Releasing addresses (upstream `ReleaseIPs`, `ReleaseByHandle`): per block, a compare-and-swap
 * loop that applies block/allocation-block.ts' pure release and writes the block back (deleted
 * when it is empty and no host owns it); the handles' counts are lowered after each block write.
 * Addresses that were not assigned are reported, not an error; releasing an unknown handle does
 * nothing.
 */
import { cidrContains, formatCidr, formatIP, parseIP } from '@calico-ts/api/net';
import {
  blockCidrOf,
  bumpSequence,
  ipToOrdinal,
  isBlockEmpty,
  ordinalToIp,
  type ReleaseRequest,
  releaseHandleInBlock,
  releaseInBlock,
  sanitizeHandle,
} from '../block/allocation-block.js';
import { type Cidr, enclosingCidr, parseStrictCidr } from '../block/ip-math.js';
import type { AllocationBlock } from '../block/types.js';
import { IpamError } from '../errors.js';
import { poolForIp, usablePools } from '../pools.js';
import type { ClientContext } from './context.js';
import { decrementHandleRecord, dropHandleBlock } from './handles.js';
import { asIpamError, isConflict, isNotFound, withRetries } from './retry.js';
import type { ReleaseIPsResult, ReleaseSpec } from './types.js';

/** Release addresses (text, or with preconditions). Addresses not assigned are reported, not an error. */
export async function releaseIPs(
  ctx: ClientContext,
  ips: readonly (string | ReleaseSpec)[],
): Promise<ReleaseIPsResult> {
  const specs = ips.map((x) => (typeof x === 'string' ? { ip: x } : x));
  const result: ReleaseIPsResult = { released: [], notAssigned: [], mismatched: [] };
  try {
    const pools = usablePools((await ctx.ds.list('IPPool')).items);
    let allBlocks: Cidr[] | undefined;
    const byBlock = new Map<string, { cidr: Cidr; reqs: (ReleaseRequest & { text: string })[] }>();
    for (const s of specs) {
      const addr = parseIP(s.ip);
      if (!addr) throw new IpamError('invalid', `"${s.ip}" is not an IP address`);
      let cidr: Cidr | undefined;
      const pool = poolForIp(pools, addr);
      if (pool) {
        cidr = enclosingCidr(addr, pool.blockSize);
      } else {
        allBlocks ??= (await ctx.store.listBlocks()).items.map((b) => blockCidrOf(b.value));
        cidr = allBlocks.find((c) => cidrContains(c, addr));
      }
      if (!cidr) {
        result.notAssigned.push(s.ip);
        continue;
      }
      const key = formatCidr(cidr);
      const entry = byBlock.get(key) ?? { cidr, reqs: [] };
      entry.reqs.push({
        ordinal: ipToOrdinal(cidr, addr) as number,
        text: s.ip,
        ...(s.handleId !== undefined ? { handleId: sanitizeHandle(s.handleId) } : {}),
        ...(s.sequenceNumber !== undefined ? { sequenceNumber: s.sequenceNumber } : {}),
      });
      byBlock.set(key, entry);
    }
    await Promise.all(
      [...byBlock.values()].map(async ({ cidr, reqs }) => {
        const r = await releaseFromBlock(ctx, cidr, reqs);
        const textOf = (o: number) =>
          reqs.find((q) => q.ordinal === o)?.text ?? formatIP(ordinalToIp(cidr, o));
        result.released.push(...r.released.map(textOf));
        result.notAssigned.push(...r.notAllocated.map(textOf));
        result.mismatched.push(...r.mismatched.map(textOf));
      }),
    );
    return result;
  } catch (e) {
    throw asIpamError(e, 'releasing addresses');
  }
}

export async function releaseFromBlock(
  ctx: ClientContext,
  cidr: Cidr,
  reqs: ReleaseRequest[],
): Promise<{ released: number[]; notAllocated: number[]; mismatched: number[] }> {
  const text = formatCidr(cidr);
  const done = await ctx.store.blockTurns.turn(text, () => releaseInTurn(ctx, text, reqs));
  for (const [handleId, n] of done.counts) {
    await decrementHandleRecord(ctx.store, ctx.retry, handleId, text, n);
  }
  return done;
}

function releaseInTurn(
  ctx: ClientContext,
  text: string,
  reqs: ReleaseRequest[],
): Promise<{
  released: number[];
  notAllocated: number[];
  mismatched: number[];
  counts: Map<string, number>;
}> {
  return withRetries(`releasing addresses in block ${text}`, ctx.retry, async (attempt) => {
    // As in `releaseHandle`: the cached version serves a first try only when every address asked
    // for is allocated in it (the write's compare-and-swap checks it); otherwise the block is read.
    const known = attempt === 0 ? ctx.store.cache.block(text) : undefined;
    if (known) {
      const r = releaseInBlock(known.value, reqs);
      if (r.released.length === reqs.length) {
        await writeReleased(ctx, r.block, known.revision);
        return { ...r, counts: r.countByHandle };
      }
    }
    const block = await ctx.store.getBlock(text);
    if (!block) {
      return { released: [], notAllocated: reqs.map((r) => r.ordinal), mismatched: [], counts: new Map() };
    }
    const r = releaseInBlock(block.value, reqs);
    if (r.released.length > 0) await writeReleased(ctx, r.block, block.revision);
    return { ...r, counts: r.countByHandle };
  });
}

/** A block after a release: deleted when empty and no host owns it, else written back. */
export async function writeReleased(
  ctx: ClientContext,
  block: AllocationBlock,
  revision: string,
): Promise<void> {
  if (block.affinity === null && isBlockEmpty(block)) {
    await ctx.store.deleteBlock(block.cidr, revision);
  } else {
    await ctx.store.updateBlock(bumpSequence(block), revision);
  }
}

/**
 * As `releaseByHandle`, also saying whether the handle existed (it may hold no address: a
 * handle left behind by an interrupted release is still deleted).
 */
export async function releaseHandle(
  ctx: ClientContext,
  handleId: string,
): Promise<{ released: string[]; existed: boolean }> {
  const id = sanitizeHandle(handleId);
  const released: string[] = [];
  try {
    const handle = await ctx.store.getHandle(id);
    if (!handle) return { released, existed: false };
    if (Object.keys(handle.value.block).length === 0) {
      await ctx.store.deleteHandle(id, handle.revision).catch((e: unknown) => {
        if (!isConflict(e) && !isNotFound(e)) throw e;
      });
      return { released, existed: true };
    }
    // The handle as read here serves the first update of it: releasing in a block does not
    // write the handle. After that update its revision has moved, so later ones read it again.
    let known: typeof handle | undefined = handle;
    for (const text of Object.keys(handle.value.block)) {
      const cidr = parseStrictCidr(text);
      const ords = cidr
        ? await ctx.store.blockTurns.turn(text, () =>
            withRetries(`releasing handle ${id} in block ${text}`, ctx.retry, async (attempt) => {
              // The first try starts from the block as this store last saw it (usually its own
              // write of this very allocation): a version that holds the handle's addresses is
              // checked by the write's compare-and-swap. One that holds none proves nothing (it
              // may predate the allocation), so the block is read before concluding that.
              const known = attempt === 0 ? ctx.store.cache.block(text) : undefined;
              if (known) {
                const r = releaseHandleInBlock(known.value, id);
                if (r.released.length > 0) {
                  await writeReleased(ctx, r.block, known.revision);
                  return r.released;
                }
              }
              const block = await ctx.store.getBlock(text);
              if (!block) return [];
              const r = releaseHandleInBlock(block.value, id);
              if (r.released.length > 0) await writeReleased(ctx, r.block, block.revision);
              return r.released;
            }),
          )
        : [];
      if (cidr) released.push(...ords.map((o) => formatIP(ordinalToIp(cidr, o))));
      // The block no longer holds anything of this handle: drop its entry whatever the count said.
      await dropHandleBlock(ctx.store, ctx.retry, id, text, known);
      known = undefined;
    }
    return { released, existed: true };
  } catch (e) {
    throw asIpamError(e, `releasing handle ${id}`);
  }
}
