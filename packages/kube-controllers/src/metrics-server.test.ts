import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MetricsRegistry } from './metrics.js';
import { type MetricsServer, registerProcessMetrics, serveMetrics } from './metrics-server.js';

describe('serveMetrics', () => {
  let server: MetricsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('serves the registry and process metrics at /metrics on the given address only', async () => {
    const reg = new MetricsRegistry();
    registerProcessMetrics(reg);
    reg.counter('kube_controllers_reconciles_total', 'Passes.', ['controller']).inc({ controller: 'node' });
    server = await serveMetrics(reg, { port: 0, host: '127.0.0.1' });
    const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('kube_controllers_reconciles_total{controller="node"} 1\n');
    const rss = /^process_resident_memory_bytes (\d+)$/m.exec(text);
    expect(Number(rss?.[1])).toBeGreaterThan(1_000_000);
    expect(text).toMatch(/^# TYPE process_cpu_seconds_total counter$/m);
    expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('fails with a config error naming the address when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      await expect(serveMetrics(new MetricsRegistry(), { port, host: '127.0.0.1' })).rejects.toMatchObject({
        code: 'config',
        message: expect.stringContaining(`127.0.0.1:${port}: EADDRINUSE`),
      });
    } finally {
      await new Promise((r) => blocker.close(r));
    }
    await expect(serveMetrics(new MetricsRegistry(), { port: 70000 })).rejects.toMatchObject({
      code: 'config',
    });
  });
});
