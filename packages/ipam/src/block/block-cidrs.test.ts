import { cidrContains, formatCidr } from '@calico-ts/api/net';
import { describe, expect, it } from 'vitest';
import {
  blockCount,
  blockSearchSeed,
  blocksFromSeed,
  blocksWithin,
  fnv32,
  randomBelow,
  seededRandom32,
} from './block-cidrs.js';
import { parseNetwork } from './ip-math.js';

const c = (t: string) => parseNetwork(t)!;

describe('fnv32', () => {
  it('is FNV-1 32-bit (Go hash/fnv New32), not FNV-1a', () => {
    expect(fnv32('')).toBe(0x811c9dc5);
    expect(fnv32('a')).toBe(0x050c5d7e);
    expect(fnv32('foobar')).toBe(0x31f0b262);
  });
});

describe('randomBelow', () => {
  it('stays in range, for small and 64-bit-plus bounds', () => {
    const r = seededRandom32(42);
    for (let i = 0; i < 500; i++) {
      const v = randomBelow(r, 5n);
      expect(v >= 0n && v < 5n).toBe(true);
    }
    const big = 1n << 70n;
    for (let i = 0; i < 50; i++) {
      const v = randomBelow(r, big + 3n);
      expect(v >= 0n && v < big + 3n).toBe(true);
    }
    expect(randomBelow(r, 1n)).toBe(0n);
  });

  it('reaches every value of a small range', () => {
    const r = seededRandom32(7);
    const seen = new Set<bigint>();
    for (let i = 0; i < 200; i++) seen.add(randomBelow(r, 6n));
    expect(seen.size).toBe(6);
  });
});

describe('block enumeration', () => {
  it('counts blocks of a pool', () => {
    expect(blockCount(c('198.19.0.0/16'), 26)).toBe(1024n);
    expect(blockCount(c('fd00::/64'), 122)).toBe(1n << 58n);
    expect(blockCount(c('198.19.0.0/26'), 24)).toBe(0n);
  });

  it('walks every block of a pool exactly once from a seeded start, wrapping round', () => {
    const pool = c('198.19.0.0/22');
    const seed = fnv32('node-1');
    const walk = [...blocksFromSeed(pool, 26, seed)].map(formatCidr);
    expect(walk).toHaveLength(16);
    expect(new Set(walk).size).toBe(16);
    const i = walk.indexOf('198.19.0.0/26');
    // After the last block comes the first one.
    if (i > 0) expect(walk[i - 1]).toBe('198.19.3.192/26');
    // Same host, same order.
    expect([...blocksFromSeed(pool, 26, seed)].map(formatCidr)).toEqual(walk);
  });

  it('spreads different hosts over different starting blocks', () => {
    const pool = c('198.19.0.0/16');
    const starts = new Set<string>();
    for (let n = 0; n < 20; n++) {
      const first = blocksFromSeed(pool, 26, fnv32(`node-${n}`)).next().value!;
      starts.add(formatCidr(first));
    }
    expect(starts.size).toBeGreaterThan(15);
  });

  it('yields aligned blocks inside a huge v6 pool without enumerating it', () => {
    const pool = c('fd00:1::/64');
    const gen = blocksFromSeed(pool, 122, fnv32('node-v6'));
    for (let i = 0; i < 5; i++) {
      const b = gen.next().value!;
      expect(b.prefix).toBe(122);
      expect(b.network % 64n).toBe(0n);
      expect(cidrContains(pool, b)).toBe(true);
    }
  });

  it('seeds single-address blocks from the caller instead of the hostname', () => {
    expect(blockSearchSeed('node-1', c('198.19.0.0/24'), 26, 99)).toBe(fnv32('node-1'));
    expect(blockSearchSeed('node-1', c('198.19.0.0/24'), 32, 99)).toBe(99);
  });

  it('lists the blocks inside a CIDR in address order', () => {
    expect([...blocksWithin(c('198.19.0.0/25'), 26)].map(formatCidr)).toEqual([
      '198.19.0.0/26',
      '198.19.0.64/26',
    ]);
    expect([...blocksWithin(c('198.19.0.0/27'), 26)]).toEqual([]);
  });
});
