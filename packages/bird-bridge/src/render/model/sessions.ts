/**
 * The `protocol bgp` sessions of this node: the full mesh, then one per global and node peering,
 * sorted by name.
 *
 *   nodes ─────────────► mesh sessions ──────┐
 *   Peerings.global ───► global sessions ────┼──► BirdPeer[] (by name) ──► AS 0 warnings
 *   Peerings.node ─────► node sessions ──────┘
 *
 * - Mesh: only with `nodeToNodeMeshEnabled` (default true) and no RR cluster id on this node; every
 *   other node with an address of the family and no RR cluster id; `passive on` toward a peer whose
 *   address text compares greater than ours (a byte-wise string comparison, as upstream).
 * - A route reflector (this node has a cluster id) makes iBGP peers without that id its clients.
 * - BGPFilters (bgp-filters.ts): each BGPPeer's `filters` are called, in order, first in its
 *   session's import and export filters; a peer naming a BGPFilter that does not exist imports and
 *   exports nothing until it does (fail closed).
 * - A password secret that cannot be had keeps its sessions down (`passwordMissing`).
 *
 * No sessions at all when this node has no address of the family. Pure.
 */
import type { BirdFilterFunction } from '../bgp-filters.js';
import { roundedSeconds } from '../go-duration.js';
import type { ModelContext } from './context.js';
import { asNumberValue, cmp } from './node-facts.js';
import type { Peering, Peerings } from './peerings.js';
import type { BirdPeer, MeshState } from './types.js';

/** Peer protocol names: family separators become `_`, and a port is appended. */
export function peerName(prefix: 'Mesh' | 'Global' | 'Node', ip: string, port?: number): string {
  const base = `${prefix}_${ip.replace(/[.:]/g, '_')}`;
  return port ? `${base}_port_${port}` : base;
}

export function meshState(ctx: ModelContext): MeshState {
  const meshEnabled = ctx.global.nodeToNodeMeshEnabled ?? true;
  return ctx.myCluster ? 'route-reflector' : meshEnabled ? 'enabled' : 'disabled';
}

export function deriveSessions(
  ctx: ModelContext,
  peerings: Peerings,
  mesh: MeshState,
  filterFunctions: readonly BirdFilterFunction[],
): BirdPeer[] {
  const peers = mesh === 'enabled' ? meshSessions(ctx) : [];
  if (ctx.myIP !== undefined) {
    for (const x of peerings.global.values()) {
      const s = peerSession(ctx, x, 'global', filterFunctions);
      if (s) peers.push(s);
    }
    for (const x of peerings.node.values()) {
      const s = peerSession(ctx, x, 'node', filterFunctions);
      if (s) peers.push(s);
    }
  }
  peers.sort((a, b) => cmp(a.name, b.name));
  for (const p of peers) {
    if (p.asNumber === 0)
      ctx.warnings.push(`${p.name}: peer AS number is 0 (BGPPeer ${p.origin} sets no asNumber)`);
  }
  return peers;
}

function meshSessions(ctx: ModelContext): BirdPeer[] {
  const { global, myIP } = ctx;
  if (myIP === undefined) return [];
  const password = ctx.secret(global.nodeMeshPassword?.secretKeyRef, 'BGPConfiguration default');
  const restart = roundedSeconds(global.nodeMeshMaxRestartTime);
  const peers: BirdPeer[] = [];
  for (const n of ctx.nodes) {
    if (n.ip === undefined || n.ip === myIP || n.rrClusterId) continue;
    peers.push({
      name: peerName('Mesh', n.ip, undefined),
      kind: 'mesh',
      ip: n.ip,
      port: ctx.listenPortOf(n.name),
      asNumber: n.asNumber ?? ctx.globalAs,
      sourceAddress: myIP,
      passive: n.ip > myIP,
      gracefulRestartTime: restart,
      ...password,
      internalPeer: true,
      origin: n.name,
      importFilters: [],
      exportFilters: [],
      missingFilters: [],
    });
  }
  return peers;
}

/** One global or node peering as a session; none toward this node's own address. */
function peerSession(
  ctx: ModelContext,
  x: Peering,
  kind: 'global' | 'node',
  filterFunctions: readonly BirdFilterFunction[],
): BirdPeer | undefined {
  const { myIP, myCluster } = ctx;
  if (myIP !== undefined && x.ip === myIP) return undefined;
  const s = x.source.spec;
  const owner = `BGPPeer ${x.source.metadata.name}`;
  const named = s.filters ?? [];
  const calls = (direction: 'import' | 'export') =>
    named.flatMap((f) => {
      const fn = filterFunctions.find((x) => x.filter === f && x.direction === direction);
      return fn ? [fn.name] : [];
    });
  const filterNames = new Set((ctx.input.filters ?? []).map((f) => f.metadata.name));
  const missingFilters = named.filter((f) => !filterNames.has(f));
  if (missingFilters.length > 0) {
    ctx.warnings.push(
      `${owner}: BGPFilter ${missingFilters.join(', ')} does not exist; the session imports and exports nothing until it does`,
    );
  }
  const localAs = asNumberValue(s.localASNumber) || undefined;
  const effectiveAs = localAs ?? ctx.myAs;
  const sourceAddr = s.sourceAddress ?? 'UseNodeIP';
  let nextHop: BirdPeer['nextHop'];
  if (s.nextHopMode === 'Self') nextHop = 'self';
  else if (s.nextHopMode === 'Keep') nextHop = 'keep';
  if (s.keepOriginalNextHop && x.asNumber !== effectiveAs) nextHop = 'keep';
  const rr =
    x.asNumber === effectiveAs && myCluster !== undefined && x.rrClusterId !== myCluster
      ? myCluster
      : undefined;
  return {
    name: peerName(kind === 'global' ? 'Global' : 'Node', x.ip, x.port),
    kind,
    ip: x.ip,
    port: x.port,
    asNumber: x.asNumber,
    localAsNumber: localAs,
    sourceAddress: sourceAddr === 'UseNodeIP' ? myIP : undefined,
    passive: kind === 'global' && x.calicoNode && myIP !== undefined && x.ip > myIP,
    ttlSecurity: s.ttlSecurity ?? 0,
    gracefulRestartTime: roundedSeconds(s.maxRestartTime),
    keepaliveTime: roundedSeconds(s.keepaliveTime),
    ...ctx.secret(s.password?.secretKeyRef, owner),
    rrClusterId: rr,
    nextHop,
    allowLocalAs: s.numAllowedLocalASNumbers || undefined,
    internalPeer: x.asNumber === effectiveAs,
    origin: x.source.metadata.name,
    importFilters: calls('import'),
    exportFilters: calls('export'),
    missingFilters,
  };
}
