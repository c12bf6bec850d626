/**
 * The renderer's golden cases: one `BgpInput` each (and the families to render). The unit test
 * compares the rendered files with `testdata/golden/<case>/`; the integration test has real BIRD
 * parse every one of them. `UPDATE_GOLDEN=1` rewrites the files.
 */
import type { BGPConfiguration, BGPPeer, IPPool, Node } from '@calico-ts/api';
import type { BgpInput, IPFamily } from '../bgp-input.js';

export interface GoldenCase {
  name: string;
  input: BgpInput;
  families: IPFamily[];
}

const meta = (name: string, labels?: Record<string, string>) => ({ name, ...(labels ? { labels } : {}) });

export function node(
  name: string,
  bgp: NonNullable<Node['spec']['bgp']>,
  labels?: Record<string, string>,
): Node {
  return { apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: meta(name, labels), spec: { bgp } };
}

export function pool(name: string, spec: IPPool['spec']): IPPool {
  return { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: meta(name), spec };
}

export function bgpConfig(name: string, spec: BGPConfiguration['spec']): BGPConfiguration {
  return { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: meta(name), spec };
}

export function peer(name: string, spec: BGPPeer['spec']): BGPPeer {
  return { apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: meta(name), spec };
}

const POOL = pool('default-ipv4-ippool', { cidr: '198.19.0.0/16', ipipMode: 'Never', vxlanMode: 'Never' });
const threeNodes = [
  node('node-a', { ipv4Address: '198.18.0.1/24' }),
  node('node-b', { ipv4Address: '198.18.0.2/24' }),
  node('node-c', { ipv4Address: '198.18.0.10/24' }),
];

const base = (over: Partial<BgpInput>): BgpInput => ({
  nodeName: 'node-a',
  nodes: threeNodes,
  bgpConfigs: [],
  peers: [],
  pools: [POOL],
  affineBlocks: ['198.19.0.0/26'],
  ...over,
});

const rrNodes = [
  node(
    'rr-1',
    { ipv4Address: '198.18.0.100/24', routeReflectorClusterID: '244.0.0.1' },
    { 'route-reflector': 'true' },
  ),
  node(
    'rr-2',
    { ipv4Address: '198.18.0.101/24', routeReflectorClusterID: '244.0.0.1' },
    { 'route-reflector': 'true' },
  ),
  node('node-a', { ipv4Address: '198.18.0.1/24' }),
  node('node-b', { ipv4Address: '198.18.0.2/24' }),
];
const rrPeers = [
  peer('peer-with-route-reflectors', { nodeSelector: 'all()', peerSelector: 'route-reflector == "true"' }),
];
const rrConfig = [bgpConfig('default', { nodeToNodeMeshEnabled: false, asNumber: 64512 })];

export const GOLDEN_CASES: GoldenCase[] = [
  {
    name: 'mesh-three-nodes',
    families: [4],
    input: base({
      affineBlocks: ['198.19.0.0/26', { cidr: '198.19.0.64/26', state: 'pendingDeletion' }, '198.19.1.7/32'],
    }),
  },
  {
    name: 'mesh-three-nodes-node-c',
    families: [4],
    input: base({ nodeName: 'node-c', affineBlocks: ['198.19.0.128/26'] }),
  },
  {
    name: 'route-reflector-rr',
    families: [4],
    input: base({ nodeName: 'rr-1', nodes: rrNodes, bgpConfigs: rrConfig, peers: rrPeers, affineBlocks: [] }),
  },
  {
    name: 'route-reflector-client',
    families: [4],
    input: base({ nodeName: 'node-a', nodes: rrNodes, bgpConfigs: rrConfig, peers: rrPeers }),
  },
  {
    name: 'global-peer',
    families: [4],
    input: base({
      peers: [
        peer('tor', {
          peerIP: '198.18.1.1',
          asNumber: 64600,
          keepaliveTime: '10s',
          maxRestartTime: '2m',
          password: { secretKeyRef: { name: 'bgp-secrets', key: 'tor' } },
        }),
        peer('tor-alt-port', {
          peerIP: '198.18.1.2:1790',
          asNumber: 64600,
          ttlSecurity: 1,
          sourceAddress: 'None',
        }),
        peer('to-node-c', { peerIP: '198.18.0.10', asNumber: 64512 }),
      ],
      secrets: { 'bgp-secrets/tor': 's3cr\\et' },
    }),
  },
  {
    // Passwords that cannot be had: the mesh's and one peer's sessions are kept down.
    name: 'password-missing',
    families: [4],
    input: base({
      bgpConfigs: [bgpConfig('default', { nodeMeshPassword: { secretKeyRef: { name: 'mesh', key: 'pw' } } })],
      peers: [
        peer('tor', {
          peerIP: '198.18.1.1',
          asNumber: 64600,
          password: { secretKeyRef: { name: 'bgp-secrets', key: 'absent' } },
        }),
        peer('tor-open', { peerIP: '198.18.1.2', asNumber: 64600 }),
      ],
    }),
  },
  {
    // BGPFilters: import and export functions per family, called in the peer's order; a rule
    // with a criterion not evaluated fails closed; a peer naming a missing filter gets nothing.
    name: 'bgp-filters',
    families: [4, 6],
    input: base({
      nodes: [
        node('node-a', { ipv4Address: '198.18.0.1/24', ipv6Address: 'fd00:18::1/64' }),
        node('node-b', { ipv4Address: '198.18.0.2/24', ipv6Address: 'fd00:18::2/64' }),
      ],
      peers: [
        peer('tor', { peerIP: '198.18.1.1', asNumber: 64600, filters: ['keep-out', 'only-pods'] }),
        peer('tor6', { peerIP: 'fd00:18::100', asNumber: 64600, filters: ['keep-out'] }),
        peer('lost', { peerIP: '198.18.1.2', asNumber: 64600, filters: ['no-such-filter'] }),
      ],
      filters: [
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'BGPFilter',
          metadata: { name: 'keep-out' },
          spec: {
            exportV4: [
              { action: 'Reject', matchOperator: 'In', cidr: '198.19.7.0/24' },
              { action: 'Reject', matchOperator: 'Equal', cidr: '198.19.8.0/26', peerType: 'eBGP' },
              {
                action: 'Accept',
                matchOperator: 'In',
                cidr: '198.19.0.0/16',
                communities: { values: ['65000:100'] },
              },
            ],
            importV4: [
              {
                action: 'Accept',
                matchOperator: 'In',
                cidr: '10.0.0.0/8',
                prefixLength: { min: 16, max: 24 },
                source: 'RemotePeers',
              },
              { action: 'Reject', interface: 'eth*' },
            ],
            exportV6: [{ action: 'Reject', matchOperator: 'NotIn', cidr: 'fd00:19::/48' }],
          },
        },
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'BGPFilter',
          metadata: { name: 'only-pods' },
          spec: {
            exportV4: [
              { action: 'Accept', matchOperator: 'In', cidr: '198.19.0.0/16' },
              { action: 'Reject' },
            ],
          },
        },
      ],
    }),
  },
  {
    name: 'node-peer-selector',
    families: [4],
    input: base({
      nodes: [
        node('node-a', { ipv4Address: '198.18.0.1/24' }, { rack: 'r1' }),
        node('node-b', { ipv4Address: '198.18.0.2/24' }, { rack: 'r2' }),
      ],
      peers: [
        peer('rack-r1-tor', { nodeSelector: 'rack == "r1"', peerIP: '198.18.2.1', asNumber: 64513 }),
        peer('rack-r2-tor', { nodeSelector: 'rack == "r2"', peerIP: '198.18.3.1', asNumber: 64513 }),
        peer('node-a-upstream', {
          node: 'node-a',
          peerIP: '198.18.4.1',
          asNumber: 65100,
          localASNumber: 65001,
          nextHopMode: 'Self',
          numAllowedLocalASNumbers: 1,
          reachableBy: '198.18.0.254',
        }),
      ],
    }),
  },
  {
    name: 'per-node-as',
    families: [4],
    input: base({
      nodes: [
        node('node-a', { ipv4Address: '198.18.0.1/24', asNumber: 65001 }),
        node('node-b', { ipv4Address: '198.18.0.2/24' }),
        node('node-c', { ipv4Address: '198.18.0.10/24', asNumber: '1.10' }),
      ],
      bgpConfigs: [
        bgpConfig('default', { asNumber: 64600, logSeverityScreen: 'Debug', listenPort: 1790 }),
        bgpConfig('node.node-a', { logSeverityScreen: 'Warning' }),
      ],
    }),
  },
  {
    name: 'ipip-pool',
    families: [4],
    input: base({
      pools: [
        pool('ipip-always', { cidr: '198.19.0.0/17', ipipMode: 'Always', vxlanMode: 'Never' }),
        pool('ipip-cross-subnet', { cidr: '198.19.128.0/17', ipipMode: 'CrossSubnet', vxlanMode: 'Never' }),
      ],
    }),
  },
  {
    name: 'vxlan-pool',
    families: [4],
    input: base({
      pools: [
        pool('vxlan', { cidr: '198.19.0.0/17', ipipMode: 'Never', vxlanMode: 'Always' }),
        pool('vxlan-cross-subnet', { cidr: '198.19.128.0/17', ipipMode: 'Never', vxlanMode: 'CrossSubnet' }),
      ],
    }),
  },
  {
    name: 'disabled-pool',
    families: [4],
    input: base({
      pools: [
        pool('in-use', { cidr: '198.19.0.0/17', disabled: true }),
        pool('not-exported', { cidr: '198.19.128.0/17', disableBGPExport: true }),
      ],
    }),
  },
  {
    name: 'felix-programs-cluster-routes',
    families: [4],
    input: base({
      bgpConfigs: [
        bgpConfig('default', {
          programClusterRoutes: 'Disabled',
          serviceClusterIPs: [{ cidr: '198.18.128.0/24' }],
          serviceExternalIPs: [{ cidr: '198.18.129.0/24' }],
          ignoredInterfaces: ['eth9'],
          bindMode: 'NodeIP',
          communities: [{ name: 'gold', value: '65000:100' }],
          prefixAdvertisements: [{ cidr: '198.19.0.0/16', communities: ['gold', '65000:200:300'] }],
        }),
      ],
      pools: [pool('ipip', { cidr: '198.19.0.0/16', ipipMode: 'Always' })],
    }),
  },
  {
    name: 'dual-stack',
    families: [4, 6],
    input: base({
      nodes: [
        node('node-a', { ipv4Address: '198.18.0.1/24', ipv6Address: '2001:db8::1/64' }),
        node('node-b', { ipv4Address: '198.18.0.2/24', ipv6Address: '2001:db8::2/64' }),
      ],
      pools: [POOL, pool('default-ipv6-ippool', { cidr: '2001:db8:1::/48', vxlanMode: 'Never' })],
      affineBlocks: ['198.19.0.0/26', '2001:db8:1:0:1234::/122'],
      peers: [peer('v6-tor', { peerIP: '2001:db8::ff', asNumber: 64600 })],
      logLevel: 'none',
    }),
  },
  {
    name: 'no-bgp-address',
    families: [4],
    input: base({ nodes: [node('node-a', { asNumber: 64512 }), threeNodes[1]!], routerId: 'hash' }),
  },
];
