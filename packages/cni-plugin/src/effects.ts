/**
 * The real effects of one plugin invocation (logs, files, delegates, datastore, kernel, lock),
 * assembled the same way whether the invocation runs in the executable the runtime started
 * (direct.ts) or in the node-local plugin service on its behalf (service/server.ts). What differs
 * is passed in: where log lines go, the config bytes, which executable counts as "this one" for
 * in-process IPAM, how the datastore is opened, and the host lock.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Logger } from '@calico-ts/api/log';
import { Netlinux } from '@calico-ts/netlinux';
import { borrowBackend, type PluginBackend } from './io/backend.js';
import { type DelegateHandler, delegateCniArgs, delegateError, ExecDelegateRunner } from './io/delegate.js';
import type { HostLock } from './io/host-lock.js';
import { borrowReader, type KubeReader } from './io/kube.js';
import { LinuxDataplane } from './io/linux-dataplane.js';
import { createLogger } from './io/logger.js';
import { type PluginEffects, type Program, runPlugin } from './plugin.js';
import type { Env } from './spec/env.js';
import type { NetConf } from './spec/netconf.js';

export type OpenBackend = (conf: NetConf, env: Env, log: Logger) => Promise<PluginBackend>;
export type OpenKube = (conf: NetConf, env: Env, log: Logger) => Promise<KubeReader>;

export interface EffectsOptions {
  program: Program;
  version: string;
  /** Where log lines go (the process's stderr when run directly). */
  logSink?: (line: string) => void;
  /** The PID log lines name (default: this process's). */
  pid?: number;
  readStdin(): Promise<string>;
  /**
   * The real path of the executable the runtime started: a delegated `calico-ipam` that is this
   * file runs in process (same input and output, no second start-up or datastore connection).
   */
  selfPath: string | undefined;
  openBackend: OpenBackend;
  /** Wrap in `openKubeOnce`, so an in-process calico-ipam reuses the calico plugin's reads. */
  openKube: OpenKube;
  lock: HostLock;
}

export function pluginEffects(o: EffectsOptions): PluginEffects {
  const logFor = (program: Program) => createLogger(program, o.logSink, o.pid);
  const effects: PluginEffects = {
    log: logFor(o.program),
    host: {
      // Small local files (the nodename, the MTU): read synchronously, faster than a thread-pool trip.
      async readFile(path) {
        try {
          return readFileSync(path, 'utf8');
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
          throw e;
        }
      },
      hostname: () => hostname(),
      now: () => new Date(),
    },
    readStdin: () => o.readStdin(),
    delegate: (inv, env) =>
      new ExecDelegateRunner(env, inv.path, {
        ...(o.selfPath ? { self: { realpath: o.selfPath, run: ipamInProcess(env) } } : {}),
        ...(o.logSink ? { onStderr: (b: Buffer) => o.logSink?.(b.toString('utf8')) } : {}),
      }),
    openBackend: o.openBackend,
    openKube: o.openKube,
    // rtnetlink from this process where the runtime allows (no `ip` process per change).
    dataplane: (log) => new LinuxDataplane(new Netlinux({ netlink: true }), { log }),
    lock: o.lock,
  };

  /** calico-ipam as this invocation runs it for its own ADD/DEL: what a child would get, in and out. */
  function ipamInProcess(env: Env): DelegateHandler {
    return async (command, stdin, extraArgs) => {
      const ipamEnv: Env = {
        ...env,
        CNI_COMMAND: command,
        CNI_ARGS: delegateCniArgs(env.CNI_ARGS, extraArgs),
      };
      const inner: PluginEffects = { ...effects, log: logFor('calico-ipam'), readStdin: async () => stdin };
      const out = await runPlugin('calico-ipam', [], ipamEnv, inner, o.version);
      if (out.exitCode !== 0) throw delegateError('calico-ipam', command, out.exitCode, out.stdout, '');
      return out.stdout;
    };
  }
  return effects;
}

/**
 * `open`, shared within one invocation: the first call opens a client (closed by whoever opened
 * it); later calls (an in-process calico-ipam) borrow that one instead of connecting again.
 */
export function openOnce(open: OpenBackend): OpenBackend {
  let opened: PluginBackend | undefined;
  return async (conf, env, log) => {
    if (opened) return borrowBackend(opened);
    const b = await open(conf, env, log);
    opened ??= b;
    return b;
  };
}

/**
 * `open`, shared within one invocation like `openOnce`: the first call opens a reader (closed by
 * whoever opened it), later calls borrow it, and with it what it has already read.
 */
export function openKubeOnce(open: OpenKube): OpenKube {
  let opened: Promise<KubeReader> | undefined;
  return async (conf, env, log) => {
    if (opened) return borrowReader(await opened);
    opened = open(conf, env, log);
    opened.catch(() => {
      opened = undefined;
    });
    return opened;
  };
}
