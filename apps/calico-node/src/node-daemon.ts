/**
 * CalicoNode: what runs on every host after start-up, in one process.
 *
 *   Felix (FelixDaemon: datastore → nftables, routes; /liveness /readiness on FELIX_HEALTHPORT)
 *     follows the datastore through Typha when FELIX_TYPHAADDR or FELIX_TYPHAK8SSERVICENAME is set
 *     health ◄── "bird" reporter ◄── every 2 s: BIRD `show protocols` ─► every BGP peer Established?
 *   PluginService (CNI_SERVICE_SOCKET): runs the calico CNI plugin's ADD/DEL/... warm for the
 *     executables the container runtime starts (see @calico-ts/cni-plugin/service)
 *   bird mode only:
 *   BirdBridge (Node, BGPConfiguration, BGPPeer, IPPool, affinities) ─► BirdSupervisor ─► bird
 *     ▲ BGP passwords: the Secrets the peers reference (KubeSecretProvider, src/kube-secrets.ts)
 *     <run dir>/bird.ctl  control socket;  <run dir>/bird.pid  BIRD's PID, rewritten when it restarts
 *     with an IPv6 address (Node spec.bgp.ipv6Address): a second BIRD on bird6.cfg, as upstream's
 *     bird6, control socket <run dir>/bird6.ctl, PID in <run dir>/bird6.pid; its sessions count for
 *     readiness as well
 *
 * Design: composition only. Felix's readiness gains the BGP sessions, so one probe of
 * /readiness answers "policy programmed and routes exchanged". `stop()` stops BIRD (by the PID it
 * started) and Felix, leaving Felix's rules in place, as upstream does on SIGTERM.
 */

import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { IPPool } from '@calico-ts/api';
import { withFields } from '@calico-ts/api/log';
import { BirdBridge, BirdSupervisor, nodeAffinitySource, type SecretProvider } from '@calico-ts/bird-bridge';
import type { PluginService } from '@calico-ts/cni-plugin/service';
import {
  type Datastore,
  type Informer,
  type KVStore,
  resourceInformer,
  type SyncerOptions,
} from '@calico-ts/datastore';
import {
  FelixDaemon,
  felixKeySources,
  type LocalConfigSources,
  type Logger,
  type StatusStore,
} from '@calico-ts/felix';
import type { Netlinux } from '@calico-ts/netlinux';
import type { NftClient } from '@calico-ts/nftables';
import { type AgentTyphaConfig, affinityFilter, agentSyncer } from '@calico-ts/typha';
import { bgpHealthReport, bgpPeersOf } from './bgp-health.js';
import type { Env, NodeEnv } from './env.js';
import { errorMessage } from './errors.js';
import { CALICO_VERSION } from './node-resource.js';
import { writeFileAtomic } from './startup.js';
import { reconcileTunnelAddresses, type TunnelIpam } from './tunnel-address.js';

/** The health reporter calico-node adds to Felix's. */
export const BIRD_HEALTH_REPORTER = 'bird';

export interface CalicoNodeOptions {
  readonly env: NodeEnv;
  readonly rawEnv: Env;
  readonly configFile: Readonly<Record<string, string>>;
  readonly hostname: string;
  readonly kv: KVStore;
  readonly datastore: Datastore;
  readonly nft: NftClient;
  /** Felix's second nftables client, for the `ip6` table (see `FelixDaemonOptions.nftIp6`). */
  readonly nftIp6?: NftClient;
  readonly net: Netlinux;
  readonly log: Logger & { child?(bindings: Record<string, unknown>): Logger };
  readonly setLogLevel?: (level: string) => void;
  readonly bgpPollMs?: number;
  /** IPAM for the VXLAN tunnel address, re-checked every `tunnelCheckMs` (pools may change). */
  readonly ipam?: TunnelIpam;
  readonly tunnelCheckMs?: number;
  /**
   * A Service's v1 Endpoints from the Kubernetes API, for FELIX_TYPHAK8SSERVICENAME; absent: only
   * FELIX_TYPHAADDR can name Typha.
   */
  readonly typhaEndpoints?: (namespace: string, name: string) => Promise<unknown>;
  /** Where BGP password values come from (Secrets in the Kubernetes API, or files); none: sessions needing one stay down. */
  readonly secretProvider?: SecretProvider;
  /** The node has an IPv6 address (start-up's Node, spec.bgp.ipv6Address): run BIRD for IPv6 too. */
  readonly ipv6Bgp?: boolean;
}

/** The environment Felix sees: calico-node's, with this node's name and files filled in. */
export function felixEnv(env: NodeEnv, raw: Env): Env {
  return {
    ...raw,
    FELIX_FELIXHOSTNAME: raw.FELIX_FELIXHOSTNAME || env.nodeName,
    FELIX_MTUFILEPATH: raw.FELIX_MTUFILEPATH || join(env.varLibDir, 'mtu'),
  };
}

export class CalicoNode {
  readonly #o: CalicoNodeOptions;
  readonly felix: FelixDaemon;
  #bridge: BirdBridge | undefined;
  #supervisor: BirdSupervisor | undefined;
  #supervisor6: BirdSupervisor | undefined;
  #bgpTimer: NodeJS.Timeout | undefined;
  #tunnelTimer: NodeJS.Timeout | undefined;
  /** The IP pools the minute's tunnel address check reads (not a list per check). */
  #pools: Informer<IPPool> | undefined;
  #birdPid: number | undefined;
  #bird6Pid: number | undefined;
  #cniService: PluginService | undefined;
  #stopped = false;
  /** Felix's Typha parameters, as its syncer factory saw them. */
  #typhaConfig: AgentTyphaConfig | undefined;

  constructor(opts: CalicoNodeOptions) {
    this.#o = opts;
    const local: LocalConfigSources = {
      env: felixEnv(opts.env, opts.rawEnv),
      file: opts.configFile,
      hostname: opts.hostname,
    };
    const felixLog = opts.log.child?.({ component: 'felix' }) ?? opts.log;
    this.felix = new FelixDaemon({
      local,
      datastore: opts.datastore,
      // Felix's status keys exist in etcd only; the Kubernetes datastore has no place for them.
      ...(opts.datastore.backend === 'kubernetes' ? {} : { statusStore: opts.kv as unknown as StatusStore }),
      probe: () => opts.kv.revision(),
      // IPAM blocks (VXLAN routes to the other nodes' blocks) and, on the Kubernetes datastore,
      // Services and EndpointSlices (policy `services` matches), through Felix's syncer.
      ...felixKeySources(opts.kv, opts.datastore.backend),
      // FELIX_TYPHAADDR / FELIX_TYPHAK8SSERVICENAME: the same updates through Typha.
      syncerFactory: (o, cfg) => {
        // BIRD's syncer follows the same decision (Felix's Typha parameters), made once here.
        this.#typhaConfig = cfg;
        return agentSyncer(o, cfg, {
          client: 'felix',
          syncerType: 'felix',
          ...(opts.typhaEndpoints ? { getEndpoints: opts.typhaEndpoints } : {}),
        });
      },
      nft: opts.nft,
      ...(opts.nftIp6 !== undefined ? { nftIp6: opts.nftIp6 } : {}),
      net: opts.net,
      log: felixLog,
      ...(opts.setLogLevel ? { setLogLevel: opts.setLogLevel } : {}),
    });
  }

  get birdPidFile(): string {
    return join(this.#o.env.varRunDir, 'bird.pid');
  }

  get birdSocket(): string {
    return join(this.#o.env.varRunDir, 'bird.ctl');
  }

  get bird6PidFile(): string {
    return join(this.#o.env.varRunDir, 'bird6.pid');
  }

  get bird6Socket(): string {
    return join(this.#o.env.varRunDir, 'bird6.ctl');
  }

  async start(): Promise<void> {
    const { env } = this.#o;
    if (env.networkingBackend === 'bird') {
      // Registered before Felix serves /readiness, so it is never ready without BGP.
      this.felix.health.register(BIRD_HEALTH_REPORTER, { live: false, ready: true });
      this.felix.health.report(BIRD_HEALTH_REPORTER, {
        live: true,
        ready: false,
        detail: 'BIRD not started',
      });
    }
    await this.felix.start();
    await this.#startCniService();
    const ipam = this.#o.ipam;
    if (ipam && env.networkingBackend !== 'none') {
      const log = this.#o.log.child?.({ component: 'tunnel-address' }) ?? this.#o.log;
      const pools = resourceInformer(this.#o.datastore, 'IPPool', { log }) as Informer<IPPool>;
      this.#pools = pools;
      pools.start();
      const reads = { pools: () => (pools.serving ? pools.list() : undefined) };
      this.#tunnelTimer = setInterval(() => {
        reconcileTunnelAddresses(this.#o.datastore, ipam, env.nodeName, log, reads).catch((e: unknown) =>
          log.warn({ err: errorMessage(e) }, 'tunnel address check failed; will retry'),
        );
      }, this.#o.tunnelCheckMs ?? 60_000);
    }
    if (env.networkingBackend !== 'bird') {
      this.#o.log.info({ backend: env.networkingBackend }, 'BIRD not started for this networking backend');
      return;
    }
    const birdLog = this.#birdLogger();
    this.#supervisor = new BirdSupervisor({
      configDir: env.birdConfigDir,
      socketPath: this.birdSocket,
      birdPath: env.birdPath,
      log: birdLog,
    });
    if (this.#o.ipv6Bgp) {
      this.#supervisor6 = new BirdSupervisor({
        configDir: env.birdConfigDir,
        socketPath: this.bird6Socket,
        birdPath: env.birdPath,
        log: birdLog,
      });
    }
    this.#bridge = new BirdBridge({
      datastore: this.#o.datastore,
      affinities: nodeAffinitySource(this.#o.kv, env.nodeName),
      nodeName: env.nodeName,
      targets: { 4: this.#supervisor, ...(this.#supervisor6 ? { 6: this.#supervisor6 } : {}) },
      ...(this.#o.secretProvider ? { secretProvider: this.#o.secretProvider } : {}),
      ...(this.#typhaConfig ? { syncerFactory: this.#birdSyncerFactory(this.#typhaConfig) } : {}),
      log: birdLog,
    });
    await this.#bridge.start();
    await this.#checkBgp();
    this.#bgpTimer = setInterval(() => void this.#checkBgp(), this.#o.bgpPollMs ?? 2000);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#bgpTimer !== undefined) clearInterval(this.#bgpTimer);
    if (this.#tunnelTimer !== undefined) clearInterval(this.#tunnelTimer);
    await this.#pools?.stop();
    await this.#cniService
      ?.close()
      .catch((e: unknown) => this.#o.log.warn({ err: errorMessage(e) }, 'CNI plugin service stop failed'));
    await this.#bridge
      ?.stop()
      .catch((e: unknown) => this.#o.log.warn({ err: errorMessage(e) }, 'BIRD stop failed'));
    if (this.#birdPid !== undefined) await rm(this.birdPidFile, { force: true });
    if (this.#bird6Pid !== undefined) await rm(this.bird6PidFile, { force: true });
    await this.felix.stop();
  }

  /** The CNI plugin service, when configured. Not fatal: without it the plugin works on its own. */
  async #startCniService(): Promise<void> {
    const socketPath = this.#o.env.cniServiceSocket;
    if (socketPath === undefined) return;
    const log = this.#o.log.child?.({ component: 'cni-service' }) ?? this.#o.log;
    try {
      const { startPluginService } = await import('@calico-ts/cni-plugin/service');
      this.#cniService = await startPluginService({
        socketPath,
        version: CALICO_VERSION,
        log,
      });
      log.info({ socket: socketPath }, 'CNI plugin service listening');
    } catch (e) {
      log.warn(
        { socket: socketPath, err: errorMessage(e) },
        'CNI plugin service not started; the plugin will run each invocation on its own',
      );
    }
  }

  async #checkBgp(): Promise<void> {
    const sup = this.#supervisor;
    if (!sup || this.#stopped) return;
    const pid = sup.pid;
    if (pid !== undefined && pid !== this.#birdPid) {
      this.#birdPid = pid;
      await writeFileAtomic(this.birdPidFile, `${pid}\n`).catch((e: unknown) =>
        this.#o.log.warn({ err: errorMessage(e) }, 'cannot write the BIRD pid file'),
      );
    }
    const pid6 = this.#supervisor6?.pid;
    if (pid6 !== undefined && pid6 !== this.#bird6Pid) {
      this.#bird6Pid = pid6;
      await writeFileAtomic(this.bird6PidFile, `${pid6}\n`).catch((e: unknown) =>
        this.#o.log.warn({ err: errorMessage(e) }, 'cannot write the BIRD (IPv6) pid file'),
      );
    }
    let report: ReturnType<typeof bgpHealthReport>;
    try {
      const peers = bgpPeersOf(await sup.client.showProtocols());
      if (this.#supervisor6) peers.push(...bgpPeersOf(await this.#supervisor6.client.showProtocols()));
      report = bgpHealthReport(peers);
    } catch (e) {
      report = bgpHealthReport(e instanceof Error ? e : new Error(String(e)));
    }
    if (!this.#stopped) this.felix.health.report(BIRD_HEALTH_REPORTER, report);
  }

  /**
   * BIRD's syncer: Typha's `bgp` type when Felix's parameters name a Typha (this node's block
   * affinities only, under the source name the bridge expects), else its own list and watch.
   */
  #birdSyncerFactory(cfg: AgentTyphaConfig): (o: SyncerOptions) => ReturnType<typeof agentSyncer> {
    return (o) =>
      agentSyncer(o, cfg, {
        client: 'bird',
        syncerType: 'bgp',
        filter: affinityFilter(this.#o.env.nodeName),
        ...(this.#o.typhaEndpoints ? { getEndpoints: this.#o.typhaEndpoints } : {}),
      });
  }

  #birdLogger(): Logger {
    return this.#o.log.child?.({ component: 'bird' }) ?? withFields(this.#o.log, { component: 'bird' });
  }
}
