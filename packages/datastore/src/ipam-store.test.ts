import { describe, expect, it } from 'vitest';
import { affinityKey, blockKey, encodeBlock, handleKey, IpamStore } from './ipam-store.js';
import { MemoryKVStore } from './kv/memory-kv-store.js';
import { ipamContract } from './testing-internal/ipam-contract.js';

const store = new MemoryKVStore();
ipamContract('IpamStore over MemoryKVStore', {
  store: () => store,
  writeRaw: async (k, v) => {
    await store.put(k, v);
  },
  readRaw: async (k) => (await store.get(k))?.value,
});

describe('IPAM keys', () => {
  it('lays out blocks, affinities and handles as upstream does', () => {
    expect(blockKey('10.0.0.0/26')).toBe('/calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26');
    expect(blockKey('FD00:0::40/122')).toBe('/calico/ipam/v2/assignment/ipv6/block/fd00::40-122');
    expect(affinityKey('node-1', '10.0.0.64/26')).toBe('/calico/ipam/v2/host/node-1/ipv4/block/10.0.0.64-26');
    expect(affinityKey('vm-1', '10.0.0.64/26', 'virtual')).toBe(
      '/calico/ipam/v2/virtual/vm-1/ipv4/block/10.0.0.64-26',
    );
    expect(handleKey('k8s-pod-network.abc')).toBe('/calico/ipam/v2/handle/k8s-pod-network.abc');
    expect(() => blockKey('10.0.0.0')).toThrow(expect.objectContaining({ code: 'invalid' }));
    expect(() => affinityKey('a/b', '10.0.0.0/26')).toThrow(expect.objectContaining({ code: 'invalid' }));
  });

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

describe('block encoding', () => {
  it('writes map keys in Go order (UTF-8 bytes), ASCII or not, and the sequence number exactly', () => {
    const text = encodeBlock({
      cidr: '10.0.0.0/30',
      affinity: 'host:n1',
      allocations: [0, null, null, null],
      unallocated: [1, 2, 3],
      attributes: [{ handle_id: 'h1', secondary: { z: '1', é: '2', a: '3', Z: '4' } }],
      sequenceNumber: 1700000000123456789n,
      sequenceNumberForAllocation: { '0': 3n },
      deleted: false,
    } as Parameters<typeof encodeBlock>[0]);
    expect(text).toContain('"secondary":{"Z":"4","a":"3","z":"1","é":"2"}');
    expect(text).toContain('"sequenceNumber":1700000000123456789');
  });
});
