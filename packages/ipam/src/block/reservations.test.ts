import { parseIP } from '@calico-ts/api/net';
import { describe, expect, it } from 'vitest';
import { parseNetwork } from './ip-math.js';
import { ReservedAddresses } from './reservations.js';

const c = (t: string) => parseNetwork(t)!;

describe('ReservedAddresses', () => {
  const { reserved, invalid } = ReservedAddresses.fromText([
    '198.19.0.0/30',
    '198.19.0.9',
    'fd00::/126',
    'not-an-ip',
  ]);

  it('accepts CIDRs and bare addresses and reports the rest', () => {
    expect(invalid).toEqual(['not-an-ip']);
    expect(reserved.matchesIp(parseIP('198.19.0.3')!)).toBe(true);
    expect(reserved.matchesIp(parseIP('198.19.0.4')!)).toBe(false);
    expect(reserved.matchesIp(parseIP('198.19.0.9')!)).toBe(true);
    expect(reserved.matchesIp(parseIP('fd00::2')!)).toBe(true);
    expect(reserved.matchesIp(parseIP('fd00::4')!)).toBe(false);
  });

  it('tells whole, partial and untouched blocks apart', () => {
    expect(reserved.matchesWholeCidr(c('198.19.0.0/30'))).toBe(true);
    expect(reserved.matchesWholeCidr(c('198.19.0.0/29'))).toBe(false);
    expect(reserved.matchesSome(c('198.19.0.0/29'))).toBe(true);
    expect(reserved.matchesSome(c('198.19.1.0/26'))).toBe(false);
  });

  it('sees a block tiled by several smaller reservations as wholly reserved', () => {
    const r = new ReservedAddresses([c('198.19.0.0/27'), c('198.19.0.32/28'), c('198.19.0.48/28')]);
    expect(r.matchesWholeCidr(c('198.19.0.0/26'))).toBe(true);
    const gap = new ReservedAddresses([c('198.19.0.0/27'), c('198.19.0.48/28')]);
    expect(gap.matchesWholeCidr(c('198.19.0.0/26'))).toBe(false);
  });

  it('none reserves nothing', () => {
    expect(ReservedAddresses.none.isEmpty).toBe(true);
    expect(ReservedAddresses.none.matchesSome(c('0.0.0.0/0'))).toBe(false);
  });
});
