import { type KVStore, type KVWatchOptions, MemoryKVStore } from '@calico-ts/datastore';
import { describe, expect, it, vi } from 'vitest';
import { newGcState } from './check/gc-plan.js';
import type { AutoAssignRequest } from './client/types.js';
import { type IpamFixture, ipamFixture } from './testing-internal/ipam-fixture.js';

const T0 = new Date('2026-01-02T03:04:05.678Z');
const T0_NS = BigInt(T0.getTime()) * 1_000_000n;
const BLOCKS = '/calico/ipam/v2/assignment/';

function fixture(now: () => Date = () => T0): IpamFixture {
  return ipamFixture(new MemoryKVStore(), 'memory', { now });
}

const req = (
  handleId: string,
  hostname = 'node-1',
  over: Partial<AutoAssignRequest> = {},
): AutoAssignRequest => ({
  num4: 1,
  num6: 0,
  handleId,
  hostname,
  attrs: { node: hostname, namespace: 'default', pod: handleId },
  ...over,
});

const addrs = (xs: { address: string }[]) => xs.map((x) => x.address);

describe('autoAssign', () => {
  it('hands out a block from its first address, in order, and stores upstream-shaped records', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    const a = await f.client.autoAssign(req('k8s-pod-network.c1'));
    const b = await f.client.autoAssign(req('k8s-pod-network.c2'));
    expect(a).toEqual({
      ipv4: [
        { family: 4, address: '198.19.0.0', prefixLength: 26, cidr: '198.19.0.0/26', block: '198.19.0.0/26' },
      ],
      ipv6: [],
    });
    expect(addrs(b.ipv4)).toEqual(['198.19.0.1']);

    const block = await f.raw(`${BLOCKS}ipv4/block/198.19.0.0-26`);
    expect(Object.keys(block!)).toEqual([
      'cidr',
      'affinity',
      'affinity_claim_time',
      'allocations',
      'unallocated',
      'attributes',
      'sequenceNumber',
      'sequenceNumberForAllocation',
      'deleted',
    ]);
    expect(block).toEqual({
      cidr: '198.19.0.0/26',
      affinity: 'host:node-1',
      affinity_claim_time: '2026-01-02T03:04:05Z',
      allocations: [0, 1, ...Array(62).fill(null)],
      unallocated: Array.from({ length: 62 }, (_, i) => i + 2),
      attributes: [
        {
          handle_id: 'k8s-pod-network.c1',
          secondary: { namespace: 'default', node: 'node-1', pod: 'k8s-pod-network.c1' },
        },
        {
          handle_id: 'k8s-pod-network.c2',
          secondary: { namespace: 'default', node: 'node-1', pod: 'k8s-pod-network.c2' },
        },
      ],
      sequenceNumber: T0_NS + 2n,
      sequenceNumberForAllocation: { '0': T0_NS, '1': T0_NS + 1n },
      deleted: false,
    });
    expect(await f.raw('/calico/ipam/v2/host/node-1/ipv4/block/198.19.0.0-26')).toEqual({
      state: 'confirmed',
      deleted: false,
    });
    expect(await f.raw('/calico/ipam/v2/handle/k8s-pod-network.c1')).toEqual({
      block: { '198.19.0.0/26': 1 },
      deleted: false,
    });
  });

  it('claims another block when the host’s block is full', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('small', { cidr: '198.19.0.0/28', blockSize: 30 });
    const r = await f.client.autoAssign(req('h1', 'node-1', { num4: 5 }));
    expect(r.ipv4).toHaveLength(5);
    const blocks = [...new Set(r.ipv4.map((x) => x.block))];
    expect(blocks).toHaveLength(2);
    // The first block is used up in order before the second is touched.
    const first = r.ipv4.slice(0, 4).map((x) => Number(x.address.split('.')[3]) % 4);
    expect(first).toEqual([0, 1, 2, 3]);
    expect(r.ipv4.every((x) => x.prefixLength === 30)).toBe(true);
    expect(await f.keys('/calico/ipam/v2/host/node-1/')).toHaveLength(2);
    for (const cidr of blocks) {
      expect((await f.raw(`${BLOCKS}ipv4/block/${cidr.replace('/', '-')}`))?.affinity).toBe('host:node-1');
    }
    expect(await f.raw('/calico/ipam/v2/handle/h1')).toEqual({
      block: Object.fromEntries(blocks.map((b, i) => [b, i === 0 ? 4 : 1])),
      deleted: false,
    });
  });

  it('borrows from another host’s block when no block is left, unless strict affinity is on', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.node('node-2');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('a', 'node-1'));
    const borrowed = await f.client.autoAssign(req('b', 'node-2'));
    expect(addrs(borrowed.ipv4)).toEqual(['198.19.0.1']);
    const block = await f.raw(`${BLOCKS}ipv4/block/198.19.0.0-26`);
    expect(block?.affinity).toBe('host:node-1');
    expect(await f.keys('/calico/ipam/v2/host/node-2/')).toEqual([]);

    await f.ipamConfig({ strict_affinity: true, auto_allocate_blocks: true, maxBlocksPerHost: 0 });
    await expect(f.client.autoAssign(req('c', 'node-2'))).rejects.toMatchObject({
      code: 'pool-exhausted',
      message:
        'no free IPv4 address left in IP pool(s) pool1 (198.19.0.0/26) for host node-2: assigned 0 of 1; strict affinity is on, so blocks of other hosts are not used',
    });
    expect(await f.raw('/calico/ipam/v2/handle/c')).toBeUndefined();
    // node-1 still gets addresses from its own block.
    expect(addrs((await f.client.autoAssign(req('d', 'node-1'))).ipv4)).toEqual(['198.19.0.2']);
  });

  it('never hands out addresses of a disabled pool', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('a-off', { cidr: '198.19.0.0/24', disabled: true });
    await f.pool('b-on', { cidr: '198.19.1.0/24' });
    for (let i = 0; i < 5; i++) {
      const r = await f.client.autoAssign(req(`h${i}`));
      expect(r.ipv4[0]!.address.startsWith('198.19.1.')).toBe(true);
    }
    await expect(f.client.autoAssign(req('x', 'node-1', { ipv4Pools: ['a-off'] }))).rejects.toMatchObject({
      code: 'no-pools',
      message: expect.stringContaining('requested IP pool "a-off" is disabled'),
    });
  });

  it('skips reserved addresses and wholly reserved blocks', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.reservation('res', ['198.19.0.0/30', '198.19.0.5']);
    const r = await f.client.autoAssign(req('h', 'node-1', { num4: 3 }));
    expect(addrs(r.ipv4)).toEqual(['198.19.0.4', '198.19.0.6', '198.19.0.7']);
    // Reserved ordinals keep their place at the front of the free list.
    const block = await f.raw(`${BLOCKS}ipv4/block/198.19.0.0-26`);
    expect((block!.unallocated as number[]).slice(0, 5)).toEqual([0, 1, 2, 3, 5]);

    const g = fixture();
    for (const n of ['node-1', 'node-2', 'node-3']) await g.node(n);
    await g.pool('pool2', { cidr: '198.19.0.0/25' });
    await g.reservation('first-block', ['198.19.0.0/26']);
    for (const n of ['node-1', 'node-2', 'node-3']) {
      const got = await g.client.autoAssign(req(`h-${n}`, n, { num4: 2 }));
      expect(got.ipv4.every((x) => x.block === '198.19.0.64/26')).toBe(true);
    }
    expect(await g.keys(BLOCKS)).toEqual([`${BLOCKS}ipv4/block/198.19.0.64-26`]);
  });

  it('uses only pools whose nodeSelector matches the Node’s labels', async () => {
    const f = fixture();
    await f.node('node-a', { rack: '1' });
    await f.node('node-b');
    await f.node('node-c', { rack: '2' });
    await f.pool('rack1', { cidr: '198.19.1.0/24', nodeSelector: 'rack == "1"' });
    await f.pool('unracked', { cidr: '198.19.2.0/24', nodeSelector: '!has(rack)' });
    expect((await f.client.autoAssign(req('a', 'node-a'))).ipv4[0]!.address).toMatch(/^198\.19\.1\./);
    expect((await f.client.autoAssign(req('b', 'node-b'))).ipv4[0]!.address).toMatch(/^198\.19\.2\./);
    await expect(f.client.autoAssign(req('c', 'node-c'))).rejects.toMatchObject({
      code: 'no-pools',
      message: expect.stringContaining('no enabled IPv4 IP pool selects this node and namespace'),
    });
    // Requested pools ignore selectors.
    const forced = await f.client.autoAssign(req('d', 'node-c', { ipv4Pools: ['198.19.1.0/24'] }));
    expect(forced.ipv4[0]!.address).toMatch(/^198\.19\.1\./);
  });

  it('gives up its empty blocks in a pool that stopped selecting the node', async () => {
    const f = fixture();
    await f.node('node-1', { rack: '1' });
    await f.pool('rack1', { cidr: '198.19.1.0/24', nodeSelector: 'rack == "1"' });
    await f.pool('rack2', { cidr: '198.19.2.0/24', nodeSelector: 'rack == "2"' });
    const first = await f.client.autoAssign(req('a'));
    const keep = await f.client.autoAssign(req('b'));
    expect(first.ipv4[0]!.block).toBe(keep.ipv4[0]!.block);
    const node = await f.ds.get('Node', 'node-1');
    await f.ds.update({ ...node, metadata: { ...node.metadata, labels: { rack: '2' } } });

    // Not empty: the block stays node-1's.
    const second = await f.client.autoAssign(req('c'));
    expect(second.ipv4[0]!.address).toMatch(/^198\.19\.2\./);
    const oldKey = `/calico/ipam/v2/host/node-1/ipv4/block/${first.ipv4[0]!.block.replace('/', '-')}`;
    expect(await f.keys(oldKey)).toEqual([oldKey]);

    // Empty: released on the next request.
    await f.client.releaseByHandle('a');
    await f.client.releaseByHandle('b');
    await f.client.autoAssign(req('d'));
    expect(await f.keys(oldKey)).toEqual([]);
    expect(await f.raw(`${BLOCKS}ipv4/block/${first.ipv4[0]!.block.replace('/', '-')}`)).toBeUndefined();
  });

  it('uses only pools whose namespaceSelector matches the namespace', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('prod', { cidr: '198.19.1.0/24', namespaceSelector: 'env == "prod"' });
    await f.pool('zz-any', { cidr: '198.19.2.0/24' });
    const p = await f.client.autoAssign(req('p', 'node-1', { namespaceLabels: { env: 'prod' } }));
    expect(p.ipv4[0]!.address).toMatch(/^198\.19\.1\./);
    const d = await f.client.autoAssign(req('d', 'node-1', { namespaceLabels: { env: 'dev' } }));
    expect(d.ipv4[0]!.address).toMatch(/^198\.19\.2\./);
  });

  it('assigns IPv6 from /122 blocks, alone or with IPv4', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('v4', { cidr: '198.19.0.0/24' });
    await f.pool('v6', { cidr: 'fd00:1::/120' });
    const r = await f.client.autoAssign(req('h6', 'node-1', { num4: 0, num6: 2 }));
    expect(r.ipv4).toEqual([]);
    expect(r.ipv6).toHaveLength(2);
    const block = r.ipv6[0]!.block;
    expect(block).toMatch(/^fd00:1::(|40|80|c0)\/122$/);
    expect(r.ipv6.map((x) => x.prefixLength)).toEqual([122, 122]);
    expect(r.ipv6[0]!.cidr).toBe(`${r.ipv6[0]!.address}/122`);
    const key = `${BLOCKS}ipv6/block/${block.replace('/', '-')}`;
    expect((await f.raw(key))?.cidr).toBe(block);
    expect(await f.keys('/calico/ipam/v2/host/node-1/ipv6/')).toEqual([
      `/calico/ipam/v2/host/node-1/ipv6/block/${block.replace('/', '-')}`,
    ]);
    const dual = await f.client.autoAssign(req('h46', 'node-1', { num4: 1, num6: 1 }));
    expect(dual.ipv4).toHaveLength(1);
    expect(dual.ipv6).toHaveLength(1);
    expect(await f.raw('/calico/ipam/v2/handle/h46')).toEqual({
      block: { [dual.ipv4[0]!.block]: 1, [dual.ipv6[0]!.block]: 1 },
      deleted: false,
    });
  });

  it('is all or nothing: an exhausted pool leaves nothing of the request behind', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('tiny', { cidr: '198.19.0.0/30', blockSize: 30 });
    await expect(f.client.autoAssign(req('h', 'node-1', { num4: 5 }))).rejects.toMatchObject({
      code: 'pool-exhausted',
      message: expect.stringContaining('tiny (198.19.0.0/30)'),
    });
    const block = await f.raw(`${BLOCKS}ipv4/block/198.19.0.0-30`);
    expect(block?.allocations).toEqual([null, null, null, null]);
    expect(await f.raw('/calico/ipam/v2/handle/h')).toBeUndefined();
  });

  it('stops at the per-host block limit', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('small', { cidr: '198.19.0.0/28', blockSize: 30 });
    await expect(
      f.client.autoAssign(req('h', 'node-1', { num4: 5, maxBlocksPerHost: 1 })),
    ).rejects.toMatchObject({
      code: 'block-limit',
      message: expect.stringContaining('already has 1, the limit (maxBlocksPerHost 1)'),
    });
    expect(await f.raw('/calico/ipam/v2/handle/h')).toBeUndefined();
  });

  it('fails clearly for a missing Node or bad input', async () => {
    const f = fixture();
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await expect(f.client.autoAssign(req('h', 'ghost'))).rejects.toMatchObject({
      code: 'not-found',
      message: expect.stringContaining('Calico Node "ghost" does not exist'),
    });
    await expect(f.client.autoAssign(req('h', 'node-1', { num4: -1 }))).rejects.toMatchObject({
      code: 'invalid',
    });
    await expect(f.client.autoAssign(req('', 'node-1'))).rejects.toMatchObject({ code: 'invalid' });
  });

  it('reclaims an empty block of another host only once it has been claimed for a minute', async () => {
    let now = T0;
    const f = fixture(() => now);
    await f.node('node-1');
    await f.node('node-2');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('a', 'node-1'));
    await f.client.releaseByHandle('a');
    now = new Date(T0.getTime() + 30_000);
    await f.client.autoAssign(req('b', 'node-2'));
    expect((await f.raw(`${BLOCKS}ipv4/block/198.19.0.0-26`))?.affinity).toBe('host:node-1');
    await f.client.releaseByHandle('b');
    now = new Date(T0.getTime() + 61_000);
    await f.client.autoAssign(req('c', 'node-2'));
    expect((await f.raw(`${BLOCKS}ipv4/block/198.19.0.0-26`))?.affinity).toBe('host:node-2');
    expect(await f.keys('/calico/ipam/v2/host/')).toEqual([
      '/calico/ipam/v2/host/node-2/ipv4/block/198.19.0.0-26',
    ]);
  });

  it('gives distinct addresses to concurrent requests of one host', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/24' });
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) => f.newClient().autoAssign(req(`c${i}`))),
    );
    const all = results.flatMap((r) => addrs(r.ipv4));
    expect(new Set(all).size).toBe(25);
    const report = await f.client.check();
    expect(report.ok).toBe(true);
    expect(report.summary.allocations).toBe(25);
  });
});

describe('assignIP and getAssignmentAttributes', () => {
  it('assigns a given address, claiming its block, and reports its owner', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.node('node-2');
    await f.pool('pool1', { cidr: '198.19.0.0/24' });
    const got = await f.client.assignIP('198.19.0.77', {
      handleId: 'fixed',
      hostname: 'node-1',
      attrs: { node: 'node-1', type: 'vxlanTunnelAddress' },
    });
    expect(got).toEqual({
      family: 4,
      address: '198.19.0.77',
      prefixLength: 26,
      cidr: '198.19.0.77/26',
      block: '198.19.0.64/26',
    });
    expect((await f.raw(`${BLOCKS}ipv4/block/198.19.0.64-26`))?.affinity).toBe('host:node-1');
    const attrs = await f.client.getAssignmentAttributes('198.19.0.77');
    expect(attrs).toMatchObject({
      handleId: 'fixed',
      attrs: { node: 'node-1', type: 'vxlanTunnelAddress' },
      block: '198.19.0.64/26',
    });
    await expect(
      f.client.assignIP('198.19.0.77', { handleId: 'other', hostname: 'node-1', attrs: { node: 'node-1' } }),
    ).rejects.toMatchObject({ code: 'already-assigned' });
    expect(await f.raw('/calico/ipam/v2/handle/other')).toBeUndefined();
    await expect(f.client.getAssignmentAttributes('198.19.0.78')).rejects.toMatchObject({
      code: 'not-found',
      message: expect.stringContaining('198.19.0.78 is not assigned'),
    });
    await expect(
      f.client.assignIP('10.9.9.9', { handleId: 'x', hostname: 'node-1', attrs: { node: 'node-1' } }),
    ).rejects.toMatchObject({
      code: 'invalid',
      message: expect.stringContaining('not in any enabled IP pool'),
    });

    // Borrowing a given address from another host's block is fine, unless strict affinity is on.
    await f.client.assignIP('198.19.0.78', { handleId: 'n2', hostname: 'node-2', attrs: { node: 'node-2' } });
    await f.ipamConfig({ strict_affinity: true, auto_allocate_blocks: true, maxBlocksPerHost: 0 });
    await expect(
      f.client.assignIP('198.19.0.79', { handleId: 'n2b', hostname: 'node-2', attrs: { node: 'node-2' } }),
    ).rejects.toMatchObject({ code: 'affinity-mismatch' });
  });
});

describe('release', () => {
  it('releaseHandle says whether the handle existed, and deletes one that holds no block', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('a'));
    expect(await f.client.releaseHandle('a')).toEqual({ released: ['198.19.0.0'], existed: true });
    expect(await f.client.releaseHandle('a')).toEqual({ released: [], existed: false });
    // A handle an interrupted release left with no block: found, and removed.
    await f.kv.create('/calico/ipam/v2/handle/left', JSON.stringify({ block: {}, deleted: false }));
    expect(await f.client.releaseHandle('left')).toEqual({ released: [], existed: true });
    expect(await f.raw('/calico/ipam/v2/handle/left')).toBeUndefined();
  });

  it('releases by handle, twice without harm, returning addresses to the end of the free list', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('a', 'node-1', { num4: 2 }));
    await f.client.autoAssign(req('b'));
    expect(await f.client.releaseByHandle('a')).toEqual({ released: ['198.19.0.0', '198.19.0.1'] });
    expect(await f.client.releaseByHandle('a')).toEqual({ released: [] });
    expect(await f.raw('/calico/ipam/v2/handle/a')).toBeUndefined();
    const block = await f.raw(`${BLOCKS}ipv4/block/198.19.0.0-26`);
    expect((block!.unallocated as number[]).slice(-2)).toEqual([0, 1]);
    expect(block?.attributes).toEqual([
      { handle_id: 'b', secondary: { namespace: 'default', node: 'node-1', pod: 'b' } },
    ]);
    expect(block?.allocations).toEqual([null, null, 0, ...Array(61).fill(null)]);
    expect(block?.sequenceNumberForAllocation).toEqual({ '2': T0_NS + 1n });
    // The next address is the one after b's, not a just-released one.
    expect(addrs((await f.client.autoAssign(req('c'))).ipv4)).toEqual(['198.19.0.3']);
  });

  it('releases addresses, reporting ones not assigned, and honours handle preconditions', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('a', 'node-1', { num4: 2 }));
    const r = await f.client.releaseIPs([
      { ip: '198.19.0.0', handleId: 'someone-else' },
      '198.19.0.1',
      '198.19.0.9',
      '10.1.1.1',
    ]);
    expect(r).toEqual({
      released: ['198.19.0.1'],
      notAssigned: ['10.1.1.1', '198.19.0.9'],
      mismatched: ['198.19.0.0'],
    });
    expect(await f.raw('/calico/ipam/v2/handle/a')).toEqual({
      block: { '198.19.0.0/26': 1 },
      deleted: false,
    });
    expect((await f.client.releaseIPs(['198.19.0.1'])).notAssigned).toEqual(['198.19.0.1']);
    expect((await f.client.releaseIPs(['198.19.0.0'])).released).toEqual(['198.19.0.0']);
    expect(await f.raw('/calico/ipam/v2/handle/a')).toBeUndefined();
    await expect(f.client.releaseIPs(['nope'])).rejects.toMatchObject({ code: 'invalid' });
  });

  it('deletes a block that ends up empty without affinity, keeps an affine one', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/24' });
    const r = await f.client.autoAssign(req('a'));
    const key = `${BLOCKS}ipv4/block/${r.ipv4[0]!.block.replace('/', '-')}`;
    await f.client.releaseByHandle('a');
    expect(await f.raw(key)).toBeDefined();
    await f.client.autoAssign(req('b'));
    await f.client.releaseHostAffinities('node-1');
    expect((await f.raw(key))?.affinity).toBeNull();
    await f.client.releaseByHandle('b');
    expect(await f.raw(key)).toBeUndefined();
  });
});

describe('affinities', () => {
  it('claims and releases the blocks of a CIDR, leaving other hosts’ blocks alone', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.node('node-2');
    await f.pool('pool1', { cidr: '198.19.0.0/24' });
    expect(await f.client.claimAffinity('node-1', '198.19.0.0/25')).toEqual({
      claimed: ['198.19.0.0/26', '198.19.0.64/26'],
      failed: [],
    });
    expect(await f.client.claimAffinity('node-2', '198.19.0.0/24')).toEqual({
      claimed: ['198.19.0.128/26', '198.19.0.192/26'],
      failed: ['198.19.0.0/26', '198.19.0.64/26'],
    });
    await expect(f.client.claimAffinity('node-1', '198.19.0.0/27')).rejects.toMatchObject({
      code: 'invalid',
      message: expect.stringContaining('smaller than a block'),
    });
    await expect(f.client.claimAffinity('node-1', '10.0.0.0/24')).rejects.toMatchObject({ code: 'invalid' });

    // node-2 uses one of its blocks; releasing requires emptiness when asked.
    await f.client.autoAssign(req('x', 'node-2'));
    const kept = await f.client.releaseHostAffinities('node-2', { mustBeEmpty: true });
    expect(kept.released).toHaveLength(1);
    expect(kept.notEmpty).toHaveLength(1);

    expect(await f.client.releaseAffinity('node-1', '198.19.0.0/24')).toEqual({
      released: ['198.19.0.0/26', '198.19.0.64/26'],
      notEmpty: [],
    });
    expect(await f.keys('/calico/ipam/v2/host/node-1/')).toEqual([]);
    expect(await f.raw(`${BLOCKS}ipv4/block/198.19.0.0-26`)).toBeUndefined();
  });
});

describe('releasePoolAffinities', () => {
  it('releases every host’s blocks in the CIDR of a disabled pool: empty ones deleted, used ones kept without affinity', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.node('node-2');
    await f.pool('pool1', { cidr: '198.19.0.0/24' });
    await f.pool('pool2', { cidr: '198.19.1.0/24' });
    await f.client.autoAssign(req('a', 'node-1'));
    await f.client.claimAffinity('node-2', '198.19.0.128/26');
    await f.client.autoAssign(req('b', 'node-1', { ipv4Pools: ['pool2'] }));
    const pool = await f.ds.get('IPPool', 'pool1');
    await f.ds.update({ ...pool, spec: { ...pool.spec, disabled: true } });

    const r = await f.client.releasePoolAffinities('198.19.0.0/24');
    expect(r.released.sort()).toEqual(['198.19.0.0/26', '198.19.0.128/26']);
    expect(await f.keys('/calico/ipam/v2/host/')).toEqual([
      '/calico/ipam/v2/host/node-1/ipv4/block/198.19.1.0-26',
    ]);
    expect((await f.raw(`${BLOCKS}ipv4/block/198.19.0.0-26`))?.affinity).toBeNull();
    expect(await f.raw(`${BLOCKS}ipv4/block/198.19.0.128-26`)).toBeUndefined();
    await expect(f.client.releasePoolAffinities('nope')).rejects.toMatchObject({ code: 'invalid' });
  });
});

describe('check and gc', () => {
  it('reports leaked addresses, bad handle counts and blocks of missing nodes', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.node('node-2');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('a'));
    await f.client.autoAssign(req('b'));
    expect((await f.client.check()).ok).toBe(true);

    await f.kv.delete('/calico/ipam/v2/handle/a');
    await f.kv.put('/calico/ipam/v2/handle/b', '{"block":{"198.19.0.0/26":3},"deleted":false}');
    await f.kv.put('/calico/ipam/v2/handle/orphan', '{"block":{"198.19.0.0/26":1},"deleted":false}');
    await f.ds.delete('Node', 'node-1');
    const r = await f.client.check();
    expect(r.ok).toBe(false);
    expect(r.leakedAddresses).toEqual([
      {
        ip: '198.19.0.0',
        block: '198.19.0.0/26',
        handleId: 'a',
        attrs: { namespace: 'default', node: 'node-1', pod: 'a' },
      },
    ]);
    expect(r.handleCountMismatches).toEqual([
      { handleId: 'b', block: '198.19.0.0/26', recorded: 3, actual: 1 },
    ]);
    expect(r.handlesWithoutAllocations).toEqual([{ handleId: 'orphan', recorded: { '198.19.0.0/26': 1 } }]);
    expect(r.blocksWithMissingNode).toEqual([{ block: '198.19.0.0/26', node: 'node-1' }]);
    expect(r.danglingAffinities).toEqual([{ host: 'node-1', cidr: '198.19.0.0/26', reason: 'node-missing' }]);
  });

  it('releases allocations whose owner is gone once the grace period has passed', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('gone'));
    await f.client.autoAssign(req('alive'));
    const state = newGcState();
    const isOwnerAlive = async (attrs: Record<string, string>) => attrs.pod !== 'gone';
    const first = await f.client.gc({ isOwnerAlive, gracePeriodMs: 60_000, now: 1_000, state });
    expect(first).toEqual({
      released: [],
      pending: [{ ip: '198.19.0.0', handleId: 'gone', releaseAt: 61_000 }],
    });
    expect((await f.client.gc({ isOwnerAlive, gracePeriodMs: 60_000, now: 60_999, state })).released).toEqual(
      [],
    );
    const third = await f.client.gc({ isOwnerAlive, gracePeriodMs: 60_000, now: 61_000, state });
    expect(third).toEqual({ released: ['198.19.0.0'], pending: [] });
    expect(await f.raw('/calico/ipam/v2/handle/gone')).toBeUndefined();
    expect(await f.raw('/calico/ipam/v2/handle/alive')).toBeDefined();
    expect(state.firstSeen.size).toBe(0);
  });
});

/** Counts the reads of the pools the client's store serves (each assignment's env read has one). */
function countPoolLists(f: IpamFixture): () => number {
  let n = 0;
  const readAll = f.kv.readAll.bind(f.kv);
  f.kv.readAll = async (reads) => {
    if (reads.some((r) => r.key.includes('/ippools/'))) n++;
    return readAll(reads);
  };
  return () => n;
}

describe('prefetchAssignEnv', () => {
  it('the next autoAssign for that host uses the reads it started (one request), once', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    const lists = countPoolLists(f);
    f.client.prefetchAssignEnv('node-1');
    expect(lists()).toBe(1);
    expect(addrs((await f.client.autoAssign(req('k8s-pod-network.p1'))).ipv4)).toEqual(['198.19.0.0']);
    expect(lists()).toBe(1);
    // Used up: the next one reads again.
    expect(addrs((await f.client.autoAssign(req('k8s-pod-network.p2'))).ipv4)).toEqual(['198.19.0.1']);
    expect(lists()).toBe(2);
  });

  it('serves only the host it was made for', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.node('node-2');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    f.client.prefetchAssignEnv('node-1');
    const lists = countPoolLists(f);
    await f.client.autoAssign(req('k8s-pod-network.q1', 'node-2'));
    expect(lists()).toBe(1);
    await f.client.autoAssign(req('k8s-pod-network.q2', 'node-1'));
    expect(lists()).toBe(1);
  });

  it('goes stale after a second: a later autoAssign reads afresh', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    const lists = countPoolLists(f);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      f.client.prefetchAssignEnv('node-1');
      vi.setSystemTime(Date.now() + 1500);
      await f.client.autoAssign(req('k8s-pod-network.s1'));
      expect(lists()).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a failed prefetched read is the autoAssign’s error, and nothing is left unhandled', async () => {
    const f = fixture();
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    f.client.prefetchAssignEnv('no-such-node');
    await new Promise((r) => setTimeout(r, 10));
    await expect(f.client.autoAssign(req('k8s-pod-network.r1', 'no-such-node'))).rejects.toThrow(
      /Calico Node "no-such-node" does not exist/,
    );
  });
});

describe('blocks the client already knows', () => {
  function countBlockGets(f: IpamFixture): () => number {
    let n = 0;
    const get = f.kv.get.bind(f.kv);
    f.kv.get = async (key: string) => {
      if (key.includes('/assignment/')) n++;
      return get(key);
    };
    return () => n;
  }

  it('a second allocation on the host starts from the version the first wrote, without reading it', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('k8s-pod-network.k1'));
    const gets = countBlockGets(f);
    expect(addrs((await f.client.autoAssign(req('k8s-pod-network.k2'))).ipv4)).toEqual(['198.19.0.1']);
    expect(gets()).toBe(0);
  });

  it('a version someone else replaced fails its compare-and-swap and is read again: no address twice', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('k8s-pod-network.m1'));
    // Another client (another process on the same host) allocates from the same block.
    const other = f.newClient();
    expect(addrs((await other.autoAssign(req('k8s-pod-network.m2'))).ipv4)).toEqual(['198.19.0.1']);
    const gets = countBlockGets(f);
    expect(addrs((await f.client.autoAssign(req('k8s-pod-network.m3'))).ipv4)).toEqual(['198.19.0.2']);
    expect(gets()).toBeGreaterThan(0);
    // The handle of the lost first try was rolled back: only m3's record counts one address.
    const handle = (await f.raw('/calico/ipam/v2/handle/k8s-pod-network.m3')) as {
      block: Record<string, number>;
    };
    expect(handle.block).toEqual({ '198.19.0.0/26': 1 });
  });
});

describe('prefetchAssignEnv with several ADDs in flight', () => {
  it('each prefetch serves one autoAssign, in order, none dropped', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    const lists = countPoolLists(f);
    f.client.prefetchAssignEnv('node-1');
    f.client.prefetchAssignEnv('node-1');
    f.client.prefetchAssignEnv('node-1');
    expect(lists()).toBe(3);
    for (const h of ['t1', 't2', 't3']) await f.client.autoAssign(req(`k8s-pod-network.${h}`));
    expect(lists()).toBe(3);
    await f.client.autoAssign(req('k8s-pod-network.t4'));
    expect(lists()).toBe(4);
  });
});

describe('requests per allocation', () => {
  it('a host with a block it knows: one read request and one write transaction, nothing else', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.autoAssign(req('k8s-pod-network.n1'));
    const calls = countCalls(f.kv);
    expect(addrs((await f.client.autoAssign(req('k8s-pod-network.n2'))).ipv4)).toEqual(['198.19.0.1']);
    expect(calls).toEqual(['readAll', 'writeAll']);
  });
});

/** `store`, with every watch message delivered `ms` later than it happened. */
function laggingWatches(store: MemoryKVStore, ms: number): KVStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name === 'watch') {
        return async function* (prefix: string, opts?: KVWatchOptions) {
          for await (const m of target.watch(prefix, opts)) {
            await new Promise((r) => setTimeout(r, ms));
            yield m;
          }
        };
      }
      const v = Reflect.get(target, name, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as KVStore;
}

describe('mirrorHost', () => {
  it('a mirrored host allocates with one write transaction and no read', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.mirrorHost('node-1');
    await f.client.autoAssign(req('k8s-pod-network.m1'));
    const calls = countCalls(f.kv);
    expect(addrs((await f.client.autoAssign(req('k8s-pod-network.m2'))).ipv4)).toEqual(['198.19.0.1']);
    expect(calls).toEqual(['writeAll']);
    // Stopped: the environment is read again.
    f.client.close();
    await f.client.autoAssign(req('k8s-pod-network.m3'));
    expect(calls).toEqual(['writeAll', 'readAll', 'writeAll']);
  });

  it('sees pool changes made by others once its watch reports them', async () => {
    const f = fixture();
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/26' });
    await f.client.mirrorHost('node-1');
    expect(addrs((await f.client.autoAssign(req('k8s-pod-network.p1'))).ipv4)).toEqual(['198.19.0.0']);
    const p1 = await f.ds.get('IPPool', 'pool1');
    await f.ds.update({ ...p1, spec: { ...p1.spec, disabled: true } });
    await f.pool('pool2', { cidr: '198.19.1.0/26' });
    await vi.waitFor(async () => expect((await f.store.readAssignEnv('node-1')).pools).toHaveLength(2));
    expect(addrs((await f.client.autoAssign(req('k8s-pod-network.p2'))).ipv4)).toEqual(['198.19.1.0']);
    f.client.close();
  });

  it('sees the blocks it claimed itself at once, even while its watch lags', async () => {
    const f = ipamFixture(laggingWatches(new MemoryKVStore(), 500), 'memory', { now: () => T0 });
    await f.node('node-1');
    await f.pool('pool1', { cidr: '198.19.0.0/24', blockSize: 26 });
    await f.client.mirrorHost('node-1');
    const got: string[] = [];
    for (let i = 0; i < 65; i++)
      got.push(...addrs((await f.client.autoAssign(req(`k8s-pod-network.b${i}`))).ipv4));
    // The 65th claimed a second block; the next one starts from it with no read at all.
    const calls = countCalls(f.kv);
    got.push(...addrs((await f.client.autoAssign(req('k8s-pod-network.b65'))).ipv4));
    expect(calls).toEqual(['writeAll']);
    expect(new Set(got).size).toBe(66);
    expect(await f.keys('/calico/ipam/v2/host/node-1/')).toHaveLength(2);
    f.client.close();
  });
});

/** The KVStore methods called on `kv` from now on, in order. */
function countCalls(kv: KVStore): string[] {
  const calls: string[] = [];
  for (const m of ['get', 'list', 'create', 'update', 'put', 'delete', 'readAll', 'writeAll'] as const) {
    const orig = (kv[m] as (...a: unknown[]) => Promise<unknown>).bind(kv);
    (kv as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
      calls.push(m);
      return orig(...a);
    };
  }
  return calls;
}
