/**
 * goldmane: the program. Reads its configuration from the environment (`config.ts`), serves the
 * flows API on PORT with mTLS, `/liveness` and `/readiness` on localhost:HEALTH_PORT when
 * HEALTH_ENABLED, and `/metrics` on PROMETHEUS_PORT when set. Runs until SIGTERM or SIGINT; exit
 * status 1 with one line on stderr when it cannot start.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import pino from 'pino';
import { type GoldmaneConfig, goldmaneConfigFromEnv } from './config.js';
import { GoldmaneMetrics } from './metrics.js';
import { GoldmaneServer } from './server.js';

type Env = Readonly<Record<string, string | undefined>>;

function listen(http: Server, host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => resolve(http));
  });
}

/** `/liveness` and `/readiness`: both 200 while the gRPC server is up. */
function startHealthServer(port: number): Promise<Server> {
  const http = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    res.statusCode = path === '/liveness' || path === '/readiness' ? 200 : 404;
    res.end();
  });
  return listen(http, 'localhost', port);
}

async function readTls(cfg: GoldmaneConfig) {
  const read = async (name: string, path: string) => {
    try {
      return await readFile(path);
    } catch (e) {
      throw new Error(`${name}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
    }
  };
  return {
    cert: await read('SERVER_CERT_PATH', cfg.serverCertPath),
    key: await read('SERVER_KEY_PATH', cfg.serverKeyPath),
    ca: await read('CA_CERT_PATH', cfg.caCertPath),
  };
}

/** Runs goldmane until a signal; resolves with the exit status. */
export async function main(env: Env): Promise<number> {
  let cfg: GoldmaneConfig;
  try {
    cfg = goldmaneConfigFromEnv(env);
  } catch (e) {
    process.stderr.write(`goldmane: ${(e as Error).message}\n`);
    return 1;
  }
  const log = pino(
    {
      level: cfg.logLevel,
      base: { component: 'goldmane', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: 1, sync: true }),
  );
  let close: () => Promise<void>;
  try {
    const server = new GoldmaneServer({
      host: cfg.host,
      port: cfg.port,
      ...(cfg.plaintext ? { plaintext: true } : { tls: await readTls(cfg) }),
      store: {
        intervalSeconds: cfg.aggregationWindowSeconds,
        historyBuckets: cfg.retentionSeconds / cfg.aggregationWindowSeconds,
        maxFlows: cfg.maxFlows,
      },
      log,
    });
    await server.start();
    const health = cfg.healthEnabled ? await startHealthServer(cfg.healthPort) : undefined;
    const metricsHttp =
      cfg.prometheusPort !== 0
        ? await new GoldmaneMetrics(() => server.stats()).serve(
            cfg.prometheusHost === '' ? '0.0.0.0' : cfg.prometheusHost,
            cfg.prometheusPort,
          )
        : undefined;
    log.info(
      {
        port: server.port,
        tls: !cfg.plaintext,
        window: cfg.aggregationWindowSeconds,
        maxFlows: cfg.maxFlows,
      },
      'goldmane listening',
    );
    close = async () => {
      await server.stop();
      await new Promise((r) => (health ? health.close(r) : r(undefined)));
      await new Promise((r) => (metricsHttp ? metricsHttp.close(r) : r(undefined)));
    };
  } catch (e) {
    process.stderr.write(`goldmane: ${(e as Error).message}\n`);
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
