import { describe, expect, it } from 'vitest';
import {
  autodetectIP,
  autodetectIPv4,
  filterInterfaces,
  type HostInterface,
  isGlobalUnicastV4,
  isGlobalUnicastV6,
  localCidr,
} from './autodetect.js';

const IFACES: HostInterface[] = [
  { name: 'lo', index: 1, cidrs: ['127.0.0.1/8'] },
  { name: 'eth0', index: 2, cidrs: ['198.18.0.11/24'] },
  { name: 'eth1', index: 3, cidrs: ['169.254.3.3/16', '198.18.1.5/24'] },
  { name: 'docker0', index: 4, cidrs: ['198.18.2.1/24'] },
  { name: 'cali1234567890a', index: 5, cidrs: ['198.19.0.1/32'] },
];

describe('IPv4 autodetection', () => {
  it('first-found visits interfaces from the highest index down, skipping the default exclusions', () => {
    // docker0 and cali* are excluded; eth1 (index 3) comes before eth0; its link-local address is skipped.
    expect(autodetectIPv4({ kind: 'first-found' }, IFACES)).toEqual({
      ok: true,
      cidr: '198.18.1.5/24',
      interface: 'eth1',
    });
  });
  it('interface= picks the first matching interface, even one first-found excludes', () => {
    expect(autodetectIPv4({ kind: 'interface', patterns: ['eth0'] }, IFACES)).toMatchObject({
      cidr: '198.18.0.11/24',
      interface: 'eth0',
    });
    expect(autodetectIPv4({ kind: 'interface', patterns: ['^docker'] }, IFACES)).toMatchObject({
      cidr: '198.18.2.1/24',
    });
    expect(autodetectIPv4({ kind: 'interface', patterns: ['^wlan'] }, IFACES)).toEqual({
      ok: false,
      reason: 'no valid IPv4 address on an interface matching ^wlan',
    });
  });
  it('skip-interface= adds to the default exclusions', () => {
    expect(autodetectIPv4({ kind: 'skip-interface', patterns: ['eth1'] }, IFACES)).toMatchObject({
      cidr: '198.18.0.11/24',
      interface: 'eth0',
    });
  });
  it('cidr= picks the first address inside one of the CIDRs', () => {
    expect(autodetectIPv4({ kind: 'cidr', cidrs: ['198.18.0.0/24'] }, IFACES)).toMatchObject({
      cidr: '198.18.0.11/24',
    });
    expect(autodetectIPv4({ kind: 'cidr', cidrs: ['10.0.0.0/8'] }, IFACES).ok).toBe(false);
  });
  it('can-reach= uses the interface holding the source address the kernel chose', () => {
    const m = { kind: 'can-reach', destination: '198.18.0.2' } as const;
    expect(autodetectIPv4(m, IFACES, '198.18.0.11')).toEqual({
      ok: true,
      cidr: '198.18.0.11/24',
      interface: 'eth0',
    });
    expect(autodetectIPv4(m, IFACES, undefined)).toEqual({ ok: false, reason: 'no route to 198.18.0.2' });
    expect(autodetectIPv4(m, IFACES, '10.9.9.9').ok).toBe(false);
  });
  it('finds nothing on a host with only loopback and link-local addresses', () => {
    const r = autodetectIPv4({ kind: 'first-found' }, [
      { name: 'lo', index: 1, cidrs: ['127.0.0.1/8'] },
      { name: 'eth0', index: 2, cidrs: ['169.254.1.1/16'] },
    ]);
    expect(r).toEqual({ ok: false, reason: 'no valid IPv4 addresses found on the host interfaces' });
  });
});

describe('helpers', () => {
  it('filters by include and exclude regexes (unanchored, as Go matches)', () => {
    expect(filterInterfaces(IFACES, ['eth']).map((i) => i.name)).toEqual(['eth1', 'eth0']);
    expect(filterInterfaces(IFACES, [], ['^e', 'cali']).map((i) => i.name)).toEqual(['docker0', 'lo']);
  });
  it('tells global unicast addresses as Go does', () => {
    for (const a of ['198.18.0.1', '10.0.0.1', '192.168.1.1']) expect(isGlobalUnicastV4(a)).toBe(true);
    for (const a of ['0.0.0.0', '127.0.0.1', '169.254.1.1', '224.0.0.5', '255.255.255.255', 'fd00::1']) {
      expect(isGlobalUnicastV4(a)).toBe(false);
    }
  });
  it('completes a bare address with the prefix of the interface holding it', () => {
    expect(localCidr('198.18.0.11', IFACES)).toBe('198.18.0.11/24');
    expect(localCidr('198.18.0.99', IFACES)).toBe('198.18.0.99');
    expect(localCidr('198.18.0.11/28', IFACES)).toBe('198.18.0.11/28');
  });
});

describe('IPv6 autodetection', () => {
  const DUAL: HostInterface[] = [
    { name: 'lo', index: 1, cidrs: ['127.0.0.1/8', '::1/128'] },
    { name: 'eth0', index: 2, cidrs: ['198.18.0.11/24', 'fd00:18::11/64', 'fe80::1/64'] },
    { name: 'eth1', index: 3, cidrs: ['fe80::2/64'] },
    { name: 'cali1234567890a', index: 5, cidrs: ['fd00:19::1/128'] },
  ];
  it('first-found skips link-local, loopback and the excluded interfaces', () => {
    expect(autodetectIP(6, { kind: 'first-found' }, DUAL)).toEqual({
      ok: true,
      cidr: 'fd00:18::11/64',
      interface: 'eth0',
    });
  });
  it('cidr= matches within an IPv6 range only', () => {
    expect(autodetectIP(6, { kind: 'cidr', cidrs: ['198.18.0.0/16', 'fd00:18::/48'] }, DUAL)).toMatchObject({
      cidr: 'fd00:18::11/64',
    });
    expect(autodetectIP(6, { kind: 'cidr', cidrs: ['fd00:99::/48'] }, DUAL)).toEqual({
      ok: false,
      reason: 'no valid IPv6 address within fd00:99::/48',
    });
  });
  it('the IPv4 family never picks an IPv6 address', () => {
    expect(autodetectIPv4({ kind: 'interface', patterns: ['eth1'] }, DUAL)).toMatchObject({ ok: false });
  });
  it("isGlobalUnicastV6 is Go's IsGlobalUnicast", () => {
    expect(['fd00::1', '2001:db8::1'].map(isGlobalUnicastV6)).toEqual([true, true]);
    expect(['::', '::1', 'fe80::1', 'febf::1', 'ff02::1', '198.18.0.1'].map(isGlobalUnicastV6)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
