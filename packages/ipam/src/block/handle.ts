/**
 * Handle bookkeeping, pure. A handle (`/calico/ipam/v2/handle/<id>`) counts, per block CIDR, how many
 * addresses its owner holds there; release-by-handle walks these blocks. An empty handle is deleted.
 */
import type { IpamHandle } from './types.js';

export function emptyHandle(): IpamHandle {
  return { block: {}, deleted: false };
}

/** Add `n` addresses in `blockCidr` to the handle (creating the record when `handle` is undefined). */
export function incrementHandle(handle: IpamHandle | undefined, blockCidr: string, n: number): IpamHandle {
  const h = handle ?? emptyHandle();
  return { ...h, block: { ...h.block, [blockCidr]: (h.block[blockCidr] ?? 0) + n } };
}

export interface DecrementResult {
  /** The handle to write, or null when it is now empty and must be deleted. */
  handle: IpamHandle | null;
  /**
   * Set when the handle did not hold `n` addresses in the block (it then keeps none there). Upstream
   * treats this as an error it only logs; the records disagreed before this release.
   */
  shortfall?: { had: number; wanted: number };
}

/** Remove `n` addresses in `blockCidr` from the handle. */
export function decrementHandle(handle: IpamHandle, blockCidr: string, n: number): DecrementResult {
  const had = handle.block[blockCidr] ?? 0;
  const left = had - n;
  const block = { ...handle.block };
  if (left > 0) block[blockCidr] = left;
  else delete block[blockCidr];
  const next: IpamHandle | null = Object.keys(block).length === 0 ? null : { ...handle, block };
  return left < 0 ? { handle: next, shortfall: { had, wanted: n } } : { handle: next };
}

export function handleTotal(handle: IpamHandle): number {
  return Object.values(handle.block).reduce((a, b) => a + b, 0);
}
