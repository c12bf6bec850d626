/**
 * TyphaClient against a raw server on loopback: a Typha that stops reading while it keeps pinging
 * makes the client's pongs pile up; past the write timeout the client gives up on that connection
 * and connects again, as Felix's TyphaWriteTimeout says.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TyphaClient } from './client.js';
import { encodeMessage } from './protocol.js';
import { until } from './testing-internal/consumer.js';

describe('TyphaClient', () => {
  let server: Server | undefined;
  let client: TyphaClient | undefined;
  const sockets: Socket[] = [];

  afterEach(async () => {
    await client?.stop();
    for (const s of sockets.splice(0)) s.destroy();
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
  });

  it('reconnects when its writes stay queued past the write timeout', async () => {
    let connections = 0;
    server = createServer((s) => {
      sockets.push(s);
      s.on('error', () => {});
      connections++;
      s.once('data', () => {
        // The hello: answer, then stop reading and ping until the client's pongs fill every buffer.
        s.pause();
        s.write(
          encodeMessage({ t: 'hello-ok', server: 'raw' }) +
            encodeMessage({ t: 'snapshot-end' }) +
            encodeMessage({ t: 'in-sync' }),
        );
        if (connections > 1) return;
        const ping = encodeMessage({ t: 'ping', ts: Date.now() });
        const flood = () => {
          for (let i = 0; i < 2000 && !s.destroyed; i++) s.write(ping);
          if (!s.destroyed) setImmediate(flood);
        };
        flood();
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const downs: string[] = [];
    let inSync = 0;
    client = new TyphaClient({
      addresses: () => [`127.0.0.1:${port}`],
      node: 'n1',
      client: 'test',
      syncerType: 'felix',
      writeTimeoutMs: 300,
      retryMs: 50,
      onUpdate: () => {},
      onInSync: () => {
        inSync++;
      },
      onConnection: (_source, connected, why) => {
        if (!connected && why) downs.push(why);
      },
    });
    client.start();
    await until('a second connection', () => connections >= 2, 30_000);
    expect(downs.some((w) => /a write to Typha did not complete in 0.3 s/.test(w))).toBe(true);
    expect(inSync).toBe(1);
  }, 40_000);
});
