import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeHttp } from './kube-http.js';

/** A TCP server on a free loopback port that accepts connections and never says a word. */
async function silentServer(): Promise<{ server: Server; url: string; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { server, url: `https://127.0.0.1:${port}`, sockets };
}

describe('KubeHttp against an API server that accepts and never answers', () => {
  let silent: Awaited<ReturnType<typeof silentServer>> | undefined;
  afterEach(async () => {
    for (const s of silent?.sockets ?? []) s.destroy();
    await new Promise((r) => silent?.server.close(r));
  });

  it('a request fails as unavailable, naming the server, once the answer timeout passes', async () => {
    silent = await silentServer();
    const http = new KubeHttp({ server: silent.url, tls: {} }, { answerTimeoutMs: 300 });
    const t0 = Date.now();
    const err = await http.request('GET', '/api/v1/namespaces/default/pods/web').catch((e: unknown) => e);
    http.close();
    expect(err).toMatchObject({ code: 'unavailable' });
    expect(String((err as Error).message)).toContain('no answer in 300 ms');
    expect(String((err as Error).message)).toContain(silent.url);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('a watch fails as unavailable instead of waiting for ever', async () => {
    silent = await silentServer();
    const http = new KubeHttp({ server: silent.url, tls: {} }, { answerTimeoutMs: 300 });
    const events = http.watch('/api/v1/pods?watch=1');
    const err = await events.next().catch((e: unknown) => e);
    http.close();
    expect(err).toMatchObject({ code: 'unavailable' });
    expect(String((err as Error).message)).toContain('no answer in 300 ms');
  });
});
