import { describe, expect, it } from 'vitest';
import { isCniPluginError } from '../errors.js';
import { type CniResult, decodeResult, encodeResult } from './result.js';
import { SUPPORTED_VERSIONS } from './versions.js';

/** What calico's ADD returns for a dual-stack pod (canonical 1.1 form). */
const dual: CniResult = {
  interfaces: [
    { name: 'calic440f455693', mac: 'ee:ee:ee:ee:ee:ee' },
    { name: 'eth0', mac: '0a:58:c6:13:00:04', mtu: 1450, sandbox: '/run/netns/pod1' },
  ],
  ips: [
    { address: '198.19.0.4/32', interface: 1 },
    { address: 'fd00:198:19::4/128', interface: 1 },
  ],
  routes: [
    { dst: '0.0.0.0/0', gw: '169.254.1.1' },
    { dst: '::/0', gw: 'fe80::ecee:eeff:feee:eeee' },
  ],
  dns: { nameservers: ['198.18.0.53'], search: ['svc.cluster.local'] },
};

const legacyBody = {
  ip4: { ip: '198.19.0.4/32', routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }] },
  ip6: { ip: 'fd00:198:19::4/128', routes: [{ dst: '::/0', gw: 'fe80::ecee:eeff:feee:eeee' }] },
  dns: { nameservers: ['198.18.0.53'], search: ['svc.cluster.local'] },
};
const v03Body = {
  interfaces: [
    { name: 'calic440f455693', mac: 'ee:ee:ee:ee:ee:ee' },
    { name: 'eth0', mac: '0a:58:c6:13:00:04', sandbox: '/run/netns/pod1' },
  ],
  ips: [
    { version: '4', interface: 1, address: '198.19.0.4/32' },
    { version: '6', interface: 1, address: 'fd00:198:19::4/128' },
  ],
  routes: [
    { dst: '0.0.0.0/0', gw: '169.254.1.1' },
    { dst: '::/0', gw: 'fe80::ecee:eeff:feee:eeee' },
  ],
  dns: { nameservers: ['198.18.0.53'], search: ['svc.cluster.local'] },
};
const v1Body = {
  ...v03Body,
  interfaces: [
    { name: 'calic440f455693', mac: 'ee:ee:ee:ee:ee:ee' },
    { name: 'eth0', mac: '0a:58:c6:13:00:04', mtu: 1450, sandbox: '/run/netns/pod1' },
  ],
  ips: [
    { interface: 1, address: '198.19.0.4/32' },
    { interface: 1, address: 'fd00:198:19::4/128' },
  ],
};

describe('encodeResult: one result in every version', () => {
  const table = {
    '0.1.0': { cniVersion: '0.1.0', ...legacyBody },
    '0.2.0': { cniVersion: '0.2.0', ...legacyBody },
    '0.3.0': { cniVersion: '0.3.0', ...v03Body },
    '0.3.1': { cniVersion: '0.3.1', ...v03Body },
    '0.4.0': { cniVersion: '0.4.0', ...v03Body },
    '1.0.0': { cniVersion: '1.0.0', ...v1Body },
    '1.1.0': { cniVersion: '1.1.0', ...v1Body },
  } as const;

  it('covers every supported version', () => {
    expect(Object.keys(table).sort()).toEqual([...SUPPORTED_VERSIONS].sort());
  });

  for (const v of SUPPORTED_VERSIONS) {
    it(`${v}`, () => {
      expect(encodeResult(dual, v)).toEqual(table[v]);
      // JSON key order of the rich shapes follows the reference library: version, interface, address.
      if (v === '0.4.0')
        expect(Object.keys((encodeResult(dual, v).ips as object[])[0]!)).toEqual([
          'version',
          'interface',
          'address',
        ]);
    });
  }

  it('round-trips through every version (legacy keeps the first address of each family and the routes)', () => {
    for (const v of SUPPORTED_VERSIONS) {
      const back = decodeResult(encodeResult(dual, v), v, 'r');
      if (v === '0.1.0' || v === '0.2.0') {
        expect(back.ips.map((i) => i.address)).toEqual(['198.19.0.4/32', 'fd00:198:19::4/128']);
        expect(back.routes).toEqual(dual.routes);
        expect(back.interfaces).toEqual([]);
      } else if (v === '1.0.0' || v === '1.1.0') {
        expect(back).toEqual(dual);
      } else {
        // 0.3/0.4 interfaces have no mtu.
        expect(back.ips).toEqual(dual.ips);
        expect(back.interfaces[1]).toEqual({
          name: 'eth0',
          mac: '0a:58:c6:13:00:04',
          sandbox: '/run/netns/pod1',
        });
      }
    }
  });

  it('1.1.0 keeps the route and interface fields added in 1.1; 1.0.0 drops them', () => {
    const r: CniResult = {
      interfaces: [
        { name: 'eth0', socketPath: '/run/x.sock', pciID: '0000:00:1f.6', sandbox: '/run/netns/a' },
      ],
      ips: [{ address: '198.19.0.9/32', interface: 0 }],
      routes: [
        {
          dst: '198.18.0.0/15',
          gw: '169.254.1.1',
          mtu: 1400,
          advmss: 1360,
          priority: 10,
          table: 100,
          scope: 0,
        },
      ],
      dns: {},
    };
    expect(encodeResult(r, '1.1.0')).toEqual({
      cniVersion: '1.1.0',
      interfaces: [
        { name: 'eth0', sandbox: '/run/netns/a', socketPath: '/run/x.sock', pciID: '0000:00:1f.6' },
      ],
      ips: [{ interface: 0, address: '198.19.0.9/32' }],
      routes: [
        {
          dst: '198.18.0.0/15',
          gw: '169.254.1.1',
          mtu: 1400,
          advmss: 1360,
          priority: 10,
          table: 100,
          scope: 0,
        },
      ],
      dns: {},
    });
    expect(encodeResult(r, '1.0.0')).toEqual({
      cniVersion: '1.0.0',
      interfaces: [{ name: 'eth0', sandbox: '/run/netns/a' }],
      ips: [{ interface: 0, address: '198.19.0.9/32' }],
      routes: [{ dst: '198.18.0.0/15', gw: '169.254.1.1' }],
      dns: {},
    });
  });

  it('an IPAM result (no interfaces) in 0.2.0 and 1.0.0', () => {
    const ipam: CniResult = { interfaces: [], ips: [{ address: '198.19.0.4/26' }], routes: [], dns: {} };
    expect(encodeResult(ipam, '0.2.0')).toEqual({
      cniVersion: '0.2.0',
      ip4: { ip: '198.19.0.4/26' },
      dns: {},
    });
    expect(encodeResult(ipam, '1.0.0')).toEqual({
      cniVersion: '1.0.0',
      ips: [{ address: '198.19.0.4/26' }],
      dns: {},
    });
    expect(encodeResult(ipam, '0.3.1')).toEqual({
      cniVersion: '0.3.1',
      ips: [{ version: '4', address: '198.19.0.4/26' }],
      dns: {},
    });
  });

  it('a result without addresses cannot be written as 0.1/0.2', () => {
    expect(() => encodeResult({ interfaces: [], ips: [], routes: [], dns: {} }, '0.2.0')).toThrow(
      /without IP addresses/,
    );
  });
});

describe('decodeResult', () => {
  it('reads a host-local 0.2.0 result with gateway and routes', () => {
    const r = decodeResult(
      {
        cniVersion: '0.2.0',
        ip4: { ip: '10.22.0.5/16', gateway: '10.22.0.1', routes: [{ dst: '0.0.0.0/0' }] },
        dns: {},
      },
      '0.2.0',
      'r',
    );
    expect(r).toEqual({
      interfaces: [],
      ips: [{ address: '10.22.0.5/16', gateway: '10.22.0.1' }],
      routes: [{ dst: '0.0.0.0/0' }],
      dns: {},
    });
  });

  it('reads a 0.4.0 result, checking version against address', () => {
    const r = decodeResult({ ips: [{ version: '6', address: 'FD00::1/64' }] }, '0.4.0', 'r');
    expect(r.ips).toEqual([{ address: 'FD00::1/64' }]);
  });

  it.each([
    [{ ips: 'x' }, 'prevResult.ips: must be a list'],
    [{ ips: [{}] }, 'prevResult.ips[0].address: must be a string, not missing'],
    [{ ips: [{ address: '10.0.0.1' }] }, 'prevResult.ips[0].address: must be an IP address in CIDR notation'],
    [{ ips: [{ address: '10.0.0.1/33' }] }, 'CIDR notation'],
    [{ ips: [{ version: '6', address: '10.0.0.1/32' }] }, 'prevResult.ips[0].version: is "6" but address'],
    [{ ips: [{ version: 4, address: '10.0.0.1/32' }] }, 'prevResult.ips[0].version: must be a string'],
    [
      { ips: [{ address: '10.0.0.1/32', interface: 3 }] },
      'prevResult.ips[0].interface: is 3 but there are only 0',
    ],
    [{ interfaces: [{ mac: 'x' }] }, 'prevResult.interfaces[0].name: must be a string'],
    [{ routes: [{ dst: 'nope' }] }, 'prevResult.routes[0].dst: must be a CIDR'],
    [{ dns: { nameservers: [1] } }, 'prevResult.dns.nameservers[0]: must be a string'],
    [[], 'prevResult: must be an object, not a list'],
  ])('rejects %j', (value, msg) => {
    try {
      decodeResult(value, '1.0.0', 'prevResult');
      expect.unreachable();
    } catch (e) {
      expect(isCniPluginError(e, 'invalid-config')).toBe(true);
      expect((e as Error).message).toContain(msg);
    }
  });

  it('rejects a legacy result with a family mismatch', () => {
    expect(() => decodeResult({ ip4: { ip: 'fd00::1/64' } }, '0.2.0', 'r')).toThrow(
      /r\.ip4\.ip: must be an IPv4 address/,
    );
  });
});
