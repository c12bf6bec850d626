/** The IPIP resolver as whole states: tunl0 and the routes Felix would program for IPIP pools. */
import { describe, expect, it } from 'vitest';
import { hostAddresses, resolveIpip } from './ipip-resolver.js';
import type { EncapInput } from './route-resolver.js';
import { block, encapPool, node } from './testing-internal/encap-resources.js';

const CFG = { mtu: 0, hostMtu: 1500 };

function input(mode: 'Always' | 'CrossSubnet'): EncapInput {
  return {
    hostname: 'node-a',
    nodes: [
      node('node-a', '198.18.0.2/24', { ipip: '198.19.0.1' }),
      node('node-b', '198.18.0.3/24', { ipip: '198.19.0.65' }),
      node('node-c', '198.18.1.3/24'),
    ],
    pools: [encapPool('ipip', '198.19.0.0/16', { ipipMode: mode })],
    blocks: [
      block('198.19.0.0/26', 'node-a'),
      block('198.19.0.64/26', 'node-b', [['198.19.0.70/32', 'node-c']]),
      block('198.19.0.128/26', 'node-c'),
    ],
  };
}

describe('resolveIpip', () => {
  it('Always: tunl0 with the node’s IPIP address, remote blocks via the node IP onlink, local blackholes', () => {
    expect(resolveIpip(input('Always'), CFG)).toEqual({
      enabled: true,
      device: { name: 'tunl0', mtu: 1480, tunnelAddress: '198.19.0.1' },
      routes: [
        { kind: 'blackhole', dst: '198.19.0.0/26' },
        { kind: 'tunnel', dst: '198.19.0.64/26', gateway: '198.18.0.3', dev: 'tunl0' },
        { kind: 'tunnel', dst: '198.19.0.70/32', gateway: '198.18.1.3', dev: 'tunl0' },
        { kind: 'tunnel', dst: '198.19.0.128/26', gateway: '198.18.1.3', dev: 'tunl0' },
      ],
      waiting: [],
    });
  });

  it('CrossSubnet: same-subnet nodes are routed to without encapsulation', () => {
    expect(resolveIpip(input('CrossSubnet'), { mtu: 1400, hostMtu: 1500 })).toEqual({
      enabled: true,
      device: { name: 'tunl0', mtu: 1400, tunnelAddress: '198.19.0.1' },
      routes: [
        { kind: 'blackhole', dst: '198.19.0.0/26' },
        { kind: 'same-subnet', dst: '198.19.0.64/26', gateway: '198.18.0.3' },
        { kind: 'tunnel', dst: '198.19.0.70/32', gateway: '198.18.1.3', dev: 'tunl0' },
        { kind: 'tunnel', dst: '198.19.0.128/26', gateway: '198.18.1.3', dev: 'tunl0' },
      ],
      waiting: [],
    });
  });

  it('a node without an address is waited for; no IPIP pool means off, unless configured on', () => {
    const i = input('Always');
    const s = resolveIpip({ ...i, nodes: i.nodes.filter((n) => n.metadata.name !== 'node-c') }, CFG);
    expect(s.routes.map((r) => r.dst)).toEqual(['198.19.0.0/26', '198.19.0.64/26']);
    expect(s.waiting).toEqual([
      'node node-c (route 198.19.0.70/32) has no IPv4 address yet',
      'node node-c (route 198.19.0.128/26) has no IPv4 address yet',
    ]);
    const plain = { ...i, pools: [encapPool('p', '198.19.0.0/16', {})] };
    expect(resolveIpip(plain, CFG)).toEqual({ enabled: false, routes: [], waiting: [] });
    expect(resolveIpip(plain, { ...CFG, enabled: true })).toEqual({
      enabled: true,
      device: { name: 'tunl0', mtu: 1480, tunnelAddress: '198.19.0.1' },
      routes: [],
      waiting: [],
    });
  });

  it('without its own tunnel address the node has no device to route through: only same-subnet and blackhole routes', () => {
    const i = input('CrossSubnet');
    const nodes = i.nodes.map((n) => (n.metadata.name === 'node-a' ? node('node-a', '198.18.0.2/24') : n));
    expect(resolveIpip({ ...i, nodes }, CFG)).toEqual({
      enabled: true,
      device: { name: 'tunl0', mtu: 1480 },
      routes: [
        { kind: 'blackhole', dst: '198.19.0.0/26' },
        { kind: 'same-subnet', dst: '198.19.0.64/26', gateway: '198.18.0.3' },
      ],
      waiting: ['this node has no IPIP tunnel address (ipv4IPIPTunnelAddr) yet'],
    });
  });

  it('routes left to BIRD (programClusterRoutes not Enabled): the device only', () => {
    expect(resolveIpip(input('Always'), { ...CFG, programRoutes: false })).toEqual({
      enabled: true,
      device: { name: 'tunl0', mtu: 1480, tunnelAddress: '198.19.0.1' },
      routes: [],
      waiting: [],
    });
  });

  it('does not touch VXLAN pools', () => {
    const i = input('Always');
    const s = resolveIpip(
      {
        ...i,
        pools: [
          ...i.pools.map((p) => ({ ...p, spec: { ...p.spec, cidr: '198.19.0.0/25' } })),
          encapPool('vx', '198.19.0.128/25', { vxlanMode: 'Always' }),
        ],
      },
      CFG,
    );
    expect(s.routes.map((r) => r.dst)).toEqual(['198.19.0.0/26', '198.19.0.64/26', '198.19.0.70/32']);
  });
});

describe('hostAddresses', () => {
  it('is every node’s IPv4 address, sorted numerically, once each, skipping nodes without one', () => {
    expect(
      hostAddresses([
        node('node-c', '198.18.1.3/24'),
        node('node-a', '198.18.0.10/24'),
        node('node-b', '198.18.0.9/24'),
        node('node-d', '198.18.0.9/24'),
        node('node-e', undefined),
      ]),
    ).toEqual(['198.18.0.9', '198.18.0.10', '198.18.1.3']);
  });
});
