/**
 * calico-kube-controllers: reads its configuration from the environment as upstream's does
 * (`ENABLED_CONTROLLERS`, `DATASTORE_TYPE` (default etcdv3), `ETCD_*`, `KUBECONFIG`, `LOG_LEVEL`,
 * `HEALTH_ENABLED`, `RECONCILER_PERIOD`, `SYNC_NODE_LABELS`, `AUTO_HOST_ENDPOINTS`; `METRICS_HOST` is ours: the address the metrics listen on,
 * default all), serves Prometheus metrics on the configuration's `prometheusMetricsPort` (9094; 0 = off), opens the Kubernetes API (KUBECONFIG or in-cluster) and
 * the Calico datastore, runs the controllers, and keeps the status file its probes read.
 *
 *   calico-kube-controllers            run
 *   calico-kube-controllers -r | -l    readiness / liveness probe from the status file (exit 0/1)
 */

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type Logger, loggerOf } from '@calico-ts/api/log';
import type { Datastore, KVStore } from '@calico-ts/datastore';
import {
  configFromEnv,
  createKVStore,
  isDatastoreError,
  KVDatastore,
  mergeClientConfig,
} from '@calico-ts/datastore';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import {
  type ControllerName,
  defaultControllers,
  IMPLEMENTED,
  KubeControllers,
  KubeControllersError,
  type MetricsServer,
  parseEnabledControllers,
  registerProcessMetrics,
  serveMetrics,
} from '@calico-ts/kube-controllers';
import { checkStatus, DEFAULT_STATUS_FILE, renderStatus } from './status.js';

type Env = Readonly<Record<string, string | undefined>>;

const LEVELS = ['debug', 'info', 'warning', 'warn', 'error', 'fatal', 'panic'];

/** JSON lines on stdout at or above `level` (`warning` is `warn`; an unknown level is `info`). */
function logger(level: string): Logger {
  const rank = (l: string) => LEVELS.indexOf(l === 'warning' ? 'warn' : l);
  const min = rank(level.toLowerCase()) < 0 ? rank('info') : rank(level.toLowerCase());
  return loggerOf((l, msg, fields) => {
    if (rank(l) < min) return;
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: l, msg, ...fields })}\n`);
  });
}

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Go duration text as a KubeControllersConfiguration or env variable holds it (`5m`, `30s`,
 * `1m30s`, `1.5h`, `0s`, `0`) in ms; undefined when unset or not a duration.
 */
export function durationMs(text: string | undefined): number | undefined {
  const t = text?.trim() ?? '';
  if (t === '0') return 0;
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return Math.round(ms);
}

async function writeAtomically(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}

/**
 * KubeControllersConfiguration `default`'s `spec.controllers.node.leakGracePeriod` in ms, as
 * upstream reads it: unset = 15m, `0s` turns collection on live nodes off.
 */
async function leakGracePeriodMs(calico: Datastore): Promise<number | undefined> {
  try {
    const kcc = await calico.get('KubeControllersConfiguration', 'default');
    const node = (kcc.spec as { controllers?: { node?: { leakGracePeriod?: string } } }).controllers?.node;
    return durationMs(node?.leakGracePeriod);
  } catch (e) {
    if (isDatastoreError(e, 'not-found')) return undefined;
    throw e;
  }
}

/**
 * The node controller's switches: env `SYNC_NODE_LABELS` (true/false) and `AUTO_HOST_ENDPOINTS`
 * (enabled/disabled) over KubeControllersConfiguration `controllers.node.syncLabels` and
 * `hostEndpoint.autoCreate` (Enabled/Disabled). Labels default on, host endpoints off.
 */
async function nodeSwitches(
  env: Env,
  calico: Datastore,
): Promise<{ syncNodeLabels: boolean; autoHostEndpoints: boolean }> {
  let node: { syncLabels?: string; hostEndpoint?: { autoCreate?: string } } | undefined;
  try {
    const kcc = await calico.get('KubeControllersConfiguration', 'default');
    node = (kcc.spec as { controllers?: { node?: typeof node } }).controllers?.node;
  } catch (e) {
    if (!isDatastoreError(e, 'not-found')) throw e;
  }
  const flag = (name: string, on: string, off: string, crText: string | undefined, dflt: boolean) => {
    const envText = env[name]?.trim();
    if (envText !== undefined && envText !== '') {
      if (envText.toLowerCase() === on) return true;
      if (envText.toLowerCase() === off) return false;
      throw new KubeControllersError(
        'config',
        `${name}: expected ${on} or ${off}, got ${JSON.stringify(envText)}`,
      );
    }
    return crText === undefined ? dflt : crText === 'Enabled';
  };
  return {
    syncNodeLabels: flag('SYNC_NODE_LABELS', 'true', 'false', node?.syncLabels, true),
    autoHostEndpoints: flag(
      'AUTO_HOST_ENDPOINTS',
      'enabled',
      'disabled',
      node?.hostEndpoint?.autoCreate,
      false,
    ),
  };
}

/** KubeControllersConfiguration `default`'s prometheusMetricsPort: 9094 when unset, 0 = off. */
async function metricsPort(calico: Datastore): Promise<number> {
  try {
    const kcc = await calico.get('KubeControllersConfiguration', 'default');
    const port = (kcc.spec as { prometheusMetricsPort?: number }).prometheusMetricsPort;
    return port ?? 9094;
  } catch (e) {
    if (isDatastoreError(e, 'not-found')) return 9094;
    throw e;
  }
}

/** The controllers to run: ENABLED_CONTROLLERS, else KubeControllersConfiguration, else defaults. */
async function chooseControllers(
  env: Env,
  datastoreType: 'etcdv3' | 'kubernetes',
  calico: Datastore,
): Promise<ControllerName[]> {
  if (env.ENABLED_CONTROLLERS !== undefined && env.ENABLED_CONTROLLERS.trim() !== '') {
    return parseEnabledControllers(env.ENABLED_CONTROLLERS, datastoreType);
  }
  try {
    const kcc = await calico.get('KubeControllersConfiguration', 'default');
    const configured = Object.keys(
      (kcc.spec as { controllers?: Record<string, unknown> }).controllers ?? {},
    ).filter((k) => (kcc.spec as { controllers: Record<string, unknown> }).controllers[k] != null);
    if (configured.length > 0) return parseEnabledControllers(configured.join(','), datastoreType);
  } catch (e) {
    if (!isDatastoreError(e, 'not-found')) throw e;
  }
  return defaultControllers(datastoreType);
}

export async function main(argv: readonly string[], env: Env): Promise<number> {
  const statusFile = env.STATUS_FILE || DEFAULT_STATUS_FILE;
  if (argv[0] === '-r' || argv[0] === '-l') {
    const text = await readFile(statusFile, 'utf8').catch(() => undefined);
    const r = checkStatus(argv[0], text);
    (r.code === 0 ? process.stdout : process.stderr).write(`${r.message}\n`);
    return r.code;
  }
  if (argv.length > 0) {
    process.stderr.write(
      `calico-kube-controllers: unknown arguments ${argv.join(' ')}; use -r or -l for the probes\n`,
    );
    return 2;
  }
  const log = logger(env.LOG_LEVEL ?? 'info');
  const health = env.HEALTH_ENABLED !== 'false';
  // Not ready until this process has reconciled: a status file left by a killed predecessor must
  // not pass the readiness probe while this one is still starting.
  if (health)
    await writeAtomically(statusFile, JSON.stringify(renderStatus([], []))).catch((e: unknown) =>
      log.warn({ file: statusFile, err: (e as Error).message }, 'cannot write the status file'),
    );
  const datastoreType =
    (env.DATASTORE_TYPE ?? env.CALICO_DATASTORE_TYPE ?? 'etcdv3') === 'kubernetes' ? 'kubernetes' : 'etcdv3';
  let kubeKv: KVStore | undefined;
  let calicoKv: KVStore | undefined;
  let metrics: MetricsServer | undefined;
  try {
    // On etcd, Calico's data is there: the Kubernetes view is Kubernetes' own objects only, and a
    // cluster installed from calico-etcd.yaml has no Calico CRDs to read.
    kubeKv = await createKVStore(
      {
        datastoreType: 'kubernetes',
        etcdEndpoints: [],
        ...(env.KUBECONFIG ? { kubeconfig: env.KUBECONFIG } : {}),
      },
      datastoreType === 'etcdv3' ? { kubernetesOnly: true } : {},
    );
    const kube = new KVDatastore(kubeKv, { backend: 'kubernetes' });
    let calico: Datastore = kube;
    let calicoStore: KVStore = kubeKv;
    if (datastoreType === 'etcdv3') {
      const client = mergeClientConfig(undefined, { ...configFromEnv(env).config, datastoreType: 'etcdv3' });
      for (const w of client.warnings) log.warn({}, w);
      calicoKv = await createKVStore(client.config);
      calico = new KVDatastore(calicoKv, { backend: 'etcdv3' });
      calicoStore = calicoKv;
    }
    const grace = await leakGracePeriodMs(calico);
    const chosen = await chooseControllers(env, datastoreType, calico);
    const unavailable = chosen.filter((n) => !IMPLEMENTED.has(n));
    const enabled = chosen.filter((n) => IMPLEMENTED.has(n));
    for (const n of unavailable) {
      log.warn({ controller: n }, `controller ${n} is not available in this version; it does not run`);
    }
    const switches = await nodeSwitches(env, calico);
    const controllers = new KubeControllers({
      enabled,
      ...switches,
      kubernetes: { datastore: kube, kv: kubeKv },
      calico,
      ipam: new IpamClient(calico, new IpamStore(calicoStore)),
      ipamBlocks: async () => (await new IpamStore(calicoStore).listBlocks()).items.map((b) => b.value),
      ...(grace !== undefined ? { leakGracePeriodMs: grace } : {}),
      log,
      ...(durationMs(env.RECONCILER_PERIOD) !== undefined
        ? { reconcilePeriodMs: durationMs(env.RECONCILER_PERIOD)! }
        : {}),
    });
    const writeStatus = () =>
      health
        ? writeAtomically(statusFile, JSON.stringify(renderStatus(controllers.status(), unavailable))).catch(
            (e: unknown) =>
              log.warn({ file: statusFile, err: (e as Error).message }, 'cannot write the status file'),
          )
        : Promise.resolve();
    await writeStatus();
    const port = await metricsPort(calico);
    if (port !== 0) {
      registerProcessMetrics(controllers.metrics);
      metrics = await serveMetrics(controllers.metrics, {
        port,
        ...(env.METRICS_HOST ? { host: env.METRICS_HOST } : {}),
      });
      log.info(
        { port: metrics.port, host: env.METRICS_HOST || '*' },
        'serving Prometheus metrics at /metrics',
      );
    }
    log.info({ datastoreType, controllers: enabled }, 'calico-kube-controllers starting');
    await controllers.start();
    await writeStatus();
    const timer = setInterval(() => void writeStatus(), 10_000);
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    clearInterval(timer);
    await controllers.stop();
    log.info({}, 'calico-kube-controllers stopped');
    return 0;
  } catch (e) {
    const msg = e instanceof KubeControllersError || isDatastoreError(e) ? (e as Error).message : String(e);
    log.error({ err: msg }, 'calico-kube-controllers cannot run');
    return 1;
  } finally {
    await metrics?.close();
    await kubeKv?.close();
    await calicoKv?.close();
  }
}
