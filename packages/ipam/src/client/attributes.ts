/**
 * Who holds an address (upstream `GetAssignmentAttributes`): the block it falls in (through its
 * pool's block size, or among all blocks when no pool covers it) and the allocation there.
 */
import { cidrContains, formatCidr, type IPAddress, parseIP } from '@calico-ts/api/net';
import type { Versioned } from '@calico-ts/datastore';
import { allocationAt, blockCidrOf, ipToOrdinal } from '../block/allocation-block.js';
import { enclosingCidr } from '../block/ip-math.js';
import type { AllocationBlock } from '../block/types.js';
import { IpamError } from '../errors.js';
import { poolForIp, usablePools } from '../pools.js';
import type { ClientContext } from './context.js';
import { asIpamError } from './retry.js';
import type { AssignmentAttributes } from './types.js';

/** Who holds `ip`. Throws `not-found` when it is not assigned. */
export async function getAssignmentAttributes(ctx: ClientContext, ip: string): Promise<AssignmentAttributes> {
  const addr = parseIP(ip);
  if (!addr) throw new IpamError('invalid', `"${ip}" is not an IP address`);
  try {
    const found = await findBlockOf(ctx, addr);
    const a =
      found &&
      allocationAt(
        found.value,
        blockCidrOf(found.value),
        ipToOrdinal(blockCidrOf(found.value), addr) as number,
      );
    if (!found || !a) throw new IpamError('not-found', `${ip} is not assigned`);
    return {
      handleId: a.handleId,
      attrs: a.attrs,
      block: found.value.cidr,
      sequenceNumber: a.sequenceNumber,
    };
  } catch (e) {
    throw asIpamError(e, `reading the assignment of ${ip}`);
  }
}

export async function findBlockOf(
  ctx: ClientContext,
  addr: IPAddress,
): Promise<Versioned<AllocationBlock> | undefined> {
  const pool = poolForIp(usablePools((await ctx.ds.list('IPPool')).items), addr);
  if (pool) return ctx.store.getBlock(formatCidr(enclosingCidr(addr, pool.blockSize)));
  return (await ctx.store.listBlocks(addr.family)).items.find((b) => cidrContains(b.value.cidr, addr));
}
