/**
 * calico-typha: the program. Reads `TYPHA_*` (and the usual datastore variables), opens the
 * datastore, serves the Typha protocol on TYPHA_SERVERPORT (default 5473) and, with
 * TYPHA_HEALTHENABLED, `/liveness` and `/readiness` (ready once in sync) on TYPHA_HEALTHPORT, and
 * with TYPHA_PROMETHEUSMETRICSENABLED, `/metrics` on TYPHA_PROMETHEUSMETRICSPORT (default 9093).
 * Runs until SIGTERM or SIGINT; exit status 1 with one line on stderr when it cannot start.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { configFromEnv, createKVStore, KVDatastore, mergeClientConfig } from '@calico-ts/datastore';
import pino from 'pino';
import { DEFAULT_TYPHA_PORT, type TyphaConfig, typhaConfigFromEnv } from './config.js';
import { TyphaMetrics } from './metrics.js';
import { TyphaServer } from './server.js';
import { typhaSources } from './syncer-sources.js';

type Env = Readonly<Record<string, string | undefined>>;

/** The HTTP health endpoints: live while running, ready while the server is in sync. */
export function startHealthServer(
  server: { readonly inSync: boolean },
  host: string,
  port: number,
): Promise<Server> {
  const http = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const ok = path === '/liveness' ? true : path === '/readiness' ? server.inSync : undefined;
    res.statusCode = ok === undefined ? 404 : ok ? 200 : 503;
    res.end();
  });
  return new Promise((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => resolve(http));
  });
}

/** Runs Typha until a signal; resolves with the exit status. */
export async function main(env: Env): Promise<number> {
  let cfg: TyphaConfig;
  try {
    cfg = typhaConfigFromEnv(env);
  } catch (e) {
    process.stderr.write(`calico-typha: ${(e as Error).message}\n`);
    return 1;
  }
  const log = pino(
    {
      level:
        cfg.logSeverityScreen === 'DEBUG'
          ? 'debug'
          : cfg.logSeverityScreen === 'WARNING'
            ? 'warn'
            : cfg.logSeverityScreen === 'ERROR'
              ? 'error'
              : 'info',
      base: { component: 'typha', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: 1, sync: true }),
  );
  let server: TyphaServer;
  let close: () => Promise<void>;
  try {
    const fromEnv = configFromEnv(env).config;
    const client = mergeClientConfig(undefined, {
      ...fromEnv,
      datastoreType: cfg.datastoreType,
      ...(cfg.etcdEndpoints.length > 0 ? { etcdEndpoints: [...cfg.etcdEndpoints] } : {}),
    });
    // Kubernetes datastore: a pod's endpoint is named after its host interface with Felix's prefix
    // (FELIX_INTERFACEPREFIX, which upstream's Typha reads too), so the Felixes behind this Typha
    // see the interfaces another CNI made (eni…, gke…, azv…) under their own names.
    const prefix = env.FELIX_INTERFACEPREFIX;
    const kv = await createKVStore(client.config, prefix ? { interfacePrefix: prefix } : {});
    const ds = new KVDatastore(kv, { backend: cfg.datastoreType });
    const tls =
      cfg.caFile === ''
        ? undefined
        : {
            ca: await readFile(cfg.caFile),
            cert: await readFile(cfg.serverCertFile),
            key: await readFile(cfg.serverKeyFile),
            clientCN: cfg.clientCN,
            clientURISAN: cfg.clientURISAN,
          };
    // The metrics read the server's stats at scrape time; the server tells them its timings.
    const metrics = cfg.prometheusMetricsEnabled ? new TyphaMetrics(() => server.stats()) : undefined;
    server = new TyphaServer({
      sources: typhaSources(ds, kv),
      backend: cfg.datastoreType,
      host: cfg.serverHost === '' ? '0.0.0.0' : cfg.serverHost,
      port: cfg.serverPort === 0 ? DEFAULT_TYPHA_PORT : cfg.serverPort,
      ...(tls ? { tls } : {}),
      pingIntervalMs: cfg.pingIntervalMs,
      pongTimeoutMs: cfg.pongTimeoutMs,
      maxConnections: cfg.maxConnections,
      serverName: env.HOSTNAME ?? 'typha',
      log,
      ...(metrics ? { observer: metrics.observer } : {}),
    });
    await server.start();
    const health = cfg.healthEnabled
      ? await startHealthServer(server, cfg.healthHost, cfg.healthPort)
      : undefined;
    // Upstream's empty host means every address.
    const metricsHttp = metrics
      ? await metrics.serve(
          cfg.prometheusMetricsHost === '' ? '0.0.0.0' : cfg.prometheusMetricsHost,
          cfg.prometheusMetricsPort,
        )
      : undefined;
    log.info({ port: server.port, tls: tls !== undefined }, 'Typha listening');
    close = async () => {
      await server.stop();
      await new Promise((r) => (health ? health.close(r) : r(undefined)));
      await new Promise((r) => (metricsHttp ? metricsHttp.close(r) : r(undefined)));
      await ds.close();
    };
  } catch (e) {
    process.stderr.write(`calico-typha: ${(e as Error).message}\n`);
    return 1;
  }
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log.info({ signal }, 'shutting down');
  await close();
  return 0;
}
