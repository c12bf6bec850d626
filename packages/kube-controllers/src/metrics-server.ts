/**
 * The HTTP side of the metrics: `GET /metrics` on the configured host and port (upstream:
 * `prometheusMetricsPort`, default 9094, 0 = off), plus the process metrics Prometheus clients
 * usually export (resident memory, CPU seconds, start time, heap), read at scrape time.
 *
 * API: `serveMetrics(registry, { port, host })` resolves once listening (to the bound port, so a
 * test can ask for port 0) and rejects with a `config` error when the address cannot be bound.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeControllersError } from './errors.js';
import type { MetricsRegistry } from './metrics.js';

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/** `process_*` and `nodejs_heap_*` gauges, refreshed at every scrape. */
export function registerProcessMetrics(reg: MetricsRegistry): void {
  const rss = reg.gauge('process_resident_memory_bytes', 'Resident memory size in bytes.');
  const cpu = reg.counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.');
  const start = reg.gauge(
    'process_start_time_seconds',
    'Start time of the process since unix epoch in seconds.',
  );
  const heap = reg.gauge('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.');
  start.set({}, Math.round(Date.now() / 1000 - process.uptime()));
  let lastCpu = 0;
  reg.onCollect(() => {
    const mem = process.memoryUsage();
    rss.set({}, mem.rss);
    heap.set({}, mem.heapUsed);
    const u = process.cpuUsage();
    const total = (u.user + u.system) / 1e6;
    if (total > lastCpu) cpu.inc({}, total - lastCpu);
    lastCpu = total;
  });
}

export async function serveMetrics(
  reg: MetricsRegistry,
  opts: { readonly port: number; readonly host?: string },
): Promise<MetricsServer> {
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) {
    throw new KubeControllersError('config', `prometheusMetricsPort must be 0-65535, got ${opts.port}`);
  }
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found; metrics are at /metrics\n');
      return;
    }
    let body: string;
    try {
      body = reg.render();
    } catch (e) {
      res
        .writeHead(500, { 'content-type': 'text/plain' })
        .end(`cannot render metrics: ${(e as Error).message}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new KubeControllersError(
          'config',
          `cannot serve metrics on ${opts.host ?? '*'}:${opts.port}: ${e.code ?? e.message}`,
          { cause: e },
        ),
      ),
    );
    if (opts.host) server.listen(opts.port, opts.host, resolve);
    else server.listen(opts.port, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
