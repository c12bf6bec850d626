/**
 * Felix's configuration while it runs: the local sources (environment, config file) resolved with
 * the FelixConfiguration resources `default` and `node.<hostname>`, read once at start and then
 * followed through the syncer.
 *
 *   start: list FelixConfiguration (retried with back-off; no answer within probeTimeoutMs counts
 *          as unreachable) ──► resolve (env > file > node.<name> > default)
 *   syncer: FelixConfiguration set/delete ──► onResource ──► resolve ──► ConfigChange | undefined
 *
 * A change names the parameters that changed; those outside LIVE_PARAMS take effect on restart
 * (`warnRestartNeeded` says so, after the daemon applied the live ones). Thread-safety: one event loop.
 */
import type { FelixConfigurationSpec } from '@calico-ts/api';
import type { Datastore } from '@calico-ts/datastore';
import { changedParams, type ResolvedConfig } from '../config/felix-config.js';
import { type LocalConfigSources, resolveWith } from '../config/load-config.js';
import type { FelixConfig } from '../config/params.js';
import { errorMessage, type Logger } from '../logging.js';

/** Parameters a running Felix applies at once; the others take effect on restart. */
export const LIVE_PARAMS: ReadonlySet<string> = new Set([
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

export interface ConfigStateOptions {
  readonly local: LocalConfigSources;
  readonly datastore: Datastore;
  readonly log: Logger;
  readonly retryMs?: number;
  readonly probeTimeoutMs?: number;
  /** Called for each failed read at start. */
  readonly onUnreachable: (e: unknown) => void;
  /** True once Felix is stopping: the start-up read gives up. */
  readonly stopped: () => boolean;
}

/** A configuration change: the parameters that changed, and the configuration before and after. */
export interface ConfigChange {
  readonly changed: readonly string[];
  readonly before: FelixConfig;
  readonly after: FelixConfig;
}

export class ConfigState {
  readonly #o: ConfigStateOptions;
  #resolved!: ResolvedConfig;
  #globalSpec: FelixConfigurationSpec | undefined;
  #hostSpec: FelixConfigurationSpec | undefined;

  constructor(o: ConfigStateOptions) {
    this.#o = o;
  }

  /** The configuration of the local sources alone (what is known before the datastore answers). */
  localConfig(): FelixConfig {
    return resolveWith(this.#o.local).config;
  }

  get config(): FelixConfig {
    return this.#resolved.config;
  }

  get resolved(): ResolvedConfig {
    return this.#resolved;
  }

  /** Reads the FelixConfiguration resources, retrying until the datastore answers. */
  async load(): Promise<void> {
    const host = this.localConfig().FelixHostname;
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
        this.#o.log.warn(
          { err: errorMessage(e), retryMs: delay },
          'cannot read FelixConfiguration yet; retrying',
        );
        this.#o.onUnreachable(e);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 5000);
        if (this.#o.stopped()) throw new Error('stopped before the configuration could be read');
      }
    }
    this.#resolved = this.#resolve();
  }

  /** A FelixConfiguration update; the change when it changed any parameter of this Felix. */
  onResource(name: string, spec: FelixConfigurationSpec | undefined): ConfigChange | undefined {
    if (name === 'default') this.#globalSpec = spec;
    else if (name === `node.${this.config.FelixHostname}`) this.#hostSpec = spec;
    else return undefined;
    const before = this.config;
    const next = this.#resolve();
    const changed = changedParams(before, next.config);
    if (changed.length === 0) return undefined;
    this.#resolved = next;
    this.#o.log.info({ changed }, 'Felix configuration changed');
    return { changed, before, after: next.config };
  }

  /** Logs the parameters of a change that take effect on restart only. */
  warnRestartNeeded(change: ConfigChange): void {
    const needRestart = change.changed.filter((p) => !LIVE_PARAMS.has(p));
    if (needRestart.length > 0) {
      this.#o.log.warn({ params: needRestart }, 'these parameters take effect when Felix restarts');
    }
  }

  #resolve(): ResolvedConfig {
    return resolveWith(this.#o.local, {
      ...(this.#hostSpec ? { perHost: this.#hostSpec } : {}),
      ...(this.#globalSpec ? { global: this.#globalSpec } : {}),
    });
  }
}
