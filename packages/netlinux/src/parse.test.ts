import { describe, expect, it } from 'vitest';
import {
  parseAddrs,
  parseFdb,
  parseJsonArray,
  parseLinks,
  parseNeighbours,
  parseNetnsList,
  parseRoutes,
} from './parse.js';

// Output captured from iproute2 6.1 on a 6.x kernel (trimmed of fields netlinux does not read).
const LINKS = JSON.stringify([
  {
    ifindex: 1,
    ifname: 'lo',
    flags: ['LOOPBACK'],
    mtu: 65536,
    operstate: 'DOWN',
    link_type: 'loopback',
    address: '00:00:00:00:00:00',
  },
  {
    ifindex: 2,
    link_index: 2,
    ifname: 'cali1',
    flags: ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'],
    mtu: 1440,
    operstate: 'UP',
    address: 'EE:EE:EE:EE:EE:EE',
    link_netnsid: 0,
    linkinfo: { info_kind: 'veth' },
  },
  {
    ifindex: 6,
    link: 'v3',
    ifname: 'v2',
    flags: ['BROADCAST', 'MULTICAST', 'M-DOWN'],
    mtu: 1500,
    master: 'br0',
    operstate: 'DOWN',
    address: '6a:33:da:72:5a:c8',
    linkinfo: { info_kind: 'veth' },
  },
  {
    ifindex: 3,
    ifname: 'vx0',
    flags: ['BROADCAST', 'MULTICAST'],
    mtu: 1500,
    operstate: 'DOWN',
    address: '72:ee:2d:00:1e:30',
    linkinfo: {
      info_kind: 'vxlan',
      info_data: {
        id: 42,
        local: '198.18.0.1',
        port_range: { low: 0, high: 0 },
        port: 4789,
        learning: false,
        ttl: 0,
      },
    },
  },
]);

describe('parseLinks', () => {
  it('reads devices, their kind, peer and vxlan details', () => {
    const [lo, cali, v2, vx] = parseLinks(LINKS);
    expect(lo).toEqual({
      name: 'lo',
      index: 1,
      mtu: 65536,
      mac: '00:00:00:00:00:00',
      operstate: 'DOWN',
      kind: '',
      flags: ['LOOPBACK'],
      up: false,
    });
    expect(cali).toMatchObject({
      name: 'cali1',
      kind: 'veth',
      mac: 'ee:ee:ee:ee:ee:ee',
      up: true,
      peerIndex: 2,
      peerNetnsId: 0,
    });
    expect(v2).toMatchObject({ name: 'v2', master: 'br0', up: false });
    expect(v2!.peerIndex).toBeUndefined();
    expect(vx!.vxlan).toEqual({ vni: 42, port: 4789, local: '198.18.0.1', learning: false });
  });

  it('treats empty output as no devices and fails on garbage', () => {
    expect(parseLinks('')).toEqual([]);
    expect(parseLinks('[]\n')).toEqual([]);
    expect(() => parseLinks('{"ifname":"x"}')).toThrow(/not an array/);
    expect(() => parseLinks('[{')).toThrow(/cannot parse link JSON/);
    expect(() => parseLinks('[{"ifindex":1}]')).toThrow(/lacks "ifname"/);
  });
});

describe('parseAddrs', () => {
  it('flattens addr_info with flags', () => {
    const out = JSON.stringify([
      {
        ifindex: 3,
        ifname: 'v0',
        addr_info: [
          { family: 'inet', local: '198.18.0.1', prefixlen: 24, scope: 'global', label: 'v0' },
          { family: 'inet6', local: '2001:db8::1', prefixlen: 128, scope: 'global', nodad: true },
          {
            family: 'inet6',
            local: 'fe80::109c:8eff:fe33:223e',
            prefixlen: 64,
            scope: 'link',
            tentative: true,
          },
        ],
      },
      { ifindex: 1, ifname: 'lo', addr_info: [] },
    ]);
    expect(parseAddrs(out)).toEqual([
      {
        dev: 'v0',
        index: 3,
        family: 4,
        cidr: '198.18.0.1/24',
        address: '198.18.0.1',
        prefixLen: 24,
        scope: 'global',
        noDad: false,
        tentative: false,
      },
      {
        dev: 'v0',
        index: 3,
        family: 6,
        cidr: '2001:db8::1/128',
        address: '2001:db8::1',
        prefixLen: 128,
        scope: 'global',
        noDad: true,
        tentative: false,
      },
      {
        dev: 'v0',
        index: 3,
        family: 6,
        cidr: 'fe80::109c:8eff:fe33:223e/64',
        address: 'fe80::109c:8eff:fe33:223e',
        prefixLen: 64,
        scope: 'link',
        noDad: false,
        tentative: true,
      },
    ]);
  });
});

describe('parseRoutes', () => {
  // `ip -json route show table all`: both families, several tables, multipath, blackhole.
  const ALL = JSON.stringify([
    {
      dst: '198.18.11.0/24',
      dev: 'v0',
      table: '100',
      scope: 'link',
      prefsrc: '198.18.0.1',
      metric: 5,
      flags: [],
    },
    { dst: '198.18.0.0/24', dev: 'v0', protocol: 'kernel', scope: 'link', prefsrc: '198.18.0.1', flags: [] },
    {
      dst: '198.18.9.0/24',
      flags: [],
      nexthops: [
        { gateway: '198.18.0.2', dev: 'v0', weight: 1, flags: [] },
        { gateway: '198.18.0.3', dev: 'v0', weight: 2, flags: ['onlink'] },
      ],
    },
    { type: 'blackhole', dst: '198.18.10.0/24', protocol: '80', flags: [] },
    { dst: '198.18.7.0/24', gateway: '198.18.5.1', dev: 'vx0', flags: ['onlink'] },
    {
      type: 'local',
      dst: '198.18.0.1',
      dev: 'v0',
      table: 'local',
      protocol: 'kernel',
      scope: 'host',
      prefsrc: '198.18.0.1',
      flags: [],
    },
    { dst: 'default', gateway: '169.254.1.1', dev: 'eth0', flags: [] },
    {
      dst: 'default',
      gateway: 'fe80::ecee:eeff:feee:eeee',
      dev: 'eth0',
      metric: 1024,
      flags: ['linkdown'],
      pref: 'medium',
    },
    { dst: 'default', dev: 'eth0', metric: 1024, flags: [], pref: 'medium' },
    { dst: '2001:db8::1', dev: 'v0', protocol: 'kernel', metric: 256, flags: [], pref: 'medium' },
  ]);

  it('normalises destinations and reads every field', () => {
    const r = parseRoutes(ALL);
    expect(r[0]).toEqual({
      family: 4,
      dst: '198.18.11.0/24',
      dev: 'v0',
      table: '100',
      scope: 'link',
      src: '198.18.0.1',
      metric: 5,
      proto: 'boot',
    });
    expect(r[1]).toMatchObject({ dst: '198.18.0.0/24', proto: 'kernel' });
    expect(r[2]).toEqual({
      family: 4,
      dst: '198.18.9.0/24',
      proto: 'boot',
      nexthops: [
        { gateway: '198.18.0.2', dev: 'v0', weight: 1 },
        { gateway: '198.18.0.3', dev: 'v0', weight: 2, onlink: true },
      ],
    });
    expect(r[3]).toEqual({ family: 4, dst: '198.18.10.0/24', type: 'blackhole', proto: '80' });
    expect(r[4]).toMatchObject({ gateway: '198.18.5.1', onlink: true });
    expect(r[5]).toMatchObject({ dst: '198.18.0.1/32', type: 'local', table: 'local' });
    expect(r[6]).toMatchObject({ family: 4, dst: '0.0.0.0/0', gateway: '169.254.1.1' });
    expect(r[7]).toMatchObject({
      family: 6,
      dst: '::/0',
      gateway: 'fe80::ecee:eeff:feee:eeee',
      metric: 1024,
    });
    // No gateway: the IPv6-only `pref` attribute tells the family.
    expect(r[8]).toMatchObject({ family: 6, dst: '::/0', dev: 'eth0' });
    expect(r[9]).toMatchObject({ family: 6, dst: '2001:db8::1/128' });
  });

  it('trusts the family given for a filtered listing', () => {
    expect(parseRoutes(JSON.stringify([{ dst: 'default', dev: 'eth0', flags: [] }]), 6)[0]!.dst).toBe('::/0');
  });

  it('fills in the device a dev filter left out', () => {
    const out = JSON.stringify([
      { dst: '198.18.0.0/24', protocol: 'kernel', scope: 'link', prefsrc: '198.18.0.1', flags: ['linkdown'] },
    ]);
    expect(parseRoutes(out, undefined, 'v0')[0]).toMatchObject({ dst: '198.18.0.0/24', dev: 'v0' });
    expect(
      parseNeighbours('[{"dst":"198.18.0.9","lladdr":"66:77:88:99:aa:bc","state":["PERMANENT"]}]', 'v0')[0]!
        .dev,
    ).toBe('v0');
    expect(() => parseNeighbours('[{"dst":"198.18.0.9","state":["PERMANENT"]}]')).toThrow(/lacks "dev"/);
  });

  it('reads a gateway given as RTA_VIA', () => {
    const r = parseRoutes(
      JSON.stringify([
        { dst: '198.18.0.0/24', via: { family: 'inet6', host: 'fe80::1' }, dev: 'e', flags: [] },
      ]),
    );
    expect(r[0]!.gateway).toBe('fe80::1');
  });
});

describe('parseNeighbours', () => {
  it('reads state, lladdr and null-valued flags', () => {
    const out = JSON.stringify([
      { dst: '198.18.0.3', dev: 'v0', state: ['INCOMPLETE'] },
      { dst: '198.18.0.9', dev: 'v0', lladdr: '66:77:88:99:AA:BC', router: null, state: ['PERMANENT'] },
      { dst: '2001:db8::8', dev: 'v0', proxy: null },
    ]);
    expect(parseNeighbours(out)).toEqual([
      { family: 4, dst: '198.18.0.3', dev: 'v0', state: ['incomplete'], router: false, proxy: false },
      {
        family: 4,
        dst: '198.18.0.9',
        dev: 'v0',
        lladdr: '66:77:88:99:aa:bc',
        state: ['permanent'],
        router: true,
        proxy: false,
      },
      { family: 6, dst: '2001:db8::8', dev: 'v0', state: [], router: false, proxy: true },
    ]);
  });
});

describe('parseFdb', () => {
  it('reads entries with and without ifname', () => {
    const all = JSON.stringify([
      { mac: '33:33:00:00:00:01', ifname: 'v1', flags: ['self'], state: 'permanent' },
      {
        mac: '66:77:88:99:aa:bb',
        ifname: 'vx0',
        dst: '198.18.0.2',
        port: 4790,
        vni: 7,
        flags: ['self'],
        state: 'permanent',
      },
    ]);
    expect(parseFdb(all)[1]).toEqual({
      mac: '66:77:88:99:aa:bb',
      dev: 'vx0',
      dst: '198.18.0.2',
      port: 4790,
      vni: 7,
      flags: ['self'],
      state: 'permanent',
    });
    const filtered = JSON.stringify([
      { mac: '66:77:88:99:aa:bb', dst: '198.18.0.2', flags: ['self'], state: 'permanent' },
    ]);
    expect(parseFdb(filtered, 'vx0')[0]!.dev).toBe('vx0');
  });
});

describe('parseNetnsList', () => {
  it('reads names and ids', () => {
    expect(parseNetnsList('[{"name":"a"},{"name":"b","id":3}]')).toEqual([
      { name: 'a' },
      { name: 'b', id: 3 },
    ]);
    expect(parseNetnsList('')).toEqual([]);
  });

  it('parseJsonArray refuses non-objects', () => {
    expect(() => parseJsonArray('[1,2]', 'x')).toThrow(/not an array of objects/);
  });
});
