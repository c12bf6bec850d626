import { describe, expect, it } from 'vitest';
import { addressOf, canonicalIp, hostCidr, parseCidr } from './ip.js';

describe('ip helpers', () => {
  it.each([
    ['FD00:0:0:0:0:0:0:1', 'fd00::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['fe80:0:0:0:ecee:eeff:feee:eeee', 'fe80::ecee:eeff:feee:eeee'],
    ['::', '::'],
    ['::ffff:198.18.0.1', '::ffff:c612:1'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ['198.18.0.1', '198.18.0.1'],
  ])('canonical %s → %s', (a, b) => {
    expect(canonicalIp(a)).toBe(b);
  });

  it('parses CIDRs strictly', () => {
    expect(parseCidr('198.19.0.4/26')).toEqual({ ip: '198.19.0.4', prefix: 26 });
    expect(parseCidr('FD00::4/122')).toEqual({ ip: 'fd00::4', prefix: 122 });
    for (const bad of [
      '198.19.0.4',
      '198.19.0.4/33',
      '198.19.0.4/x',
      'fd00::/129',
      'foo/1',
      '198.19.0.4/-1',
    ]) {
      expect(parseCidr(bad)).toBeUndefined();
    }
  });

  it('narrows to single addresses', () => {
    expect(hostCidr('198.19.0.4/26')).toBe('198.19.0.4/32');
    expect(hostCidr('fd00:0::4/122')).toBe('fd00::4/128');
    expect(hostCidr('198.19.0.4')).toBe('198.19.0.4/32');
    expect(addressOf('fd00:0::4/122')).toBe('fd00::4');
  });
});
