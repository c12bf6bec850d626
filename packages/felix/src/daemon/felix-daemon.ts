/**
 * FelixDaemon: Felix's main loop, the wiring from the datastore to the kernel.
 *
 *   Syncer (list+watch, @calico-ts/datastore; felix-sources.ts)
 *     │ resources, Nodes, IPAM blocks, Services ──► calcUpdateOf ──► CalcGraph.onUpdate
 *     │ FelixConfiguration ──► ConfigState (config-state.ts) ──► rules config, tunnel config
 *     │ ClusterInformation ──► datastore lock (datastoreReady: false holds every apply)
 *     │ connection state ─┐
 *   probe (raw KV rev.) ──┴► DatastoreHealth (datastore-health.ts) ──► health: async_calc_graph
 *                                                                   │
 *   (debounce) ──► host MTU if the tunnels need it ──► CalcGraph.flush ──► DataplaneDiff
 *        ──► LinuxDataplane.onUpdate (rules, routes, VXLAN, IPIP) ──► apply: one nft transaction,
 *            routes ──► PodMtuFile (mtu-file.ts) ──► health: InternalDataplaneMainLoop
 *   StatusReporter ──► /calico/felix/v2/…/status (lease), last_reported_status
 *   FelixServers (servers.ts): /liveness /readiness ◄── HealthAggregator; /metrics ◄── FelixMetrics
 *
 * Everything the dataplane needs comes out of the one graph: policies, IP sets, endpoints, pools,
 * and the tunnels (VXLAN, IPIP, the routes to other nodes' blocks, the hosts tunnelled packets
 * are accepted from). The daemon keeps no nodes, pools or blocks. The tunnels are derived once
 * every source is in sync, so a partial view never removes routes.
 *
 * Readiness is false until the first in-sync has been programmed, and while the datastore is
 * unreachable (the rules stay as they are meanwhile; reconnecting resyncs everything).
 * ClusterInformation `datastoreReady: false` (calicoctl's datastore lock, set during a migration)
 * holds every apply: the programmed dataplane stays exactly as it is, updates keep reaching the
 * graph, and the first apply after the lock lifts programs everything that changed meanwhile.
 *
 * A policy or profile rule with a field Felix does not enforce (HTTP matches, an unknown key) fails
 * closed in the graph; the daemon logs it once per policy and rule set. `stop()`
 * ends every loop and server but leaves the programmed rules and routes in place.
 *
 * API: `start()` resolves once the configuration is loaded and the loops run; `stop()`.
 * Thread-safety: one event loop; dataplane applies never overlap.
 */
import type { ClusterInformationSpec, FelixConfigurationSpec, Kind } from '@calico-ts/api';
import { type Datastore, Syncer, type SyncerOptions, type SyncerUpdate } from '@calico-ts/datastore';
import type { NftClient } from '@calico-ts/nftables';
import { CalcGraph } from '../calc/calc-graph.js';
import { changesRules } from '../calc/dataplane-state.js';
import { encapRouteProtocol } from '../calc/route-resolver.js';
import { rulesConfigOf, statusPrefix } from '../config/derived.js';
import type { LocalConfigSources } from '../config/load-config.js';
import type { FelixConfig } from '../config/params.js';
import { type DataplaneNetOps, LinuxDataplane } from '../dataplane/linux-dataplane.js';
import { errorMessage, type Logger } from '../logging.js';
import { type ConfigChange, ConfigState } from './config-state.js';
import { CALC_GRAPH, DatastoreHealth } from './datastore-health.js';
import {
  calcUpdateOf,
  type FelixKeySources,
  type FelixSyncer,
  type FelixSyncerFactory,
  felixSyncerSources,
} from './felix-sources.js';
import { HealthAggregator } from './health.js';
import { FelixMetrics } from './metrics.js';
import { PodMtuFile } from './mtu-file.js';
import { FelixServers } from './servers.js';
import { StatusReporter, type StatusStore } from './status-reporter.js';
import { encapConfigOf, logTunnelChanges, readHostMtu } from './tunnels.js';
import { UnenforcedFieldsLog } from './unenforced-log.js';

export {
  CALC_KINDS,
  FELIX_SYNCER_KINDS,
  type FelixKeySources,
  type FelixSyncer,
  type FelixSyncerFactory,
  felixKeySources,
  felixSyncerSources,
  IPAM_BLOCKS_SOURCE,
  type IpamBlockSource,
} from './felix-sources.js';

const DATAPLANE = 'InternalDataplaneMainLoop';
/** Consecutive failed applies after which the dataplane reports itself not live. */
const MAX_FAILURES_LIVE = 10;

export interface FelixDaemonOptions extends FelixKeySources {
  readonly local: LocalConfigSources;
  readonly datastore: Datastore;
  /** Raw key-value writes for the status reports; absent: no reports. */
  readonly statusStore?: StatusStore;
  /** A cheap datastore round trip (the KV store's revision read) to tell reachability. */
  readonly probe?: () => Promise<unknown>;
  /** Absent: Felix's own `Syncer` over `datastore` and the key-store sources. */
  readonly syncerFactory?: FelixSyncerFactory;
  readonly nft: NftClient;
  /**
   * A second nftables client in the same namespace: with Ipv6Support on, the `ip6` table's
   * transactions run in it, beside the `ip` table's in `nft` (two CPUs for a full sync).
   */
  readonly nftIp6?: NftClient;
  readonly net: DataplaneNetOps;
  /** The network namespace to program (routes, links, sysctls); the nft context must be in it too. */
  readonly netns?: string;
  readonly log: Logger;
  /** Applies the resolved LogSeverityScreen to the logger. */
  readonly setLogLevel?: (level: string) => void;
  readonly debounceMs?: number;
  readonly interfacePollMs?: number;
  readonly probeIntervalMs?: number;
  readonly probeTimeoutMs?: number;
  readonly retryMs?: number;
  readonly now?: () => number;
}

export class FelixDaemon {
  readonly #o: FelixDaemonOptions;
  readonly #log: Logger;
  readonly health: HealthAggregator;
  readonly metrics = new FelixMetrics();
  readonly #config: ConfigState;
  readonly #calcHealth: DatastoreHealth;
  readonly #servers: FelixServers;
  readonly #unenforced: UnenforcedFieldsLog;
  readonly #mtuFile: PodMtuFile;
  #graph!: CalcGraph;
  #dataplane!: LinuxDataplane;
  #syncer: FelixSyncer | undefined;
  #status: StatusReporter | undefined;
  #flushTimer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #flushAgain = false;
  #forceApply = true;
  #firstApplied = false;
  #failures = 0;
  /** The configuration changed since the graph last got its tunnel parameters. */
  #encapConfigStale = true;
  readonly #weps = new Set<string>();
  /** ClusterInformation says `datastoreReady: false`: apply nothing until it says true. */
  #datastoreLocked = false;
  #stopped = false;
  readonly #startedAt: number;

  constructor(opts: FelixDaemonOptions) {
    this.#o = opts;
    this.#log = opts.log;
    this.#startedAt = (opts.now ?? Date.now)();
    this.health = new HealthAggregator(opts.now);
    this.health.register(CALC_GRAPH, { live: true, ready: true });
    this.health.register(DATAPLANE, { live: true, ready: true });
    this.health.report(CALC_GRAPH, { live: true, ready: false, detail: 'starting' });
    this.health.report(DATAPLANE, { live: true, ready: false, detail: 'not programmed yet' });
    this.#calcHealth = new DatastoreHealth({
      health: this.health,
      metrics: this.metrics,
      log: this.#log,
      ...(opts.probe ? { probe: opts.probe } : {}),
      ...(opts.probeTimeoutMs !== undefined ? { probeTimeoutMs: opts.probeTimeoutMs } : {}),
      inSync: () => this.#syncer?.inSync ?? false,
      locked: () => this.#datastoreLocked,
    });
    this.#config = new ConfigState({
      local: opts.local,
      datastore: opts.datastore,
      log: this.#log,
      ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
      ...(opts.probeTimeoutMs !== undefined ? { probeTimeoutMs: opts.probeTimeoutMs } : {}),
      onUnreachable: (e) => this.#calcHealth.unreachable(e),
      stopped: () => this.#stopped,
    });
    this.#servers = new FelixServers(this.health, this.metrics, this.#log);
    this.#unenforced = new UnenforcedFieldsLog(this.#log);
    this.#mtuFile = new PodMtuFile({
      net: opts.net,
      ...(opts.netns !== undefined ? { netns: opts.netns } : {}),
      log: this.#log,
      stopped: () => this.#stopped,
    });
  }

  get config(): FelixConfig {
    return this.#config.config;
  }

  get ready(): boolean {
    return this.health.summary().ready;
  }

  get dataplane(): LinuxDataplane {
    return this.#dataplane;
  }

  healthPort(): number | undefined {
    return this.#servers.healthPort();
  }

  metricsPort(): number | undefined {
    return this.#servers.metricsPort();
  }

  async start(): Promise<void> {
    // Health answers from the start when the local configuration (environment, file) enables it,
    // so a Felix started while the datastore is away says why it is not ready rather than nothing.
    // Upstream serves health only once it has read its configuration from the datastore.
    const local = this.#config.localConfig();
    this.#calcHealth.starting('reading the configuration from the datastore');
    if (local.HealthEnabled) await this.#servers.serveHealth(local.HealthHost, local.HealthPort);
    await this.#config.load();
    this.#calcHealth.starting('starting');
    const cfg = this.config;
    this.#o.setLogLevel?.(cfg.LogSeverityScreen);
    const resolved = this.#config.resolved;
    for (const p of resolved.problems) this.#log.warn({ param: p.param, source: p.source }, p.message);
    this.#log.info({ hostname: cfg.FelixHostname, sources: resolved.sources }, 'Felix configuration loaded');
    this.#graph = new CalcGraph({ hostname: cfg.FelixHostname });
    this.#dataplane = this.#makeDataplane(cfg);
    await this.#configureForwarding(cfg);
    if (cfg.HealthEnabled) await this.#servers.serveHealth(cfg.HealthHost, cfg.HealthPort);
    else await this.#servers.stopHealth();
    if (cfg.PrometheusMetricsEnabled) {
      await this.#servers.serveMetrics(cfg.PrometheusMetricsHost, cfg.PrometheusMetricsPort);
    }
    this.#startStatusReports(cfg);
    this.#dataplane.start();
    this.#startSyncer(cfg);
    this.#calcHealth.startProbing(this.#o.probeIntervalMs ?? 2000);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#flushTimer !== undefined) clearTimeout(this.#flushTimer);
    this.#calcHealth.stop();
    // A report still being written would otherwise fail against the datastore closed after this.
    await this.#status?.stop();
    await this.#syncer?.stop();
    await this.#flushing?.catch(() => {});
    await this.#dataplane?.stop();
    await this.#servers.close();
    this.#log.info({}, 'Felix stopped; programmed rules and routes left in place');
  }

  // ---- start-up ------------------------------------------------------------------------------

  #makeDataplane(cfg: FelixConfig): LinuxDataplane {
    return new LinuxDataplane({
      nft: this.#o.nft,
      ...(this.#o.nftIp6 !== undefined && cfg.Ipv6Support ? { nftIp6: this.#o.nftIp6 } : {}),
      net: this.#o.net,
      ...(this.#o.netns !== undefined ? { netns: this.#o.netns } : {}),
      rulesConfig: rulesConfigOf(cfg),
      routeProtocol: cfg.DeviceRouteProtocol,
      encapRouteProtocol: encapRouteProtocol(cfg.DeviceRouteProtocol),
      nftablesRefreshMs: cfg.NftablesRefreshInterval * 1000,
      routeRefreshMs: cfg.RouteRefreshInterval * 1000,
      interfacePollMs: this.#o.interfacePollMs ?? 500,
      log: this.#log,
      onNftApplied: (r) => {
        if (r.ok) this.metrics.nftCommands.inc({ mode: r.mode }, r.commands);
        if (r.ok && r.mode === 'resync' && r.commands > 0 && this.#firstApplied)
          this.metrics.nftRepairs.inc();
      },
      onError: (what, e) =>
        this.#log.warn({ what, err: errorMessage(e) }, 'dataplane background step failed'),
    });
  }

  /**
   * Upstream's IPForwarding: pods' traffic is routed through the host, and replies from outside
   * the node come in on its uplink, whose forwarding flag decides; so Felix turns forwarding on
   * (IPv4, and IPv6 when supported) unless told not to. A failure is logged, not fatal, as
   * upstream does.
   */
  async #configureForwarding(cfg: FelixConfig): Promise<void> {
    if (cfg.IPForwarding !== 'Enabled') {
      this.#log.info({}, 'IP forwarding disabled by config, leaving the sysctls untouched');
      return;
    }
    const entries: [string, string][] = [['net.ipv4.ip_forward', '1']];
    if (cfg.Ipv6Support) entries.push(['net.ipv6.conf.all.forwarding', '1']);
    for (const entry of entries) {
      try {
        await this.#o.net.writeSysctls([entry], this.#o.netns);
      } catch (e) {
        this.#log.error({ sysctl: entry[0], err: errorMessage(e) }, 'enabling IP forwarding failed');
      }
    }
  }

  #startStatusReports(cfg: FelixConfig): void {
    if (!this.#o.statusStore || cfg.ReportingIntervalSecs <= 0) return;
    this.#status = new StatusReporter({
      store: this.#o.statusStore,
      prefix: statusPrefix(cfg),
      intervalSecs: cfg.ReportingIntervalSecs,
      ttlSecs: cfg.ReportingTTLSecs,
      startedAt: this.#startedAt,
      ...(this.#o.now ? { now: this.#o.now } : {}),
      log: this.#log,
      onResult: (ok) => this.metrics.statusReports.inc({ outcome: ok ? 'ok' : 'failed' }),
    });
    this.#status.start();
  }

  #startSyncer(cfg: FelixConfig): void {
    const makeSyncer = this.#o.syncerFactory ?? ((o: SyncerOptions) => new Syncer(o));
    this.#syncer = makeSyncer(
      {
        sources: felixSyncerSources(this.#o.datastore, this.#o),
        onUpdate: (u) => this.#onUpdate(u),
        onInSync: () => {
          this.#log.info({}, 'datastore in sync');
          this.#graph.onUpdate({ kind: 'in-sync' });
          this.#calcHealth.report();
          this.#scheduleFlush(0);
        },
        onConnection: (source, connected, why) => this.#calcHealth.setConnection(source, connected, why),
        log: this.#log,
        ...(this.#o.retryMs !== undefined ? { retryMs: this.#o.retryMs } : {}),
      },
      cfg,
    );
    this.#syncer.start();
  }

  // ---- datastore updates ---------------------------------------------------------------------

  #onUpdate(u: SyncerUpdate): void {
    const r = u.item as { kind?: Kind; metadata: { name: string; namespace?: string }; spec?: unknown };
    if (r.kind === 'FelixConfiguration') {
      const change = this.#config.onResource(
        r.metadata.name,
        u.kind === 'set' ? (r.spec as FelixConfigurationSpec) : undefined,
      );
      if (change) this.#onConfigChange(change);
      return;
    }
    if (r.kind === 'ClusterInformation') {
      if (r.metadata.name === 'default')
        this.#setDatastoreLock(u.kind === 'set' ? (r.spec as ClusterInformationSpec) : undefined);
      return;
    }
    const update = calcUpdateOf(u);
    if (!update || update.kind === 'in-sync') return;
    const kind = update.resource.kind;
    const fromKube = u.source === 'Service' || u.source === 'EndpointSlice';
    if (kind !== 'Node' && kind !== 'IPAMBlock')
      this.metrics.calcGraphUpdates.inc({ type: fromKube ? u.source : kind });
    if (kind === 'WorkloadEndpoint') {
      const key = `${r.metadata.namespace}/${r.metadata.name}`;
      if (u.kind === 'set') this.#weps.add(key);
      else this.#weps.delete(key);
      this.metrics.clusterWorkloadEndpoints.set(this.#weps.size);
    }
    try {
      this.#graph.onUpdate(update);
    } catch (e) {
      const { name } = update.resource.metadata;
      this.#log.warn({ kind, ...(name ? { name } : {}), err: errorMessage(e) }, 'resource ignored');
    }
    this.#scheduleFlush();
  }

  #onConfigChange(change: ConfigChange): void {
    const { before, after } = change;
    if (change.changed.includes('LogSeverityScreen')) this.#o.setLogLevel?.(after.LogSeverityScreen);
    if (JSON.stringify(rulesConfigOf(before)) !== JSON.stringify(rulesConfigOf(after))) {
      this.#dataplane.setRulesConfig(rulesConfigOf(after));
      this.#forceApply = true;
    }
    this.#encapConfigStale = true;
    this.#scheduleFlush();
    this.#config.warnRestartNeeded(change);
  }

  /**
   * Upstream's datastore lock: `datastoreReady: false` holds applies (a missing ClusterInformation
   * does not: a cluster that never had one is not locked).
   */
  #setDatastoreLock(spec: ClusterInformationSpec | undefined): void {
    const locked = spec?.datastoreReady === false;
    if (locked === this.#datastoreLocked) return;
    this.#datastoreLocked = locked;
    if (locked) {
      this.#log.warn(
        {},
        'ClusterInformation datastoreReady is false: keeping the programmed dataplane and applying no change until it is true',
      );
    } else {
      this.#log.info({}, 'ClusterInformation datastoreReady is true again: applying what changed meanwhile');
      this.#forceApply = true;
      this.#scheduleFlush(0);
    }
    this.#calcHealth.report();
  }

  // ---- flush and apply -----------------------------------------------------------------------

  #scheduleFlush(delayMs = this.#o.debounceMs ?? 50): void {
    if (this.#stopped || this.#flushTimer !== undefined) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      this.#flush();
    }, delayMs);
  }

  #flush(): void {
    if (this.#flushing) {
      this.#flushAgain = true;
      return;
    }
    this.#flushing = this.#flushOnce().finally(() => {
      this.#flushing = undefined;
      if (this.#flushAgain && !this.#stopped) {
        this.#flushAgain = false;
        this.#flush();
      }
    });
  }

  async #flushOnce(): Promise<void> {
    if (this.#datastoreLocked) return;
    // The tunnels read the host MTU, which is the kernel's: read it whenever they are derived.
    if (this.#encapConfigStale || this.#graph.encapPending) {
      this.#encapConfigStale = false;
      const cfg = this.config;
      const hostMtu = await readHostMtu(cfg, this.#o.net, this.#o.netns, this.#log);
      if (this.#stopped) return;
      this.#graph.setEncapConfig(encapConfigOf(cfg, hostMtu));
    }
    const diff = this.#graph.flush();
    this.#unenforced.log(diff);
    logTunnelChanges(this.#log, diff);
    this.#mtuFile.onUpdate(diff);
    // Every diff reaches the dataplane, which keeps the state they add up to; it is programmed
    // once the datastore is in sync.
    this.#dataplane.onUpdate(diff);
    if (!diff.inSync) return;
    if (!changesRules(diff) && !this.#forceApply) return;
    this.#forceApply = false;
    await this.#apply();
  }

  async #apply(): Promise<void> {
    const t0 = performance.now();
    try {
      const report = await this.#dataplane.apply();
      this.metrics.applyTime.observe((performance.now() - t0) / 1000);
      this.#failures = 0;
      if (!this.#firstApplied) {
        this.#firstApplied = true;
        this.#log.info({ commands: report.nft.commands }, 'first dataplane apply done');
      }
      const counts = this.#dataplane.counts;
      this.metrics.activeLocalEndpoints.set(counts.endpoints);
      this.metrics.activeLocalPolicies.set(counts.policies);
      this.metrics.activeLocalIPSets.set(counts.ipSets);
      // The MTU file first: a node reported ready has it (the CNI plugin reads it for each pod).
      await this.#mtuFile.maybeWrite(() => this.config);
      this.health.report(DATAPLANE, { live: true, ready: true });
    } catch (e) {
      this.#failures++;
      this.#forceApply = true;
      this.metrics.dataplaneFailures.inc();
      this.#log.error(
        { err: errorMessage(e), failures: this.#failures },
        'dataplane apply failed; will retry',
      );
      this.health.report(DATAPLANE, {
        live: this.#failures < MAX_FAILURES_LIVE,
        ready: this.#firstApplied,
        detail: `apply failed: ${errorMessage(e)}`.slice(0, 120),
      });
      if (!this.#stopped) {
        setTimeout(() => this.#scheduleFlush(0), Math.min(500 * 2 ** Math.min(this.#failures, 4), 8000));
      }
    }
  }
}
