import { MemoryKVStore } from '@calico-ts/datastore';
import { describe, expect, it } from 'vitest';
import { affinityForHost, autoAssignInBlock, newBlock } from '../block/allocation-block.js';
import { parseStrictCidr } from '../block/ip-math.js';
import { ReservedAddresses } from '../block/reservations.js';
import { IpamStore } from '../store/ipam-store.js';
import {
  type AffinityContext,
  AffinityMissing,
  BlockChanged,
  BlockClaimConflict,
  BlockNotEmpty,
  claimAffineBlock,
  getBlockFromAffinity,
  getPendingAffinity,
  releaseBlockAffinity,
  StaleAffinity,
} from './affinity-ops.js';

const CIDR = '198.19.0.0/26';
const cidr = parseStrictCidr(CIDR)!;

function setup() {
  const kv = new MemoryKVStore();
  const records = new IpamStore(kv);
  const ctx: AffinityContext = { store: records, nowNs: () => 1000n, nowText: () => '2026-01-02T03:04:05Z' };
  const affKey = (host: string) => `/calico/ipam/v2/host/${host}/ipv4/block/198.19.0.0-26`;
  return { kv, records, ctx, affKey };
}

describe('claiming', () => {
  it('creates a pending affinity once; later claimers reuse it without writing', async () => {
    const { kv, ctx, affKey } = setup();
    const a = await getPendingAffinity(ctx, 'node-1', CIDR);
    expect(a.value.state).toBe('pending');
    const b = await getPendingAffinity(ctx, 'node-1', CIDR);
    expect(b.revision).toBe(a.revision);
    expect((await kv.get(affKey('node-1')))?.value).toBe('{"state":"pending","deleted":false}');
  });

  it('claims a block: block created affine to the host, affinity confirmed', async () => {
    const { kv, records, ctx, affKey } = setup();
    const pa = await getPendingAffinity(ctx, 'node-1', CIDR);
    const block = await claimAffineBlock(ctx, 'node-1', cidr, pa);
    expect(block.value).toMatchObject({
      cidr: CIDR,
      affinity: 'host:node-1',
      affinity_claim_time: '2026-01-02T03:04:05Z',
      sequenceNumber: 1000n,
    });
    expect((await kv.get(affKey('node-1')))?.value).toBe('{"state":"confirmed","deleted":false}');
    // A second claimer of the same host, working from the old pending read, still succeeds.
    const again = await getBlockFromAffinity(ctx, 'node-1', cidr, pa);
    expect(again.revision).toBe(block.revision);
    expect((await records.getAffinity('node-1', CIDR))?.value.state).toBe('confirmed');
  });

  it('loses cleanly to another host: its pending affinity is removed', async () => {
    const { kv, ctx, affKey } = setup();
    await claimAffineBlock(ctx, 'node-1', cidr, await getPendingAffinity(ctx, 'node-1', CIDR));
    const pa = await getPendingAffinity(ctx, 'node-2', CIDR);
    await expect(claimAffineBlock(ctx, 'node-2', cidr, pa)).rejects.toBeInstanceOf(BlockClaimConflict);
    expect(await kv.get(affKey('node-2'))).toBeUndefined();
    const stale = await getPendingAffinity(ctx, 'node-2', CIDR);
    await expect(getBlockFromAffinity(ctx, 'node-2', cidr, stale)).rejects.toBeInstanceOf(StaleAffinity);
    expect(await kv.get(affKey('node-2'))).toBeUndefined();
  });

  it('finishes a half-done claim, and takes a block back from a half-done release', async () => {
    const { records, ctx } = setup();
    const created = await records.createBlock(
      newBlock(cidr, { affinity: affinityForHost('node-1'), sequenceNumber: 5n }),
    );
    // Crashed after creating the block: affinity still pending.
    const pa = await records.createAffinity({ host: 'node-1', cidr: CIDR, state: 'pending', deleted: false });
    const b = await getBlockFromAffinity(ctx, 'node-1', cidr, pa);
    expect(b.revision).toBe(created.revision);
    expect((await records.getAffinity('node-1', CIDR))?.value.state).toBe('confirmed');
    // A release stopped after marking pendingDeletion: the block is rewritten and the affinity confirmed.
    const cur = (await records.getAffinity('node-1', CIDR))!;
    const pd = await records.updateAffinity(
      { host: 'node-1', cidr: CIDR, state: 'pendingDeletion', deleted: false },
      cur.revision,
    );
    const back = await getBlockFromAffinity(ctx, 'node-1', cidr, pd);
    expect(back.value.sequenceNumber).toBe(6n);
    expect((await records.getAffinity('node-1', CIDR))?.value.state).toBe('confirmed');
  });

  it('re-creates a block whose confirmed affinity outlived it', async () => {
    const { records, ctx } = setup();
    const aff = await records.createAffinity({
      host: 'node-1',
      cidr: CIDR,
      state: 'confirmed',
      deleted: false,
    });
    const b = await getBlockFromAffinity(ctx, 'node-1', cidr, aff);
    expect(b.value.affinity).toBe('host:node-1');
    expect((await records.getAffinity('node-1', CIDR))?.value.state).toBe('confirmed');
  });
});

describe('releaseBlockAffinity', () => {
  async function claimed() {
    const s = setup();
    const block = await claimAffineBlock(
      s.ctx,
      'node-1',
      cidr,
      await getPendingAffinity(s.ctx, 'node-1', CIDR),
    );
    return { ...s, block };
  }

  it('deletes an empty block and the affinity', async () => {
    const { kv, ctx } = await claimed();
    await releaseBlockAffinity(ctx, 'node-1', CIDR);
    expect((await kv.list('/calico/ipam/')).kvs).toEqual([]);
  });

  it('keeps a block in use, without affinity, unless emptiness is required', async () => {
    const { records, ctx, block, affKey, kv } = await claimed();
    const used = autoAssignInBlock(block.value, 1, 'h', null, ReservedAddresses.none).block;
    await records.updateBlock(used, block.revision);
    await expect(releaseBlockAffinity(ctx, 'node-1', CIDR, { requireEmpty: true })).rejects.toBeInstanceOf(
      BlockNotEmpty,
    );
    await releaseBlockAffinity(ctx, 'node-1', CIDR);
    const after = (await records.getBlock(CIDR))!.value;
    expect(after.affinity).toBeNull();
    expect('affinity_claim_time' in after).toBe(false);
    expect(await kv.get(affKey('node-1'))).toBeUndefined();
  });

  it('refuses when the block changed since it was read', async () => {
    const { ctx } = await claimed();
    await expect(
      releaseBlockAffinity(ctx, 'node-1', CIDR, { requireEmpty: true, requiredSequenceNumber: 999n }),
    ).rejects.toBeInstanceOf(BlockChanged);
  });

  it('reports a missing affinity, and removes a stale one pointing at another host’s block', async () => {
    const { records, ctx, kv, affKey } = await claimed();
    await expect(releaseBlockAffinity(ctx, 'node-2', CIDR)).rejects.toBeInstanceOf(AffinityMissing);
    await records.createAffinity({ host: 'node-2', cidr: CIDR, state: 'confirmed', deleted: false });
    await expect(releaseBlockAffinity(ctx, 'node-2', CIDR)).rejects.toBeInstanceOf(BlockClaimConflict);
    expect(await kv.get(affKey('node-2'))).toBeUndefined();
    expect((await records.getBlock(CIDR))?.value.affinity).toBe('host:node-1');
  });
});
