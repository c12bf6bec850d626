import { describe, expect, it } from 'vitest';
import {
  addrAddArgs,
  addrDelArgs,
  batchInput,
  bridgeAddArgs,
  failedBatchIndex,
  fdbArgs,
  ipipAddArgs,
  linkDelArgs,
  linkSetArgs,
  neighDelArgs,
  neighSetArgs,
  routeArgs,
  routeFamily,
  vethAddArgs,
  vxlanAddArgs,
} from './ip-commands.js';

const line = (args: string[]) => args.join(' ');

describe('link commands', () => {
  it('asks for an IPIP device by type, which loads the module (and with it tunl0)', () => {
    expect(line(ipipAddArgs({ name: 'tunl0' }))).toBe('link add tunl0 type ipip');
    expect(line(ipipAddArgs({ name: 'tunl0', mtu: 1480 }))).toBe('link add tunl0 mtu 1480 type ipip');
    expect(() => ipipAddArgs({ name: 'bad name' })).toThrow();
  });

  it('builds a Calico workload veth with the peer created in the pod namespace', () => {
    expect(
      line(
        vethAddArgs({
          name: 'cali12345678901',
          peerName: 'eth0',
          peerNetns: '/var/run/netns/cni-1',
          mac: 'EE:EE:EE:EE:EE:EE',
          mtu: 1440,
          numQueues: 2,
        }),
      ),
    ).toBe(
      'link add cali12345678901 address ee:ee:ee:ee:ee:ee mtu 1440 numtxqueues 2 numrxqueues 2 ' +
        'type veth peer name eth0 mtu 1440 numtxqueues 2 numrxqueues 2 netns /var/run/netns/cni-1',
    );
  });

  it('builds a minimal veth', () => {
    expect(line(vethAddArgs({ name: 'a', peerName: 'b', peerMac: '02:00:00:00:00:01' }))).toBe(
      'link add a type veth peer name b address 02:00:00:00:00:01',
    );
  });

  it('builds bridge and vxlan devices', () => {
    expect(line(bridgeAddArgs({ name: 'br0', mtu: 9000 }))).toBe('link add br0 mtu 9000 type bridge');
    expect(
      line(
        vxlanAddArgs({
          name: 'vxlan.calico',
          vni: 4096,
          port: 4789,
          local: '198.18.0.1',
          dev: 'eth0',
          mtu: 1450,
        }),
      ),
    ).toBe(
      'link add vxlan.calico mtu 1450 type vxlan id 4096 dstport 4789 local 198.18.0.1 dev eth0 nolearning',
    );
    expect(line(vxlanAddArgs({ name: 'vx', vni: 1, port: 8472, learning: true }))).toBe(
      'link add vx type vxlan id 1 dstport 8472 learning',
    );
  });

  it('puts several changes into one link set', () => {
    expect(line(linkSetArgs('eth0', { mtu: 1400, mac: '02:00:00:00:00:01', up: true }))).toBe(
      'link set dev eth0 mtu 1400 address 02:00:00:00:00:01 up',
    );
    expect(line(linkSetArgs('x', { name: 'y', master: null, netns: 'pod' }))).toBe(
      'link set dev x name y nomaster netns pod',
    );
    expect(line(linkSetArgs('x', { master: 'br0', up: false }))).toBe('link set dev x master br0 down');
    expect(line(linkDelArgs('cali1'))).toBe('link del dev cali1');
  });

  it('rejects bad input before running anything', () => {
    expect(() => vethAddArgs({ name: 'cali1234567890123', peerName: 'eth0' })).toThrow(
      /invalid interface name/,
    );
    expect(() => vethAddArgs({ name: 'a', peerName: 'b', mtu: -1 })).toThrow(/mtu must be/);
    expect(() => vxlanAddArgs({ name: 'v', vni: 1 << 24, port: 4789 })).toThrow(/vni/);
    expect(() => vxlanAddArgs({ name: 'v', vni: 1, port: 4789, local: '198.18.0.0/24' })).toThrow(
      /expected an address/,
    );
    expect(() => linkSetArgs('x', {})).toThrow(/no change/);
    expect(() => linkSetArgs('x', { mac: 'nope' })).toThrow(/not a MAC/);
  });
});

describe('address commands', () => {
  it('adds host prefixes and options', () => {
    expect(line(addrAddArgs('eth0', '198.18.0.5'))).toBe('addr add 198.18.0.5/32 dev eth0');
    expect(line(addrAddArgs('eth0', '2001:db8::5/128', { noDad: true }))).toBe(
      'addr add 2001:db8::5/128 dev eth0 nodad',
    );
    expect(line(addrAddArgs('lo', '198.18.0.1/8', { scope: 'host' }))).toBe(
      'addr add 198.18.0.1/8 dev lo scope host',
    );
    expect(line(addrDelArgs('eth0', '198.18.0.5/32'))).toBe('addr del 198.18.0.5/32 dev eth0');
    expect(() => addrAddArgs('eth0', '198.18.0.5', { scope: 'global host' })).toThrow(/invalid scope/);
  });
});

describe('route commands', () => {
  it('builds the routes of a Calico pod', () => {
    expect(line(routeArgs('add', { dst: '169.254.1.1', dev: 'eth0', scope: 'link' }))).toBe(
      'route add 169.254.1.1/32 dev eth0 scope link',
    );
    expect(line(routeArgs('add', { dst: 'default', gateway: '169.254.1.1', dev: 'eth0' }))).toBe(
      'route add 0.0.0.0/0 via 169.254.1.1 dev eth0',
    );
    expect(
      line(routeArgs('add', { dst: 'default', gateway: 'fe80::ecee:eeff:feee:eeee', dev: 'eth0' })),
    ).toBe('route add ::/0 via fe80::ecee:eeff:feee:eeee dev eth0');
    expect(line(routeArgs('replace', { dst: '198.18.0.5/32', dev: 'cali1', scope: 'link' }))).toBe(
      'route replace 198.18.0.5/32 dev cali1 scope link',
    );
  });

  it('writes every field in a fixed order', () => {
    expect(
      line(
        routeArgs('add', {
          dst: '198.18.4.0/26',
          gateway: '198.18.0.2',
          dev: 'vxlan.calico',
          proto: 80,
          metric: 5,
          table: 100,
          src: '198.18.0.1',
          onlink: true,
        }),
      ),
    ).toBe(
      'route add 198.18.4.0/26 via 198.18.0.2 dev vxlan.calico proto 80 metric 5 table 100 src 198.18.0.1 onlink',
    );
    expect(line(routeArgs('add', { dst: '198.18.8.0/24', type: 'blackhole', proto: 'bird' }))).toBe(
      'route add blackhole 198.18.8.0/24 proto bird',
    );
    expect(line(routeArgs('del', { dst: 'default', family: 6 }))).toBe('route del ::/0');
  });

  it('derives the family and refuses mixed ones', () => {
    expect(routeFamily({ dst: 'default' })).toBe(4);
    expect(routeFamily({ dst: 'default', src: '2001:db8::1' })).toBe(6);
    expect(() => routeArgs('add', { dst: '198.18.0.0/24', family: 6 })).toThrow(/not IPv6/);
    expect(() => routeArgs('add', { dst: '198.18.0.0/24', gateway: '198.18.0.0/24' })).toThrow(
      /expected an address/,
    );
  });
});

describe('neighbour and fdb commands', () => {
  it('builds neighbour entries', () => {
    expect(
      line(neighSetArgs('replace', { dst: '198.18.4.0', lladdr: '66:77:88:99:AA:BB', dev: 'vxlan.calico' })),
    ).toBe('neigh replace 198.18.4.0 lladdr 66:77:88:99:aa:bb dev vxlan.calico nud permanent');
    expect(line(neighSetArgs('add', { dst: '198.18.0.9', dev: 'eth0', state: 'noarp' }))).toBe(
      'neigh add 198.18.0.9 dev eth0 nud noarp',
    );
    expect(line(neighDelArgs({ dst: '198.18.0.9', dev: 'eth0' }))).toBe('neigh del 198.18.0.9 dev eth0');
  });

  it('builds VXLAN FDB entries for the bridge tool', () => {
    expect(
      line(fdbArgs('replace', { mac: '66:77:88:99:aa:bb', dev: 'vxlan.calico', dst: '198.18.0.2' })),
    ).toBe('fdb replace 66:77:88:99:aa:bb dev vxlan.calico dst 198.18.0.2 self permanent');
    expect(
      line(fdbArgs('del', { mac: '66:77:88:99:aa:bb', dev: 'vx', dst: '198.18.0.2', vni: 7, port: 4790 })),
    ).toBe('fdb del 66:77:88:99:aa:bb dev vx dst 198.18.0.2 vni 7 port 4790 self');
    expect(
      line(fdbArgs('add', { mac: '66:77:88:99:aa:bb', dev: 'br0', self: false, permanent: false })),
    ).toBe('fdb add 66:77:88:99:aa:bb dev br0');
  });
});

describe('batch input', () => {
  it('writes one command per line', () => {
    expect(
      batchInput([
        routeArgs('add', { dst: '169.254.1.1', dev: 'eth0', scope: 'link' }),
        ['link', 'set', 'eth0', 'up'],
      ]),
    ).toBe('route add 169.254.1.1/32 dev eth0 scope link\nlink set eth0 up\n');
  });

  it('refuses words the batch reader would split or cut', () => {
    expect(() => batchInput([['link', 'set', 'a b', 'up']])).toThrow(/cannot read/);
    expect(() => batchInput([['link', 'set', 'a#b', 'up']])).toThrow(/cannot read/);
    expect(() => batchInput([['link', '', 'up']])).toThrow(/cannot read/);
    expect(() => batchInput([[]])).toThrow(/empty/);
  });

  it('finds the failed command in the trailer', () => {
    expect(failedBatchIndex('RTNETLINK answers: File exists\nCommand failed -:2\n')).toBe(1);
    expect(failedBatchIndex('something else')).toBeUndefined();
  });
});
