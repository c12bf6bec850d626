import { type KVStore, type KVWrite, MemoryKVStore } from '@calico-ts/datastore';
import { describe, expect, it } from 'vitest';
import { type IpamFixture, ipamFixture } from '../testing-internal/ipam-fixture.js';
import { backoffMs, withRetries } from './retry.js';
import type { AutoAssignRequest } from './types.js';

const T0 = new Date('2026-01-02T03:04:05.678Z');
const BLOCK_A = '/calico/ipam/v2/assignment/ipv4/block/198.19.0.0-26';

const req = (handleId: string, hostname = 'node-1'): AutoAssignRequest => ({
  num4: 1,
  num6: 0,
  handleId,
  hostname,
  attrs: { node: hostname, namespace: 'default', pod: handleId },
});

/** Set while the rival writes: its calls are not the request's. */
const rivalAt = { work: false };

/** The KVStore calls on `kv` from now on, in order, with the key of each single-key call. */
function recordCalls(kv: KVStore): string[] {
  const calls: string[] = [];
  for (const m of ['get', 'list', 'create', 'update', 'delete', 'readAll', 'writeAll'] as const) {
    const orig = (kv[m] as (...a: unknown[]) => Promise<unknown>).bind(kv);
    (kv as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
      if (!rivalAt.work) calls.push(typeof a[0] === 'string' ? `${m} ${a[0]}` : m);
      return orig(...a);
    };
  }
  return calls;
}

/**
 * `kv`, where the next transaction that writes block A first lets another writer take an address
 * of A: that transaction then loses its compare-and-swap, as it would to a racing process.
 */
function loseNextRaceFor(kv: MemoryKVStore, rival: () => Promise<unknown>): { armed: boolean } {
  const state = { armed: true };
  const writeAll = kv.writeAll.bind(kv);
  kv.writeAll = async (writes: readonly KVWrite[]) => {
    if (state.armed && writes.some((w) => w.key === BLOCK_A)) {
      state.armed = false;
      rivalAt.work = true;
      try {
        await rival();
      } finally {
        rivalAt.work = false;
      }
    }
    return writeAll(writes);
  };
  return state;
}

async function hostWithTwoBlocks(): Promise<IpamFixture> {
  const f = ipamFixture(new MemoryKVStore(), 'memory', { now: () => T0 });
  await f.node('node-1');
  await f.pool('pool1', { cidr: '198.19.0.0/24', blockSize: 26 });
  // Two blocks of node-1, both with room: 198.19.0.0/26 (A, first) and 198.19.0.64/26 (B).
  await f.client.claimAffinity('node-1', '198.19.0.0/25');
  return f;
}

describe('contention', () => {
  it('a request that loses the race for a block goes to another block of its host with room', async () => {
    const f = await hostWithTwoBlocks();
    const rival = f.newClient();
    loseNextRaceFor(f.kv as MemoryKVStore, () => rival.autoAssign(req('k8s-pod-network.rival')));
    const calls = recordCalls(f.kv);
    const got = await f.client.autoAssign(req('k8s-pod-network.mine'));
    // The rival took A's first address; this request lost A and took B's first, without
    // reading A again.
    expect(got.ipv4.map((a) => a.address)).toEqual(['198.19.0.64']);
    expect(calls.filter((c) => c === `get ${BLOCK_A}`)).toEqual([]);
    const a = await f.store.getBlock('198.19.0.0/26');
    expect(a!.value.attributes.map((x) => x.handle_id)).toEqual(['k8s-pod-network.rival']);
  });

  it('with no other block to go to, it reads the block again and takes the next address', async () => {
    const f = ipamFixture(new MemoryKVStore(), 'memory', { now: () => T0 });
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26', blockSize: 26 });
    await f.client.autoAssign(req('k8s-pod-network.first'));
    const rival = f.newClient();
    loseNextRaceFor(f.kv as MemoryKVStore, () => rival.autoAssign(req('k8s-pod-network.rival')));
    const calls = recordCalls(f.kv);
    const got = await f.client.autoAssign(req('k8s-pod-network.mine'));
    expect(got.ipv4.map((a) => a.address)).toEqual(['198.19.0.2']);
    // Lost (its handle taken back with it), the block read again, written: the handle, still
    // known to be new, is not read.
    expect(calls.filter((c) => c !== 'readAll')).toEqual(['writeAll', `get ${BLOCK_A}`, 'writeAll']);
    expect((await f.store.getHandle('k8s-pod-network.mine'))?.value.block).toEqual({ '198.19.0.0/26': 1 });
  });

  it('concurrent requests through one client take turns on the block: no compare-and-swap is lost', async () => {
    const f = ipamFixture(new MemoryKVStore(), 'memory', { now: () => T0 });
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26', blockSize: 26 });
    await f.client.mirrorHost('node-1');
    await f.client.autoAssign(req('k8s-pod-network.w'));
    const calls = recordCalls(f.kv);
    const got = await Promise.all(
      Array.from({ length: 8 }, (_, i) => f.client.autoAssign(req(`k8s-pod-network.c${i}`))),
    );
    const addresses = got.map((r) => r.ipv4[0]!.address);
    expect(new Set(addresses).size).toBe(8);
    expect(calls).toEqual(Array(8).fill('writeAll'));
    f.client.close();
  });
});

describe('retry backoff', () => {
  it('pauses before every retry, up to twice as long each time, capped, never before the first try', async () => {
    expect([1, 2, 3, 4, 8, 9, 30].map((n) => backoffMs(n, () => 0.999999))).toEqual(
      [2, 4, 8, 16, 128, 128, 128].map((c) => expect.closeTo(c, 3)),
    );
    expect(backoffMs(5, () => 0)).toBe(0);
    const pauses: number[] = [];
    let tries = 0;
    const result = await withRetries(
      'something',
      { maxRetries: 5, random: () => 0.5, sleep: async (ms) => void pauses.push(ms) },
      async () => {
        if (++tries < 4) throw Object.assign(new Error('lost'), { name: 'DatastoreError' });
        return 'done';
      },
      () => true,
    );
    expect(result).toBe('done');
    expect(pauses).toEqual([1, 2, 4]);
  });
});
