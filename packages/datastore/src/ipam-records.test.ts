import { describe, expect, it } from 'vitest';
import { goJson } from './go-json.js';
import { affinityKey, blockData, blockKey, decodeBlock, encodeBlock, handleKey } from './ipam-records.js';
import { upstreamBlockJson } from './testing/upstream-records.js';

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

describe('block data', () => {
  it('writes, through goJson, exactly the text encodeBlock writes', () => {
    const key = blockKey('10.1.2.0/26');
    const upstream = decodeBlock({
      key,
      value: upstreamBlockJson('10.1.2.0/26', 'n1'),
      modRevision: '1',
      createRevision: '1',
    });
    const fresh = {
      cidr: '10.0.0.0/30',
      affinity: null,
      allocations: [0, null, null, null],
      unallocated: [1, 2, 3],
      attributes: [
        { handle_id: 'h1', secondary: { z: '1', é: '2', a: '<&>' }, alternateOwnerAttrs: { b: '1' } },
      ],
      sequenceNumber: 5n,
      sequenceNumberForAllocation: null,
      deleted: true,
      extra: { futureField: { x: 1 } },
    } as unknown as Parameters<typeof encodeBlock>[0];
    for (const b of [upstream, fresh]) expect(goJson(blockData(b))).toBe(encodeBlock(b));
  });
});
