import { describe, expect, it } from 'vitest';
import { hostCidr, ipFamily, normalizeRouteDst, parseCidr } from './ip.js';

describe('ip helpers', () => {
  it('tells the family of addresses and prefixes', () => {
    expect(ipFamily('198.18.0.1')).toBe(4);
    expect(ipFamily('198.18.0.0/15')).toBe(4);
    expect(ipFamily('fe80::1')).toBe(6);
    expect(ipFamily('2001:db8::/32')).toBe(6);
    expect(() => ipFamily('cali1')).toThrow(/not an IP/);
  });

  it('makes host prefixes of bare addresses', () => {
    expect(hostCidr('198.18.0.5')).toBe('198.18.0.5/32');
    expect(hostCidr('2001:db8::5')).toBe('2001:db8::5/128');
    expect(hostCidr('198.18.0.0/24')).toBe('198.18.0.0/24');
  });

  it('rejects bad prefix lengths', () => {
    expect(() => parseCidr('198.18.0.0/33')).toThrow(/out of range/);
    expect(() => parseCidr('198.18.0.0/x')).toThrow(/not a prefix/);
    expect(() => parseCidr('198.18.0.0/1/2')).toThrow(/not a prefix/);
    expect(parseCidr('2001:db8::/128')).toEqual({ address: '2001:db8::', prefixLen: 128, family: 6 });
  });

  it('normalises route destinations as iproute2 prints them', () => {
    expect(normalizeRouteDst('default', 4)).toBe('0.0.0.0/0');
    expect(normalizeRouteDst('default', 6)).toBe('::/0');
    expect(normalizeRouteDst('169.254.1.1', 4)).toBe('169.254.1.1/32');
    expect(normalizeRouteDst('2001:db8::1', 6)).toBe('2001:db8::1/128');
    expect(normalizeRouteDst('198.18.0.0/24', 4)).toBe('198.18.0.0/24');
  });
});
