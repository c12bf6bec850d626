/**
 * What every handler receives: the parsed invocation and config, and the effects it may use. The
 * entry point (main.ts) builds the real one; tests build one from fakes.
 */

import type { Logger } from '@calico-ts/api/log';
import { CniPluginError, isCniPluginError, messageOf } from '../errors.js';
import type { PluginBackend } from '../io/backend.js';
import type { Dataplane } from '../io/dataplane.js';
import type { DelegateRunner } from '../io/delegate.js';
import type { HostLock } from '../io/host-lock.js';
import type { KubeReader } from '../io/kube.js';
import type { Env, Invocation } from '../spec/env.js';
import type { IpamConf, NetConf } from '../spec/netconf.js';

export interface HostInfo {
  /** File contents, or undefined when the file does not exist. */
  readFile(path: string): Promise<string | undefined>;
  hostname(): string;
  now(): Date;
}

export interface PluginContext {
  inv: Invocation;
  conf: NetConf;
  /** The config bytes as received, passed to delegates unchanged. */
  stdin: string;
  env: Env;
  log: Logger;
  host: HostInfo;
  delegate: DelegateRunner;
  /** Opens the datastore on first use; the entry point closes it. */
  backend(): Promise<PluginBackend>;
  /** Connects to the Kubernetes API on first use (Kubernetes mode only); the entry point closes it. */
  kube(): Promise<KubeReader>;
  dataplane(): Dataplane;
  /** The host-wide IPAM lock (calico-ipam takes it around datastore changes). */
  lock: HostLock;
}

export const DEFAULT_NODENAME_FILE = '/var/lib/calico/nodename';
export const DEFAULT_MTU_FILE = '/var/lib/calico/mtu';
export const NOT_READY_MESSAGE = 'Calico is currently not ready to process requests';

/**
 * The node name: `nodename` > contents of `nodename_file` (/var/lib/calico/nodename) > `hostname` >
 * the OS hostname. With `gate` (the calico plugin's ADD and DEL), a missing nodename file fails
 * unless `nodename_file_optional`: it is how the plugin knows calico/node runs on this host.
 */
export async function resolveNodename(ctx: PluginContext, gate: boolean): Promise<string> {
  const { conf, host } = ctx;
  const file = conf.nodenameFile ?? DEFAULT_NODENAME_FILE;
  let text: string | undefined;
  try {
    text = await host.readFile(file);
  } catch (e) {
    throw new CniPluginError('io-failure', `cannot read ${file}: ${messageOf(e)}`);
  }
  if (gate && text === undefined && !conf.nodenameFileOptional) {
    throw new CniPluginError(
      'try-again',
      `${file} does not exist: check that the calico/node container is running and has mounted /var/lib/calico/`,
    );
  }
  const fromFile = text?.trim() ?? '';
  const name = conf.nodename ?? (fromFile !== '' ? fromFile : undefined) ?? conf.hostname ?? host.hostname();
  if (name === '') throw new CniPluginError('invalid-config', 'nodename: cannot determine the node name');
  return name;
}

/** `mtu` from the config, else /var/lib/calico/mtu (written by Felix), else 0 (kernel default). */
export async function resolveMtu(ctx: PluginContext): Promise<number> {
  const { conf, host } = ctx;
  if (conf.mtu > 0) return conf.mtu;
  const text = await host.readFile(DEFAULT_MTU_FILE);
  if (text === undefined) {
    if (conf.requireMtuFile) {
      throw new CniPluginError('try-again', `${DEFAULT_MTU_FILE} does not exist and require_mtu_file is set`);
    }
    return 0;
  }
  const mtu = Number(text.trim());
  if (!Number.isInteger(mtu) || mtu < 0) {
    throw new CniPluginError('invalid-config', `${DEFAULT_MTU_FILE}: "${text.trim()}" is not an MTU`);
  }
  return mtu;
}

export function requireIpam(conf: NetConf): IpamConf {
  if (!conf.ipam) {
    throw new CniPluginError('invalid-config', 'ipam: missing (e.g. "ipam": {"type": "calico-ipam"})');
  }
  return conf.ipam;
}

/** The IPAM settings calico-ipam uses: the config's, or upstream's defaults when absent. */
export function ipamOrDefaults(conf: NetConf): IpamConf {
  return (
    conf.ipam ?? {
      type: 'calico-ipam',
      assignIpv4: true,
      assignIpv6: false,
      ipv4Pools: [],
      ipv6Pools: [],
      routes: [],
    }
  );
}

/** ClusterInformation `default` must exist with `datastoreReady`; otherwise `try-again`. */
export async function requireReady(backend: PluginBackend): Promise<void> {
  const r = await backend.readiness();
  if (!r.ready) {
    throw new CniPluginError('try-again', NOT_READY_MESSAGE, r.reason ? { details: r.reason } : undefined);
  }
}

/**
 * Undo actions of a multi-step operation, run newest first when a later step fails. An undo that
 * fails is logged and the rest still run; the original error is what the caller reports.
 */
export class UndoStack {
  readonly #steps: { what: string; run: () => Promise<unknown> }[] = [];
  readonly #log: Logger;

  constructor(log: Logger) {
    this.#log = log;
  }

  push(what: string, run: () => Promise<unknown>): void {
    this.#steps.push({ what, run });
  }

  async run(reason: unknown): Promise<void> {
    this.#log.info(`undoing after failure: ${messageOf(reason)}`);
    while (this.#steps.length > 0) {
      const s = this.#steps.pop()!;
      try {
        await s.run();
        this.#log.info(`undid: ${s.what}`);
      } catch (e) {
        this.#log.error(`failed to undo (${s.what}): ${messageOf(e)}`);
      }
    }
  }
}

/** Runs `op`, retrying up to `attempts` times while it fails `try-again`. */
export async function retryOnConflict<T>(attempts: number, op: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await op();
    } catch (e) {
      if (i >= attempts || !isCniPluginError(e, 'try-again')) throw e;
    }
  }
}
