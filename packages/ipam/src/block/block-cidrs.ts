/**
 * Which blocks a pool is made of, and in which order a host looks at them.
 *
 * A host walks its pool's blocks from a start index chosen by a random generator seeded with the
 * 32-bit FNV-1 hash of its hostname (as upstream's `randomBlockGenerator`), wrapping round once, so
 * one host tends to come back to the same region of the pool while different hosts spread out. The
 * generator itself is a small deterministic one of our own (a host's start index therefore differs
 * from upstream's; nothing depends on the two agreeing). For single-address blocks upstream seeds
 * from the clock instead; callers pass such a seed in.
 */
import { type Cidr, familyBits, makeCidr } from './ip-math.js';

/** 32-bit FNV-1 (multiply, then xor), as Go's `hash/fnv.New32`. */
export function fnv32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h = Math.imul(h, 0x01000193) >>> 0;
    h = (h ^ byte) >>> 0;
  }
  return h >>> 0;
}

/** mulberry32: a small, fast, deterministic 32-bit generator. */
export function seededRandom32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** Uniform bigint in [0, n), by rejection sampling over 32-bit draws. */
export function randomBelow(next32: () => number, n: bigint): bigint {
  if (n <= 1n) return 0n;
  const bits = (n - 1n).toString(2).length;
  const words = Math.ceil(bits / 32);
  const mask = (1n << BigInt(bits)) - 1n;
  for (;;) {
    let v = 0n;
    for (let i = 0; i < words; i++) v = (v << 32n) | BigInt(next32());
    v &= mask;
    if (v < n) return v;
  }
}

export function blockCount(pool: Cidr, blockSize: number): bigint {
  if (blockSize < pool.prefix) return 0n;
  return 1n << BigInt(blockSize - pool.prefix);
}

/** The i-th block of the pool. */
export function nthBlock(pool: Cidr, blockSize: number, i: bigint): Cidr {
  const size = 1n << BigInt(familyBits(pool.family) - blockSize);
  return makeCidr(pool.family, pool.network + i * size, blockSize);
}

/** The seed a host walks a pool with: FNV-32 of its name, or `fallback` for single-address blocks. */
export function blockSearchSeed(hostname: string, pool: Cidr, blockSize: number, fallback: number): number {
  return blockSize === familyBits(pool.family) ? fallback >>> 0 : fnv32(hostname);
}

/** Every block of the pool once, from a start index drawn with `seed`, wrapping round. */
export function* blocksFromSeed(pool: Cidr, blockSize: number, seed: number): Generator<Cidr> {
  const n = blockCount(pool, blockSize);
  if (n === 0n) return;
  const start = randomBelow(seededRandom32(seed), n);
  for (let k = 0n; k < n; k++) yield nthBlock(pool, blockSize, (start + k) % n);
}

/** Blocks of `blockSize` inside `cidr` in address order (`cidr` at least as large as a block). */
export function* blocksWithin(cidr: Cidr, blockSize: number): Generator<Cidr> {
  const n = blockCount(cidr, blockSize);
  for (let i = 0n; i < n; i++) yield nthBlock(cidr, blockSize, i);
}
