/**
 * The Kubernetes REST calls the datastore makes: JSON requests and watch streams over node:https,
 * on one keep-alive agent. Bodies are read with `parseJsonExact` and written with `goJson`, so
 * 64-bit integers (IPAM sequence numbers) survive the round trip.
 *
 * Errors are classified here, once: 404 → not-found, 409 AlreadyExists → already-exists, other
 * 409 → conflict, 410 → compacted, 401/403 → unauthorized, 400/422 → invalid, anything else and
 * connection failures → unavailable. The message carries the API server's own.
 *
 * API: `request(method, path, body?)` resolves the decoded body; `watch(path, signal)` yields the
 * watch events (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`) until the server or the
 * signal ends it. Thread-safety: any number of concurrent calls.
 */
import type { ClientRequest } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { DatastoreError, type DatastoreErrorCode } from '../errors.js';
import { goJson, parseJsonExact } from '../go-json.js';
import type { KubeConnection } from './kube-connection.js';

export interface KubeStatus {
  readonly kind?: 'Status';
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
}

export interface KubeWatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: Record<string, unknown>;
}

const TIMEOUT_MS = 30_000;

/**
 * Destroys `req` with an error unless its response starts within `ms`. The socket's idle timeout
 * (`setTimeout`) alone does not bound the connect and TLS handshake under every runtime (the
 * plugin's native executable runs on Bun, where it does not fire before the connection is up): a
 * server that accepts and never answers would hold the caller forever, and the CNI plugin holds
 * the host's IPAM lock while it waits.
 */
function answerDeadline(req: ClientRequest, ms: number): void {
  const timer = setTimeout(() => req.destroy(new Error(`no answer in ${ms} ms`)), ms);
  req.once('response', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
}

export function classifyStatus(status: number, body: KubeStatus | undefined, what: string): DatastoreError {
  const message = body?.message ?? `HTTP ${status}`;
  let code: DatastoreErrorCode;
  if (status === 404) code = 'not-found';
  else if (status === 409) code = body?.reason === 'AlreadyExists' ? 'already-exists' : 'conflict';
  else if (status === 410) code = 'compacted';
  else if (status === 401 || status === 403) code = 'unauthorized';
  else if (status === 400 || status === 422) code = 'invalid';
  else code = 'unavailable';
  return new DatastoreError(code, `${what}: ${message}`);
}

export interface KubeHttpOptions {
  /** How long a request or watch may wait for its response to start. Default 30 s. */
  answerTimeoutMs?: number;
}

export class KubeHttp {
  readonly #conn: KubeConnection;
  readonly #agent: Agent;
  readonly #answerTimeoutMs: number;

  constructor(conn: KubeConnection, options: KubeHttpOptions = {}) {
    this.#conn = conn;
    this.#answerTimeoutMs = options.answerTimeoutMs ?? TIMEOUT_MS;
    this.#agent = new Agent({ keepAlive: true, maxSockets: 16, ...conn.tls });
  }

  get server(): string {
    return this.#conn.server;
  }

  async #options(method: string, path: string, contentType?: string): Promise<RequestOptions> {
    const url = new URL(this.#conn.server + path);
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (contentType) headers['Content-Type'] = contentType;
    const auth = await this.#conn.authorization?.();
    if (auth) headers.Authorization = auth;
    return {
      method,
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port,
      path: url.pathname + url.search,
      headers,
      agent: this.#agent,
      ...this.#conn.tls,
    };
  }

  /** One JSON request; resolves the decoded body, throws a classified `DatastoreError`. */
  async request<T = Record<string, unknown>>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<T> {
    const what = `${method} ${path}`;
    const opts = await this.#options(method, path, body === undefined ? undefined : contentType);
    const payload = body === undefined ? undefined : Buffer.from(goJson(body), 'utf8');
    if (payload) (opts.headers as Record<string, string>)['Content-Length'] = String(payload.length);
    return new Promise<T>((resolve, reject) => {
      const req = httpsRequest(opts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) =>
          reject(new DatastoreError('unavailable', `${what}: ${e.message}`, { cause: e })),
        );
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let decoded: unknown;
          try {
            decoded = text === '' ? undefined : parseJsonExact(text);
          } catch {
            decoded = undefined;
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(decoded as T);
          else {
            const st = (decoded as KubeStatus | undefined) ?? {
              message: text.slice(0, 200) || `HTTP ${status}`,
            };
            reject(classifyStatus(status, st, what));
          }
        });
      });
      answerDeadline(req, this.#answerTimeoutMs);
      req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)));
      req.on('error', (e) =>
        reject(
          new DatastoreError('unavailable', `${what}: ${e.message} (server ${this.#conn.server})`, {
            cause: e,
          }),
        ),
      );
      if (payload !== undefined) req.end(payload);
      else req.end();
    });
  }

  /**
   * A watch stream (`path` already carries `watch=1` and its query). Ends when the server closes
   * it; throws a classified error for a refused watch (410 for a compacted resourceVersion) and
   * `unavailable` for a broken connection.
   */
  async *watch(path: string, signal?: AbortSignal, onOpen?: () => void): AsyncGenerator<KubeWatchEvent> {
    const what = `WATCH ${path}`;
    const opts = await this.#options('GET', path);
    const queue: (KubeWatchEvent | { end: true } | { error: Error })[] = [];
    let wake: (() => void) | undefined;
    const push = (x: KubeWatchEvent | { end: true } | { error: Error }) => {
      queue.push(x);
      wake?.();
    };
    const req = httpsRequest({ ...opts, agent: false, signal }, (res) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let body: KubeStatus | undefined;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as KubeStatus;
          } catch {
            body = undefined;
          }
          push({ error: classifyStatus(status, body, what) });
        });
        return;
      }
      onOpen?.();
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line === '') continue;
          try {
            push(parseJsonExact(line) as KubeWatchEvent);
          } catch (e) {
            push({
              error: new DatastoreError('unavailable', `${what}: undecodable event: ${(e as Error).message}`),
            });
          }
        }
      });
      res.on('end', () => push({ end: true }));
      res.on('error', (e) =>
        push({ error: new DatastoreError('unavailable', `${what}: ${e.message}`, { cause: e }) }),
      );
    });
    answerDeadline(req, this.#answerTimeoutMs);
    req.on('error', (e) => {
      if (signal?.aborted) push({ end: true });
      else push({ error: new DatastoreError('unavailable', `${what}: ${e.message}`, { cause: e }) });
    });
    req.end();
    try {
      for (;;) {
        while (queue.length === 0) await new Promise<void>((r) => (wake = r));
        wake = undefined;
        const next = queue.shift()!;
        if ('end' in next) return;
        if ('error' in next) throw next.error;
        yield next;
      }
    } finally {
      req.destroy();
    }
  }

  close(): void {
    this.#agent.destroy();
  }
}
