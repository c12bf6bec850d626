import { formatCidr, parseIP } from '@calico-ts/api/net';
import { describe, expect, it } from 'vitest';
import { cidrContainsIp, cidrLast, enclosingCidr, ipText, parseNetwork, parseStrictCidr } from './ip-math.js';

describe('IPAM address arithmetic', () => {
  it('parses block CIDRs strictly and pool CIDRs leniently', () => {
    expect(parseStrictCidr('198.19.0.0/26')).toMatchObject({ family: 4, network: 0xc6130000n, prefix: 26 });
    expect(parseStrictCidr('198.19.0.5/26')).toBeUndefined();
    expect(parseStrictCidr('not-a-cidr')).toBeUndefined();
    const lenient = parseNetwork('198.19.0.5/26')!;
    expect(lenient.address).toBe(lenient.network);
    expect(formatCidr(lenient)).toBe('198.19.0.0/26');
    expect(formatCidr(parseStrictCidr('fd00:1:0:0::/122')!)).toBe('fd00:1::/122');
  });

  it('knows the last address and containment of an address', () => {
    const block = parseStrictCidr('198.19.4.64/26')!;
    expect(ipText({ family: 4, value: cidrLast(block) })).toBe('198.19.4.127');
    expect(cidrContainsIp(block, parseIP('198.19.4.127')!)).toBe(true);
    expect(cidrContainsIp(block, parseIP('198.19.4.128')!)).toBe(false);
    expect(cidrContainsIp(parseStrictCidr('::/0')!, parseIP('1.2.3.4')!)).toBe(false);
  });

  it('finds the enclosing block of an address, v4 and v6', () => {
    expect(formatCidr(enclosingCidr(parseIP('198.19.4.100')!, 26))).toBe('198.19.4.64/26');
    expect(formatCidr(enclosingCidr(parseIP('fd00:1::1:ff')!, 122))).toBe('fd00:1::1:c0/122');
  });

  it('prints addresses as Go does', () => {
    expect(ipText(parseIP('2001:db8:0:0:1:0:0:1')!)).toBe('2001:db8::1:0:0:1');
    expect(ipText(parseIP('fd00:0:0:0:0:0:0:3f')!)).toBe('fd00::3f');
  });
});
