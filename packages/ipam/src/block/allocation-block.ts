/**
 * Pure operations on one allocation block. Every function takes a block and returns a new one; the
 * input is never changed, so a caller that loses a compare-and-swap can simply re-read and redo.
 *
 * Semantics follow upstream `ipam_block.go`:
 * - ordinal i is address network + i; `allocations[i]` points into `attributes` or is null;
 * - `unallocated` is the free list in hand-out order: a new block is 0..n-1, a released ordinal goes
 *   to the end (so a just-freed address is the last to be reused);
 * - assignment pops from the front of `unallocated`, skipping reserved addresses but keeping them in
 *   place;
 * - allocations with the same handle and attributes share one attribute entry; an entry no
 *   allocation refers to any more is removed and the indexes above it shift down;
 * - each allocation records the block's sequence number at the time it was made.
 */

import { type Cidr, cidrSize, formatCidr, formatIP } from '@calico-ts/api/net';
import { IpamError } from '../errors.js';
import { cidrContainsIp, type IPAddress, parseStrictCidr } from './ip-math.js';
import type { ReservedAddresses } from './reservations.js';
import type { AllocationAttribute, AllocationBlock } from './types.js';

/** Upstream's handle for addresses Windows reserves in each block; such allocations do not make a block "in use". */
export const WINDOWS_RESERVED_HANDLE = 'windows-reserved-ipam-handle';

/** Largest block this code will build an allocation array for (a /16 of v4, a /112 of v6). */
export const MAX_BLOCK_ADDRESSES = 65_536;

export function affinityForHost(host: string): string {
  return `host:${host}`;
}

/** The host of a `host:<node>` affinity, or undefined for null / other affinity types. */
export function hostOfAffinity(affinity: string | null | undefined): string | undefined {
  return affinity?.startsWith('host:') ? affinity.slice('host:'.length) : undefined;
}

/** Upstream strips anything after a carriage return in a handle (a legacy migration wrote such handles). */
export function sanitizeHandle(handleId: string): string {
  const cr = handleId.indexOf('\r');
  return cr < 0 ? handleId : handleId.slice(0, cr);
}

export function blockCidrOf(block: AllocationBlock): Cidr {
  const c = parseStrictCidr(block.cidr);
  if (!c) throw new IpamError('invalid', `block has an invalid cidr "${block.cidr}"`);
  return c;
}

export function numAddresses(cidr: Cidr): number {
  const n = cidrSize(cidr);
  if (n > BigInt(MAX_BLOCK_ADDRESSES)) {
    throw new IpamError('invalid', `block ${formatCidr(cidr)} is too large (${n} addresses)`);
  }
  return Number(n);
}

export function ordinalToIp(cidr: Cidr, ordinal: number): IPAddress {
  return { family: cidr.family, value: cidr.network + BigInt(ordinal) };
}

/** The ordinal of `ip` in the block, or undefined when the address is outside it. */
export function ipToOrdinal(cidr: Cidr, ip: IPAddress): number | undefined {
  if (!cidrContainsIp(cidr, ip)) return undefined;
  return Number(ip.value - cidr.network);
}

export interface NewBlockOptions {
  affinity: string | null;
  /** Creation time in ns (upstream seeds the sequence number with it). */
  sequenceNumber: bigint;
  affinityClaimTime?: string;
}

export function newBlock(cidr: Cidr, opts: NewBlockOptions): AllocationBlock {
  const n = numAddresses(cidr);
  const block: AllocationBlock = {
    cidr: formatCidr(cidr),
    affinity: opts.affinity,
    allocations: Array<number | null>(n).fill(null),
    unallocated: Array.from({ length: n }, (_, i) => i),
    attributes: [],
    sequenceNumber: opts.sequenceNumber,
    sequenceNumberForAllocation: {},
    deleted: false,
  };
  if (opts.affinityClaimTime !== undefined) block.affinity_claim_time = opts.affinityClaimTime;
  return block;
}

/**
 * A copy to change, whose `sequenceNumberForAllocation` is never null. Its lists and maps are new;
 * the attribute entries are shared, since no operation here changes one in place (entries are
 * added, or dropped by `compactAttributes`).
 */
export function cloneBlock(
  b: AllocationBlock,
): AllocationBlock & { sequenceNumberForAllocation: Record<string, bigint> } {
  return {
    ...b,
    allocations: [...b.allocations],
    unallocated: [...b.unallocated],
    attributes: [...b.attributes],
    sequenceNumberForAllocation: { ...(b.sequenceNumberForAllocation ?? {}) },
  };
}

/** The block as it must be written: every write bumps the sequence number. */
export function bumpSequence(b: AllocationBlock): AllocationBlock {
  return { ...b, sequenceNumber: b.sequenceNumber + 1n };
}

function sameSecondary(a: Record<string, string> | null, b: Record<string, string> | null): boolean {
  const ak = a ? Object.keys(a) : [];
  const bk = b ? Object.keys(b) : [];
  if (ak.length !== bk.length) return false;
  return ak.every((k) => b?.[k] === a?.[k]);
}

/** Index of the attribute entry for this owner, appending one if none matches. Mutates `b` (a clone). */
function findOrAddAttribute(
  b: AllocationBlock,
  handleId: string | null,
  secondary: Record<string, string> | null,
): number {
  const idx = b.attributes.findIndex(
    (a) =>
      (a.handle_id ?? null) === handleId &&
      !a.alternateOwnerAttrs &&
      sameSecondary(a.secondary ?? null, secondary),
  );
  if (idx >= 0) return idx;
  b.attributes.push({ handle_id: handleId, secondary: secondary ? { ...secondary } : null });
  return b.attributes.length - 1;
}

export interface BlockAssignResult {
  block: AllocationBlock;
  /** Ordinals handed out, in order. */
  ordinals: number[];
}

/**
 * Take up to `num` free addresses from the front of `unallocated`, skipping reserved ones (which
 * keep their place). Returns fewer when the block runs out.
 */
export function autoAssignInBlock(
  block: AllocationBlock,
  num: number,
  handleId: string | null,
  secondary: Record<string, string> | null,
  reserved: ReservedAddresses,
): BlockAssignResult {
  const cidr = blockCidrOf(block);
  const b = cloneBlock(block);
  const ordinals: number[] = [];
  const kept: number[] = [];
  let attrIdx: number | undefined;
  for (let i = 0; i < b.unallocated.length; i++) {
    const ord = b.unallocated[i] as number;
    if (ordinals.length >= num) {
      kept.push(...b.unallocated.slice(i));
      break;
    }
    if (!reserved.isEmpty && reserved.matchesIp(ordinalToIp(cidr, ord))) {
      kept.push(ord);
      continue;
    }
    attrIdx ??= findOrAddAttribute(b, handleId, secondary);
    b.allocations[ord] = attrIdx;
    b.sequenceNumberForAllocation[String(ord)] = b.sequenceNumber;
    ordinals.push(ord);
  }
  if (ordinals.length === 0) return { block, ordinals };
  b.unallocated = kept;
  return { block: b, ordinals };
}

/** Assign one specific ordinal. Throws `already-assigned` if it is in use. */
export function assignOrdinalInBlock(
  block: AllocationBlock,
  ordinal: number,
  handleId: string | null,
  secondary: Record<string, string> | null,
): AllocationBlock {
  if (ordinal < 0 || ordinal >= block.allocations.length) {
    throw new IpamError('invalid', `ordinal ${ordinal} is outside block ${block.cidr}`);
  }
  if (block.allocations[ordinal] !== null && block.allocations[ordinal] !== undefined) {
    const ip = ordinalToIp(blockCidrOf(block), ordinal);
    throw new IpamError(
      'already-assigned',
      `address ${formatIP(ip)} in block ${block.cidr} is already assigned`,
    );
  }
  const b = cloneBlock(block);
  b.allocations[ordinal] = findOrAddAttribute(b, handleId, secondary);
  b.sequenceNumberForAllocation[String(ordinal)] = b.sequenceNumber;
  b.unallocated = b.unallocated.filter((o) => o !== ordinal);
  return b;
}

/** Remove attribute entries that no allocation refers to, renumbering the allocations. */
function compactAttributes(b: AllocationBlock): void {
  const used = new Set<number>();
  for (const a of b.allocations) if (a !== null && a !== undefined) used.add(a);
  if (used.size === b.attributes.length) return;
  const remap = new Map<number, number>();
  const attrs: AllocationAttribute[] = [];
  b.attributes.forEach((attr, i) => {
    if (used.has(i)) {
      remap.set(i, attrs.length);
      attrs.push(attr);
    }
  });
  b.attributes = attrs;
  b.allocations = b.allocations.map((a) => (a === null || a === undefined ? null : (remap.get(a) ?? null)));
}

export interface ReleaseRequest {
  ordinal: number;
  /** Release only if the allocation still belongs to this handle. */
  handleId?: string;
  /** Release only if the allocation still has this sequence number (it was not freed and re-assigned since). */
  sequenceNumber?: bigint;
}

export interface ReleaseResult {
  block: AllocationBlock;
  /** Ordinals actually released. */
  released: number[];
  /** Ordinals that were already free. */
  notAllocated: number[];
  /** Ordinals left alone because a handle or sequence-number precondition did not hold. */
  mismatched: number[];
  /** Handle → number of its addresses released (for the handle records). */
  countByHandle: Map<string, number>;
}

/**
 * Release ordinals: each goes to the end of `unallocated` in request order, its sequence record is
 * dropped, and attribute entries no longer referenced are removed.
 */
export function releaseInBlock(block: AllocationBlock, requests: readonly ReleaseRequest[]): ReleaseResult {
  const b = cloneBlock(block);
  const released: number[] = [];
  const notAllocated: number[] = [];
  const mismatched: number[] = [];
  const countByHandle = new Map<string, number>();
  const seen = new Set<number>();
  for (const r of requests) {
    if (seen.has(r.ordinal)) continue;
    seen.add(r.ordinal);
    if (r.ordinal < 0 || r.ordinal >= b.allocations.length) {
      throw new IpamError('invalid', `ordinal ${r.ordinal} is outside block ${b.cidr}`);
    }
    const attrIdx = b.allocations[r.ordinal];
    if (attrIdx === null || attrIdx === undefined) {
      notAllocated.push(r.ordinal);
      continue;
    }
    const rawHandle = b.attributes[attrIdx]?.handle_id ?? null;
    const handle = rawHandle === null ? null : sanitizeHandle(rawHandle);
    if (r.handleId !== undefined && r.handleId !== handle) {
      mismatched.push(r.ordinal);
      continue;
    }
    if (
      r.sequenceNumber !== undefined &&
      r.sequenceNumber !== (b.sequenceNumberForAllocation[String(r.ordinal)] ?? 0n)
    ) {
      mismatched.push(r.ordinal);
      continue;
    }
    released.push(r.ordinal);
    if (handle !== null) countByHandle.set(handle, (countByHandle.get(handle) ?? 0) + 1);
  }
  if (released.length === 0) return { block, released, notAllocated, mismatched, countByHandle };
  for (const o of released) {
    b.allocations[o] = null;
    b.unallocated.push(o);
    delete b.sequenceNumberForAllocation[String(o)];
  }
  compactAttributes(b);
  return { block: b, released, notAllocated, mismatched, countByHandle };
}

/** Ordinals held by `handleId` (after sanitizing the stored handles), ascending. */
export function ordinalsForHandle(block: AllocationBlock, handleId: string): number[] {
  const attrIdx = new Set<number>();
  block.attributes.forEach((a, i) => {
    if (a.handle_id !== null && sanitizeHandle(a.handle_id) === handleId) attrIdx.add(i);
  });
  const out: number[] = [];
  block.allocations.forEach((a, o) => {
    if (a !== null && a !== undefined && attrIdx.has(a)) out.push(o);
  });
  return out;
}

/** Release every address of a handle in this block (ascending ordinal order). */
export function releaseHandleInBlock(block: AllocationBlock, handleId: string): ReleaseResult {
  return releaseInBlock(
    block,
    ordinalsForHandle(block, handleId).map((ordinal) => ({ ordinal })),
  );
}

/** Free addresses that may be handed out (reserved ones do not count). */
export function countFree(block: AllocationBlock, reserved: ReservedAddresses): number {
  if (reserved.isEmpty) return block.unallocated.length;
  const cidr = blockCidrOf(block);
  if (reserved.matchesWholeCidr(cidr)) return 0;
  if (!reserved.matchesSome(cidr)) return block.unallocated.length;
  return block.unallocated.filter((o) => !reserved.matchesIp(ordinalToIp(cidr, o))).length;
}

/** No address is in use, apart from upstream's Windows reservations. */
export function isBlockEmpty(block: AllocationBlock): boolean {
  return block.allocations.every((a) => {
    if (a === null || a === undefined) return true;
    const h = block.attributes[a]?.handle_id;
    return h !== null && h !== undefined && h.toLowerCase() === WINDOWS_RESERVED_HANDLE;
  });
}

export interface Allocation {
  ordinal: number;
  ip: IPAddress;
  handleId: string | null;
  attrs: Record<string, string>;
  sequenceNumber: bigint;
}

/** The allocation at `ordinal`, or undefined when it is free. */
export function allocationAt(block: AllocationBlock, cidr: Cidr, ordinal: number): Allocation | undefined {
  const a = block.allocations[ordinal];
  if (a === null || a === undefined) return undefined;
  const attr = block.attributes[a];
  return {
    ordinal,
    ip: ordinalToIp(cidr, ordinal),
    handleId: attr?.handle_id == null ? null : sanitizeHandle(attr.handle_id),
    attrs: { ...(attr?.secondary ?? {}) },
    sequenceNumber: block.sequenceNumberForAllocation?.[String(ordinal)] ?? 0n,
  };
}

/** Every allocation in ordinal order. */
export function allocationsOf(block: AllocationBlock): Allocation[] {
  const cidr = blockCidrOf(block);
  const out: Allocation[] = [];
  for (let o = 0; o < block.allocations.length; o++) {
    const a = allocationAt(block, cidr, o);
    if (a) out.push(a);
  }
  return out;
}

/** Turn caller attributes into upstream's `secondary` map (unset keys left out). */
export function toSecondary(attrs: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) out[k] = v;
  return out;
}
