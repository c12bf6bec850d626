/**
 * Which BGP peerings this node has, from the BGPPeer resources, before they become sessions.
 * Three passes over the peers sorted by name, as upstream confd's `updatePeersV1`
 * (`client.go`, `bgp_processor.go`):
 *
 *   peers ──► global pass ──► node pass ──► reverse pass
 *               │               │              │
 *               ▼               ▼              ▼
 *        Peerings.global   Peerings.node ◄─────┘   (keyed by IP:port; the first one wins)
 *
 * - Global peers: BGPPeers with neither `node` nor `nodeSelector`; the first one for an IP:port wins.
 * - Node peers: BGPPeers whose `node`/`nodeSelector` picks this node, unless a global peering to the
 *   same IP:port exists; then reverse peerings — when this node is the one a BGPPeer's
 *   `peerIP`(+AS)/`peerSelector` designates, it peers back with the nodes on the other side
 *   (`reversePeering: Manual` asks for none).
 * - `peerSelector` peers take each matching node's IP, AS (or the global AS), listen port and RR
 *   cluster id; `peerIP` peers take the BGPPeer's `asNumber`.
 *
 * Not peered (a warning each): a BGPPeer with no `peerIP`, a malformed one, and
 * `localWorkloadSelector` peers. Pure.
 */
import type { BGPPeer } from '@calico-ts/api';
import { parsePeerIP } from '@calico-ts/api/internal';
import { parseIP } from '@calico-ts/api/net';
import type { IPFamily } from '../bgp-input.js';
import type { ModelContext } from './context.js';
import { asNumberValue, cmp, familyOf, type NodeFacts, nodeFacts } from './node-facts.js';

/** A peering before it becomes a session: upstream's v1 `bgpPeer` value. */
export interface Peering {
  ip: string;
  port?: number;
  asNumber: number;
  rrClusterId?: string;
  calicoNode: boolean;
  source: BGPPeer;
}

/** This node's peerings, each map keyed `<ip>|<port>` in the order the passes found them. */
export interface Peerings {
  global: Map<string, Peering>;
  node: Map<string, Peering>;
}

export function derivePeerings(ctx: ModelContext): Peerings {
  const peerResources = [...ctx.input.peers].sort((a, b) => cmp(a.metadata.name, b.metadata.name));
  const allNodeIPs = new Set(
    ctx.input.nodes.flatMap((n) => [nodeFacts(n, 4).ip, nodeFacts(n, 6).ip]).filter((x) => x !== undefined),
  );
  const global = new Map<string, Peering>();
  const node = new Map<string, Peering>();
  const emitNode = (x: Peering) => {
    if (!global.has(key(x)) && !node.has(key(x))) node.set(key(x), x);
  };
  for (const p of peerResources) {
    if (!isGlobal(p)) continue;
    for (const x of forwardPeerings(ctx, p, allNodeIPs)) if (!global.has(key(x))) global.set(key(x), x);
  }
  for (const p of peerResources) {
    if (isGlobal(p) || !localNodes(ctx, p).includes(ctx.input.nodeName)) continue;
    for (const x of forwardPeerings(ctx, p, allNodeIPs)) emitNode(x);
  }
  for (const p of peerResources) {
    for (const x of reversePeerings(ctx, p)) emitNode(x);
  }
  return { global, node };
}

const key = (x: Peering) => `${x.ip}|${x.port ?? 0}`;

const isGlobal = (p: BGPPeer) => !p.spec.node && !p.spec.nodeSelector;

/** The nodes on the "node" side of a BGPPeer. */
function localNodes(ctx: ModelContext, p: BGPPeer): string[] {
  return p.spec.nodeSelector
    ? ctx.matching(p.spec.nodeSelector, p.metadata.name).map((n) => n.name)
    : p.spec.node
      ? [p.spec.node]
      : [];
}

function nodeAsPeering(ctx: ModelContext, n: NodeFacts, source: BGPPeer): Peering | undefined {
  return n.ip === undefined
    ? undefined
    : {
        ip: n.ip,
        port: ctx.listenPortOf(n.name),
        asNumber: n.asNumber ?? ctx.globalAs,
        rrClusterId: n.rrClusterId,
        calicoNode: false,
        source,
      };
}

/** The names of the nodes with this address (either family), AS and, when given, listen port. */
function nodesWithIPPortAndAS(
  ctx: ModelContext,
  ip: string,
  asn: number | undefined,
  port: number | undefined,
): string[] {
  const want = asn ?? ctx.globalAs;
  return ctx.input.nodes
    .map((n) => ({ v4: nodeFacts(n, 4), v6: nodeFacts(n, 6) }))
    .filter(({ v4, v6 }) => {
      if (v4.ip !== ip && v6.ip !== ip) return false;
      if ((v4.asNumber ?? ctx.globalAs) !== want) return false;
      if (port) {
        const np = ctx.nodeSpecificPort(v4.name);
        if (np !== undefined && np !== port) return false;
        if (np === undefined && ctx.global.listenPort !== undefined && ctx.global.listenPort !== port) {
          return false;
        }
      }
      return true;
    })
    .map(({ v4 }) => v4.name);
}

/** The peerings a BGPPeer asks of the nodes on its "node" side. */
function forwardPeerings(ctx: ModelContext, p: BGPPeer, allNodeIPs: ReadonlySet<string>): Peering[] {
  const { warnings } = ctx;
  if (p.spec.peerSelector) {
    return ctx
      .matching(p.spec.peerSelector, p.metadata.name)
      .map((n) => nodeAsPeering(ctx, n, p))
      .filter((x) => x !== undefined);
  }
  if (!p.spec.peerIP) {
    if (!p.spec.localWorkloadSelector) warnings.push(`BGPPeer ${p.metadata.name}: no peerIP; skipped`);
    else warnings.push(`BGPPeer ${p.metadata.name}: localWorkloadSelector peers are not supported; skipped`);
    return [];
  }
  const parsed = parsePeerIP(p.spec.peerIP);
  const ip = parsed ? parseIP(parsed.ip) : undefined;
  if (!parsed || !ip) {
    warnings.push(
      `BGPPeer ${p.metadata.name}: peerIP ${JSON.stringify(p.spec.peerIP)} is malformed; skipped`,
    );
    return [];
  }
  if (ip.family !== ctx.family) return [];
  const asn = asNumberValue(p.spec.asNumber) ?? 0;
  let port = parsed.port;
  if (!port) {
    const owners = nodesWithIPPortAndAS(
      ctx,
      parsed.ip,
      asNumberValue(p.spec.asNumber) || undefined,
      undefined,
    );
    if (owners.length > 0) port = ctx.nodeSpecificPort(owners[0]!) ?? ctx.global.listenPort;
  }
  return [{ ip: parsed.ip, port, asNumber: asn, calicoNode: allNodeIPs.has(parsed.ip), source: p }];
}

/**
 * When this node is on the "peer" side of the BGPPeer: peerings back to its "node" side
 * (`reversePeering: Manual` asks for no automatic reverse sessions).
 */
function reversePeerings(ctx: ModelContext, p: BGPPeer): Peering[] {
  if (p.spec.reversePeering === 'Manual') return [];
  let designated: string[];
  let reverseFamilies: IPFamily[];
  if (p.spec.peerSelector) {
    designated = ctx.matching(p.spec.peerSelector, p.metadata.name).map((n) => n.name);
    reverseFamilies = [4, 6];
  } else {
    const parsed = p.spec.peerIP ? parsePeerIP(p.spec.peerIP) : undefined;
    if (!parsed) return [];
    designated = nodesWithIPPortAndAS(
      ctx,
      parsed.ip,
      asNumberValue(p.spec.asNumber) || undefined,
      parsed.port,
    );
    reverseFamilies = [familyOf(parsed.ip) ?? 4];
  }
  if (!designated.includes(ctx.input.nodeName) || !reverseFamilies.includes(ctx.family)) return [];
  const others = isGlobal(p) ? ctx.nodes : ctx.nodes.filter((n) => localNodes(ctx, p).includes(n.name));
  return others.map((n) => nodeAsPeering(ctx, n, p)).filter((x) => x !== undefined);
}
