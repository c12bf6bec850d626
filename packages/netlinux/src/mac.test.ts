import { describe, expect, it } from 'vitest';
import { isNetlinuxError } from './errors.js';
import { CALICO_HOST_MAC, isValidMac, linkLocalFromMac, normalizeMac, randomMac } from './mac.js';

describe('linkLocalFromMac', () => {
  it('derives the link-local address Calico pods route to', () => {
    expect(linkLocalFromMac(CALICO_HOST_MAC)).toBe('fe80::ecee:eeff:feee:eeee');
  });

  it('flips the universal/local bit and inserts ff:fe (RFC 4291)', () => {
    // Value seen on a veth of this kernel: 12:9c:8e:33:22:3e → fe80::109c:8eff:fe33:223e.
    expect(linkLocalFromMac('12:9c:8e:33:22:3e')).toBe('fe80::109c:8eff:fe33:223e');
    expect(linkLocalFromMac('00:11:22:33:44:55')).toBe('fe80::211:22ff:fe33:4455');
  });

  it('compresses zero groups like inet_ntop', () => {
    expect(linkLocalFromMac('02:00:00:00:00:01')).toBe('fe80::ff:fe00:1');
    expect(linkLocalFromMac('02:00:00:00:00:00')).toBe('fe80::ff:fe00:0');
  });

  it('accepts dashes and upper case', () => {
    expect(linkLocalFromMac('EE-EE-EE-EE-EE-EE')).toBe('fe80::ecee:eeff:feee:eeee');
  });
});

describe('normalizeMac', () => {
  it('lower-cases and pads', () => {
    expect(normalizeMac('EE:E:ee:0:1:2')).toBe('ee:0e:ee:00:01:02');
  });

  it('rejects non-MACs as invalid', () => {
    for (const bad of [
      '',
      'ee:ee:ee:ee:ee',
      'ee:ee:ee:ee:ee:ee:ee',
      'gg:ee:ee:ee:ee:ee',
      'ee:ee-ee:ee:ee:ee',
    ]) {
      expect(isValidMac(bad)).toBe(false);
      let err: unknown;
      try {
        normalizeMac(bad);
      } catch (e) {
        err = e;
      }
      expect(isNetlinuxError(err, 'invalid')).toBe(true);
    }
  });
});

describe('randomMac', () => {
  it('is unicast and locally administered', () => {
    for (let i = 0; i < 50; i++) {
      const mac = randomMac();
      expect(isValidMac(mac)).toBe(true);
      const first = Number.parseInt(mac.slice(0, 2), 16);
      expect(first & 0x01).toBe(0);
      expect(first & 0x02).toBe(2);
    }
  });
});
