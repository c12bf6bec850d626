/**
 * From a `BgpInput` snapshot to the facts one BIRD configuration needs, for one address family:
 * which sessions exist and how each is set up, which routes this node originates, and how each
 * IP pool's routes are exported and programmed. Pure; `bird-config-renderer.ts` turns it into text.
 * Each step is a small pure function in `model/`, named for its concern; all of them read one
 * `ModelContext` and append to its `warnings`, in the order below:
 *
 *   BGPFilters ──► filter functions (bgp-filters.ts) ─────────────────────────┐
 *   nodes, bgpConfigs ──► ModelContext (model/context.ts): this node, ports ──┤
 *   peers ──► global, node, reverse passes (model/peerings.ts) ──┬────────────┤
 *   mesh + peerings ──► sessions (model/sessions.ts) ────────────┼────────────┼─► BirdModel
 *   affineBlocks, service CIDRs, reachableBy (model/routes.ts) ◄─┘            │   (model/types.ts)
 *   pools (model/pools.ts), prefixAdvertisements (model/communities.ts) ──────┘
 *
 * Peering, mesh and route reflector rules follow upstream confd (`client.go` updatePeersV1,
 * `bgp_processor.go`); each file's header says which part.
 *
 * Kernel route priority: the routes BIRD programs carry the default BGPConfiguration's
 * `ipv4NormalRoutePriority`/`ipv6NormalRoutePriority` as their metric (default 1024). Upstream
 * also exports a more specific route of a local block whose kernel metric is below that (a
 * workload in live migration, which its Felix programs at an elevated priority); here workload
 * routes are programmed at metric 0, so that rule would export every pod's /32, and it is left
 * out until Felix programs route priorities.
 *
 * Not rendered (reported in `warnings` where the input asks for it): `localWorkloadSelector` peers.
 */
import { createHash } from 'node:crypto';
import { deriveFilterFunctions } from './bgp-filters.js';
import type { BgpInput, IPFamily } from './bgp-input.js';
import { communityRules } from './model/communities.js';
import { type ModelContext, modelContext } from './model/context.js';
import { nodeFacts } from './model/node-facts.js';
import { derivePeerings } from './model/peerings.js';
import { poolRules } from './model/pools.js';
import { affineBlocks, peerRoutes, serviceRoutes } from './model/routes.js';
import { deriveSessions, meshState } from './model/sessions.js';
import type { BirdModel } from './model/types.js';

export { asNumberValue, DEFAULT_AS_NUMBER } from './model/node-facts.js';
export { peerName } from './model/sessions.js';
export type {
  BirdModel,
  BirdPeer,
  BirdPeerKind,
  CommunityRule,
  PoolKernelRule,
  PoolRule,
} from './model/types.js';

/** Upstream's default kernel route metric for the routes BIRD programs (`*NormalRoutePriority`). */
export const DEFAULT_ROUTE_PRIORITY = 1024;

/** Upstream's `hashToIPv4`: the first four bytes of SHA-256(node name), first octet kept below 224. */
export function hashRouterId(nodeName: string): string {
  const b = createHash('sha256').update(nodeName).digest();
  const first = b[0]! > 223 ? b[0]! - 32 : b[0]!;
  return `${first}.${b[1]}.${b[2]}.${b[3]}`;
}

/** Derive the model of one family's BIRD configuration for `input.nodeName`. */
export function deriveBirdModel(input: BgpInput, family: IPFamily): BirdModel {
  const warnings: string[] = [];
  const filterFunctions = deriveFilterFunctions(input.filters ?? [], family, warnings);
  const ctx = modelContext(input, family, warnings);
  const { global, mine } = ctx;
  const peerings = derivePeerings(ctx);
  const mesh = meshState(ctx);
  const peers = deriveSessions(ctx, peerings, mesh, filterFunctions);
  const blocks = affineBlocks(ctx);
  const { staticRoutes, rejectCidrs } = serviceRoutes(ctx);
  const ignored = mine.ignoredInterfaces ?? global.ignoredInterfaces ?? [];
  return {
    family,
    nodeName: input.nodeName,
    nodeIP: ctx.myIP,
    nodeNetwork: ctx.me?.network,
    routerId: routerIdOf(ctx),
    asNumber: ctx.myAs,
    debug: logDebug(input.logLevel ?? mine.logSeverityScreen ?? global.logSeverityScreen),
    listenPort: ctx.listenPortOf(input.nodeName),
    bindToNodeIP: global.bindMode === 'NodeIP',
    routePriority:
      (family === 4 ? global.ipv4NormalRoutePriority : global.ipv6NormalRoutePriority) ??
      DEFAULT_ROUTE_PRIORITY,
    directInterfaces: [...ignored.map((i) => `-${i}`), '-cali*', '-kube-ipvs*', '*'],
    communities: communityRules(ctx),
    mesh,
    rrClusterId: ctx.myCluster,
    peers,
    blocks,
    staticRoutes,
    peerRoutes: peerRoutes(ctx, peerings),
    rejectCidrs,
    pools: poolRules(ctx),
    filterFunctions,
    warnings,
  };
}

/** `CALICO_ROUTER_ID` (an address, or `hash`), else this node's IPv4 address (for both families). */
function routerIdOf(ctx: ModelContext): string | undefined {
  const { input, me } = ctx;
  if (input.routerId === 'hash') return hashRouterId(input.nodeName);
  if (input.routerId) return input.routerId;
  return me ? nodeFacts(input.nodes.find((n) => n.metadata.name === me.name)!, 4).ip : undefined;
}

function logDebug(level: string | undefined): BirdModel['debug'] {
  switch ((level ?? 'info').toLowerCase()) {
    case 'debug':
      return 'all';
    case 'info':
      return 'states';
    default:
      return 'none';
  }
}
