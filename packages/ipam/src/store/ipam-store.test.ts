import { MemoryKVStore } from '@calico-ts/datastore';
import { describe, expect, it } from 'vitest';
import { ipamContract } from '../testing-internal/ipam-store-contract.js';
import { IpamStore } from './ipam-store.js';

const store = new MemoryKVStore();
ipamContract('IpamStore over MemoryKVStore', {
  store: () => store,
  writeRaw: async (k, v) => {
    await store.put(k, v);
  },
  readRaw: async (k) => (await store.get(k))?.value,
});

describe('IpamStore lists', () => {
  it('lists only well-formed records of the requested family', async () => {
    const s = new MemoryKVStore();
    const ipam = new IpamStore(s);
    await s.put(
      '/calico/ipam/v2/assignment/ipv6/block/fd00::-122',
      '{"cidr":"fd00::/122","affinity":null,"allocations":[],"unallocated":[],"attributes":[],"sequenceNumber":0,"sequenceNumberForAllocation":null,"deleted":false}',
    );
    await s.put('/calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26/stray', 'x');
    expect((await ipam.listBlocks()).items.map((i) => i.value.cidr)).toEqual(['fd00::/122']);
    expect((await ipam.listBlocks(4)).items).toEqual([]);
    await expect(ipam.listBlocks(5 as never)).rejects.toMatchObject({ code: 'invalid' });
  });
});
