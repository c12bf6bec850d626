/**
 * Felix's HTTP servers: health (`/liveness`, `/readiness`) and Prometheus metrics (`/metrics`).
 *
 *   HealthAggregator ──► health server on HealthHost:HealthPort (moved when the address changes)
 *   FelixMetrics ──────► metrics server on PrometheusMetricsHost:PrometheusMetricsPort
 *
 * Thread-safety: one event loop.
 */
import type { Server } from 'node:http';
import type { Logger } from '../logging.js';
import { boundPort, closeServer, type HealthAggregator, startHealthServer } from './health.js';
import { type FelixMetrics, startMetricsServer } from './metrics.js';

export class FelixServers {
  readonly #health: HealthAggregator;
  readonly #metrics: FelixMetrics;
  readonly #log: Logger;
  #healthServer: Server | undefined;
  /** `host:port` the health server listens on. */
  #healthAt: string | undefined;
  #metricsServer: Server | undefined;

  constructor(health: HealthAggregator, metrics: FelixMetrics, log: Logger) {
    this.#health = health;
    this.#metrics = metrics;
    this.#log = log;
  }

  healthPort(): number | undefined {
    return this.#healthServer ? boundPort(this.#healthServer) : undefined;
  }

  metricsPort(): number | undefined {
    return this.#metricsServer ? boundPort(this.#metricsServer) : undefined;
  }

  /** Serves health on `host:port`, moving the server there if it listens elsewhere. */
  async serveHealth(host: string, port: number): Promise<void> {
    const at = `${host}:${port}`;
    if (this.#healthServer && this.#healthAt === at) return;
    await closeServer(this.#healthServer);
    this.#healthServer = await startHealthServer(this.#health, host, port);
    this.#healthAt = at;
    this.#log.info({ host, port: boundPort(this.#healthServer) }, 'health server listening');
  }

  async stopHealth(): Promise<void> {
    if (!this.#healthServer) return;
    await closeServer(this.#healthServer);
    this.#healthServer = undefined;
    this.#healthAt = undefined;
  }

  async serveMetrics(host: string, port: number): Promise<void> {
    this.#metricsServer = await startMetricsServer(this.#metrics, host, port);
    this.#log.info({ port: boundPort(this.#metricsServer) }, 'metrics server listening');
  }

  async close(): Promise<void> {
    await closeServer(this.#healthServer);
    await closeServer(this.#metricsServer);
  }
}
