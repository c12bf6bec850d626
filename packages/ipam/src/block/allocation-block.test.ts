import { formatIP, parseIP } from '@calico-ts/api/net';
import { describe, expect, it } from 'vitest';
import {
  affinityForHost,
  allocationsOf,
  assignOrdinalInBlock,
  autoAssignInBlock,
  bumpSequence,
  countFree,
  hostOfAffinity,
  ipToOrdinal,
  isBlockEmpty,
  newBlock,
  ordinalsForHandle,
  ordinalToIp,
  releaseHandleInBlock,
  releaseInBlock,
  sanitizeHandle,
  toSecondary,
  WINDOWS_RESERVED_HANDLE,
} from './allocation-block.js';
import { parseNetwork } from './ip-math.js';
import { ReservedAddresses } from './reservations.js';
import type { AllocationBlock } from './types.js';

const SEQ = 1_763_884_800_123_456_789n;
const v4 = parseNetwork('198.19.0.0/26')!;
const v6 = parseNetwork('fd00:1::/122')!;
const fresh = (cidr = v4) => newBlock(cidr, { affinity: affinityForHost('node-1'), sequenceNumber: SEQ });
const none = ReservedAddresses.none;
const snapshot = (b: AllocationBlock) => JSON.stringify(b, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));

describe('newBlock', () => {
  it('has every ordinal free, in order, and no attributes', () => {
    const b = fresh();
    expect(b.cidr).toBe('198.19.0.0/26');
    expect(b.affinity).toBe('host:node-1');
    expect(b.allocations).toHaveLength(64);
    expect(b.allocations.every((a) => a === null)).toBe(true);
    expect(b.unallocated).toEqual(Array.from({ length: 64 }, (_, i) => i));
    expect(b.attributes).toEqual([]);
    expect(b.sequenceNumber).toBe(SEQ);
    expect(b.sequenceNumberForAllocation).toEqual({});
    expect(b.deleted).toBe(false);
  });

  it('works for a v6 /122 (64 addresses) with canonical cidr text', () => {
    const b = newBlock(parseNetwork('fd00:1:0:0::/122')!, { affinity: null, sequenceNumber: 1n });
    expect(b.cidr).toBe('fd00:1::/122');
    expect(b.unallocated).toHaveLength(64);
  });
});

describe('ordinal ↔ address', () => {
  it('maps both ways for v4 and v6, and rejects addresses outside the block', () => {
    expect(formatIP(ordinalToIp(v4, 5))).toBe('198.19.0.5');
    expect(formatIP(ordinalToIp(v6, 63))).toBe('fd00:1::3f');
    expect(ipToOrdinal(v4, parseIP('198.19.0.63')!)).toBe(63);
    expect(ipToOrdinal(v4, parseIP('198.19.0.64')!)).toBeUndefined();
    expect(ipToOrdinal(v6, parseIP('fd00:1::3f')!)).toBe(63);
    expect(ipToOrdinal(v6, parseIP('198.19.0.1')!)).toBeUndefined();
  });
});

describe('autoAssignInBlock', () => {
  it('hands out the front of the free list in order and records owner and sequence number', () => {
    const b0 = fresh();
    const before = snapshot(b0);
    const { block, ordinals } = autoAssignInBlock(b0, 3, 'h1', { node: 'node-1' }, none);
    expect(ordinals).toEqual([0, 1, 2]);
    expect(block.allocations.slice(0, 4)).toEqual([0, 0, 0, null]);
    expect(block.attributes).toEqual([{ handle_id: 'h1', secondary: { node: 'node-1' } }]);
    expect(block.unallocated[0]).toBe(3);
    expect(block.unallocated).toHaveLength(61);
    expect(block.sequenceNumberForAllocation).toEqual({ '0': SEQ, '1': SEQ, '2': SEQ });
    expect(snapshot(b0)).toBe(before);
  });

  it('shares an attribute entry between equal owners and adds one for a new owner', () => {
    let b = autoAssignInBlock(fresh(), 1, 'h1', { node: 'n' }, none).block;
    b = autoAssignInBlock(b, 1, 'h2', { node: 'n', pod: 'p' }, none).block;
    b = autoAssignInBlock(b, 1, 'h1', { node: 'n' }, none).block;
    expect(b.allocations.slice(0, 3)).toEqual([0, 1, 0]);
    expect(b.attributes).toHaveLength(2);
  });

  it('skips reserved addresses but keeps them at the front of the free list', () => {
    const { reserved } = ReservedAddresses.fromText(['198.19.0.0/30']);
    const { block, ordinals } = autoAssignInBlock(fresh(), 2, 'h', { node: 'n' }, reserved);
    expect(ordinals).toEqual([4, 5]);
    expect(block.unallocated.slice(0, 5)).toEqual([0, 1, 2, 3, 6]);
  });

  it('returns what is left when asked for more than the block has, and nothing from a full block', () => {
    const small = newBlock(parseNetwork('198.19.0.0/30')!, { affinity: null, sequenceNumber: 1n });
    const r = autoAssignInBlock(small, 10, 'h', null, none);
    expect(r.ordinals).toEqual([0, 1, 2, 3]);
    expect(r.block.unallocated).toEqual([]);
    const again = autoAssignInBlock(r.block, 1, 'h', null, none);
    expect(again.ordinals).toEqual([]);
    expect(again.block).toBe(r.block);
  });
});

describe('releaseInBlock', () => {
  it('appends released ordinals to the end of the free list, in request order', () => {
    const a = autoAssignInBlock(fresh(), 3, 'h1', { node: 'n' }, none).block;
    const r = releaseInBlock(a, [{ ordinal: 2 }, { ordinal: 0 }]);
    expect(r.released).toEqual([2, 0]);
    expect(r.block.unallocated.slice(-2)).toEqual([2, 0]);
    expect(r.block.unallocated[0]).toBe(3);
    expect(r.block.allocations.slice(0, 3)).toEqual([null, 0, null]);
    expect(r.block.sequenceNumberForAllocation).toEqual({ '1': SEQ });
    expect(r.countByHandle).toEqual(new Map([['h1', 2]]));
    // The next assignment takes from the front, not the just-freed addresses.
    expect(autoAssignInBlock(r.block, 1, 'h3', null, none).ordinals).toEqual([3]);
  });

  it('drops attribute entries no longer referenced and renumbers the allocations', () => {
    let b = autoAssignInBlock(fresh(), 2, 'h1', { node: 'n' }, none).block;
    b = autoAssignInBlock(b, 1, 'h2', { node: 'n' }, none).block;
    b = autoAssignInBlock(b, 1, 'h3', { node: 'n' }, none).block;
    expect(b.allocations.slice(0, 4)).toEqual([0, 0, 1, 2]);
    const r = releaseInBlock(b, [{ ordinal: 0 }, { ordinal: 1 }]);
    expect(r.block.attributes.map((a) => a.handle_id)).toEqual(['h2', 'h3']);
    expect(r.block.allocations.slice(0, 4)).toEqual([null, null, 0, 1]);
  });

  it('keeps an attribute entry that is still referenced', () => {
    const b = autoAssignInBlock(fresh(), 2, 'h1', { node: 'n' }, none).block;
    const r = releaseInBlock(b, [{ ordinal: 0 }]);
    expect(r.block.attributes).toHaveLength(1);
    expect(r.block.allocations.slice(0, 2)).toEqual([null, 0]);
  });

  it('reports already-free ordinals and ignores duplicates', () => {
    const b = autoAssignInBlock(fresh(), 1, 'h1', null, none).block;
    const r = releaseInBlock(b, [{ ordinal: 0 }, { ordinal: 0 }, { ordinal: 5 }]);
    expect(r.released).toEqual([0]);
    expect(r.notAllocated).toEqual([5]);
    const twice = releaseInBlock(r.block, [{ ordinal: 0 }]);
    expect(twice.released).toEqual([]);
    expect(twice.notAllocated).toEqual([0]);
    expect(twice.block).toBe(r.block);
  });

  it('leaves an allocation alone when the handle or sequence number precondition fails', () => {
    const b = autoAssignInBlock(fresh(), 2, 'h1', null, none).block;
    const r = releaseInBlock(b, [
      { ordinal: 0, handleId: 'other' },
      { ordinal: 1, sequenceNumber: SEQ + 1n },
    ]);
    expect(r.mismatched).toEqual([0, 1]);
    expect(r.block).toBe(b);
    const ok = releaseInBlock(b, [{ ordinal: 1, handleId: 'h1', sequenceNumber: SEQ }]);
    expect(ok.released).toEqual([1]);
  });

  it('releases everything of one handle', () => {
    let b = autoAssignInBlock(fresh(), 2, 'h1', { node: 'n' }, none).block;
    b = autoAssignInBlock(b, 1, 'h2', { node: 'n' }, none).block;
    b = assignOrdinalInBlock(b, 10, 'h1', { node: 'n', pod: 'x' });
    expect(ordinalsForHandle(b, 'h1')).toEqual([0, 1, 10]);
    const r = releaseHandleInBlock(b, 'h1');
    expect(r.released).toEqual([0, 1, 10]);
    expect(r.countByHandle).toEqual(new Map([['h1', 3]]));
    expect(r.block.attributes.map((a) => a.handle_id)).toEqual(['h2']);
    expect(releaseHandleInBlock(r.block, 'h1').released).toEqual([]);
  });

  it('matches stored handles after stripping a carriage-return suffix', () => {
    const b = autoAssignInBlock(fresh(), 1, 'h1\r\nnoise', null, none).block;
    expect(sanitizeHandle('h1\r\nnoise')).toBe('h1');
    expect(releaseHandleInBlock(b, 'h1').released).toEqual([0]);
  });
});

describe('assignOrdinalInBlock', () => {
  it('takes one ordinal out of the free list wherever it is', () => {
    const b = assignOrdinalInBlock(fresh(), 7, 'h', { node: 'n' });
    expect(b.allocations[7]).toBe(0);
    expect(b.unallocated).not.toContain(7);
    expect(b.unallocated).toHaveLength(63);
    expect(b.sequenceNumberForAllocation).toEqual({ '7': SEQ });
  });

  it('refuses an address in use', () => {
    const b = assignOrdinalInBlock(fresh(), 7, 'h', null);
    expect(() => assignOrdinalInBlock(b, 7, 'h2', null)).toThrow(
      expect.objectContaining({ code: 'already-assigned', message: expect.stringContaining('198.19.0.7') }),
    );
    expect(() => assignOrdinalInBlock(b, 64, 'h2', null)).toThrow(
      expect.objectContaining({ code: 'invalid' }),
    );
  });
});

describe('counting and emptiness', () => {
  it('counts free addresses net of reservations', () => {
    const b = autoAssignInBlock(fresh(), 4, 'h', null, none).block;
    expect(countFree(b, none)).toBe(60);
    expect(countFree(b, ReservedAddresses.fromText(['198.19.0.0/29']).reserved)).toBe(56);
    expect(countFree(b, ReservedAddresses.fromText(['198.19.0.0/24']).reserved)).toBe(0);
    expect(countFree(b, ReservedAddresses.fromText(['198.19.9.0/24']).reserved)).toBe(60);
  });

  it('treats a block holding only Windows reservations as empty', () => {
    expect(isBlockEmpty(fresh())).toBe(true);
    const win = autoAssignInBlock(fresh(), 3, WINDOWS_RESERVED_HANDLE, null, none).block;
    expect(isBlockEmpty(win)).toBe(true);
    expect(isBlockEmpty(autoAssignInBlock(win, 1, 'pod', null, none).block)).toBe(false);
  });

  it('lists allocations with owner, address and sequence number', () => {
    const b = autoAssignInBlock(fresh(v6), 2, 'h', { node: 'n', pod: 'p' }, none).block;
    expect(allocationsOf(b).map((a) => [formatIP(a.ip), a.handleId, a.attrs, a.sequenceNumber])).toEqual([
      ['fd00:1::', 'h', { node: 'n', pod: 'p' }, SEQ],
      ['fd00:1::1', 'h', { node: 'n', pod: 'p' }, SEQ],
    ]);
  });

  it('bumps the sequence number by one per write', () => {
    expect(bumpSequence(fresh()).sequenceNumber).toBe(SEQ + 1n);
  });
});

describe('helpers', () => {
  it('reads a host affinity and builds secondary attributes', () => {
    expect(hostOfAffinity('host:node-1')).toBe('node-1');
    expect(hostOfAffinity('virtual:load-balancer')).toBeUndefined();
    expect(hostOfAffinity(null)).toBeUndefined();
    expect(toSecondary({ node: 'n', pod: undefined, namespace: 'ns' })).toEqual({
      node: 'n',
      namespace: 'ns',
    });
  });
});
