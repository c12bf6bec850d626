/**
 * RouteManager: the host routes to local workloads, `<ip>/32` (`/128`) `dev cali… scope link`, and
 * the per-interface sysctls a workload interface needs (upstream `felix/routetable`,
 * `endpoint_mgr.go` configureInterface).
 *
 * API (a DataplaneManager): `onUpdate(diff)` keeps this node's workload endpoints from the
 * graph's diffs and routes them (`setEndpoints` sets them whole); `onInterface` (what exists and
 * is up) records the interfaces; `completeDeferredWork()` is `apply()` on every apply, keeping
 * what it did in `lastApply`, as the routes are read back each time. `apply()` reads the routes of the workload interfaces back and makes them
 * right: adds what is missing (or held by another protocol), deletes routes it owns that are no
 * longer wanted. A route it owns is one on a workload interface with Felix's protocol
 * (DeviceRouteProtocol, upstream default 3 = `boot`); routes of other protocols are left alone.
 * As upstream, an unwanted route on an interface first seen less than `cleanupGraceMs` (10 s) ago
 * is left for now: the CNI plugin routes a new pod before Felix hears of its endpoint, and taking
 * that route away would cut the pod off until the endpoint arrives. `apply()` says when to look
 * again (`recheckInMs`). A newly up interface gets its sysctls once (again after it reappears).
 *
 * Thread-safety: calls are serialised by the caller (the dataplane driver).
 */
import type { Netlinux, Route } from '@calico-ts/netlinux';
import type { DataplaneDiff } from '../calc/types.js';
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';
import type { DataplaneManager } from './dataplane-manager.js';
import { type InterfaceState, matchesPrefixes } from './interface-monitor.js';

/** Protocol names iproute2 prints (`/etc/iproute2/rt_protos`) for the numbers Felix might use. */
const PROTOCOL_NAMES: Readonly<Record<number, string>> = {
  1: 'redirect',
  2: 'kernel',
  3: 'boot',
  4: 'static',
  8: 'gated',
  9: 'ra',
  10: 'mrt',
  11: 'zebra',
  12: 'bird',
  13: 'dnrouted',
  14: 'xorp',
  15: 'ntk',
  16: 'dhcp',
  42: 'babel',
  186: 'bgp',
  187: 'isis',
  188: 'ospf',
  189: 'rip',
  192: 'eigrp',
};

export function protocolMatches(printed: string | undefined, protocol: number): boolean {
  const p = printed ?? 'boot';
  return p === String(protocol) || p === PROTOCOL_NAMES[protocol];
}

export type RouteNetOps = Pick<Netlinux, 'listRoutes' | 'replaceRoute' | 'delRoute' | 'writeSysctls'>;

export interface RouteManagerOptions {
  readonly net: RouteNetOps;
  /** The network namespace to act in (name or path); absent: Felix's own. */
  readonly netns?: string;
  readonly interfacePrefixes: readonly string[];
  /** DeviceRouteProtocol. */
  readonly protocol: number;
  readonly ipv6: boolean;
  readonly log?: Logger;
  /** Unwanted routes on an interface younger than this stay. Default 10,000 ms (upstream). */
  readonly cleanupGraceMs?: number;
  readonly now?: () => number;
}

export interface RouteEndpoint {
  readonly interfaceName?: string;
  readonly ipv4Nets: readonly string[];
  readonly ipv6Nets: readonly string[];
}

export interface RouteApplyResult {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly configured: readonly string[];
  /** Unwanted routes left in place because their interface is new. */
  readonly deferred: readonly string[];
  /** When `deferred` is not empty: apply again after this long to clean them up. */
  readonly recheckInMs?: number;
}

export const ROUTE_CLEANUP_GRACE_MS = 10_000;

function routeKey(dst: string, dev: string): string {
  return `${dst} dev ${dev}`;
}

export class RouteManager implements DataplaneManager {
  readonly #o: RouteManagerOptions;
  readonly #log: Logger;
  /** This node's workload endpoints by key, from the diffs (in the order the graph sent them). */
  readonly #endpoints = new Map<string, RouteEndpoint>();
  #last: RouteApplyResult | undefined;
  /** iface → CIDRs routed to it. */
  #wanted = new Map<string, string[]>();
  readonly #ifaces = new Map<string, InterfaceState>();
  /** Up interfaces whose sysctls still need writing. */
  readonly #toConfigure = new Set<string>();
  /** iface → when it was first seen (again after it reappeared with a new index). */
  readonly #firstSeen = new Map<string, number>();

  constructor(opts: RouteManagerOptions) {
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
  }

  /** Keeps the diff's workload endpoints; the wanted routes follow when any changed. */
  onUpdate(diff: DataplaneDiff): void {
    if (diff.endpointsUpdated.length === 0 && diff.endpointsRemoved.length === 0) return;
    for (const key of diff.endpointsRemoved) this.#endpoints.delete(key);
    for (const ep of diff.endpointsUpdated) {
      if (ep.kind === 'wep') this.#endpoints.set(ep.key, ep);
      else this.#endpoints.delete(ep.key);
    }
    this.setEndpoints(this.#endpoints.values());
  }

  /** What the last `completeDeferredWork()` did (undefined when it failed). */
  get lastApply(): RouteApplyResult | undefined {
    return this.#last;
  }

  async completeDeferredWork(): Promise<void> {
    this.#last = undefined;
    this.#last = await this.apply();
  }

  /** Replaces the endpoints to route (what `onUpdate` does from the endpoints it keeps). */
  setEndpoints(endpoints: Iterable<RouteEndpoint>): void {
    const wanted = new Map<string, string[]>();
    for (const ep of endpoints) {
      const iface = ep.interfaceName;
      if (!iface || iface === '*' || !matchesPrefixes(iface, this.#o.interfacePrefixes)) continue;
      const nets = [...ep.ipv4Nets, ...(this.#o.ipv6 ? ep.ipv6Nets : [])];
      wanted.set(iface, [...(wanted.get(iface) ?? []), ...nets]);
    }
    this.#wanted = wanted;
  }

  onInterface(name: string, state: InterfaceState | undefined): void {
    const old = this.#ifaces.get(name);
    if (state === undefined) {
      this.#ifaces.delete(name);
      this.#toConfigure.delete(name);
      this.#firstSeen.delete(name);
      return;
    }
    // First seen now, unless an apply already met its routes (then its grace began then).
    if (old ? old.index !== state.index : !this.#firstSeen.has(name)) this.#firstSeen.set(name, this.#now());
    this.#ifaces.set(name, state);
    if (state.up && (!old?.up || old.index !== state.index)) this.#toConfigure.add(name);
    if (!state.up) this.#toConfigure.delete(name);
  }

  /** The routes that should exist now: to wanted interfaces that exist and are up. */
  desiredRoutes(): { dst: string; dev: string }[] {
    const out: { dst: string; dev: string }[] = [];
    for (const [dev, nets] of [...this.#wanted].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!this.#ifaces.get(dev)?.up) continue;
      for (const dst of nets) out.push({ dst, dev });
    }
    return out;
  }

  async apply(): Promise<RouteApplyResult> {
    const configured = await this.#configureInterfaces();
    const ns = this.#o.netns;
    const current: Route[] = [
      ...(await this.#o.net.listRoutes({ family: 4 }, ns)),
      ...(this.#o.ipv6 ? await this.#o.net.listRoutes({ family: 6 }, ns) : []),
    ].filter((r) => r.dev !== undefined && matchesPrefixes(r.dev, this.#o.interfacePrefixes));
    const desired = this.desiredRoutes();
    const want = new Set(desired.map((r) => routeKey(r.dst, r.dev)));
    const have = new Map(current.map((r) => [routeKey(r.dst, r.dev!), r]));

    const added: string[] = [];
    const removed: string[] = [];
    const deferred: string[] = [];
    let recheckInMs: number | undefined;
    const grace = this.#o.cleanupGraceMs ?? ROUTE_CLEANUP_GRACE_MS;
    const now = this.#now();
    const errors: string[] = [];
    for (const r of desired) {
      const k = routeKey(r.dst, r.dev);
      const got = have.get(k);
      if (got && protocolMatches(got.proto, this.#o.protocol) && got.scope === 'link') continue;
      try {
        await this.#o.net.replaceRoute(
          { dst: r.dst, dev: r.dev, scope: 'link', proto: this.#o.protocol },
          ns,
        );
        added.push(k);
      } catch (e) {
        errors.push(`${k}: ${errorMessage(e)}`);
      }
    }
    for (const r of current) {
      const k = routeKey(r.dst, r.dev!);
      if (want.has(k) || !protocolMatches(r.proto, this.#o.protocol) || r.table !== undefined) continue;
      // An interface the monitor has not reported yet is as new as it gets: its grace starts now.
      let seen = this.#firstSeen.get(r.dev!);
      if (seen === undefined) {
        seen = now;
        this.#firstSeen.set(r.dev!, now);
      }
      const age = now - seen;
      if (age < grace) {
        deferred.push(k);
        recheckInMs = Math.min(recheckInMs ?? grace, grace - age);
        continue;
      }
      try {
        await this.#o.net.delRoute(
          { dst: r.dst, dev: r.dev!, proto: this.#o.protocol },
          { ignoreMissing: true },
          ns,
        );
        removed.push(k);
      } catch (e) {
        errors.push(`${k}: ${errorMessage(e)}`);
      }
    }
    // Forget interfaces that are gone (met only in an apply, the monitor never reported them).
    const devs = new Set(current.map((r) => r.dev));
    for (const dev of this.#firstSeen.keys()) {
      if (!this.#ifaces.has(dev) && !devs.has(dev)) this.#firstSeen.delete(dev);
    }
    if (added.length > 0 || removed.length > 0) this.#log.info({ added, removed }, 'workload routes updated');
    if (errors.length > 0) throw new Error(`route programming failed: ${errors.join('; ')}`);
    return { added, removed, configured, deferred, ...(recheckInMs !== undefined ? { recheckInMs } : {}) };
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  async #configureInterfaces(): Promise<string[]> {
    const done: string[] = [];
    const ns = this.#o.netns;
    for (const name of [...this.#toConfigure].sort()) {
      try {
        await this.#o.net.writeSysctls(
          [
            [`net.ipv4.conf.${name}.route_localnet`, '1'],
            [`net.ipv4.conf.${name}.proxy_arp`, '1'],
            [`net.ipv4.conf.${name}.forwarding`, '1'],
            [`net.ipv4.conf.${name}.rp_filter`, '1'],
          ],
          ns,
        );
        // Best effort, as upstream: a kernel without the knob, or IPv6 off on the interface.
        const optional: [string, string][] = [
          [`net.ipv4.neigh.${name}.proxy_delay`, '0'],
          [`net.ipv6.conf.${name}.accept_ra`, '0'],
        ];
        if (this.#o.ipv6) {
          optional.push([`net.ipv6.conf.${name}.proxy_ndp`, '1'], [`net.ipv6.conf.${name}.forwarding`, '1']);
        }
        for (const entry of optional) {
          await this.#o.net.writeSysctls([entry], ns).catch((e: unknown) => {
            this.#log.debug(
              { iface: name, sysctl: entry[0], err: errorMessage(e) },
              'optional sysctl not set',
            );
          });
        }
        this.#toConfigure.delete(name);
        done.push(name);
      } catch (e) {
        // The interface may have gone between the poll and now; the monitor will say so.
        this.#log.warn({ iface: name, err: errorMessage(e) }, 'configuring workload interface failed');
      }
    }
    return done;
  }
}
