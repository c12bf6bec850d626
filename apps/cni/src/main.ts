/**
 * install-cni, the calico-node DaemonSet's `install-cni` container: installs the plugins, their
 * network config, kubeconfig and etcd TLS files on the node, then exits (`SLEEP=false`, an init
 * container) or stays (`SLEEP=true`, default) and keeps them current: a rotated etcd secret is
 * copied again, the plugin's token is renewed a quarter of the way through its life (or, with the
 * pod's own token, whenever kubelet rotates it) and the kubeconfig rewritten.
 *
 * Exit: 0 when installed (init container) or stopped by SIGTERM/SIGINT; 1 with a message naming
 * what was wrong otherwise. No token or key is ever logged.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LogFields, Logger, LogLevelName } from '@calico-ts/api/log';
import { configFromEnv, type InstallConfig } from './config.js';
import { isInstallError } from './errors.js';
import {
  CONTAINER_PATHS,
  type HostPaths,
  installBinaries,
  installKubeconfig,
  installNetworkConfig,
  installTls,
  type KubeconfigState,
  readTemplate,
  tlsDigest,
} from './install.js';

type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_CHECK_INTERVAL_MS = 10_000;

export interface MainOptions {
  readonly paths?: HostPaths;
  /** Stops the sidecar loop (the program wires SIGTERM/SIGINT to it). */
  readonly signal?: AbortSignal;
  /** How often the sidecar looks for a rotated secret or a due token. */
  readonly checkIntervalMs?: number;
  /** When the plugin's token is renewed (default: a quarter of its requested life). */
  readonly tokenRefreshMs?: number;
  readonly log?: Logger;
}

const TAG = { error: 'ERROR', warn: 'WARNING', info: 'INFO', debug: 'DEBUG' } as const;

/**
 * Lines on stdout. Written out here rather than with `loggerOf`: install-cni's image carries this
 * app's own dist and no workspace package, so it imports `@calico-ts/api` for types only.
 */
function lineAt(level: LogLevelName) {
  return (a: string | LogFields, b?: string): void => {
    const [fields, msg] = typeof a === 'string' ? [{}, a] : [a, b ?? ''];
    const kv = Object.entries(fields).map(
      ([k, v]) => ` ${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`,
    );
    process.stdout.write(`${new Date().toISOString()} [${TAG[level]}] ${msg}${kv.join('')}\n`);
  };
}
const consoleLog: Logger = {
  error: lineAt('error'),
  warn: lineAt('warn'),
  info: lineAt('info'),
  debug: lineAt('debug'),
};

interface Installed {
  kube: KubeconfigState | undefined;
  tls: string;
  tlsFiles: Awaited<ReturnType<typeof installTls>>;
}

async function installAll(env: Env, cfg: InstallConfig, paths: HostPaths, log: Logger): Promise<Installed> {
  const tls = await tlsDigest(cfg);
  const tlsFiles = await installTls(cfg, paths, log);
  await installBinaries(cfg, paths, log);
  const kube = await installKubeconfig(cfg, paths, log);
  await installNetworkConfig(env, cfg, paths, { token: kube?.token.token ?? '', tlsFiles }, log);
  return { kube, tls, tlsFiles };
}

async function mountedToken(paths: HostPaths): Promise<string | undefined> {
  try {
    return (await readFile(join(paths.serviceAccountDir, 'token'), 'utf8')).trim();
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** One pass of the sidecar: what changed since `state`, installed again. */
async function refresh(
  env: Env,
  cfg: InstallConfig,
  paths: HostPaths,
  state: Installed,
  tokenRefreshMs: number,
  log: Logger,
): Promise<Installed> {
  let { kube, tls, tlsFiles } = state;
  let rerender = false;
  const digest = await tlsDigest(cfg);
  if (digest !== tls) {
    log.info(`the etcd TLS secret in ${cfg.tlsAssetsDir} changed: copying it again`);
    tlsFiles = await installTls(cfg, paths, log);
    tls = digest;
    rerender = true;
  }
  if (kube) {
    const due =
      kube.token.source === 'token-request'
        ? Date.now() - kube.fetchedAt >= tokenRefreshMs
        : (await mountedToken(paths)) !== kube.sa.token;
    if (due) {
      log.info(
        kube.token.source === 'token-request'
          ? "renewing the CNI plugin's token"
          : "this pod's token was rotated: rewriting the kubeconfig",
      );
      const next = await installKubeconfig(cfg, paths, log);
      if (
        next &&
        next.token.token !== kube.token.token &&
        (await readTemplate(cfg)).text.includes('__SERVICEACCOUNT_TOKEN__')
      ) {
        rerender = true;
      }
      kube = next;
    }
  }
  if (rerender)
    await installNetworkConfig(env, cfg, paths, { token: kube?.token.token ?? '', tlsFiles }, log);
  return { kube, tls, tlsFiles };
}

export async function main(env: Env, opts: MainOptions = {}): Promise<number> {
  const log = opts.log ?? consoleLog;
  const paths = opts.paths ?? CONTAINER_PATHS;
  let signal = opts.signal;
  if (!signal) {
    const ac = new AbortController();
    for (const s of ['SIGTERM', 'SIGINT'] as const) process.once(s, () => ac.abort());
    signal = ac.signal;
  }
  let cfg: InstallConfig;
  let state: Installed;
  try {
    cfg = configFromEnv(env);
    state = await installAll(env, cfg, paths, log);
  } catch (e) {
    process.stderr.write(`install-cni: ${isInstallError(e) ? e.message : (e as Error).stack}\n`);
    return 1;
  }
  log.info('Calico CNI plugin installed');
  if (!cfg.sleep) return 0;
  const tokenRefreshMs = opts.tokenRefreshMs ?? (cfg.tokenValiditySeconds * 1000) / 4;
  const interval = opts.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS;
  while (!signal.aborted) {
    await sleep(interval, signal);
    if (signal.aborted) break;
    try {
      state = await refresh(env, cfg, paths, state, tokenRefreshMs, log);
    } catch (e) {
      log.warn(
        `keeping the installed files; will try again in ${interval / 1000} s: ${(e as Error).message}`,
      );
    }
  }
  return 0;
}
