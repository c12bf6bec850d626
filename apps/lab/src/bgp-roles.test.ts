import { describe, expect, it } from 'vitest';
import {
  bgpRoleOf,
  isRouteReflectorSession,
  type LabBgpPeer,
  type NodeBgpView,
  peerLabel,
  sessionWordsOf,
} from './bgp-roles.js';

const peer = (
  ip: string,
  type: LabBgpPeer['type'],
  o: { node?: string; rrClient?: boolean; bgpState?: string } = {},
): LabBgpPeer => {
  const prefix = type === 'global' ? 'Global' : type === 'node specific' ? 'Node' : 'Mesh';
  const bgpState = o.bgpState ?? 'Established';
  return {
    protocol: `${prefix}_${ip.replaceAll('.', '_')}`,
    peerIP: ip,
    type,
    bgpState,
    established: bgpState === 'Established',
    state: 'up',
    info: bgpState,
    rrClient: o.rrClient ?? false,
    ...(o.node ? { node: o.node } : {}),
  };
};

describe('BGP roles in lab status', () => {
  it("reads the Session words of BIRD's show protocols all", () => {
    const lines = [
      'Node_198_18_0_12 BGP        ---        up     10:41:55.632  Established',
      '  Description:    Connection to BGP peer',
      '    Neighbor address: 198.18.0.12',
      '    Session:          internal multihop route-reflector AS4',
      '    Source address:   198.18.0.11',
    ];
    expect(sessionWordsOf(lines)).toBe('internal multihop route-reflector AS4');
    expect(isRouteReflectorSession(sessionWordsOf(lines))).toBe(true);
    expect(isRouteReflectorSession('internal multihop AS4')).toBe(false);
    expect(sessionWordsOf(['  BGP state:          Active'])).toBeUndefined();
  });

  it('names the route reflector, its clients and a full mesh', () => {
    const rr: NodeBgpView = {
      name: 'n1',
      ip: '198.18.0.11',
      peers: [
        peer('198.18.0.12', 'node specific', { node: 'n2', rrClient: true }),
        peer('198.18.0.13', 'node specific', { node: 'n3', rrClient: true }),
      ],
    };
    const client: NodeBgpView = {
      name: 'n2',
      ip: '198.18.0.12',
      peers: [peer('198.18.0.11', 'node specific', { node: 'n1' })],
    };
    const down: NodeBgpView = { name: 'n3', ip: '198.18.0.13' };
    const all = [rr, client, down];
    expect(bgpRoleOf(rr, all)).toBe('route reflector (clients n2, n3)');
    expect(bgpRoleOf(client, all)).toBe('rr client of n1');
    expect(bgpRoleOf(down, all)).toBeUndefined();

    const mesh: NodeBgpView = {
      name: 'n1',
      ip: '198.18.0.11',
      peers: [peer('198.18.0.12', 'node-to-node mesh', { node: 'n2' })],
    };
    expect(bgpRoleOf(mesh, [mesh])).toBe('full mesh');
    const meshAndExternal: NodeBgpView = {
      ...mesh,
      peers: [...mesh.peers!, peer('198.18.0.50', 'global', { bgpState: 'Active' })],
    };
    expect(bgpRoleOf(meshAndExternal, [meshAndExternal])).toBeUndefined();
  });

  it('labels each session with the peer node, its kind and its state', () => {
    expect(peerLabel(peer('198.18.0.12', 'node specific', { node: 'n2', rrClient: true }))).toBe(
      'n2 rr-client Established',
    );
    expect(peerLabel(peer('198.18.0.11', 'node specific', { node: 'n1' }))).toBe('n1 node Established');
    expect(peerLabel(peer('198.18.0.13', 'node-to-node mesh', { node: 'n3', bgpState: 'Connect' }))).toBe(
      'n3 mesh Connect',
    );
    expect(peerLabel(peer('198.18.0.50', 'global'))).toBe('198.18.0.50 global Established');
    expect(peerLabel(peer('fd00:18::12', 'node-to-node mesh', { node: 'n2' }))).toBe(
      'n2/v6 mesh Established',
    );
  });
});
