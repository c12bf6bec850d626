/**
 * tigera-operator: the program. Opens the Kubernetes API (KUBECONFIG, else in-cluster from the
 * ServiceAccount token, as calico-node does), reads the manifest the render starts from
 * (CALICO_MANIFEST, default /usr/share/calico-ts/calico.yaml in the image, or the repository's
 * deploy/manifests/calico.yaml), and reconciles every RECONCILE_PERIOD (default 3s) and at once
 * when an Installation or APIServer changes, until SIGTERM or SIGINT.
 *
 *   operator               run
 *   operator -version      print the version
 *
 * Upstream's flags that choose what it manages (`-manage-crds`, `-enable-leader-election`) are
 * accepted and ignored: the CRDs come from tigera-operator.yaml, and one replica runs.
 */

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Logger, loggerOf } from '@calico-ts/api/log';
import {
  configFromEnv,
  createKVStore,
  isDatastoreError,
  KVDatastore,
  type KVStore,
  mergeClientConfig,
} from '@calico-ts/datastore';
import { KubeHttp, loadKubeConnection } from '@calico-ts/datastore/kube';
import { baseFromManifest } from './base.js';
import { VERSION } from './images.js';
import { KubeApi } from './kube-api.js';
import { Reconciler } from './reconciler.js';

type Env = Readonly<Record<string, string | undefined>>;

/** JSON lines on stdout. */
function logger(): Logger {
  return loggerOf((level, msg, fields) =>
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`),
  );
}

function manifestPath(env: Env): string {
  if (env.CALICO_MANIFEST) return env.CALICO_MANIFEST;
  const inImage = '/usr/share/calico-ts/calico.yaml';
  if (existsSync(inImage)) return inImage;
  return fileURLToPath(new URL('../../../deploy/manifests/calico.yaml', import.meta.url));
}

function periodMs(text: string | undefined): number {
  if (!text) return 3000;
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(text.trim());
  if (!m) throw new Error(`RECONCILE_PERIOD: ${JSON.stringify(text)} is not a duration like 3s or 500ms`);
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

const IGNORED_FLAGS = /^--?(manage-crds|enable-leader-election)(=.*)?$/;

/** Wakes `wake` whenever an object of `path` changes, until `signal` aborts. */
async function watchLoop(http: KubeHttp, path: string, wake: () => void, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      for await (const _ of http.watch(`${path}?watch=1&allowWatchBookmarks=false`, signal)) wake();
    } catch {
      // A broken or refused watch: the periodic pass still runs; try again shortly.
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}

export async function main(argv: readonly string[], env: Env): Promise<number> {
  if (argv[0] === '-version' || argv[0] === '--version') {
    process.stdout.write(`Operator: ${VERSION} (calico-ts)\n`);
    return 0;
  }
  const unknown = argv.filter((a) => !IGNORED_FLAGS.test(a));
  if (unknown.length > 0) {
    process.stderr.write(`operator: unknown arguments ${unknown.join(' ')}; use -version\n`);
    return 2;
  }
  const log = logger();
  let kv: KVStore | undefined;
  let http: KubeHttp | undefined;
  const stop = new AbortController();
  try {
    const period = periodMs(env.RECONCILE_PERIOD);
    const path = manifestPath(env);
    const base = baseFromManifest(await readFile(path, 'utf8'));
    const client = mergeClientConfig(undefined, {
      ...configFromEnv(env).config,
      datastoreType: 'kubernetes',
    });
    http = new KubeHttp(await loadKubeConnection(client.config, env as NodeJS.ProcessEnv));
    kv = await createKVStore(client.config);
    const reconciler = new Reconciler(
      new KubeApi(http),
      new KVDatastore(kv, { backend: 'kubernetes' }),
      base,
      log,
    );
    log.info({ version: VERSION, manifest: path, server: http.server }, 'tigera-operator starting');
    let wake: (() => void) | undefined;
    const poke = () => wake?.();
    void watchLoop(http, '/apis/operator.tigera.io/v1/installations', poke, stop.signal);
    void watchLoop(http, '/apis/operator.tigera.io/v1/apiservers', poke, stop.signal);
    process.once('SIGTERM', () => stop.abort());
    process.once('SIGINT', () => stop.abort());
    stop.signal.addEventListener('abort', poke);
    while (!stop.signal.aborted) {
      try {
        await reconciler.tick();
      } catch (e) {
        log.error({ err: (e as Error).message }, 'reconcile failed; trying again');
      }
      await new Promise<void>((r) => {
        const t = setTimeout(r, period);
        wake = () => {
          clearTimeout(t);
          r();
        };
      });
      wake = undefined;
    }
    log.info({}, 'tigera-operator stopped');
    return 0;
  } catch (e) {
    const msg = isDatastoreError(e) ? e.message : (e as Error).message;
    log.error({ err: msg }, 'tigera-operator cannot run');
    return 1;
  } finally {
    stop.abort();
    http?.close();
    await kv?.close();
  }
}
