import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeKubeCertificates } from '../testing/kube-apiserver.js';
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

describe('KubeHttp reading what an API server sends', () => {
  let dir: string | undefined;
  let server: HttpsServer | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    server = undefined;
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  /** An HTTPS server on a free loopback port, with a CA of its own; `handle` answers. */
  async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<KubeHttp> {
    dir = await mkdtemp(join(tmpdir(), 'kube-http-'));
    const certs = await makeKubeCertificates(dir);
    const [cert, key] = await Promise.all([
      readFile(join(dir, 'server.pem'), 'utf8'),
      readFile(join(dir, 'server-key.pem'), 'utf8'),
    ]);
    const s = createHttpsServer({ cert, key }, handle);
    server = s;
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const { port } = s.address() as { port: number };
    return new KubeHttp({ server: `https://127.0.0.1:${port}`, tls: { ca: certs.caPem } });
  }

  const managed = [{ manager: 'kubelet', fieldsV1: { 'f:metadata': { 'f:labels': {} } } }];

  it('a body comes back without managedFields, its big integers exact unless the caller says not', async () => {
    const body =
      '{"metadata":{"managedFields":' +
      JSON.stringify(managed) +
      ',"name":"b","resourceVersion":"9"},"spec":{"sequenceNumber":1757000000123456789}}';
    const http = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // In two pieces, as a large body arrives.
      res.write(body.slice(0, 40));
      res.end(body.slice(40));
    });
    try {
      expect(await http.request('GET', '/apis/x/v1/things/b')).toEqual({
        metadata: { name: 'b', resourceVersion: '9' },
        spec: { sequenceNumber: 1757000000123456789n },
      });
      const rounded = await http.request<{ spec: { sequenceNumber: unknown } }>(
        'GET',
        '/apis/x/v1/things/b',
        undefined,
        { exact: false },
      );
      expect(typeof rounded.spec.sequenceNumber).toBe('number');
    } finally {
      http.close();
    }
  });

  it('a watch yields each event once whole, however the stream is cut into chunks', async () => {
    const events = [1, 2, 3, 4, 5].map((i) => ({
      type: 'MODIFIED',
      object: { metadata: { managedFields: managed, name: `o${i}`, resourceVersion: String(10 + i) } },
    }));
    const lines = events.map((e) => JSON.stringify(e));
    // Two events in one chunk, one split in three, a keep-alive blank line, a CRLF ending.
    const stream = `${lines[0]}\n${lines[1]}\n${lines[2]}\n\n${lines[3]}\r\n${lines[4]}\n`;
    const cuts = [
      lines[0]!.length + lines[1]!.length + 2,
      stream.length - lines[4]!.length - 30,
      stream.length - 3,
    ];
    const http = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      let from = 0;
      const next = (k: number) => {
        const to = k < cuts.length ? cuts[k]! : stream.length;
        res.write(stream.slice(from, to));
        from = to;
        if (k < cuts.length) setTimeout(() => next(k + 1), 20);
        else res.end();
      };
      next(0);
    });
    try {
      const got: unknown[] = [];
      for await (const ev of http.watch('/apis/x/v1/things?watch=1')) got.push(ev);
      expect(got).toEqual(
        events.map((e) => ({
          type: e.type,
          object: {
            metadata: { name: e.object.metadata.name, resourceVersion: e.object.metadata.resourceVersion },
          },
        })),
      );
    } finally {
      http.close();
    }
  });
});
