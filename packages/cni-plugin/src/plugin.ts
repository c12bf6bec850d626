/**
 * One plugin invocation, start to finish, with its effects passed in: flags, environment, stdin →
 * a handler → the text for stdout and the exit code. `main.ts` calls this with the real effects;
 * tests call it with fakes.
 *
 * Order of checks (as the reference library's skeleton): command-line flags, then the environment
 * (code 4), then the config on stdin (6, 1, 7), then the handler. Every failure becomes one CNI
 * error object on stdout and exit code 1; nothing else is printed on stdout.
 */

import type { Logger } from '@calico-ts/api/log';
import { writeStderr } from '@calico-ts/api/stdio';
import { CniPluginError, messageOf } from './errors.js';
import { cmdAdd } from './handlers/add.js';
import { cmdCheck } from './handlers/check.js';
import type { HostInfo, PluginContext } from './handlers/context.js';
import { cmdDel } from './handlers/del.js';
import { cmdGc } from './handlers/gc.js';
import { cmdIpamAdd } from './handlers/ipam-add.js';
import { cmdIpamCheck } from './handlers/ipam-check.js';
import { cmdIpamDel } from './handlers/ipam-del.js';
import { cmdIpamGc } from './handlers/ipam-gc.js';
import { cmdIpamStatus } from './handlers/ipam-status.js';
import { cmdStatus } from './handlers/status.js';
import { versionResult } from './handlers/version.js';
import type { PluginBackend } from './io/backend.js';
import type { Dataplane } from './io/dataplane.js';
import type { DelegateRunner } from './io/delegate.js';
import type { HostLock } from './io/host-lock.js';
import type { KubeReader } from './io/kube.js';
import type { LineLogger } from './io/logger.js';
import type { Program } from './program.js';
import { type Env, type Invocation, parseCommand, parseInvocation } from './spec/env.js';
import { formatJson, toCniErrorObject } from './spec/error.js';
import {
  decodeConfigObject,
  type NetConf,
  netConfFromObject,
  versionRequestVersion,
} from './spec/netconf.js';
import {
  type CniCommand,
  type CniVersion,
  isSupportedVersion,
  LATEST_VERSION,
  SUPPORTED_VERSIONS,
} from './spec/versions.js';

export { type Program, programFromPath } from './program.js';

export interface PluginEffects {
  log: LineLogger;
  host: HostInfo;
  readStdin(): Promise<string>;
  delegate(inv: Invocation, env: Env): DelegateRunner;
  openBackend(conf: NetConf, env: Env, log: Logger): Promise<PluginBackend>;
  /** The Kubernetes API (Kubernetes mode: the pod and its namespace). */
  openKube(conf: NetConf, env: Env, log: Logger): Promise<KubeReader>;
  dataplane(log: Logger): Dataplane;
  lock: HostLock;
}

export interface PluginOutput {
  stdout: string;
  exitCode: number;
}

type Handler = (ctx: PluginContext) => Promise<Record<string, unknown> | undefined>;

const HANDLERS: Record<Program, Record<Exclude<CniCommand, 'VERSION'>, Handler>> = {
  calico: { ADD: cmdAdd, DEL: cmdDel, CHECK: cmdCheck, STATUS: cmdStatus, GC: cmdGc },
  'calico-ipam': {
    ADD: cmdIpamAdd,
    DEL: cmdIpamDel,
    CHECK: cmdIpamCheck,
    STATUS: cmdIpamStatus,
    GC: cmdIpamGc,
  },
};

export async function runPlugin(
  program: Program,
  args: readonly string[],
  env: Env,
  fx: PluginEffects,
  version: string,
): Promise<PluginOutput> {
  let errorVersion: CniVersion = LATEST_VERSION;
  let backend: PluginBackend | undefined;
  let kube: Promise<KubeReader> | undefined;
  try {
    const flag = await runFlags(program, args, env, fx, version);
    if (flag) return flag;

    const command = parseCommand(env);
    const stdin = await readStdin(fx);
    errorVersion = guessVersion(stdin) ?? LATEST_VERSION;
    if (command === 'VERSION') return ok(versionResult(versionRequestVersion(stdin)));

    const inv = parseInvocation(env);
    const conf = netConfFromObject(decodeConfigObject(stdin), command);
    errorVersion = conf.cniVersion;
    fx.log.setLevel(conf.logLevel);
    if (conf.logFilePath) fx.log.setFile(conf.logFilePath);
    const log = fx.log;
    log.debug(
      {
        ContainerID: inv.containerId || undefined,
        Netns: inv.netns || undefined,
      },
      `${program} ${command}`,
    );

    let dataplane: Dataplane | undefined;
    const ctx: PluginContext = {
      inv,
      conf,
      stdin,
      env,
      log,
      host: fx.host,
      delegate: fx.delegate(inv, env),
      backend: async () => {
        backend ??= await fx.openBackend(conf, env, log);
        return backend;
      },
      kube: () => {
        kube ??= fx.openKube(conf, env, log);
        return kube;
      },
      dataplane: () => {
        dataplane ??= fx.dataplane(log);
        return dataplane;
      },
      lock: fx.lock,
    };
    const out = await HANDLERS[program][command](ctx);
    log.debug({ sinceStartMs: Math.round(performance.now()) }, `${program} ${command} done`);
    return out === undefined ? { stdout: '', exitCode: 0 } : ok(out);
  } catch (e) {
    const obj = toCniErrorObject(e, errorVersion);
    fx.log.error(
      {
        code: obj.code,
      },
      `${program} failed: ${obj.msg}${obj.details ? ` (${obj.details})` : ''}`,
    );
    return { stdout: formatJson(obj), exitCode: 1 };
  } finally {
    if (kube) {
      try {
        await (await kube).close();
      } catch {
        // it never opened: its error is what the handler reported
      }
    }
    if (backend) {
      try {
        await backend.close();
      } catch (e) {
        fx.log.warn(`closing the datastore client failed: ${messageOf(e)}`);
      }
    }
  }
}

function ok(value: Record<string, unknown>): PluginOutput {
  return { stdout: formatJson(value), exitCode: 0 };
}

async function readStdin(fx: PluginEffects): Promise<string> {
  try {
    return await fx.readStdin();
  } catch (e) {
    throw new CniPluginError('io-failure', `failed to read the network config from stdin: ${messageOf(e)}`);
  }
}

/** The config's version when it names one we speak: used for the error object's `cniVersion`. */
function guessVersion(stdin: string): CniVersion | undefined {
  try {
    const v = (JSON.parse(stdin) as { cniVersion?: unknown }).cniVersion;
    return isSupportedVersion(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

async function runFlags(
  program: Program,
  args: readonly string[],
  env: Env,
  fx: PluginEffects,
  version: string,
): Promise<PluginOutput | undefined> {
  if (args.length === 0) return undefined;
  const flag = args[0]!.replace(/^--?/, '-');
  if (flag === '-v' || flag === '-version') return { stdout: `${version}\n`, exitCode: 0 };
  if (flag === '-h' || flag === '-help') {
    writeStderr(
      `${program}: the ${program === 'calico' ? 'Calico CNI plugin' : 'Calico IPAM plugin'} ${version}\n` +
        `CNI protocol versions supported: ${SUPPORTED_VERSIONS.join(', ')}\n` +
        `  -v  print the version${program === 'calico' ? '\n  -t  test the datastore connection (network config on stdin)' : ''}\n`,
    );
    return { stdout: '', exitCode: 0 };
  }
  if (flag === '-t' && program === 'calico') {
    try {
      const conf = netConfFromObject(decodeConfigObject(await readStdin(fx)), 'ADD');
      const backend = await fx.openBackend(conf, env, fx.log);
      try {
        const r = await backend.readiness();
        if (!r.ready)
          throw new Error(
            `Calico is currently not ready to process requests${r.reason ? `: ${r.reason}` : ''}`,
          );
      } finally {
        await backend.close();
      }
      return { stdout: '', exitCode: 0 };
    } catch (e) {
      throw new CniPluginError('bad-flag', 'data store connection failed', { details: messageOf(e) });
    }
  }
  throw new CniPluginError('bad-flag', 'failed to parse CLI flags', {
    details: `unknown flag ${args[0]}${program === 'calico-ipam' && flag === '-upgrade' ? ' (the host-local migration is not supported)' : ''}`,
  });
}
