/**
 * The Kubernetes REST calls the datastore makes: JSON requests and watch streams over node:https,
 * on one keep-alive agent. Bodies are decoded once from their bytes (wire-json.ts: managedFields
 * left out, 64-bit integers exact where the caller asks, for IPAM sequence numbers) and written
 * with `goJson`.
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
import { goJson } from '../go-json.js';
import type { KubeConnection } from './kube-connection.js';
import { decodeWireJson } from './wire-json.js';

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

const NEWLINE = 0x0a;

/** Only spaces, tabs and carriage returns (a watch stream's keep-alive, a CRLF's CR). */
function isBlank(line: Buffer): boolean {
  for (const c of line) if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  return true;
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

/** How one request's body is written and its answer read. */
export interface KubeRequestOptions {
  /** Default `application/json`. */
  readonly contentType?: string;
  /**
   * Integers beyond 2^53 in the answer as bigint (`parseJsonExact`), at the cost of a scan of
   * the whole text; else JSON.parse rounds them. Default true: what a caller writes back whole
   * must not lose digits. Read-only callers of objects without such numbers pass false.
   */
  readonly exact?: boolean;
}

export interface KubeHttpOptions {
  /** How long a request or watch may wait for its response to start. Default 30 s. */
  answerTimeoutMs?: number;
}

export class KubeHttp {
  readonly #conn: KubeConnection;
  readonly #agent: Agent;
  readonly #answerTimeoutMs: number;
  /** What every request's options share: the server's place, TLS and the agent. */
  readonly #base: RequestOptions;
  readonly #pathPrefix: string;

  constructor(conn: KubeConnection, options: KubeHttpOptions = {}) {
    this.#conn = conn;
    this.#answerTimeoutMs = options.answerTimeoutMs ?? TIMEOUT_MS;
    this.#agent = new Agent({ keepAlive: true, maxSockets: 16, ...conn.tls });
    const url = new URL(conn.server);
    this.#pathPrefix = url.pathname.replace(/\/+$/, '');
    this.#base = {
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port,
      agent: this.#agent,
      ...conn.tls,
    };
  }

  get server(): string {
    return this.#conn.server;
  }

  async #options(method: string, path: string, contentType?: string): Promise<RequestOptions> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (contentType) headers['Content-Type'] = contentType;
    const auth = await this.#conn.authorization?.();
    if (auth) headers.Authorization = auth;
    return { ...this.#base, method, path: this.#pathPrefix + path, headers };
  }

  /** One JSON request; resolves the decoded body, throws a classified `DatastoreError`. */
  async request<T = Record<string, unknown>>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    options: KubeRequestOptions = {},
  ): Promise<T> {
    const bytes = await this.requestBytes(method, path, body, options);
    try {
      return decodeWireJson(bytes, options.exact ?? true) as T;
    } catch (e) {
      throw new DatastoreError(
        'unavailable',
        `${method} ${path}: the answer is not JSON: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
  }

  /**
   * One JSON request; resolves the answer's bytes undecoded (for a caller that decodes them its
   * own way, or later), throws a classified `DatastoreError` as `request` does.
   */
  async requestBytes(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    options: Pick<KubeRequestOptions, 'contentType'> = {},
  ): Promise<Buffer> {
    const what = `${method} ${path}`;
    const opts = await this.#options(
      method,
      path,
      body === undefined ? undefined : (options.contentType ?? 'application/json'),
    );
    const payload = body === undefined ? undefined : Buffer.from(goJson(body), 'utf8');
    if (payload) (opts.headers as Record<string, string>)['Content-Length'] = String(payload.length);
    return new Promise<Buffer>((resolve, reject) => {
      const req = httpsRequest(opts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) =>
          reject(new DatastoreError('unavailable', `${what}: ${e.message}`, { cause: e })),
        );
        res.on('end', () => {
          const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            resolve(bytes);
            return;
          }
          let st: KubeStatus | undefined;
          try {
            st = decodeWireJson(bytes, false) as KubeStatus | undefined;
          } catch {
            st = undefined;
          }
          st ??= { message: bytes.toString('utf8', 0, 200) || `HTTP ${status}` };
          reject(classifyStatus(status, st, what));
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
  async *watch(
    path: string,
    signal?: AbortSignal,
    onOpen?: () => void,
    options: Pick<KubeRequestOptions, 'exact'> = {},
  ): AsyncGenerator<KubeWatchEvent> {
    const exact = options.exact ?? true;
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
      // One event a line; a line's bytes are decoded once (wire-json.ts), when it is whole.
      const decodeLine = (line: Buffer) => {
        if (isBlank(line)) return;
        try {
          push(decodeWireJson(line, exact) as KubeWatchEvent);
        } catch (e) {
          push({
            error: new DatastoreError('unavailable', `${what}: undecodable event: ${(e as Error).message}`),
          });
        }
      };
      // The start of a line that has not ended yet, as it arrived.
      const pending: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        let start = 0;
        for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
          const tail = chunk.subarray(start, nl);
          start = nl + 1;
          if (pending.length === 0) decodeLine(tail);
          else {
            pending.push(tail);
            decodeLine(Buffer.concat(pending));
            pending.length = 0;
          }
        }
        if (start < chunk.length) pending.push(chunk.subarray(start));
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
