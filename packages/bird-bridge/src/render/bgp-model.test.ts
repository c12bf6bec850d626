import { describe, expect, test } from 'vitest';
import type { BgpInput } from './bgp-input.js';
import { asNumberValue, deriveBirdModel, hashRouterId, peerName } from './bgp-model.js';
import { durationSeconds, roundedSeconds } from './go-duration.js';
import { bgpConfig, node, peer, pool } from './testdata/golden-cases.js';

const nodes = [
  node('a', { ipv4Address: '198.18.0.1/24' }),
  node('b', { ipv4Address: '198.18.0.2/24' }),
  node('c', { ipv4Address: '198.18.0.3/24', routeReflectorClusterID: '244.0.0.1' }),
];
const input = (over: Partial<BgpInput> = {}): BgpInput => ({
  nodeName: 'a',
  nodes,
  bgpConfigs: [],
  peers: [],
  pools: [pool('p', { cidr: '198.19.0.0/16' })],
  affineBlocks: [],
  ...over,
});
const names = (i: BgpInput, fam: 4 | 6 = 4) => deriveBirdModel(i, fam).peers.map((p) => p.name);

describe('mesh', () => {
  test('leaves out this node and route reflectors; passive toward greater address text', () => {
    const m = deriveBirdModel(input(), 4);
    expect(m.peers.map((p) => [p.name, p.passive])).toEqual([['Mesh_198_18_0_2', true]]);
    expect(deriveBirdModel(input({ nodeName: 'b' }), 4).peers.map((p) => [p.name, p.passive])).toEqual([
      ['Mesh_198_18_0_1', false],
    ]);
  });
  test('off when disabled, and on a route reflector', () => {
    expect(names(input({ bgpConfigs: [bgpConfig('default', { nodeToNodeMeshEnabled: false })] }))).toEqual(
      [],
    );
    const rr = deriveBirdModel(input({ nodeName: 'c' }), 4);
    expect(rr.mesh).toBe('route-reflector');
    expect(rr.peers).toEqual([]);
  });
  test('password and restart time from the default BGPConfiguration', () => {
    const m = deriveBirdModel(
      input({
        bgpConfigs: [
          bgpConfig('default', {
            nodeMeshPassword: { secretKeyRef: { name: 's', key: 'k' } },
            nodeMeshMaxRestartTime: '1m30.4s',
          }),
        ],
        secrets: { 's/k': 'pw' },
      }),
      4,
    );
    expect(m.peers[0]).toMatchObject({ password: 'pw', gracefulRestartTime: 90 });
  });
});

describe('BGPPeers', () => {
  test('a global peer to a node address is mirrored by a reverse node peering on that node', () => {
    const peers = [peer('to-b', { peerIP: '198.18.0.2', asNumber: 64512 })];
    const off = [bgpConfig('default', { nodeToNodeMeshEnabled: false })];
    expect(names(input({ peers, bgpConfigs: off }))).toEqual(['Global_198_18_0_2']);
    expect(names(input({ nodeName: 'b', peers, bgpConfigs: off }))).toEqual([
      'Node_198_18_0_1',
      'Node_198_18_0_3',
    ]);
  });
  test('a node peering is dropped when a global one to the same address exists', () => {
    const peers = [
      peer('g', { peerIP: '198.18.9.9', asNumber: 65000 }),
      peer('n', { node: 'a', peerIP: '198.18.9.9', asNumber: 65001 }),
    ];
    const m = deriveBirdModel(
      input({ peers, bgpConfigs: [bgpConfig('default', { nodeToNodeMeshEnabled: false })] }),
      4,
    );
    expect(m.peers.map((p) => [p.name, p.asNumber])).toEqual([['Global_198_18_9_9', 65000]]);
  });
  test('peers of the other family and bad selectors are left out; the latter with a warning', () => {
    const m = deriveBirdModel(
      input({
        peers: [
          peer('v6', { peerIP: '2001:db8::1', asNumber: 1 }),
          peer('bad', { nodeSelector: 'rack ==', peerIP: '198.18.9.9', asNumber: 1 }),
        ],
      }),
      4,
    );
    expect(m.peers.map((p) => p.name)).toEqual(['Mesh_198_18_0_2']);
    expect(m.warnings.join('\n')).toMatch(/BGPPeer bad: selector "rack ==" skipped/);
  });
  test('reversePeering Manual: no automatic session back; a missing filter shuts the session', () => {
    const peers = [
      peer('to-b', { peerIP: '198.18.0.2', asNumber: 64512, reversePeering: 'Manual', filters: ['f1'] }),
    ];
    const off = [bgpConfig('default', { nodeToNodeMeshEnabled: false })];
    expect(names(input({ nodeName: 'b', peers, bgpConfigs: off }))).toEqual([]);
    const a = deriveBirdModel(input({ peers, bgpConfigs: off }), 4);
    expect(a.peers.map((p) => p.name)).toEqual(['Global_198_18_0_2']);
    expect(a.peers[0]!.missingFilters).toEqual(['f1']);
    expect(a.warnings).toContain(
      'BGPPeer to-b: BGPFilter f1 does not exist; the session imports and exports nothing until it does',
    );
  });
  test('a password BIRD cannot quote is not used: the session is kept down, and the warning says why', () => {
    const m = deriveBirdModel(
      input({
        peers: [
          peer('g', {
            peerIP: '198.18.9.9',
            asNumber: 1,
            password: { secretKeyRef: { name: 's', key: 'k' } },
          }),
        ],
        secrets: { 's/k': 'a"b' },
      }),
      4,
    );
    const g = m.peers.find((p) => p.kind === 'global');
    expect(g?.password).toBeUndefined();
    expect(g?.passwordMissing).toBe('secret s/k holds a quote or line break');
    expect(m.warnings).toContain(
      'BGPPeer g: password secret s/k holds a quote or line break; its BGP sessions are kept down until it is usable',
    );
  });
  test('a route reflector makes iBGP peers without its cluster id clients', () => {
    const peers = [peer('all', { peerSelector: 'all()' })];
    const m = deriveBirdModel(input({ nodeName: 'c', peers }), 4);
    expect(m.peers.map((p) => [p.name, p.rrClusterId])).toEqual([
      ['Global_198_18_0_1', '244.0.0.1'],
      ['Global_198_18_0_2', '244.0.0.1'],
    ]);
  });
});

describe('pools and blocks', () => {
  test('pending affinities and other families are not routes of this node', () => {
    const m = deriveBirdModel(
      input({ affineBlocks: ['198.19.0.0/26', { cidr: '198.19.0.64/26', state: 'pending' }, 'fd00::/122'] }),
      4,
    );
    expect(m.blocks).toEqual([{ cidr: '198.19.0.0/26', state: 'confirmed' }]);
  });
  test('kernel rules per encapsulation', () => {
    const pools = [
      pool('v', { cidr: '198.19.0.0/24', vxlanMode: 'CrossSubnet' }),
      pool('i', { cidr: '198.19.1.0/24', ipipMode: 'Always' }),
      pool('n', { cidr: '198.19.2.0/24' }),
    ];
    expect(deriveBirdModel(input({ pools }), 4).pools.map((p) => p.kernel.kind)).toEqual([
      'reject',
      'ipip',
      'accept',
    ]);
    const felix = [bgpConfig('default', { programClusterRoutes: 'Disabled' })];
    expect(deriveBirdModel(input({ pools, bgpConfigs: felix }), 4).pools.map((p) => p.kernel)).toEqual([
      { kind: 'reject', reason: 'vxlan' },
      { kind: 'reject', reason: 'felix' },
      { kind: 'reject', reason: 'felix' },
    ]);
  });
});

describe('helpers', () => {
  test('AS numbers, names, router id hash, durations', () => {
    expect(asNumberValue('1.10')).toBe(65546);
    expect(asNumberValue('64512')).toBe(64512);
    expect(peerName('Node', 'fd00::1', 1790)).toBe('Node_fd00__1_port_1790');
    expect(hashRouterId('node-a')).toMatch(/^(\d+)\.(\d+)\.(\d+)\.(\d+)$/);
    expect(Number(hashRouterId('node-a').split('.')[0])).toBeLessThan(224);
    expect(durationSeconds('1h2m3.5s')).toBe(3723.5);
    expect(durationSeconds('10')).toBeUndefined();
    expect(roundedSeconds('2.5s')).toBe(3);
  });
});
