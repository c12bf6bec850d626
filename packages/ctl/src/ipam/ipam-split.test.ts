import { describe, expect, it } from 'vitest';
import { splitCidr, splitPoolName, splitPools } from './ipam-split.js';

describe('ipam split calculation', () => {
  it('splits into equal children in address order, IPv4 and IPv6', () => {
    expect(splitCidr('172.0.0.0/8', 2)).toEqual(['172.0.0.0/9', '172.128.0.0/9']);
    expect(splitCidr('198.18.0.0/22', 4)).toEqual([
      '198.18.0.0/24',
      '198.18.1.0/24',
      '198.18.2.0/24',
      '198.18.3.0/24',
    ]);
    expect(splitCidr('fd00:10::/112', 2)).toEqual(['fd00:10::/113', 'fd00:10::8000/113']);
    // Host bits written in the pool's CIDR are masked first, as upstream does.
    expect(splitCidr('198.18.0.5/24', 2)).toEqual(['198.18.0.0/25', '198.18.0.128/25']);
  });

  it('refuses what is not a power of 2, or more parts than the CIDR has room for', () => {
    for (const n of [0, 1, 3, 6, -2, 2.5]) {
      expect(() => splitCidr('198.18.0.0/24', n)).toThrow(`not a valid power of 2: ${n}`);
    }
    expect(() => splitCidr('198.18.0.0/31', 4)).toThrow(
      'The CIDR 198.18.0.0/31 is not large enough to be split into 4 parts',
    );
    expect(() => splitCidr('nonsense', 2)).toThrow('Error reading CIDR nonsense');
  });

  it('names children split-<pool>-<i>, cut to 253 characters', () => {
    expect(splitPoolName('default-ipv4-ippool', 1)).toBe('split-default-ipv4-ippool-1');
    const long = 'p'.repeat(250);
    expect(splitPoolName(long, 0)).toBe(`split-${'p'.repeat(245)}-0`);
  });

  it('children keep the parent’s spec and labels, enabled; none smaller than a block', () => {
    const pool = {
      metadata: { name: 'big', labels: { zone: 'a' } },
      spec: {
        cidr: '198.18.0.0/22',
        blockSize: 26,
        natOutgoing: true,
        disabled: true,
        nodeSelector: 'all()',
      },
    };
    expect(splitPools(pool, 2)).toEqual([
      {
        metadata: { name: 'split-big-0', labels: { zone: 'a' } },
        spec: {
          cidr: '198.18.0.0/23',
          blockSize: 26,
          natOutgoing: true,
          disabled: false,
          nodeSelector: 'all()',
        },
      },
      {
        metadata: { name: 'split-big-1', labels: { zone: 'a' } },
        spec: {
          cidr: '198.18.2.0/23',
          blockSize: 26,
          natOutgoing: true,
          disabled: false,
          nodeSelector: 'all()',
        },
      },
    ]);
    expect(() => splitPools(pool, 32)).toThrow(/makes \/27 pools, smaller than the pool's \/26 blocks/);
  });
});
