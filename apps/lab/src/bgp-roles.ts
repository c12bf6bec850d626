/**
 * What `lab status` says about each node's place in the BGP topology, pure: from every node's
 * sessions (BIRD's `show protocols`, plus the `Session:` line of `show protocols all` per peer),
 *
 *   a session BIRD marks `route-reflector` ─► that peer is this node's route-reflector client
 *   node with clients                      ─► `route reflector (clients n2, n3)`
 *   node whose peer reflects for it        ─► `rr client of n1`
 *   node with only Mesh_ sessions          ─► `full mesh`
 *
 * and a short label per session: the peer's lab node name (or address), its kind
 * (`mesh`, `node`, `global`, `rr-client`), then its BGP state.
 */
import type { BgpPeer } from '@calico-ts/calico-node/bgp-health';

/** A peer as `lab status` reports it: calico-node's view plus the lab's reading of it. */
export interface LabBgpPeer extends BgpPeer {
  /** The lab node at that address, if it is one. */
  readonly node?: string;
  /** BIRD reflects routes to this peer (it is a route-reflector client of this node). */
  readonly rrClient: boolean;
  /** BIRD's `Session:` words, e.g. `internal multihop route-reflector AS4`. */
  readonly session?: string;
}

export interface NodeBgpView {
  readonly name: string;
  readonly ip: string;
  readonly peers?: readonly LabBgpPeer[];
}

/** The `Session:` words of a `show protocols all "<name>"` reply's text lines. */
export function sessionWordsOf(lines: readonly string[]): string | undefined {
  for (const l of lines) {
    const m = /^\s*Session:\s+(.*)$/.exec(l);
    if (m) return m[1]!.trim();
  }
  return undefined;
}

export function isRouteReflectorSession(session: string | undefined): boolean {
  return session?.split(/\s+/).includes('route-reflector') ?? false;
}

/** The node's role in one phrase, or undefined when BIRD's sessions are unknown or there are none. */
export function bgpRoleOf(node: NodeBgpView, all: readonly NodeBgpView[]): string | undefined {
  const peers = node.peers;
  if (!peers || peers.length === 0) return undefined;
  const clients = peers.filter((p) => p.rrClient).map((p) => p.node ?? p.peerIP);
  if (clients.length > 0) return `route reflector (clients ${clients.join(', ')})`;
  const reflectors = all
    .filter((o) => o.name !== node.name)
    .filter((o) => o.peers?.some((p) => p.rrClient && p.peerIP === node.ip))
    .map((o) => o.name);
  if (reflectors.length > 0) return `rr client of ${reflectors.join(', ')}`;
  if (peers.every((p) => p.type === 'node-to-node mesh')) return 'full mesh';
  return undefined;
}

const KIND: Record<BgpPeer['type'], string> = {
  'node-to-node mesh': 'mesh',
  'node specific': 'node',
  global: 'global',
};

/** `n2 rr-client Established`, `198.18.0.50 global Active`. */
export function peerLabel(p: LabBgpPeer): string {
  // A node's IPv6 session (bird6) is told apart from its IPv4 one.
  const who = p.node !== undefined && p.peerIP.includes(':') ? `${p.node}/v6` : (p.node ?? p.peerIP);
  return `${who} ${p.rrClient ? 'rr-client' : KIND[p.type]} ${p.bgpState || p.state}`;
}
