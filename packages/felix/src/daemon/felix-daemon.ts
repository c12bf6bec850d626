/**
 * FelixDaemon: Felix's main loop, wiring the datastore to the kernel.
 *
 *   Syncer (list+watch, @calico-ts/datastore) ──► CalcGraph.onUpdate ──(debounce)──► flush ──► LinuxDataplane
 *        │ FelixConfiguration ──► resolve config (env > file > node.<name> > default)   │ apply:
 *        │ connection state ─┐                                                           │ one nft
 *   probe (raw KV revision) ─┴► datastore reachable? ──► health: async_calc_graph         │ transaction,
 *   StatusReporter ──► /calico/felix/v2/…/status (lease), last_reported_status            │ routes
 *   Node + IPPool + IPAM blocks (syncer) ──► resolveVxlan ──(changed?)──► setVxlanState
 *                                        ──► resolveIpip  ──(changed?)──► setIpipState
 *                                                      └─ IPIP/VXLAN sources changed? ──► setTunnelRules, apply
 *   health server /liveness /readiness ◄── HealthAggregator ◄── InternalDataplaneMainLoop ◄┘
 *   metrics server /metrics ◄── FelixMetrics
 *
 * IPAM blocks arrive through the same syncer as the resources (a KV-prefix source), and on the
 * Kubernetes datastore so do Services and EndpointSlices (for policy `services` matches). The VXLAN
 * state is only computed once every source is in sync, so a partial view never removes routes.
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
import type { Server } from 'node:http';
import type {
  ClusterInformationSpec,
  FelixConfigurationSpec,
  IPPool,
  Kind,
  Node,
  ResourceOf,
} from '@calico-ts/api';
import { ipFamily } from '@calico-ts/api/net';
import {
  type Datastore,
  type KVStore,
  kvSource,
  resourceSource,
  Syncer,
  type SyncerOptions,
  type SyncerUpdate,
  type SyncSource,
} from '@calico-ts/datastore';
import {
  decodeBlock,
  ENDPOINT_SLICES_PREFIX,
  IPAM_ROOT,
  SERVICES_PREFIX,
} from '@calico-ts/datastore/internal';
import type { NftClient } from '@calico-ts/nftables';
import { CalcGraph } from '../calc/calc-graph.js';
import { isEmptyDiff } from '../calc/dataplane-state.js';
import { hostAddresses, type IpipState, resolveIpip } from '../calc/ipip-resolver.js';
import {
  type BlockRecord,
  type BlockRoutes,
  blockRoutesOf,
  encapRouteProtocol,
} from '../calc/route-resolver.js';
import type { CalcResource, DataplaneDiff, NormalizedRule } from '../calc/types.js';
import { resolveVxlan, type VxlanState } from '../calc/vxlan-resolver.js';
import { hostMtuOf, podMtu, rulesConfigOf, statusPrefix } from '../config/derived.js';
import { changedParams, type ResolvedConfig } from '../config/felix-config.js';
import { type LocalConfigSources, resolveWith } from '../config/load-config.js';
import type { FelixConfig } from '../config/params.js';
import { type DataplaneNetOps, LinuxDataplane } from '../dataplane/linux-dataplane.js';
import { errorMessage, type Logger } from '../logging.js';
import type { TunnelRules } from '../rules/ruleset-renderer.js';
import { boundPort, closeServer, HealthAggregator, startHealthServer } from './health.js';
import { FelixMetrics, startMetricsServer } from './metrics.js';
import { writeMtuFile } from './mtu-file.js';
import { StatusReporter, type StatusStore } from './status-reporter.js';

/** A Calico resource as the syncer delivers it. */
type SyncedResource = ResourceOf<Kind> & { kind: Kind };

/** The kinds the calculation graph consumes. */
export const CALC_KINDS: readonly Kind[] = [
  'Tier',
  'Profile',
  'GlobalNetworkPolicy',
  'NetworkPolicy',
  'GlobalNetworkSet',
  'NetworkSet',
  'IPPool',
  'HostEndpoint',
  'WorkloadEndpoint',
];

const CALC_GRAPH = 'async_calc_graph';
const DATAPLANE = 'InternalDataplaneMainLoop';
/** Parameters a running Felix applies at once; the others take effect on restart. */
const LIVE_PARAMS: ReadonlySet<string> = new Set([
  'LogSeverityScreen',
  'DefaultEndpointToHostAction',
  'FailsafeInboundHostPorts',
  'FailsafeOutboundHostPorts',
  'NftablesMarkMask',
  'LogPrefix',
  'VXLANPort',
  'AllowVXLANPacketsFromWorkloads',
  'AllowIPIPPacketsFromWorkloads',
  'NATOutgoingAddress',
  'NATPortRange',
  'NATOutgoingExclusions',
  'IptablesNATOutgoingInterfaceFilter',
  'VXLANEnabled',
  'VXLANMTU',
  'VXLANVNI',
  'IpInIpEnabled',
  'IpInIpMtu',
  'ProgramClusterRoutes',
  'ExternalNodesCIDRList',
]);
/** Consecutive failed applies after which the dataplane reports itself not live. */
const MAX_FAILURES_LIVE = 10;

/** The IPAM blocks as a syncer source: `kvSource('ipam-blocks', kv, blocks prefix, decodeBlock)`. */
export type IpamBlockSource = SyncSource<{ readonly key: string; readonly value: BlockRecord }>;
/** The source name Felix reads IPAM blocks from. */
export const IPAM_BLOCKS_SOURCE = 'ipam-blocks';

/**
 * The sources beside the Calico kinds that Felix follows on a datastore's key store: the IPAM
 * blocks, and on the Kubernetes datastore the Services and EndpointSlices.
 */
export function felixKeySources(
  kv: KVStore,
  backend: Datastore['backend'],
): Pick<FelixDaemonOptions, 'ipamBlocks' | 'kubeSources'> {
  const json = (x: { value: string }) => JSON.parse(x.value) as unknown;
  return {
    ipamBlocks: kvSource(IPAM_BLOCKS_SOURCE, kv, `${IPAM_ROOT}assignment/`, decodeBlock),
    ...(backend === 'kubernetes'
      ? {
          kubeSources: [
            kvSource('Service', kv, SERVICES_PREFIX, json),
            kvSource('EndpointSlice', kv, ENDPOINT_SLICES_PREFIX, json),
          ],
        }
      : {}),
  };
}

/** The Calico kinds Felix's syncer follows: the calculation graph's kinds and its own configuration. */
export const FELIX_SYNCER_KINDS: readonly Kind[] = [
  ...CALC_KINDS,
  'FelixConfiguration',
  'Node',
  'ClusterInformation',
];

/**
 * The sources of Felix's syncer: one resource source per kind of {@link FELIX_SYNCER_KINDS} on
 * `datastore`, then the key-store sources given (see {@link felixKeySources}), in that order. Felix
 * builds its own `Syncer` from them, and Typha follows the same sources for its Felix clients.
 *
 * @param datastore - The datastore the kinds are listed and watched on.
 * @param keySources - The IPAM blocks and Kubernetes objects sources; absent ones are left out.
 * @returns The sources, each with the name Felix's updates carry.
 */
export function felixSyncerSources(
  datastore: Datastore,
  keySources: Pick<FelixDaemonOptions, 'ipamBlocks' | 'kubeSources'> = {},
): SyncSource[] {
  return [
    ...FELIX_SYNCER_KINDS.map((k) => resourceSource(datastore, k) as SyncSource),
    ...(keySources.ipamBlocks ? [keySources.ipamBlocks as SyncSource] : []),
    ...((keySources.kubeSources ?? []) as SyncSource[]),
  ];
}

/**
 * What Felix follows the datastore with: its own `Syncer`, or anything of the same shape that
 * delivers the same updates (a Typha client).
 */
export interface FelixSyncer {
  /** Starts following; updates and in-sync arrive through the callbacks it was built with. */
  start(): void;
  /** Stops following; resolves when nothing more will be delivered. */
  stop(): Promise<void>;
  /** Whether in-sync has been delivered. */
  readonly inSync: boolean;
}

/**
 * Builds Felix's syncer from the options its own `Syncer` would get (sources and callbacks) and
 * the resolved configuration (e.g. TyphaAddr).
 */
export type FelixSyncerFactory = (opts: SyncerOptions, config: FelixConfig) => FelixSyncer;

export interface FelixDaemonOptions {
  readonly local: LocalConfigSources;
  readonly datastore: Datastore;
  /** Raw key-value writes for the status reports; absent: no reports. */
  readonly statusStore?: StatusStore;
  /** A cheap datastore round trip (the KV store's revision read) to tell reachability. */
  readonly probe?: () => Promise<unknown>;
  /** IPAM blocks, for the routes to other nodes' blocks; absent: no block routes. */
  readonly ipamBlocks?: IpamBlockSource;
  /**
   * Kubernetes Services and EndpointSlices (sources named `Service` and `EndpointSlice`, items
   * `{ key, value }` with the object as value), on the Kubernetes datastore; absent elsewhere, and
   * then a policy's `services` match matches nothing.
   */
  readonly kubeSources?: readonly SyncSource<{ readonly key: string; readonly value: unknown }>[];
  /** Absent: Felix's own `Syncer` over `datastore` and the sources above. */
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
  #resolved!: ResolvedConfig;
  #globalSpec: FelixConfigurationSpec | undefined;
  #hostSpec: FelixConfigurationSpec | undefined;
  #graph!: CalcGraph;
  #dataplane!: LinuxDataplane;
  #syncer: FelixSyncer | undefined;
  #status: StatusReporter | undefined;
  #healthServer: Server | undefined;
  /** `host:port` the health server listens on. */
  #healthAt: string | undefined;
  #metricsServer: Server | undefined;
  readonly #down = new Map<string, string>();
  #flushTimer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #flushAgain = false;
  #forceApply = true;
  #firstApplied = false;
  #failures = 0;
  #probeTimer: NodeJS.Timeout | undefined;
  #probePending = false;
  #probeStarted = 0;
  #probeGeneration = 0;
  readonly #pools = new Map<string, { vxlan: boolean; ipip: boolean }>();
  readonly #weps = new Set<string>();
  readonly #nodes = new Map<string, Node>();
  readonly #ipPools = new Map<string, IPPool>();
  /** Block key → its routing facts, from the syncer. */
  readonly #blockMap = new Map<string, BlockRoutes>();
  #encapTimer: NodeJS.Timeout | undefined;
  #vxlanKey = '';
  #vxlanKey6 = '';
  #ipipKey = '';
  #tunnelRulesKey = JSON.stringify({});
  #poolsChanged = true;
  /** ClusterInformation says `datastoreReady: false`: apply nothing until it says true. */
  #datastoreLocked = false;
  /** Owner ID → the unenforced-field warning last logged for it. */
  readonly #unenforcedLogged = new Map<string, string>();
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
  }

  get config(): FelixConfig {
    return this.#resolved.config;
  }

  get ready(): boolean {
    return this.health.summary().ready;
  }

  get dataplane(): LinuxDataplane {
    return this.#dataplane;
  }

  healthPort(): number | undefined {
    return this.#healthServer ? boundPort(this.#healthServer) : undefined;
  }

  metricsPort(): number | undefined {
    return this.#metricsServer ? boundPort(this.#metricsServer) : undefined;
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

  async start(): Promise<void> {
    // Health answers from the start when the local configuration (environment, file) enables it,
    // so a Felix started while the datastore is away says why it is not ready rather than nothing.
    // Upstream serves health only once it has read its configuration from the datastore.
    const local = resolveWith(this.#o.local).config;
    this.health.report(CALC_GRAPH, {
      live: true,
      ready: false,
      detail: 'reading the configuration from the datastore',
    });
    if (local.HealthEnabled) await this.#serveHealth(local.HealthHost, local.HealthPort);
    await this.#loadDatastoreConfig();
    this.health.report(CALC_GRAPH, { live: true, ready: false, detail: 'starting' });
    const cfg = this.config;
    this.#o.setLogLevel?.(cfg.LogSeverityScreen);
    for (const p of this.#resolved.problems) this.#log.warn({ param: p.param, source: p.source }, p.message);
    this.#log.info(
      { hostname: cfg.FelixHostname, sources: this.#resolved.sources },
      'Felix configuration loaded',
    );
    this.#graph = new CalcGraph({ hostname: cfg.FelixHostname });
    this.#dataplane = new LinuxDataplane({
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
    await this.#configureForwarding(cfg);
    if (cfg.HealthEnabled) await this.#serveHealth(cfg.HealthHost, cfg.HealthPort);
    else if (this.#healthServer) {
      await closeServer(this.#healthServer);
      this.#healthServer = undefined;
      this.#healthAt = undefined;
    }
    if (cfg.PrometheusMetricsEnabled) {
      this.#metricsServer = await startMetricsServer(
        this.metrics,
        cfg.PrometheusMetricsHost,
        cfg.PrometheusMetricsPort,
      );
      this.#log.info({ port: boundPort(this.#metricsServer) }, 'metrics server listening');
    }
    if (this.#o.statusStore && cfg.ReportingIntervalSecs > 0) {
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
    this.#dataplane.start();
    const makeSyncer = this.#o.syncerFactory ?? ((o: SyncerOptions) => new Syncer(o));
    this.#syncer = makeSyncer(
      {
        sources: felixSyncerSources(this.#o.datastore, this.#o),
        onUpdate: (u) => this.#onUpdate(u),
        onInSync: () => {
          this.#log.info({}, 'datastore in sync');
          this.#graph.onUpdate({ kind: 'in-sync' });
          this.#reportCalcHealth();
          this.#scheduleFlush(0);
          this.#scheduleEncap();
        },
        onConnection: (source, connected, why) => this.#setConnection(source, connected, why),
        log: this.#log,
        ...(this.#o.retryMs !== undefined ? { retryMs: this.#o.retryMs } : {}),
      },
      cfg,
    );
    this.#syncer.start();
    if (this.#o.probe) {
      const every = this.#o.probeIntervalMs ?? 2000;
      this.#probeTimer = setInterval(() => this.#runProbe(), every);
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#flushTimer !== undefined) clearTimeout(this.#flushTimer);
    if (this.#probeTimer !== undefined) clearInterval(this.#probeTimer);
    if (this.#encapTimer !== undefined) clearTimeout(this.#encapTimer);
    // A report still being written would otherwise fail against the datastore closed after this.
    await this.#status?.stop();
    await this.#syncer?.stop();
    await this.#flushing?.catch(() => {});
    await this.#dataplane?.stop();
    await closeServer(this.#healthServer);
    await closeServer(this.#metricsServer);
    this.#log.info({}, 'Felix stopped; programmed rules and routes left in place');
  }

  // ---- configuration -------------------------------------------------------------------------

  /** Serves health on `host:port`, moving the server there if it listens elsewhere. */
  async #serveHealth(host: string, port: number): Promise<void> {
    const at = `${host}:${port}`;
    if (this.#healthServer && this.#healthAt === at) return;
    await closeServer(this.#healthServer);
    this.#healthServer = await startHealthServer(this.health, host, port);
    this.#healthAt = at;
    this.#log.info({ host, port: boundPort(this.#healthServer) }, 'health server listening');
  }

  async #loadDatastoreConfig(): Promise<void> {
    const host = resolveWith(this.#o.local).config.FelixHostname;
    let delay = this.#o.retryMs ?? 500;
    const timeoutMs = this.#o.probeTimeoutMs ?? 2000;
    for (;;) {
      try {
        // A datastore that does not answer at all counts as unreachable after the probe timeout
        // (the call is abandoned; its late answer is ignored).
        let timer: NodeJS.Timeout | undefined;
        const list = await Promise.race([
          this.#o.datastore.list('FelixConfiguration'),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
          }),
        ]).finally(() => clearTimeout(timer));
        for (const fc of list.items) {
          if (fc.metadata.name === 'default') this.#globalSpec = fc.spec;
          if (fc.metadata.name === `node.${host}`) this.#hostSpec = fc.spec;
        }
        break;
      } catch (e) {
        this.#log.warn(
          { err: errorMessage(e), retryMs: delay },
          'cannot read FelixConfiguration yet; retrying',
        );
        this.health.report(CALC_GRAPH, {
          live: true,
          ready: false,
          detail: `datastore unreachable: ${errorMessage(e)}`.slice(0, 120),
        });
        this.metrics.datastoreConnected.set(0);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 5000);
        if (this.#stopped) throw new Error('stopped before the configuration could be read');
      }
    }
    this.#resolved = this.#resolve();
  }

  #resolve(): ResolvedConfig {
    return resolveWith(this.#o.local, {
      ...(this.#hostSpec ? { perHost: this.#hostSpec } : {}),
      ...(this.#globalSpec ? { global: this.#globalSpec } : {}),
    });
  }

  #onConfigResource(u: SyncerUpdate, r: SyncedResource): void {
    const name = r.metadata.name;
    const spec = u.kind === 'set' ? (r.spec as FelixConfigurationSpec) : undefined;
    if (name === 'default') this.#globalSpec = spec;
    else if (name === `node.${this.config.FelixHostname}`) this.#hostSpec = spec;
    else return;
    const before = this.config;
    const next = this.#resolve();
    const changed = changedParams(before, next.config);
    if (changed.length === 0) return;
    this.#resolved = next;
    this.#log.info({ changed }, 'Felix configuration changed');
    if (changed.includes('LogSeverityScreen')) this.#o.setLogLevel?.(next.config.LogSeverityScreen);
    if (JSON.stringify(rulesConfigOf(before)) !== JSON.stringify(rulesConfigOf(next.config))) {
      this.#dataplane.setRulesConfig(rulesConfigOf(next.config));
      this.#forceApply = true;
      this.#scheduleFlush();
    }
    this.#scheduleEncap();
    const needRestart = changed.filter((p) => !LIVE_PARAMS.has(p));
    if (needRestart.length > 0) {
      this.#log.warn({ params: needRestart }, 'these parameters take effect when Felix restarts');
    }
  }

  // ---- datastore updates ---------------------------------------------------------------------

  #onUpdate(u: SyncerUpdate): void {
    if (u.source === IPAM_BLOCKS_SOURCE) {
      this.#onBlock(u as SyncerUpdate<{ key: string; value: BlockRecord }>);
      return;
    }
    if (u.source === 'Service' || u.source === 'EndpointSlice') {
      const obj = (u.item as { value: CalcResource }).value;
      this.metrics.calcGraphUpdates.inc({ type: u.source });
      try {
        this.#graph.onUpdate({ kind: u.kind, resource: obj });
      } catch (e) {
        this.#log.warn({ kind: u.source, err: errorMessage(e) }, 'resource ignored');
      }
      this.#scheduleFlush();
      return;
    }
    const r = u.item as SyncedResource;
    if (r.kind === 'FelixConfiguration') {
      this.#onConfigResource(u, r);
      return;
    }
    if (r.kind === 'ClusterInformation') {
      if (r.metadata.name === 'default')
        this.#setDatastoreLock(u.kind === 'set' ? (r.spec as ClusterInformationSpec) : undefined);
      return;
    }
    if (r.kind === 'Node') {
      if (u.kind === 'set') this.#nodes.set(r.metadata.name, r as Node);
      else this.#nodes.delete(r.metadata.name);
      this.#scheduleEncap();
      return;
    }
    this.metrics.calcGraphUpdates.inc({ type: r.kind });
    if (r.kind === 'IPPool') {
      const key = r.metadata.name;
      if (u.kind === 'set') {
        const spec = r.spec as { vxlanMode?: string; ipipMode?: string; disabled?: boolean };
        const used = (m?: string) => m !== undefined && m !== 'Never' && spec.disabled !== true;
        this.#pools.set(key, { vxlan: used(spec.vxlanMode), ipip: used(spec.ipipMode) });
        this.#ipPools.set(key, r as IPPool);
      } else {
        this.#pools.delete(key);
        this.#ipPools.delete(key);
      }
      this.#poolsChanged = true;
      this.#scheduleEncap();
    }
    if (r.kind === 'WorkloadEndpoint') {
      const key = `${r.metadata.namespace}/${r.metadata.name}`;
      if (u.kind === 'set') this.#weps.add(key);
      else this.#weps.delete(key);
      this.metrics.clusterWorkloadEndpoints.set(this.#weps.size);
    }
    try {
      this.#graph.onUpdate(
        u.kind === 'set'
          ? { kind: 'set', resource: r as unknown as CalcResource }
          : { kind: 'delete', resource: r as unknown as CalcResource },
      );
    } catch (e) {
      this.#log.warn({ kind: r.kind, name: r.metadata.name, err: errorMessage(e) }, 'resource ignored');
    }
    this.#scheduleFlush();
  }

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
      this.#scheduleEncap();
    }
    this.#reportCalcHealth();
  }

  /** Logs each active policy's or profile's unenforced fields once per distinct rule set. */
  #logUnenforced(diff: DataplaneDiff): void {
    const fields = (dir: string, rules: readonly NormalizedRule[]) =>
      rules.flatMap((r, i) =>
        (r.unenforced ?? []).map(
          (f) =>
            `${dir}[${i}].${f} (${r.action === 'deny' ? 'Deny rule applies its other criteria' : `${r.action} rule matches nothing`})`,
        ),
      );
    const owners = [
      ...diff.policiesUpdated.map((p) => ({ kind: 'policy', id: p.id, in: p.inbound, out: p.outbound })),
      ...diff.profilesUpdated.map((p) => ({ kind: 'profile', id: p.id, in: p.inbound, out: p.outbound })),
    ];
    for (const o of owners) {
      const list = [...fields('ingress', o.in), ...fields('egress', o.out)];
      const key = `${o.kind}:${o.id}`;
      const text = list.join('; ');
      if (text === (this.#unenforcedLogged.get(key) ?? '')) continue;
      if (list.length === 0) {
        this.#unenforcedLogged.delete(key);
        continue;
      }
      this.#unenforcedLogged.set(key, text);
      this.#log.warn(
        { [o.kind]: o.id, unenforced: list },
        'rule fields this dataplane does not enforce: they fail closed',
      );
    }
    for (const id of diff.policiesRemoved) this.#unenforcedLogged.delete(`policy:${id}`);
    for (const id of diff.profilesRemoved) this.#unenforcedLogged.delete(`profile:${id}`);
  }

  async #flushOnce(): Promise<void> {
    if (this.#datastoreLocked) return;
    const diff = this.#graph.flush();
    this.#logUnenforced(diff);
    // Every diff reaches the dataplane, which keeps the state they add up to; it is programmed
    // once the datastore is in sync.
    this.#dataplane.onUpdate(diff);
    if (!diff.inSync) return;
    if (isEmptyDiff(diff) && !this.#forceApply) return;
    this.#forceApply = false;
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
      await this.#maybeWriteMtu();
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

  async #maybeWriteMtu(): Promise<void> {
    if (!this.#poolsChanged) return;
    this.#poolsChanged = false;
    try {
      const links = await this.#o.net.listLinks(this.#o.netns);
      const pools = [...this.#pools.values()];
      const mtu = podMtu(this.config, hostMtuOf(this.config, links), {
        vxlan: pools.some((p) => p.vxlan),
        ipip: pools.some((p) => p.ipip),
      });
      if (await writeMtuFile(this.config.MTUFilePath, mtu)) {
        this.#log.info({ mtu, path: this.config.MTUFilePath }, 'pod MTU file written');
      }
    } catch (e) {
      this.#poolsChanged = true;
      this.#log.warn({ err: errorMessage(e) }, 'writing the pod MTU file failed; retrying');
      // No later apply may come to retry it: try again on our own.
      if (!this.#stopped) setTimeout(() => void this.#maybeWriteMtu(), 1000).unref();
    }
  }

  // ---- tunnels: VXLAN from Nodes, IPPools and IPAM blocks ------------------------------------

  /** An IPAM block changed: its routing facts feed the VXLAN state. */
  #onBlock(u: SyncerUpdate<{ key: string; value: BlockRecord }>): void {
    const routes = u.kind === 'set' && u.item.value ? blockRoutesOf(u.item.value) : undefined;
    const before = JSON.stringify(this.#blockMap.get(u.item.key));
    if (routes) this.#blockMap.set(u.item.key, routes);
    else this.#blockMap.delete(u.item.key);
    if (JSON.stringify(routes) !== before) this.#scheduleEncap();
  }

  #scheduleEncap(): void {
    if (this.#stopped || this.#encapTimer !== undefined) return;
    this.#encapTimer = setTimeout(() => {
      this.#encapTimer = undefined;
      this.#computeEncap().catch((e: unknown) =>
        this.#log.warn({ err: errorMessage(e) }, 'computing the tunnel state failed'),
      );
    }, this.#o.debounceMs ?? 50);
  }

  /** The desired VXLAN and IPIP states from what is known now; each handed to the dataplane when it changed. */
  async #computeEncap(): Promise<void> {
    if (!this.#syncer?.inSync || this.#stopped || this.#datastoreLocked) return;
    const cfg = this.config;
    let hostMtu = 1500;
    try {
      hostMtu = hostMtuOf(cfg, await this.#o.net.listLinks(this.#o.netns));
    } catch (e) {
      this.#log.warn({ err: errorMessage(e) }, 'listing interfaces for the host MTU failed; assuming 1500');
    }
    const nodes = [...this.#nodes.values()];
    const pools = [...this.#ipPools.values()];
    const state: VxlanState = resolveVxlan(
      { hostname: cfg.FelixHostname, nodes, pools, blocks: [...this.#blockMap.values()] },
      { enabled: cfg.VXLANEnabled, vni: cfg.VXLANVNI, port: cfg.VXLANPort, mtu: cfg.VXLANMTU, hostMtu },
    );
    const ipip: IpipState = resolveIpip(
      { hostname: cfg.FelixHostname, nodes, pools, blocks: [...this.#blockMap.values()] },
      {
        enabled: cfg.IpInIpEnabled,
        mtu: cfg.IpInIpMtu,
        hostMtu,
        programRoutes: cfg.ProgramClusterRoutes === 'Enabled',
      },
    );
    // IPv6 over vxlan-v6.calico, when Felix does IPv6 at all (on when an IPv6 pool uses VXLAN).
    const state6 = cfg.Ipv6Support
      ? resolveVxlan(
          { hostname: cfg.FelixHostname, nodes, pools, blocks: [...this.#blockMap.values()] },
          { vni: cfg.VXLANVNI, port: cfg.VXLANPort, mtu: cfg.VXLANMTU, mtuV6: cfg.VXLANMTUV6, hostMtu },
          6,
        )
      : undefined;
    // The hosts tunnel packets may come from are part of the rules: a change re-renders them.
    const allHosts = [...hostAddresses(nodes), ...cfg.ExternalNodesCIDRList];
    const externalOf = (family: 4 | 6) => cfg.ExternalNodesCIDRList.filter((c) => ipFamily(c) === family);
    const tunnelRules: TunnelRules = {
      ...(ipip.enabled ? { ipipSources: allHosts } : {}),
      ...(cfg.NATOutgoingExclusions === 'IPPoolsAndHostIPs' ? { natExcludedHosts: allHosts } : {}),
      ...(state.enabled ? { vxlanSources: [...state.allowedSources, ...externalOf(4)] } : {}),
      ...(state6?.enabled ? { vxlanSourcesV6: [...state6.allowedSources, ...externalOf(6)] } : {}),
    };
    const tunnelRulesKey = JSON.stringify(tunnelRules);
    if (tunnelRulesKey !== this.#tunnelRulesKey) {
      this.#tunnelRulesKey = tunnelRulesKey;
      this.#dataplane.setTunnelRules(tunnelRules);
      this.#forceApply = true;
      this.#scheduleFlush();
    }
    const ipipKey = JSON.stringify(ipip);
    if (ipipKey !== this.#ipipKey) {
      this.#ipipKey = ipipKey;
      if (ipip.enabled) {
        this.#log.info(
          {
            device: ipip.device?.name,
            mtu: ipip.device?.mtu,
            tunnelAddress: ipip.device?.tunnelAddress,
            routes: ipip.routes.length,
            ...(ipip.waiting.length > 0 ? { waiting: ipip.waiting } : {}),
          },
          'IPIP state changed',
        );
      }
      this.#dataplane.setIpipState(ipip);
    }
    if (state6 !== undefined) {
      const key6 = JSON.stringify(state6);
      if (key6 !== this.#vxlanKey6) {
        this.#vxlanKey6 = key6;
        if (state6.enabled) {
          this.#log.info(
            {
              device: state6.device?.name,
              tunnelAddress: state6.device?.tunnelAddress,
              routes: state6.routes.length,
              vteps: state6.fdb.length,
              ...(state6.waiting.length > 0 ? { waiting: state6.waiting } : {}),
            },
            'IPv6 VXLAN state changed',
          );
        }
        this.#dataplane.setVxlanState(state6, 6);
      }
    }
    const key = JSON.stringify(state);
    if (key === this.#vxlanKey) return;
    this.#vxlanKey = key;
    if (state.enabled) {
      this.#log.info(
        {
          device: state.device?.name,
          tunnelAddress: state.device?.tunnelAddress,
          routes: state.routes.length,
          vteps: state.fdb.length,
          ...(state.waiting.length > 0 ? { waiting: state.waiting } : {}),
        },
        'VXLAN state changed',
      );
    }
    this.#dataplane.setVxlanState(state);
  }

  // ---- datastore reachability and health -----------------------------------------------------

  #setConnection(source: string, connected: boolean, why?: string): void {
    const wasUp = this.#down.size === 0;
    if (connected) this.#down.delete(source);
    else this.#down.set(source, why ?? 'unreachable');
    const up = this.#down.size === 0;
    if (wasUp !== up) {
      if (up) this.#log.info({}, 'datastore reachable again');
      else this.#log.warn({ source, why }, 'datastore unreachable; keeping the programmed rules');
    }
    this.metrics.datastoreConnected.set(up ? 1 : 0);
    this.#reportCalcHealth();
  }

  #reportCalcHealth(): void {
    const inSync = this.#syncer?.inSync ?? false;
    const up = this.#down.size === 0;
    const detail = !up
      ? `datastore unreachable: ${[...this.#down.values()][0]}`.slice(0, 120)
      : this.#datastoreLocked
        ? 'datastore locked (ClusterInformation datastoreReady: false); dataplane held as programmed'
        : inSync
          ? undefined
          : 'waiting for the datastore to sync';
    const ready = inSync && up && !this.#datastoreLocked;
    this.health.report(CALC_GRAPH, { live: true, ready, ...(detail ? { detail } : {}) });
  }

  #runProbe(): void {
    const probe = this.#o.probe;
    if (!probe) return;
    const timeout = this.#o.probeTimeoutMs ?? 2000;
    const now = Date.now();
    if (this.#probePending) {
      if (now - this.#probeStarted <= timeout) return;
      // No answer in time: unreachable. Abandon that call (its late answer is ignored) and try anew.
      this.#setConnection('probe', false, `no answer in ${timeout} ms`);
    }
    const generation = ++this.#probeGeneration;
    this.#probePending = true;
    this.#probeStarted = now;
    const settle = (connected: boolean, why?: string) => {
      if (generation !== this.#probeGeneration || this.#stopped) return;
      this.#probePending = false;
      this.#setConnection('probe', connected, why);
    };
    probe().then(
      () => settle(true),
      (e: unknown) => settle(false, errorMessage(e)),
    );
  }
}
