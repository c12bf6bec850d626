/**
 * VxlanManager on FakeTunnelNet: the kernel state after each apply is asserted whole (device,
 * addresses, routes, neighbours, FDB), from the desired states the resolver produces.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { EncapInput } from '../calc/route-resolver.js';
import { block, encapPool, node } from '../calc/testing-internal/encap-resources.js';
import type { DataplaneDiff } from '../calc/types.js';
import { resolveVxlan, type VxlanConfig, vtepMacFor } from '../calc/vxlan-resolver.js';
import { FakeTunnelNet } from './testing-internal/fake-tunnel-net.js';
import { VxlanManager } from './vxlan-manager.js';

/** A diff that changes nothing but what a test adds to it. */
const NO_CHANGE: DataplaneDiff = {
  inSync: true,
  ipSetsUpdated: [],
  ipSetsRemoved: [],
  policiesUpdated: [],
  policiesRemoved: [],
  profilesUpdated: [],
  profilesRemoved: [],
  endpointsUpdated: [],
  endpointsRemoved: [],
  poolsUpdated: [],
  poolsRemoved: [],
};

const CFG: VxlanConfig = { vni: 4096, port: 4789, mtu: 0, hostMtu: 1500 };
const MAC_A = '66:07:02:c1:cc:60';
const MAC_B = '66:89:3a:22:7a:ac';
const MAC_C = '66:1a:b9:f1:6e:af';

function input(over: Partial<EncapInput> = {}): EncapInput {
  return {
    hostname: 'node-a',
    nodes: [
      node('node-a', '198.18.0.2/24', { vxlan: '198.19.0.0' }),
      node('node-b', '198.18.0.3/24', { vxlan: '198.19.0.64' }),
      node('node-c', '198.18.1.4/24', { vxlan: '198.19.0.128' }),
    ],
    pools: [encapPool('vx', '198.19.0.0/16', { vxlanMode: 'CrossSubnet' })],
    blocks: [
      block('198.19.0.0/26', 'node-a'),
      block('198.19.0.64/26', 'node-b'),
      block('198.19.0.128/26', 'node-c'),
    ],
    ...over,
  };
}

const PROGRAMMED = [
  'addr 198.18.0.2/24 dev eth0',
  'addr 198.19.0.0/32 dev vxlan.calico',
  `fdb ${MAC_B} dev vxlan.calico dst 198.18.0.3 permanent`,
  `fdb ${MAC_C} dev vxlan.calico dst 198.18.1.4 permanent`,
  'link eth0 mtu 1500 up',
  `link vxlan.calico mtu 1450 up vxlan id 4096 dstport 4789 local 198.18.0.2 dev eth0 address ${MAC_A}`,
  `neigh 198.19.0.128 dev vxlan.calico lladdr ${MAC_C} permanent`,
  `neigh 198.19.0.64 dev vxlan.calico lladdr ${MAC_B} permanent`,
  'route 198.19.0.128/26 via 198.19.0.128 dev vxlan.calico proto 80 onlink',
  'route 198.19.0.64/26 via 198.18.0.3 dev eth0 proto 80',
  'route blackhole 198.19.0.0/26 proto 80',
].sort();

describe('VxlanManager', () => {
  let net: FakeTunnelNet;
  let vm: VxlanManager;
  beforeEach(() => {
    net = new FakeTunnelNet();
    net.addUplink('eth0', '198.18.0.2/24');
    vm = new VxlanManager({ net, protocol: 80, workloadPrefixes: ['cali'] });
  });

  it('creates the device on the node’s interface and programs FDB, neighbours and routes; a second apply changes nothing', async () => {
    vm.setState(resolveVxlan(input(), CFG));
    const r = await vm.apply();
    expect(r?.device).toBe('created');
    expect(net.dump()).toEqual(PROGRAMMED);
    expect(net.sysctls.get('net.ipv4.conf.vxlan.calico.forwarding')).toBe('1');
    const changes = net.changes;
    expect(await vm.apply()).toEqual({
      device: 'unchanged',
      routesAdded: [],
      routesRemoved: [],
      neighboursSet: [],
      neighboursRemoved: [],
      fdbSet: [],
      fdbRemoved: [],
    });
    expect(net.changes).toBe(changes);
  });

  it('removes what is no longer wanted, repairs what was changed by hand, and leaves others’ routes alone', async () => {
    vm.setState(resolveVxlan(input(), CFG));
    await vm.apply();
    net.links.set('calia', { ...net.links.get('eth0')!, name: 'calia', index: 99 });
    await net.replaceRoute({ dst: '198.19.0.7/32', dev: 'calia', scope: 'link', proto: 80 });
    await net.replaceRoute({ dst: '198.51.100.0/24', gateway: '198.18.0.1', dev: 'eth0' });
    await net.replaceRoute({
      dst: '198.19.9.0/26',
      gateway: '198.19.0.9',
      dev: 'vxlan.calico',
      onlink: true,
      proto: 80,
    });
    await net.replaceNeighbour({ dst: '198.19.0.9', dev: 'vxlan.calico', lladdr: '66:00:00:00:00:09' });
    await net.replaceFdb({ mac: MAC_B, dev: 'vxlan.calico', dst: '198.18.0.99' });
    await net.delRoute({ dst: '198.19.0.0/26', type: 'blackhole' });

    // node-c goes away.
    const i = input();
    vm.setState(
      resolveVxlan(
        { ...i, nodes: i.nodes.filter((n) => n.metadata.name !== 'node-c'), blocks: i.blocks.slice(0, 2) },
        CFG,
      ),
    );
    const r = await vm.apply();
    expect(r).toMatchObject({
      routesAdded: ['blackhole 198.19.0.0/26'],
      routesRemoved: [
        '198.19.0.128/26 via 198.19.0.128 dev vxlan.calico onlink',
        '198.19.9.0/26 via 198.19.0.9 dev vxlan.calico onlink',
      ],
      neighboursRemoved: ['198.19.0.128', '198.19.0.9'],
      fdbSet: [`${MAC_B} dst 198.18.0.3`],
      fdbRemoved: [`${MAC_C} dst 198.18.1.4`],
    });
    expect(net.dump()).toEqual(
      [
        ...PROGRAMMED.filter((l) => !l.includes('198.19.0.128') && !l.includes('198.18.1.4')),
        'link calia mtu 1500 up',
        'route 198.19.0.7/32 dev calia scope link proto 80',
        'route 198.51.100.0/24 via 198.18.0.1 dev eth0 proto boot',
      ].sort(),
    );
  });

  it('recreates a device whose VNI or MAC differ and only updates the MTU and address otherwise', async () => {
    vm.setState(resolveVxlan(input(), CFG));
    await vm.apply();
    vm.setState(resolveVxlan(input(), { ...CFG, mtu: 1400 }));
    expect((await vm.apply())?.device).toBe('updated');
    expect(net.links.get('vxlan.calico')?.mtu).toBe(1400);
    await net.addAddr('vxlan.calico', '198.19.5.5/32');
    expect((await vm.apply())?.device).toBe('updated');
    expect(net.addrs.filter((a) => a.dev === 'vxlan.calico').map((a) => a.cidr)).toEqual(['198.19.0.0/32']);

    vm.setState(resolveVxlan(input(), { ...CFG, mtu: 1400, vni: 4097 }));
    const r = await vm.apply();
    expect(r?.device).toBe('recreated');
    expect(net.links.get('vxlan.calico')?.vxlan?.vni).toBe(4097);
    // Recreating dropped the routes, neighbours and FDB entries on the device; they are back.
    expect(net.dump().filter((l) => l.includes('vxlan.calico')).length).toBe(7);
  });

  it('VXLAN turned off: the device goes and so do the owned routes elsewhere', async () => {
    vm.setState(resolveVxlan(input(), CFG));
    await vm.apply();
    vm.setState(resolveVxlan(input({ pools: [encapPool('plain', '198.19.0.0/16', {})] }), CFG));
    const r = await vm.apply();
    expect(r?.device).toBe('removed');
    expect(net.dump()).toEqual(['addr 198.18.0.2/24 dev eth0', 'link eth0 mtu 1500 up']);
    expect((await vm.apply())?.device).toBe('absent');
  });

  it('before this node is a VTEP: no device, but same-subnet and blackhole routes are programmed', async () => {
    const i = input();
    vm.setState(resolveVxlan({ ...i, nodes: [node('node-a', '198.18.0.2/24'), ...i.nodes.slice(1)] }, CFG));
    await vm.apply();
    expect(net.dump()).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'link eth0 mtu 1500 up',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
  });

  it('as a dataplane manager: takes its family from a diff, programs it once, and retries a failure', async () => {
    const diff = { ...NO_CHANGE, vxlanV6: resolveVxlan(input(), CFG, 6) };
    vm.onUpdate(diff);
    await vm.completeDeferredWork();
    expect(net.dump()).toEqual(['addr 198.18.0.2/24 dev eth0', 'link eth0 mtu 1500 up']);

    vm.onUpdate({ ...diff, vxlan: resolveVxlan(input(), CFG) });
    await vm.completeDeferredWork();
    expect(net.dump()).toEqual(PROGRAMMED);
    // Nothing recorded since: the next call leaves a route deleted by hand to the resync timer.
    await net.delRoute({ dst: '198.19.0.0/26', type: 'blackhole' });
    await vm.completeDeferredWork();
    expect(net.dump()).not.toContain('route blackhole 198.19.0.0/26 proto 80');
    await vm.apply();
    expect(net.dump()).toEqual(PROGRAMMED);

    const i = input();
    const moved = [node('node-a', '198.18.0.22/24', { vxlan: '198.19.0.0' }), ...i.nodes.slice(1)];
    vm.onUpdate({ ...diff, vxlan: resolveVxlan({ ...i, nodes: moved }, CFG) });
    await expect(vm.completeDeferredWork()).rejects.toThrow("no interface holds this node's IP 198.18.0.22");
    expect(vm.dirty).toBe(true);
    await net.addAddr('eth0', '198.18.0.22/24');
    await vm.completeDeferredWork();
    expect(vm.dirty).toBe(false);
    expect(net.dump()).toContain(
      'link vxlan.calico mtu 1450 up vxlan id 4096 dstport 4789 local 198.18.0.22 dev eth0 address ' + MAC_A,
    );
  });

  it('fails, after programming what it can, when no interface holds the node IP', async () => {
    const i = input();
    vm.setState(
      resolveVxlan(
        { ...i, nodes: [node('node-a', '198.18.0.22/24', { vxlan: '198.19.0.0' }), ...i.nodes.slice(1)] },
        CFG,
      ),
    );
    await expect(vm.apply()).rejects.toThrow("no interface holds this node's IP 198.18.0.22");
    expect(net.dump()).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'link eth0 mtu 1500 up',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
  });

  it('IPv6: a second manager programs vxlan-v6.calico and IPv6 routes, and the IPv4 one leaves them alone', async () => {
    net.addUplink('eth1', 'fd00:18::2/64');
    const v6node = (name: string, v4: string, v6: string, tunnel6: string) => {
      const n = node(name, v4);
      return {
        ...n,
        spec: { ...n.spec, bgp: { ...n.spec.bgp, ipv6Address: v6 }, ipv6VXLANTunnelAddr: tunnel6 },
      };
    };
    const dual: EncapInput = {
      hostname: 'node-a',
      nodes: [
        v6node('node-a', '198.18.0.2/24', 'fd00:18::2/64', 'fd00:19::'),
        v6node('node-b', '198.18.0.3/24', 'fd00:18::3/64', 'fd00:19::40'),
      ],
      pools: [encapPool('v6', 'fd00:19::/64', { vxlanMode: 'Always' })],
      blocks: [block('fd00:19::/122', 'node-a'), block('fd00:19::40/122', 'node-b')],
    };
    const v6 = new VxlanManager({ net, protocol: 80, workloadPrefixes: ['cali'], family: 6 });
    v6.setState(resolveVxlan(dual, CFG, 6));
    expect((await v6.apply())?.device).toBe('created');
    const mac = (n: string) => resolveVxlan(dual, CFG, 6).fdb.find((f) => f.dst === n)?.mac;
    expect(net.dump().filter((l) => l.includes('vxlan-v6.calico') || l.includes('fd00:19::'))).toEqual(
      [
        'addr fd00:19::/128 dev vxlan-v6.calico',
        `fdb ${mac('fd00:18::3')} dev vxlan-v6.calico dst fd00:18::3 permanent`,
        `link vxlan-v6.calico mtu 1430 up vxlan id 4096 dstport 4789 local fd00:18::2 dev eth1 address ${vtepMacFor('node-a', 6)}`,
        `neigh fd00:19::40 dev vxlan-v6.calico lladdr ${mac('fd00:18::3')} permanent`,
        'route blackhole fd00:19::/122 proto 80',
        'route fd00:19::40/122 via fd00:19::40 dev vxlan-v6.calico proto 80 onlink',
      ].sort(),
    );
    expect(net.sysctls.get('net.ipv6.conf.vxlan-v6.calico.forwarding')).toBe('1');
    // IPv4 VXLAN off: its manager removes nothing of IPv6's.
    vm.setState(resolveVxlan(dual, CFG, 4));
    await vm.apply();
    expect(net.dump().filter((l) => l.includes('fd00:19::')).length).toBe(4);
    expect((await v6.apply())?.device).toBe('unchanged');
  });
});
