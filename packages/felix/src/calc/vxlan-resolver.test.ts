/**
 * The VXLAN resolver as whole states: from Nodes, IPPools and IPAM blocks to the device, routes,
 * neighbours and FDB entries one node should have, and how they change when the inputs do.
 */
import { describe, expect, it } from 'vitest';
import { blockRoutesOf, type EncapInput, encapRouteProtocol } from './route-resolver.js';
import { block, encapPool, node } from './testing-internal/encap-resources.js';
import { resolveVxlan, type VxlanConfig, vtepMacFor } from './vxlan-resolver.js';

const CFG: VxlanConfig = { vni: 4096, port: 4789, mtu: 0, hostMtu: 1500 };
const MAC_A = '66:07:02:c1:cc:60'; // 0x66 + SHA-1("node-a")[0:5]
const MAC_B = '66:89:3a:22:7a:ac'; // 0x66 + SHA-1("node-b")[0:5]

function twoNodes(extra: Partial<EncapInput> = {}): EncapInput {
  return {
    hostname: 'node-a',
    nodes: [
      node('node-a', '198.18.0.2/24', { vxlan: '198.19.0.0' }),
      node('node-b', '198.18.0.3/24', { vxlan: '198.19.0.64' }),
    ],
    pools: [encapPool('vx', '198.19.0.0/16', { vxlanMode: 'Always' })],
    blocks: [block('198.19.0.0/26', 'node-a'), block('198.19.0.64/26', 'node-b')],
    ...extra,
  };
}

describe('vtepMacFor', () => {
  it('is 0x66 followed by the first five bytes of SHA-1 of the node name (IPv6: name + "-v6")', () => {
    expect(vtepMacFor('node-a')).toBe(MAC_A);
    expect(vtepMacFor('node-b')).toBe(MAC_B);
    expect(vtepMacFor('node-a', 6)).toBe('66:d4:d5:51:3d:42');
  });
});

describe('resolveVxlan', () => {
  it('Always: a device for this node, and per remote node a route via its VTEP, a neighbour and an FDB entry', () => {
    expect(resolveVxlan(twoNodes(), CFG)).toEqual({
      enabled: true,
      device: {
        name: 'vxlan.calico',
        vni: 4096,
        port: 4789,
        mtu: 1450,
        mac: MAC_A,
        parentAddress: '198.18.0.2',
        tunnelAddress: '198.19.0.0',
      },
      routes: [
        { kind: 'blackhole', dst: '198.19.0.0/26' },
        { kind: 'tunnel', dst: '198.19.0.64/26', gateway: '198.19.0.64', dev: 'vxlan.calico' },
      ],
      neighbours: [{ dst: '198.19.0.64', lladdr: MAC_B }],
      fdb: [{ mac: MAC_B, dst: '198.18.0.3' }],
      allowedSources: ['198.18.0.3'],
      waiting: [],
    });
  });

  it('uses spec.vxlanTunnelMACAddr when a node has one, and the configured MTU, VNI and port', () => {
    const input = twoNodes();
    const s = resolveVxlan(
      {
        ...input,
        nodes: [
          node('node-a', '198.18.0.2/24', { vxlan: '198.19.0.0', mac: '66:00:00:00:00:0A' }),
          node('node-b', '198.18.0.3/24', { vxlan: '198.19.0.64', mac: '66:00:00:00:00:0b' }),
        ],
      },
      { ...CFG, mtu: 1400, vni: 7, port: 8472 },
    );
    expect(s.device).toMatchObject({ mac: '66:00:00:00:00:0a', mtu: 1400, vni: 7, port: 8472 });
    expect(s.neighbours).toEqual([{ dst: '198.19.0.64', lladdr: '66:00:00:00:00:0b' }]);
    expect(s.fdb).toEqual([{ mac: '66:00:00:00:00:0b', dst: '198.18.0.3' }]);
  });

  it('CrossSubnet: a node in this node’s subnet is routed to directly, one elsewhere through the tunnel', () => {
    const s = resolveVxlan(
      twoNodes({
        nodes: [
          node('node-a', '198.18.0.2/24', { vxlan: '198.19.0.0' }),
          node('node-b', '198.18.0.3/24', { vxlan: '198.19.0.64' }),
          node('node-c', '198.18.1.3/24', { vxlan: '198.19.0.128' }),
        ],
        pools: [encapPool('vx', '198.19.0.0/16', { vxlanMode: 'CrossSubnet' })],
        blocks: [
          block('198.19.0.0/26', 'node-a'),
          block('198.19.0.64/26', 'node-b'),
          block('198.19.0.128/26', 'node-c'),
        ],
      }),
      CFG,
    );
    expect(s.routes).toEqual([
      { kind: 'blackhole', dst: '198.19.0.0/26' },
      { kind: 'same-subnet', dst: '198.19.0.64/26', gateway: '198.18.0.3' },
      { kind: 'tunnel', dst: '198.19.0.128/26', gateway: '198.19.0.128', dev: 'vxlan.calico' },
    ]);
    // Every VTEP is still known at layer 2, as upstream programs them all.
    expect(s.neighbours.map((n) => n.dst)).toEqual(['198.19.0.64', '198.19.0.128']);
  });

  it('the subnet comes from this node’s own prefix: a /32 node address makes nothing same-subnet', () => {
    const s = resolveVxlan(
      twoNodes({
        nodes: [
          node('node-a', '198.18.0.2/32', { vxlan: '198.19.0.0' }),
          node('node-b', '198.18.0.3/24', { vxlan: '198.19.0.64' }),
        ],
        pools: [encapPool('vx', '198.19.0.0/16', { vxlanMode: 'CrossSubnet' })],
      }),
      CFG,
    );
    expect(s.routes[1]).toEqual({
      kind: 'tunnel',
      dst: '198.19.0.64/26',
      gateway: '198.19.0.64',
      dev: 'vxlan.calico',
    });
  });

  it('waits for VTEPs: no device or tunnel route before this node has a tunnel address', () => {
    const s = resolveVxlan(
      twoNodes({
        nodes: [node('node-a', '198.18.0.2/24'), node('node-b', '198.18.0.3/24', { vxlan: '198.19.0.64' })],
      }),
      CFG,
    );
    expect(s.device).toBeUndefined();
    expect(s.routes).toEqual([{ kind: 'blackhole', dst: '198.19.0.0/26' }]);
    expect(s.neighbours).toEqual([]);
    expect(s.fdb).toEqual([]);
    // The other node's VTEP may already send: its packets are allowed from the start.
    expect(s.allowedSources).toEqual(['198.18.0.3']);
    expect(s.waiting).toEqual(['this node (node-a) has no VXLAN tunnel address or node IP yet']);
  });

  it('a remote node without a tunnel address gets no route yet, and says so', () => {
    const s = resolveVxlan(
      twoNodes({
        nodes: [node('node-a', '198.18.0.2/24', { vxlan: '198.19.0.0' }), node('node-b', '198.18.0.3/24')],
      }),
      CFG,
    );
    expect(s.routes).toEqual([{ kind: 'blackhole', dst: '198.19.0.0/26' }]);
    expect(s.neighbours).toEqual([]);
    expect(s.waiting).toEqual(['node node-b (route 198.19.0.64/26) has no VTEP yet']);
  });

  it('a node address from spec.addresses (InternalIP) serves when there is no BGP address', () => {
    const s = resolveVxlan(
      twoNodes({
        nodes: [
          node('node-a', '198.18.0.2/24', { vxlan: '198.19.0.0' }),
          node('node-b', undefined, {
            vxlan: '198.19.0.64',
            addresses: [{ address: '198.18.0.3', type: 'InternalIP' }],
          }),
        ],
      }),
      CFG,
    );
    expect(s.fdb).toEqual([{ mac: MAC_B, dst: '198.18.0.3' }]);
  });

  it('a borrowed address is routed to its holder; a borrowed remote tunnel address is on the device', () => {
    const s = resolveVxlan(
      twoNodes({
        nodes: [
          node('node-a', '198.18.0.2/24', { vxlan: '198.19.0.0' }),
          node('node-b', '198.18.0.3/24', { vxlan: '198.19.0.5' }),
        ],
        blocks: [
          block('198.19.0.0/26', 'node-a', [
            ['198.19.0.5/32', 'node-b'],
            ['198.19.0.6/32', 'node-b'],
          ]),
        ],
      }),
      CFG,
    );
    expect(s.routes).toEqual([
      { kind: 'blackhole', dst: '198.19.0.0/26' },
      { kind: 'device', dst: '198.19.0.5/32', dev: 'vxlan.calico' },
      { kind: 'tunnel', dst: '198.19.0.6/32', gateway: '198.19.0.5', dev: 'vxlan.calico' },
    ]);
  });

  it('blocks outside VXLAN pools, IPv6 blocks and blocks without an owner are left to others', () => {
    const s = resolveVxlan(
      twoNodes({
        pools: [
          encapPool('vx', '198.19.0.0/24', { vxlanMode: 'Always' }),
          encapPool('plain', '198.19.1.0/24', {}),
        ],
        blocks: [
          block('198.19.0.0/26', 'node-a'),
          block('198.19.0.64/26', 'node-b'),
          block('198.19.1.0/26', 'node-b'),
          block('198.19.0.128/26', undefined),
          block('fd00:19::/122', 'node-b'),
        ],
      }),
      CFG,
    );
    expect(s.routes.map((r) => r.dst)).toEqual(['198.19.0.0/26', '198.19.0.64/26']);
  });

  it('whole-state transitions: a node deleted takes its routes, neighbour and FDB entry with it', () => {
    const three = twoNodes({
      nodes: [...twoNodes().nodes, node('node-c', '198.18.0.4/24', { vxlan: '198.19.0.128' })],
      blocks: [...twoNodes().blocks, block('198.19.0.128/26', 'node-c')],
    });
    const before = resolveVxlan(three, CFG);
    expect(before.fdb.map((f) => f.dst).sort()).toEqual(['198.18.0.3', '198.18.0.4']);
    const after = resolveVxlan(
      { ...three, nodes: three.nodes.filter((n) => n.metadata.name !== 'node-c') },
      CFG,
    );
    expect(after.routes).toEqual(resolveVxlan(twoNodes(), CFG).routes);
    expect(after.neighbours).toEqual([{ dst: '198.19.0.64', lladdr: MAC_B }]);
    expect(after.fdb).toEqual([{ mac: MAC_B, dst: '198.18.0.3' }]);
    expect(before.allowedSources).toEqual(['198.18.0.3', '198.18.0.4']);
    expect(after.allowedSources).toEqual(['198.18.0.3']);
    expect(after.waiting).toEqual(['node node-c (route 198.19.0.128/26) has no VTEP yet']);
  });

  it('is off without a VXLAN pool unless configured on, and off when configured off', () => {
    const noVx = twoNodes({ pools: [encapPool('plain', '198.19.0.0/16', {})] });
    expect(resolveVxlan(noVx, CFG)).toEqual({
      enabled: false,
      routes: [],
      neighbours: [],
      fdb: [],
      allowedSources: [],
      waiting: [],
    });
    const forced = resolveVxlan(noVx, { ...CFG, enabled: true });
    expect(forced.enabled).toBe(true);
    expect(forced.device?.name).toBe('vxlan.calico');
    expect(forced.routes).toEqual([]);
    expect(resolveVxlan(twoNodes(), { ...CFG, enabled: false }).enabled).toBe(false);
  });
});

describe('blockRoutesOf', () => {
  it('reads the affine host and the addresses held by other nodes from a stored block', () => {
    expect(
      blockRoutesOf({
        cidr: '198.19.0.64/26',
        affinity: 'host:node-b',
        allocations: [0, null, 1, 2, ...Array<null>(60).fill(null)],
        attributes: [
          { secondary: { node: 'node-b', type: 'vxlanTunnelAddress' } },
          { secondary: { node: 'node-a', pod: 'p', namespace: 'n' } },
          { secondary: null },
        ],
      }),
    ).toEqual({
      cidr: '198.19.0.64/26',
      host: 'node-b',
      borrowed: [{ dst: '198.19.0.66/32', host: 'node-a' }],
    });
    expect(
      blockRoutesOf({ cidr: '198.19.0.0/26', affinity: 'virtual:x', allocations: [], attributes: [] }),
    ).toEqual({ cidr: '198.19.0.0/26', borrowed: [] });
  });
});

describe('encapRouteProtocol', () => {
  it('is 80 while DeviceRouteProtocol is the shared default boot (3), else DeviceRouteProtocol', () => {
    expect(encapRouteProtocol(3)).toBe(80);
    expect(encapRouteProtocol(4)).toBe(4);
  });
});

describe('resolveVxlan, IPv6 (vxlan-v6.calico)', () => {
  const dualNode = (name: string, v4: string, v6: string, tunnel6?: string) => {
    const n = node(name, v4);
    return {
      ...n,
      spec: {
        ...n.spec,
        bgp: { ...n.spec.bgp, ipv6Address: v6 },
        ...(tunnel6 ? { ipv6VXLANTunnelAddr: tunnel6 } : {}),
      },
    };
  };
  const dual = (): EncapInput => ({
    hostname: 'node-a',
    nodes: [
      dualNode('node-a', '198.18.0.2/24', 'fd00:18::2/64', 'fd00:19::'),
      dualNode('node-b', '198.18.0.3/24', 'fd00:18::3/64', 'fd00:19::40'),
    ],
    pools: [
      encapPool('v4', '198.19.0.0/16', { vxlanMode: 'Never' }),
      encapPool('v6', 'fd00:19::/64', { vxlanMode: 'Always' }),
    ],
    blocks: [
      block('198.19.0.0/26', 'node-a'),
      block('fd00:19::/122', 'node-a'),
      block('fd00:19::40/122', 'node-b'),
    ],
  });

  it('the IPv6 pool makes the IPv6 device, /128-based routes via the remote tunnel addresses, MTU less 70', () => {
    expect(resolveVxlan(dual(), CFG, 6)).toEqual({
      enabled: true,
      device: {
        name: 'vxlan-v6.calico',
        vni: 4096,
        port: 4789,
        mtu: 1430,
        mac: vtepMacFor('node-a', 6),
        parentAddress: 'fd00:18::2',
        tunnelAddress: 'fd00:19::',
      },
      routes: [
        { kind: 'blackhole', dst: 'fd00:19::/122' },
        { kind: 'tunnel', dst: 'fd00:19::40/122', gateway: 'fd00:19::40', dev: 'vxlan-v6.calico' },
      ],
      neighbours: [{ dst: 'fd00:19::40', lladdr: vtepMacFor('node-b', 6) }],
      fdb: [{ mac: vtepMacFor('node-b', 6), dst: 'fd00:18::3' }],
      allowedSources: ['fd00:18::3'],
      waiting: [],
    });
    // VXLANMTUV6 when set; the IPv4 family sees no VXLAN pool of its own.
    expect(resolveVxlan(dual(), { ...CFG, mtuV6: 1400 }, 6).device?.mtu).toBe(1400);
    expect(resolveVxlan(dual(), CFG, 4).enabled).toBe(false);
  });

  it('an IPv4 VXLAN pool alone leaves IPv6 VXLAN off; a node without an IPv6 tunnel address waits', () => {
    const v4only = { ...dual(), pools: [encapPool('v4', '198.19.0.0/16', { vxlanMode: 'Always' })] };
    expect(resolveVxlan(v4only, CFG, 6).enabled).toBe(false);
    const noTunnel = {
      ...dual(),
      nodes: [dualNode('node-a', '198.18.0.2/24', 'fd00:18::2/64'), dual().nodes[1]!],
    };
    const s = resolveVxlan(noTunnel, CFG, 6);
    expect(s.device).toBeUndefined();
    expect(s.waiting).toContain('this node (node-a) has no IPv6 VXLAN tunnel address or node IP yet');
  });
});
