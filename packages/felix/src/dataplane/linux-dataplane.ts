/**
 * LinuxDataplane: the one kernel-facing object of Felix. It takes the desired dataplane state from
 * the calculation graph and keeps the kernel in step with it, through an ordered list of managers
 * of one shape (`DataplaneManager`, dataplane-manager.ts; upstream `int_dataplane.go`):
 *
 *   onUpdate(diff) ──► each manager's onUpdate(diff), in order (records only):
 *     1. RulesManager    (rules-manager.ts)  renderer inputs + dirty sections; tunnelSources
 *     2. RouteManager    (route-manager.ts)  this node's workload endpoints
 *     3. VxlanManager    (vxlan-manager.ts)  diff.vxlan   ──► vxlan.calico
 *     4. VxlanManager, 6                      diff.vxlanV6 ──► vxlan-v6.calico
 *     5. IpipManager     (ipip-manager.ts)   diff.ipip    ──► tunl0
 *   apply() ──► each manager's completeDeferredWork(), in the same order:
 *     1. the rules: render the sections the diffs touched, one nftables transaction of only the
 *        changed objects (the NAT chains are among them); a failure fails the apply, nothing after
 *     2. the workload routes and interface sysctls, read back and repaired (every apply)
 *     3-5. VXLAN (IPv4, IPv6), IPIP: devices, routes, neighbours, FDB, if a state came since their
 *        last programming
 *   A diff with a VXLAN or IPIP part also programs that tunnel soon (10 ms, coalesced) without
 *   waiting for an apply: the daemon applies only when the rules changed, and the tunnels' devices
 *   and routes are programmed apart from the rules (their completeDeferredWork then finds nothing
 *   left to do). The two share the tunnel route protocol; each leaves the other's destinations alone.
 *   update(state): the same from a whole state (the diff from what was recorded to it)
 *   InterfaceMonitor (poll `ip link`) ──► RouteManager.onInterface ──► route apply (soon)
 *   timers: nftables read-back resync (NftablesRefreshInterval), route + VXLAN + IPIP resync
 *           (RouteRefreshInterval), each a full read-back whatever was recorded
 *
 * API: `onUpdate(diff)` / `update(state)` / `setRulesConfig(cfg)` / `setTunnelRules(t)` record; `apply()` programs
 * and resolves with what the rules and routes did (throws if nftables failed; failures of the
 * later managers are retried by the timers and reported through `onError`). `setVxlanState(state)`
 * records the VXLAN state and programs it soon, independently of the rules (failures likewise
 * retried); `setIpipState(state)` the same for IPIP. `start()` begins the monitor and timers,
 * `stop()` ends them and leaves everything programmed in place.
 *
 * Thread-safety: one event loop; kernel operations are serialised on an internal queue.
 */

import type { Netlinux } from '@calico-ts/netlinux';
import type { NftClient } from '@calico-ts/nftables';
import type { IpipState } from '../calc/ipip-resolver.js';
import type { DataplaneDiff, DataplaneState } from '../calc/types.js';
import type { VxlanState } from '../calc/vxlan-resolver.js';
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';
import type { RulesConfig } from '../rules/config.js';
import type { IncrementalRenderer } from '../rules/incremental-renderer.js';
import type { TunnelRules } from '../rules/ruleset-renderer.js';
import type { DataplaneManager } from './dataplane-manager.js';
import { InterfaceMonitor } from './interface-monitor.js';
import { type IpipApplyResult, IpipManager, type IpipNetOps } from './ipip-manager.js';
import type { NftApplyResult } from './nftables-dataplane.js';
import { type RouteApplyResult, RouteManager, type RouteNetOps } from './route-manager.js';
import { RulesManager } from './rules-manager.js';
import { type VxlanApplyResult, VxlanManager, type VxlanNetOps } from './vxlan-manager.js';

export type DataplaneNetOps = RouteNetOps & Pick<Netlinux, 'listLinks'> & VxlanNetOps & IpipNetOps;

export interface LinuxDataplaneOptions {
  readonly nft: NftClient;
  /** A second client for the `ip6` table's transactions, run beside `nft`'s (`NftablesDataplane`). */
  readonly nftIp6?: NftClient;
  readonly net: DataplaneNetOps;
  /** Network namespace (name or path) for routes, links and sysctls; the nft context must match. */
  readonly netns?: string;
  readonly rulesConfig: RulesConfig;
  readonly routeProtocol: number;
  /** Protocol of the VXLAN tunnel, same-subnet and blackhole routes (`encapRouteProtocol`). */
  readonly encapRouteProtocol?: number;
  /** Read-back and repair of the nftables tables; 0 turns the timer off. */
  readonly nftablesRefreshMs: number;
  readonly routeRefreshMs: number;
  readonly interfacePollMs: number;
  readonly log?: Logger;
  /** Called after every nftables transaction attempt (for metrics). */
  readonly onNftApplied?: (r: NftApplyResult & { ok: boolean; seconds: number }) => void;
  /** Called when a background step (timer, interface change) fails. */
  readonly onError?: (what: string, e: unknown) => void;
}

export interface DataplaneApplyReport {
  readonly nft: NftApplyResult;
  readonly routes?: RouteApplyResult;
}

/** The tunnels programmed soon after a change as well as at an apply, with their log names. */
const SOON = { vxlan: 'VXLAN', ipip: 'IPIP' } as const;
type Soon = keyof typeof SOON;

/** One manager in the dataplane's order and the name its failures are reported under. */
interface ManagerEntry {
  readonly what: 'rules' | 'routes' | Soon;
  readonly manager: DataplaneManager;
}

export class LinuxDataplane {
  readonly #o: LinuxDataplaneOptions;
  readonly #log: Logger;
  readonly #rules: RulesManager;
  readonly #routes: RouteManager;
  readonly #monitor: InterfaceMonitor;
  readonly #vxlan: VxlanManager;
  readonly #vxlan6: VxlanManager;
  readonly #ipip: IpipManager;
  /** Every manager, in the order they record and program. */
  readonly #managers: readonly ManagerEntry[];
  #hasState = false;
  #applied = false;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #timers: NodeJS.Timeout[] = [];
  #routeSoon: NodeJS.Timeout | undefined;
  #recheck: NodeJS.Timeout | undefined;
  readonly #soon = new Map<Soon, NodeJS.Timeout>();
  #stopped = false;

  constructor(opts: LinuxDataplaneOptions) {
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
    const ns = opts.netns !== undefined ? { netns: opts.netns } : {};
    const prefixes = opts.rulesConfig.interfacePrefixes;
    this.#rules = new RulesManager({
      nft: opts.nft,
      ...(opts.nftIp6 !== undefined ? { nftIp6: opts.nftIp6 } : {}),
      rulesConfig: opts.rulesConfig,
      log: this.#log,
      ...(opts.onNftApplied !== undefined ? { onApplied: opts.onNftApplied } : {}),
    });
    this.#routes = new RouteManager({
      net: opts.net,
      ...ns,
      interfacePrefixes: prefixes,
      protocol: opts.routeProtocol,
      ipv6: opts.rulesConfig.ipv6Support,
      log: this.#log,
    });
    const encap = {
      net: opts.net,
      ...ns,
      protocol: opts.encapRouteProtocol ?? 80,
      workloadPrefixes: prefixes,
    };
    this.#vxlan = new VxlanManager({
      ...encap,
      claimedElsewhere: (dst) => this.#ipip.wants(dst),
      log: this.#log,
    });
    this.#vxlan6 = new VxlanManager({ ...encap, family: 6, log: this.#log });
    this.#ipip = new IpipManager({
      ...encap,
      claimedElsewhere: (dst) => this.#vxlan.state?.routes.some((r) => r.dst === dst) ?? false,
      log: this.#log,
    });
    this.#managers = [
      { what: 'rules', manager: this.#rules },
      { what: 'routes', manager: this.#routes },
      { what: 'vxlan', manager: this.#vxlan },
      { what: 'vxlan', manager: this.#vxlan6 },
      { what: 'ipip', manager: this.#ipip },
    ];
    this.#monitor = new InterfaceMonitor({
      listLinks: () => opts.net.listLinks(opts.netns),
      interfacePrefixes: prefixes,
      onUpdate: (name, st) => {
        this.#routes.onInterface(name, st);
        this.#scheduleRoutes();
      },
      log: this.#log,
    });
  }

  get routeManager(): RouteManager {
    return this.#routes;
  }

  get interfaceMonitor(): InterfaceMonitor {
    return this.#monitor;
  }

  get vxlanManager(): VxlanManager {
    return this.#vxlan;
  }

  /** The IPv6 VXLAN manager (vxlan-v6.calico). */
  get vxlanManagerV6(): VxlanManager {
    return this.#vxlan6;
  }

  /** The IPIP device and route manager. */
  get ipipManager(): IpipManager {
    return this.#ipip;
  }

  /** True once a whole state has been programmed. */
  get applied(): boolean {
    return this.#applied;
  }

  /** How many local endpoints, active policies and profiles, IP sets the rules are made from. */
  get counts(): IncrementalRenderer['counts'] {
    return this.#rules.counts;
  }

  /** Records the whole desired state (everything is compared at the next `apply()`). */
  update(state: DataplaneState): void {
    const tunnels = {
      ...(state.tunnelSources ? { tunnelSources: state.tunnelSources } : {}),
      ...(state.ipip ? { ipip: state.ipip } : {}),
      ...(state.vxlanV6 ? { vxlanV6: state.vxlanV6 } : {}),
      ...(state.vxlan ? { vxlan: state.vxlan } : {}),
    };
    this.onUpdate({ ...this.#rules.diffTo(state), ...tunnels });
  }

  /** Records one change of the desired state; the next `apply()` programs just what it changed. */
  onUpdate(diff: DataplaneDiff): void {
    for (const m of this.#managers) m.manager.onUpdate(diff);
    this.#hasState = true;
    if (diff.vxlan || diff.vxlanV6) this.#programSoon('vxlan');
    if (diff.ipip) this.#programSoon('ipip');
  }

  setRulesConfig(cfg: RulesConfig): void {
    this.#rules.setConfig(cfg);
  }

  /** Records what the rules need of the tunnels (IPIP and VXLAN sources); the next `apply()` programs it. */
  setTunnelRules(t: TunnelRules): void {
    this.#rules.setTunnelRules(t);
  }

  /** Records the desired VXLAN state of `family` (IPv4 unless told) and programs it soon. */
  setVxlanState(state: VxlanState, family: 4 | 6 = 4): void {
    (family === 4 ? this.#vxlan : this.#vxlan6).setState(state);
    this.#programSoon('vxlan');
  }

  /**
   * Reads the VXLAN devices, routes, neighbours and FDB back and makes them right: IPv4, then IPv6
   * (a family without a recorded state is left alone). Resolves to the IPv4 result.
   */
  resyncVxlan(): Promise<VxlanApplyResult | undefined> {
    return this.#serial(async () => {
      let failure: unknown;
      const r = await this.#vxlan.apply().catch((e: unknown) => {
        failure = e;
        return undefined;
      });
      await this.#vxlan6.apply().catch((e: unknown) => {
        failure ??= e;
      });
      if (failure !== undefined) throw failure;
      return r;
    });
  }

  /** Records the desired IPIP state and programs it soon (coalescing quick successions). */
  setIpipState(state: IpipState): void {
    this.#ipip.setState(state);
    this.#programSoon('ipip');
  }

  /** Reads tunl0 and the IPIP routes back and makes them right. */
  resyncIpip(): Promise<IpipApplyResult | undefined> {
    return this.#serial(() => this.#ipip.apply());
  }

  /**
   * Programs the recorded state: each manager's deferred work in order, the rules (one nftables
   * transaction) first; a failure of the rules fails the apply, a later manager's is reported.
   */
  apply(): Promise<DataplaneApplyReport> {
    return this.#serial(async () => {
      if (!this.#hasState) throw new Error('no dataplane state to apply yet');
      for (const { what, manager } of this.#managers) {
        if (manager === this.#rules) {
          await manager.completeDeferredWork();
          this.#applied = true;
          continue;
        }
        await manager.completeDeferredWork().catch((e: unknown) => this.#o.onError?.(what, e));
      }
      const nft = this.#rules.lastApply as NftApplyResult;
      const routes = this.#routes.lastApply;
      return routes ? { nft, routes: this.#recheckLater(routes) } : { nft };
    });
  }

  /** Reads the nftables tables back and repairs them (what the refresh timer does). */
  resyncNftables(): Promise<NftApplyResult | undefined> {
    return this.#serial(async () => (this.#hasState && this.#applied ? this.#rules.resync() : undefined));
  }

  /** Reads the workload routes back and repairs them. */
  resyncRoutes(): Promise<RouteApplyResult | undefined> {
    return this.#serial(async () =>
      this.#applied ? this.#recheckLater(await this.#routes.apply()) : undefined,
    );
  }

  start(): void {
    this.#monitor.start(this.#o.interfacePollMs);
    const every = (ms: number, what: string, op: () => Promise<unknown>) => {
      if (ms <= 0) return;
      this.#timers.push(
        setInterval(() => {
          op().catch((e: unknown) => {
            this.#log.warn({ err: errorMessage(e) }, `${what} failed`);
            this.#o.onError?.(what, e);
          });
        }, ms),
      );
    };
    every(this.#o.nftablesRefreshMs, 'nftables resync', () => this.resyncNftables());
    every(this.#o.routeRefreshMs, 'route resync', () => this.resyncRoutes());
    every(this.#o.routeRefreshMs, 'VXLAN resync', () => this.resyncVxlan());
    every(this.#o.routeRefreshMs, 'IPIP resync', () => this.resyncIpip());
  }

  /** Stops timers and the monitor; everything programmed stays in the kernel. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#monitor.stop();
    for (const t of this.#soon.values()) clearTimeout(t);
    this.#soon.clear();
    for (const t of this.#timers.splice(0)) clearInterval(t);
    if (this.#routeSoon !== undefined) clearTimeout(this.#routeSoon);
    clearTimeout(this.#recheck);
    this.#routeSoon = undefined;
    await this.#queue.catch(() => {});
  }

  /**
   * The deferred work of one tunnel's managers, 10 ms from now (coalescing quick successions),
   * without waiting for an apply; failures are retried on the route refresh timer.
   */
  #programSoon(what: Soon): void {
    if (this.#soon.has(what) || this.#stopped) return;
    const managers = this.#managers.filter((m) => m.what === what).map((m) => m.manager);
    this.#soon.set(
      what,
      setTimeout(() => {
        this.#soon.delete(what);
        this.#serial(async () => {
          let failure: unknown;
          for (const m of managers) {
            await m.completeDeferredWork().catch((e: unknown) => {
              failure ??= e;
            });
          }
          if (failure !== undefined) throw failure;
        }).catch((e: unknown) => {
          this.#log.warn(
            { err: errorMessage(e) },
            `${SOON[what]} update failed; retrying on the route refresh timer`,
          );
          this.#o.onError?.(what, e);
        });
      }, 10),
    );
  }

  /** Routes left in their grace period get another look when it ends. */
  #recheckLater(r: RouteApplyResult): RouteApplyResult {
    if (r.recheckInMs !== undefined && !this.#stopped) {
      clearTimeout(this.#recheck);
      this.#recheck = setTimeout(() => this.#scheduleRoutes(), r.recheckInMs + 10);
      this.#recheck.unref?.();
    }
    return r;
  }

  #scheduleRoutes(): void {
    if (this.#routeSoon !== undefined) return;
    this.#routeSoon = setTimeout(() => {
      this.#routeSoon = undefined;
      this.resyncRoutes().catch((e: unknown) => {
        this.#log.warn({ err: errorMessage(e) }, 'route update failed');
        this.#o.onError?.('routes', e);
      });
    }, 10);
  }

  #serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(op, op);
    this.#queue = next.catch(() => {});
    return next;
  }
}
