/**
 * The route half of the tunnel managers (VXLAN, IPIP): an encapsulation's routes as kernel routes,
 * and one pass that makes the routes a manager owns equal to the ones it wants.
 *
 *   EncapRoute ──encapRouteSpec──► RouteSpec ─┐
 *   kernel routes ──owns()──► current ────────┴──syncOwnedRoutes──► replace the differing, delete the unwanted
 *
 * Pure except `syncOwnedRoutes`, which acts on the kernel through the calls it is given; each
 * failed call is recorded in `errors` and the pass goes on, so one bad route does not hold up the
 * others.
 */
import type { Netlinux, Route, RouteSpec } from '@calico-ts/netlinux';
import type { EncapRoute } from '../calc/vxlan-resolver.js';
import { errorMessage, type Logger } from '../logging.js';
import { protocolMatches } from './route-manager.js';

/** What the tunnel managers share of their options (each adds its own kernel calls). */
export interface EncapManagerOptions {
  /** The network namespace to act in (name or path); absent: Felix's own. */
  readonly netns?: string;
  /** Protocol of the routes the manager programs off its device (see `encapRouteProtocol`). */
  readonly protocol: number;
  /** Workload interface prefixes, whose routes are never touched here. */
  readonly workloadPrefixes: readonly string[];
  /** Destinations the other tunnel manager programs with the same protocol: never ours. */
  readonly claimedElsewhere?: (dst: string) => boolean;
  /** Where it logs; silent when absent. */
  readonly log?: Logger;
}

/**
 * The kernel route for one of an encapsulation's routes, with protocol `proto`; undefined for a
 * same-subnet route when no interface of this node (`parentDev`) is on its gateway's subnet.
 */
export function encapRouteSpec(
  r: EncapRoute,
  parentDev: string | undefined,
  proto: number,
): RouteSpec | undefined {
  switch (r.kind) {
    case 'tunnel':
      return { dst: r.dst, gateway: r.gateway, dev: r.dev, onlink: true, proto };
    case 'device':
      return { dst: r.dst, dev: r.dev, scope: 'link', proto };
    case 'same-subnet':
      return parentDev === undefined ? undefined : { dst: r.dst, gateway: r.gateway, dev: parentDev, proto };
    case 'blackhole':
      return { dst: r.dst, type: 'blackhole', proto };
  }
}

/** What `syncOwnedRoutes` acts through, and which kernel routes are the manager's. */
export interface OwnedRoutes {
  readonly net: Pick<Netlinux, 'listRoutes' | 'replaceRoute' | 'delRoute'>;
  readonly netns: string | undefined;
  readonly family: 4 | 6;
  /** The protocol the manager's routes carry. */
  readonly protocol: number;
  /** Whether a kernel route is the manager's (others are never touched). */
  readonly owns: (r: Route) => boolean;
}

/**
 * Makes the manager's routes in the kernel equal to `desired` (keyed by destination): replaces a
 * missing or differing one, deletes one no longer wanted, and records what it did in `out` and
 * each failure in `errors`.
 */
export async function syncOwnedRoutes(
  o: OwnedRoutes,
  desired: ReadonlyMap<string, RouteSpec>,
  out: { routesAdded: string[]; routesRemoved: string[] },
  errors: string[],
): Promise<void> {
  const current = (await o.net.listRoutes({ family: o.family }, o.netns)).filter((r) => o.owns(r));
  const have = new Map(current.map((r) => [r.dst, r]));
  for (const [dst, spec] of desired) {
    const got = have.get(dst);
    if (got && sameRoute(got, spec, o.protocol)) continue;
    try {
      await o.net.replaceRoute(spec, o.netns);
      out.routesAdded.push(describeRoute(spec));
    } catch (e) {
      errors.push(`route ${describeRoute(spec)}: ${errorMessage(e)}`);
    }
  }
  for (const r of current) {
    // A wanted destination was replaced above: the replace took the old route's place.
    if (desired.has(r.dst)) continue;
    try {
      const gone = await o.net.delRoute(
        {
          dst: r.dst,
          ...(r.dev !== undefined ? { dev: r.dev } : {}),
          ...(r.type !== undefined ? { type: r.type } : {}),
          ...(r.proto !== undefined ? { proto: r.proto } : {}),
        },
        { ignoreMissing: true },
        o.netns,
      );
      if (gone) out.routesRemoved.push(describeRoute(r));
    } catch (e) {
      errors.push(`route ${r.dst}: ${errorMessage(e)}`);
    }
  }
}

function sameRoute(got: Route, want: RouteSpec, protocol: number): boolean {
  return (
    (got.type ?? 'unicast') === (want.type ?? 'unicast') &&
    got.dev === want.dev &&
    got.gateway === want.gateway &&
    (got.onlink === true) === (want.onlink === true) &&
    protocolMatches(got.proto, protocol)
  );
}

function describeRoute(r: RouteSpec | Route): string {
  const parts = [r.type === 'blackhole' ? `blackhole ${r.dst}` : r.dst];
  if (r.gateway !== undefined) parts.push(`via ${r.gateway}`);
  if (r.dev !== undefined) parts.push(`dev ${r.dev}`);
  if (r.onlink) parts.push('onlink');
  return parts.join(' ');
}
