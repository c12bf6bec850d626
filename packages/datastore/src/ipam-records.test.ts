import { describe, expect, it } from 'vitest';
import { affinityKey, blockKey, encodeBlock, handleKey } from './ipam-records.js';

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
