/**
 * BGP session health from BIRD's `show protocols`, pure:
 *
 * - `bgpPeersOf`: the Calico peers (`Global_…`, `Node_…`, `Mesh_…` BGP protocols) with their
 *   address, type and BGP state, as `calicoctl node status` and upstream's health check read them.
 * - `birdReadiness`: upstream's `calico-node -bird-ready` rule: no peers = ready; while the
 *   nodename file is younger than the threshold every peer must be Established (and no graceful
 *   restart running); later one Established peer is enough.
 * - `bgpHealthReport`: what calico-node's /readiness adds to Felix's: ready only when every peer is
 *   Established.
 */
import type { ProtocolRow } from '@calico-ts/bird-bridge';

export type PeerType = 'global' | 'node specific' | 'node-to-node mesh';

export interface BgpPeer {
  readonly protocol: string;
  readonly peerIP: string;
  readonly type: PeerType;
  /** The BGP state word, e.g. `Established`, `Active`, `Connect`, `Idle`. */
  readonly bgpState: string;
  readonly established: boolean;
  /** BIRD's state column (`up`, `start`, …) and the rest of its info text. */
  readonly state: string;
  readonly info: string;
}

const PEER_NAME = /^(Global|Node|Mesh)_(.+)$/;
const TYPES: Record<string, PeerType> = {
  Global: 'global',
  Node: 'node specific',
  Mesh: 'node-to-node mesh',
};

/** `198_18_0_12` → `198.18.0.12`; `fd00__1` → `fd00::1`; a `_port_<n>` suffix is dropped. */
export function peerAddressOf(encoded: string): string {
  const bare = encoded.replace(/_port_\d+$/, '');
  return /^\d+_\d+_\d+_\d+$/.test(bare) ? bare.replaceAll('_', '.') : bare.replaceAll('_', ':');
}

export function bgpPeersOf(rows: readonly ProtocolRow[]): BgpPeer[] {
  const peers: BgpPeer[] = [];
  for (const r of rows) {
    if (r.proto !== 'BGP') continue;
    const m = PEER_NAME.exec(r.name);
    if (!m) continue;
    const bgpState = r.info.trim().split(/\s+/)[0] ?? '';
    peers.push({
      protocol: r.name,
      peerIP: peerAddressOf(m[2]!),
      type: TYPES[m[1]!]!,
      bgpState,
      established: bgpState === 'Established',
      state: r.state,
      info: r.info.trim(),
    });
  }
  return peers;
}

export interface Verdict {
  readonly ok: boolean;
  /** Why not, in upstream's words. */
  readonly reason?: string;
}

export function birdReadiness(
  peers: readonly BgpPeer[],
  nodenameAgeMs: number,
  thresholdMs: number,
  gracefulRestartInProgress: boolean,
): Verdict {
  if (peers.length === 0) return { ok: true };
  const down = peers.filter((p) => !p.established).map((p) => p.peerIP);
  if (nodenameAgeMs < thresholdMs) {
    if (down.length > 0) return { ok: false, reason: `BGP not established with ${down.join(',')}` };
    if (gracefulRestartInProgress) return { ok: false, reason: 'graceful restart in progress' };
    return { ok: true };
  }
  if (down.length < peers.length) return { ok: true };
  return { ok: false, reason: `BGP not established with ${down.join(',')}` };
}

export function bgpHealthReport(peers: readonly BgpPeer[] | Error): {
  live: boolean;
  ready: boolean;
  detail?: string;
} {
  if (peers instanceof Error)
    return { live: true, ready: false, detail: `BIRD: ${peers.message}`.slice(0, 120) };
  const down = peers.filter((p) => !p.established).map((p) => `${p.peerIP} ${p.bgpState || p.state}`);
  if (down.length === 0) return { live: true, ready: true };
  return { live: true, ready: false, detail: `BGP not established with ${down.join(', ')}`.slice(0, 120) };
}
