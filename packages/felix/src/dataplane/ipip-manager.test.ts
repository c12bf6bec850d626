/**
 * IpipManager on FakeTunnelNet, whose IPIP behaves as the kernel's does (the module makes tunl0;
 * a request for tunl0 then fails `exists`; without the module "Unknown device type"; onlink routes
 * need their device up, other gateways a connected subnet). The kernel state after each apply is
 * asserted whole, from the desired states the resolver produces.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { type IpipConfig, resolveIpip } from '../calc/ipip-resolver.js';
import type { EncapInput } from '../calc/route-resolver.js';
import { block, encapPool, node } from '../calc/testing-internal/encap-resources.js';
import { resolveVxlan } from '../calc/vxlan-resolver.js';
import { IpipManager } from './ipip-manager.js';
import { FakeTunnelNet } from './testing-internal/fake-tunnel-net.js';
import { VxlanManager } from './vxlan-manager.js';

const CFG: IpipConfig = { mtu: 0, hostMtu: 1500 };

function input(mode: 'Always' | 'CrossSubnet', over: Partial<EncapInput> = {}): EncapInput {
  return {
    hostname: 'node-a',
    nodes: [
      node('node-a', '198.18.0.2/24', { ipip: '198.19.0.1' }),
      node('node-b', '198.18.0.3/24', { ipip: '198.19.0.65' }),
      node('node-c', '198.18.1.4/24', { ipip: '198.19.0.129' }),
    ],
    pools: [encapPool('ipip', '198.19.0.0/16', { ipipMode: mode })],
    blocks: [
      block('198.19.0.0/26', 'node-a'),
      block('198.19.0.64/26', 'node-b'),
      block('198.19.0.128/26', 'node-c'),
    ],
    ...over,
  };
}

describe('IpipManager', () => {
  let net: FakeTunnelNet;
  let im: IpipManager;
  beforeEach(() => {
    net = new FakeTunnelNet({ ipipModule: 'available' });
    net.addUplink('eth0', '198.18.0.2/24');
    im = new IpipManager({ net, protocol: 80, workloadPrefixes: ['cali'] });
  });

  it('Always: tunl0 from the module, MTU host − 20, the tunnel address /32, up; every remote block via its node over tunl0; a second apply changes nothing', async () => {
    im.setState(resolveIpip(input('Always'), CFG));
    expect((await im.apply())?.device).toBe('created');
    expect(net.dump()).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'addr 198.19.0.1/32 dev tunl0',
      'link eth0 mtu 1500 up',
      'link tunl0 mtu 1480 up ipip',
      'route 198.19.0.128/26 via 198.18.1.4 dev tunl0 proto 80 onlink',
      'route 198.19.0.64/26 via 198.18.0.3 dev tunl0 proto 80 onlink',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
    expect(net.sysctls.get('net.ipv4.conf.tunl0.forwarding')).toBe('1');
    const changes = net.changes;
    expect(await im.apply()).toEqual({ device: 'unchanged', routesAdded: [], routesRemoved: [] });
    expect(net.changes).toBe(changes);
  });

  it('CrossSubnet: a node on this subnet is routed to directly, one on another subnet over tunl0', async () => {
    im.setState(resolveIpip(input('CrossSubnet'), { mtu: 1400, hostMtu: 1500 }));
    await im.apply();
    expect(net.dump().filter((l) => l.startsWith('route') || l.startsWith('link tunl0'))).toEqual([
      'link tunl0 mtu 1400 up ipip',
      'route 198.19.0.128/26 via 198.18.1.4 dev tunl0 proto 80 onlink',
      'route 198.19.0.64/26 via 198.18.0.3 dev eth0 proto 80',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
  });

  it('a tunl0 already there (module loaded) is taken as it is and fixed: MTU, stray address, down', async () => {
    net = new FakeTunnelNet({ ipipModule: 'loaded' });
    net.addUplink('eth0', '198.18.0.2/24');
    await net.addAddr('tunl0', '198.18.99.1/32');
    im = new IpipManager({ net, protocol: 80, workloadPrefixes: ['cali'] });
    im.setState(resolveIpip(input('Always'), CFG));
    expect((await im.apply())?.device).toBe('updated');
    expect(net.dump().filter((l) => l.includes('tunl0'))).toEqual([
      'addr 198.19.0.1/32 dev tunl0',
      'link tunl0 mtu 1480 up ipip',
      'route 198.19.0.128/26 via 198.18.1.4 dev tunl0 proto 80 onlink',
      'route 198.19.0.64/26 via 198.18.0.3 dev tunl0 proto 80 onlink',
    ]);
  });

  it('repairs a tunl0 set down by hand (the kernel dropped its routes) and a route changed by hand; leaves BIRD’s routes alone', async () => {
    im.setState(resolveIpip(input('Always'), CFG));
    await im.apply();
    await net.setLink('tunl0', { up: false });
    expect(net.dump().filter((l) => l.includes('dev tunl0 proto'))).toEqual([]);
    await net.replaceRoute({ dst: '198.19.0.0/26', gateway: '198.18.0.9', dev: 'eth0', proto: 80 });
    await net.replaceRoute({ dst: '198.20.0.0/26', gateway: '198.18.0.3', dev: 'eth0', proto: 'bird' });
    await im.apply();
    expect(net.dump().filter((l) => l.startsWith('route'))).toEqual([
      'route 198.19.0.128/26 via 198.18.1.4 dev tunl0 proto 80 onlink',
      'route 198.19.0.64/26 via 198.18.0.3 dev tunl0 proto 80 onlink',
      'route 198.20.0.0/26 via 198.18.0.3 dev eth0 proto bird',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
  });

  it('no tunnel address yet: no device and no tunnel route, only what needs neither', async () => {
    const i = input('CrossSubnet');
    const nodes = i.nodes.map((n) => (n.metadata.name === 'node-a' ? node('node-a', '198.18.0.2/24') : n));
    im.setState(resolveIpip({ ...i, nodes }, CFG));
    expect((await im.apply())?.device).toBe('absent');
    expect(net.dump()).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'link eth0 mtu 1500 up',
      'route 198.19.0.64/26 via 198.18.0.3 dev eth0 proto 80',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
  });

  it('IPIP turned off removes the routes and keeps tunl0, which the kernel would not delete', async () => {
    im.setState(resolveIpip(input('Always'), CFG));
    await im.apply();
    im.setState(resolveIpip(input('Always', { pools: [encapPool('p', '198.19.0.0/16', {})] }), CFG));
    const r = await im.apply();
    expect(r?.routesRemoved).toHaveLength(3);
    expect(net.dump()).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'addr 198.19.0.1/32 dev tunl0',
      'link eth0 mtu 1500 up',
      'link tunl0 mtu 1480 up ipip',
    ]);
    await net.deleteLink('tunl0');
    expect(net.links.has('tunl0')).toBe(true);
  });

  it('a kernel without the ipip module: the failure names the module, and routes that need no device are still programmed', async () => {
    net = new FakeTunnelNet({ ipipModule: 'absent' });
    net.addUplink('eth0', '198.18.0.2/24');
    im = new IpipManager({ net, protocol: 80, workloadPrefixes: ['cali'] });
    im.setState(resolveIpip(input('CrossSubnet'), CFG));
    await expect(im.apply()).rejects.toThrow(
      /device tunl0: the kernel cannot make an IPIP device \(is the ipip module available\?\): Error: Unknown device type\./,
    );
    expect(net.dump()).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'link eth0 mtu 1500 up',
      'route 198.19.0.64/26 via 198.18.0.3 dev eth0 proto 80',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
  });

  it('shares protocol-80 routes with the VXLAN manager: neither removes what the other wants', async () => {
    const vxPool = encapPool('vx', '198.19.128.0/17', { vxlanMode: 'Always' });
    const ipPool = encapPool('ipip', '198.19.0.0/17', { ipipMode: 'Always' });
    const i = input('Always', {
      nodes: [
        node('node-a', '198.18.0.2/24', { ipip: '198.19.0.1', vxlan: '198.19.128.0' }),
        node('node-b', '198.18.0.3/24', { ipip: '198.19.0.65', vxlan: '198.19.128.64' }),
      ],
      pools: [ipPool, vxPool],
      blocks: [
        block('198.19.0.0/26', 'node-a'),
        block('198.19.0.64/26', 'node-b'),
        block('198.19.128.0/26', 'node-a'),
        block('198.19.128.64/26', 'node-b'),
      ],
    });
    const vm = new VxlanManager({
      net,
      protocol: 80,
      workloadPrefixes: ['cali'],
      claimedElsewhere: (dst) => im.wants(dst),
    });
    im = new IpipManager({
      net,
      protocol: 80,
      workloadPrefixes: ['cali'],
      claimedElsewhere: (dst) => vm.state?.routes.some((r) => r.dst === dst) ?? false,
    });
    im.setState(resolveIpip(i, CFG));
    vm.setState(resolveVxlan(i, { vni: 4096, port: 4789, mtu: 0, hostMtu: 1500 }));
    await im.apply();
    await vm.apply();
    // Each applied again changes nothing: neither took the other's routes for stale ones.
    expect(await im.apply()).toEqual({ device: 'unchanged', routesAdded: [], routesRemoved: [] });
    expect((await vm.apply())?.routesRemoved).toEqual([]);
    expect(net.dump().filter((l) => l.startsWith('route'))).toEqual([
      'route 198.19.0.64/26 via 198.18.0.3 dev tunl0 proto 80 onlink',
      'route 198.19.128.64/26 via 198.19.128.64 dev vxlan.calico proto 80 onlink',
      'route blackhole 198.19.0.0/26 proto 80',
      'route blackhole 198.19.128.0/26 proto 80',
    ]);
  });
});
