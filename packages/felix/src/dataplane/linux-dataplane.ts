/**
 * LinuxDataplane: the one kernel-facing object of Felix. It takes the desired dataplane state from
 * the calculation graph and keeps the kernel in step with it.
 *
 *   onUpdate(diff) ──► IncrementalRenderer (rules/): records; apply() re-renders the sections the
 *                │    diffs touched ──► NftablesDataplane: compares just those objects with what it
 *                │    programmed ── one transaction per apply, of only the changed objects
 *                ├──► RouteManager.setEndpoints ──► routes + sysctls of workload interfaces
 *                └──► the diff's tunnel parts: tunnelSources ──► setTunnelRules (next apply),
 *                     ipip ──► setIpipState, vxlanV6 / vxlan ──► setVxlanState (each soon)
 *   update(state): the same from a whole state (everything compared)
 *   InterfaceMonitor (poll `ip link`) ──► RouteManager.onInterface ──► route apply (soon)
 *   setVxlanState(state) ──► VxlanManager ──► vxlan.calico, its routes, neighbours, FDB (soon)
 *   setVxlanState(state, 6) ──► VxlanManager (IPv6) ──► vxlan-v6.calico, the same for IPv6
 *   setIpipState(state)  ──► IpipManager  ──► tunl0, the IPIP pools' routes (soon)
 *        (the two share the tunnel route protocol; each leaves the other's destinations alone)
 *   timers: nftables read-back resync (NftablesRefreshInterval), route + VXLAN + IPIP resync
 *           (RouteRefreshInterval)
 *
 * API: `onUpdate(diff)` / `update(state)` / `setRulesConfig(cfg)` / `setTunnelRules(t)` record; `apply()` programs
 * nftables then routes and resolves with what it did (throws if nftables failed; route failures
 * are retried by the timers and reported through `onError`). `setVxlanState(state)` records the
 * VXLAN state and programs it shortly after, independently of the rules (failures likewise
 * retried); `setIpipState(state)` the same for IPIP. `start()` begins the monitor and timers, `stop()` ends
 * them and leaves everything programmed in place.
 *
 * Thread-safety: one event loop; kernel operations are serialised on an internal queue.
 */

import type { Netlinux } from '@calico-ts/netlinux';
import type { NftClient } from '@calico-ts/nftables';
import type { IpipState } from '../calc/ipip-resolver.js';
import type { DataplaneDiff, DataplaneState, EncapDiff } from '../calc/types.js';
import type { VxlanState } from '../calc/vxlan-resolver.js';
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';
import type { RulesConfig } from '../rules/config.js';
import { IncrementalRenderer } from '../rules/incremental-renderer.js';
import type { TunnelRules } from '../rules/ruleset-renderer.js';
import { InterfaceMonitor } from './interface-monitor.js';
import { type IpipApplyResult, IpipManager, type IpipNetOps } from './ipip-manager.js';
import { type NftApplyResult, NftablesDataplane } from './nftables-dataplane.js';
import { type RouteApplyResult, RouteManager, type RouteNetOps } from './route-manager.js';
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

export class LinuxDataplane {
  readonly #o: LinuxDataplaneOptions;
  readonly #log: Logger;
  readonly #nft: NftablesDataplane;
  readonly #routes: RouteManager;
  readonly #monitor: InterfaceMonitor;
  readonly #vxlan: VxlanManager;
  readonly #vxlan6: VxlanManager;
  readonly #ipip: IpipManager;
  readonly #renderer: IncrementalRenderer;
  #hasState = false;
  #applied = false;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #timers: NodeJS.Timeout[] = [];
  #routeSoon: NodeJS.Timeout | undefined;
  #recheck: NodeJS.Timeout | undefined;
  #vxlanSoon: NodeJS.Timeout | undefined;
  #ipipSoon: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(opts: LinuxDataplaneOptions) {
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
    this.#renderer = new IncrementalRenderer(opts.rulesConfig);
    this.#nft = new NftablesDataplane({
      nft: opts.nft,
      ...(opts.nftIp6 !== undefined ? { nftIp6: opts.nftIp6 } : {}),
      log: this.#log,
    });
    this.#routes = new RouteManager({
      net: opts.net,
      ...(opts.netns !== undefined ? { netns: opts.netns } : {}),
      interfacePrefixes: opts.rulesConfig.interfacePrefixes,
      protocol: opts.routeProtocol,
      ipv6: opts.rulesConfig.ipv6Support,
      log: this.#log,
    });
    this.#vxlan = new VxlanManager({
      net: opts.net,
      ...(opts.netns !== undefined ? { netns: opts.netns } : {}),
      protocol: opts.encapRouteProtocol ?? 80,
      workloadPrefixes: opts.rulesConfig.interfacePrefixes,
      claimedElsewhere: (dst) => this.#ipip.wants(dst),
      log: this.#log,
    });
    this.#vxlan6 = new VxlanManager({
      net: opts.net,
      ...(opts.netns !== undefined ? { netns: opts.netns } : {}),
      protocol: opts.encapRouteProtocol ?? 80,
      workloadPrefixes: opts.rulesConfig.interfacePrefixes,
      family: 6,
      log: this.#log,
    });
    this.#ipip = new IpipManager({
      net: opts.net,
      ...(opts.netns !== undefined ? { netns: opts.netns } : {}),
      protocol: opts.encapRouteProtocol ?? 80,
      workloadPrefixes: opts.rulesConfig.interfacePrefixes,
      claimedElsewhere: (dst) => this.#vxlan.state?.routes.some((r) => r.dst === dst) ?? false,
      log: this.#log,
    });
    this.#monitor = new InterfaceMonitor({
      listLinks: () => opts.net.listLinks(opts.netns),
      interfacePrefixes: opts.rulesConfig.interfacePrefixes,
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
    return this.#renderer.counts;
  }

  /** Records the whole desired state (everything is compared at the next `apply()`). */
  update(state: DataplaneState): void {
    this.#renderer.reset(state);
    this.#hasState = true;
    this.#routes.setEndpoints(this.#renderer.workloadEndpoints());
    this.#onTunnels(state);
  }

  /** Records one change of the desired state; the next `apply()` programs just what it changed. */
  onUpdate(diff: DataplaneDiff): void {
    this.#renderer.onUpdate(diff);
    this.#hasState = true;
    if (diff.endpointsUpdated.length > 0 || diff.endpointsRemoved.length > 0) {
      this.#routes.setEndpoints(this.#renderer.workloadEndpoints());
    }
    this.#onTunnels(diff);
  }

  /** The tunnel parts the graph emitted (each present only when it changed). */
  #onTunnels(t: EncapDiff): void {
    if (t.tunnelSources) this.setTunnelRules(t.tunnelSources);
    if (t.ipip) this.setIpipState(t.ipip);
    if (t.vxlanV6) this.setVxlanState(t.vxlanV6, 6);
    if (t.vxlan) this.setVxlanState(t.vxlan);
  }

  setRulesConfig(cfg: RulesConfig): void {
    this.#renderer.setConfig(cfg);
  }

  /** Records what the rules need of the tunnels (IPIP and VXLAN sources); the next `apply()` programs it. */
  setTunnelRules(t: TunnelRules): void {
    this.#renderer.setTunnelRules(t);
  }

  /**
   * Records the desired VXLAN state of `family` (IPv4 unless told) and programs both families
   * shortly (coalescing quick successions).
   */
  setVxlanState(state: VxlanState, family: 4 | 6 = 4): void {
    (family === 4 ? this.#vxlan : this.#vxlan6).setState(state);
    if (this.#vxlanSoon !== undefined || this.#stopped) return;
    this.#vxlanSoon = setTimeout(() => {
      this.#vxlanSoon = undefined;
      this.resyncVxlan().catch((e: unknown) => {
        this.#log.warn({ err: errorMessage(e) }, 'VXLAN update failed; retrying on the route refresh timer');
        this.#o.onError?.('vxlan', e);
      });
    }, 10);
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

  /** Records the desired IPIP state and programs it shortly (coalescing quick successions). */
  setIpipState(state: IpipState): void {
    this.#ipip.setState(state);
    if (this.#ipipSoon !== undefined || this.#stopped) return;
    this.#ipipSoon = setTimeout(() => {
      this.#ipipSoon = undefined;
      this.resyncIpip().catch((e: unknown) => {
        this.#log.warn({ err: errorMessage(e) }, 'IPIP update failed; retrying on the route refresh timer');
        this.#o.onError?.('ipip', e);
      });
    }, 10);
  }

  /** Reads tunl0 and the IPIP routes back and makes them right. */
  resyncIpip(): Promise<IpipApplyResult | undefined> {
    return this.#serial(() => this.#ipip.apply());
  }

  /** Programs the recorded state: nftables in one transaction, then routes. */
  apply(): Promise<DataplaneApplyReport> {
    return this.#serial(async () => {
      if (!this.#hasState) throw new Error('no dataplane state to apply yet');
      const change = this.#renderer.render();
      const t0 = performance.now();
      let nft: NftApplyResult;
      try {
        nft = await this.#nft.apply(this.#renderer.desired(), change);
      } catch (e) {
        this.#o.onNftApplied?.({
          mode: 'incremental',
          commands: 0,
          ok: false,
          seconds: (performance.now() - t0) / 1000,
        });
        throw e;
      }
      this.#o.onNftApplied?.({ ...nft, ok: true, seconds: (performance.now() - t0) / 1000 });
      this.#applied = true;
      try {
        return { nft, routes: this.#recheckLater(await this.#routes.apply()) };
      } catch (e) {
        this.#o.onError?.('routes', e);
        return { nft };
      }
    });
  }

  /** Reads the nftables tables back and repairs them (what the refresh timer does). */
  resyncNftables(): Promise<NftApplyResult | undefined> {
    return this.#serial(async () => {
      if (!this.#hasState || !this.#applied) return undefined;
      const t0 = performance.now();
      // Changes recorded since the last apply are rendered too: the read-back compares everything.
      this.#renderer.render();
      const r = await this.#nft.resync(this.#renderer.desired());
      this.#o.onNftApplied?.({ ...r, ok: true, seconds: (performance.now() - t0) / 1000 });
      return r;
    });
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
    if (this.#vxlanSoon !== undefined) clearTimeout(this.#vxlanSoon);
    this.#vxlanSoon = undefined;
    if (this.#ipipSoon !== undefined) clearTimeout(this.#ipipSoon);
    this.#ipipSoon = undefined;
    for (const t of this.#timers.splice(0)) clearInterval(t);
    if (this.#routeSoon !== undefined) clearTimeout(this.#routeSoon);
    clearTimeout(this.#recheck);
    this.#routeSoon = undefined;
    await this.#queue.catch(() => {});
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
