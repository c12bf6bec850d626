import { describe, expect, it } from 'vitest';
import {
  cidrContains,
  cidrSize,
  cidrsOverlap,
  formatCidr,
  formatIP,
  ipFamily,
  isStrictlyMasked,
  parseCidr,
  parseCidrOrIP,
  parseIP,
} from './cidr.js';

describe('parseIP / formatIP', () => {
  it.each([
    ['10.0.0.1', 4, 0x0a000001n],
    ['255.255.255.255', 4, 0xffffffffn],
    ['::', 6, 0n],
    ['::1', 6, 1n],
    ['fe80::1', 6, (0xfe80n << 112n) | 1n],
    ['2001:db8::ff00:42:8329', 6, 0x20010db8000000000000ff0000428329n],
    ['::ffff:10.1.2.3', 6, 0xffff0a010203n],
  ])('parses %s', (text, family, value) => {
    expect(parseIP(text)).toEqual({ family, value });
  });

  it.each([
    '',
    '1.2.3',
    '1.2.3.4.5',
    '256.0.0.1',
    '01.2.3.4',
    '1.2.3.-1',
    ':::',
    '1::2::3',
    '12345::',
    'fe80::1%eth0',
    'g::1',
    '1:2:3:4:5:6:7:8:9',
    'a b',
  ])('rejects %j', (text) => {
    expect(parseIP(text)).toBeUndefined();
  });

  it.each([
    ['2001:0db8:0000:0000:0000:ff00:0042:8329', '2001:db8::ff00:42:8329'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['FD00:0:0:0:0:0:0:0', 'fd00::'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['1:0:2:0:3:0:4:0', '1:0:2:0:3:0:4:0'],
    ['10.20.3.4', '10.20.3.4'],
  ])('formats %s canonically as %s', (text, canonical) => {
    const ip = parseIP(text);
    expect(ip && formatIP(ip)).toBe(canonical);
  });
});

describe('parseCidr', () => {
  it('keeps the address as written and computes the network', () => {
    expect(parseCidr('10.1.2.3/16')).toEqual({
      family: 4,
      address: 0x0a010203n,
      prefix: 16,
      network: 0x0a010000n,
    });
    expect(isStrictlyMasked(parseCidr('10.1.2.3/16')!)).toBe(false);
    expect(isStrictlyMasked(parseCidr('10.1.0.0/16')!)).toBe(true);
    expect(formatCidr(parseCidr('10.1.2.3/16')!)).toBe('10.1.0.0/16');
    expect(formatCidr(parseCidr('fd00:0:0:1::5/64')!)).toBe('fd00:0:0:1::/64');
    expect(formatCidr(parseCidr('::/0')!)).toBe('::/0');
  });

  it.each([
    '10.0.0.0',
    '10.0.0.0/33',
    'fd00::/129',
    '10.0.0.0/016',
    '10.0.0.0/',
    '/8',
    '10.0.0.0/8/8',
    'x/8',
  ])('rejects %j', (text) => {
    expect(parseCidr(text)).toBeUndefined();
  });

  it('takes a bare address as a full-length prefix in parseCidrOrIP', () => {
    expect(parseCidrOrIP('10.0.0.1')?.prefix).toBe(32);
    expect(parseCidrOrIP('fd00::1')?.prefix).toBe(128);
    expect(ipFamily('fd00::/8')).toBe(6);
    expect(ipFamily('10.0.0.0/8')).toBe(4);
    expect(ipFamily('nonsense')).toBeUndefined();
  });

  it('sizes prefixes with bigints, including a whole IPv6 space', () => {
    expect(cidrSize(parseCidr('10.0.0.0/26')!)).toBe(64n);
    expect(cidrSize(parseCidr('::/0')!)).toBe(1n << 128n);
  });
});

describe('containment and overlap', () => {
  it('contains addresses and smaller prefixes of the same family only', () => {
    expect(cidrContains('10.0.0.0/8', '10.255.0.1')).toBe(true);
    expect(cidrContains('10.0.0.0/8', '10.1.0.0/16')).toBe(true);
    expect(cidrContains('10.1.0.0/16', '10.0.0.0/8')).toBe(false);
    expect(cidrContains('10.0.0.0/8', '11.0.0.0')).toBe(false);
    expect(cidrContains('0.0.0.0/0', '::1')).toBe(false);
    expect(cidrContains('fd00::/8', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff')).toBe(true);
    expect(cidrContains('fd00::/8', 'fe00::')).toBe(false);
    expect(cidrContains('2001:db8::/32', '2001:db8:ffff::/48')).toBe(true);
  });

  it('overlaps when either contains the other', () => {
    expect(cidrsOverlap('169.254.0.0/16', '169.0.0.0/8')).toBe(true);
    expect(cidrsOverlap('169.254.0.0/16', '169.254.7.0/24')).toBe(true);
    expect(cidrsOverlap('169.254.0.0/16', '169.255.0.0/16')).toBe(false);
    expect(cidrsOverlap('fe80::/10', 'fec0::/10')).toBe(false);
    expect(cidrsOverlap('fe80::/10', 'fe80:1::/32')).toBe(true);
    expect(cidrsOverlap('fe80::/10', '::/0')).toBe(true);
    expect(cidrsOverlap('10.0.0.0/8', '::/0')).toBe(false);
  });
});
