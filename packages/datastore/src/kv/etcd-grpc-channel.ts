import type {
  ClientHttp2Session,
  ClientHttp2Stream,
  IncomingHttpHeaders,
  SecureClientSessionOptions,
} from 'node:http2';
import { EtcdStatusError } from './etcd-http2-errors.js';

/**
 * gRPC's wire protocol over Node's built-in HTTP/2 client, just enough for etcd: unary calls and
 * one kind of bidirectional stream (watch), uncompressed, with deadlines and endpoint failover.
 * Messages are opaque buffers here; the codec in `etcd-proto/` encodes and decodes them.
 *
 * Design:
 * - One HTTP/2 session per endpoint, opened on first use and dropped when it fails or closes; every
 *   call and stream multiplexes on it.
 * - A unary call fails with `EtcdStatusError` when etcd answers with a gRPC status, or with a
 *   transport error (Node's `code`) when it could not be had. `call()` moves on to the next endpoint
 *   after a transport failure: always for an idempotent call, and for a write only when it surely
 *   was not sent (no connection, or the server refused the stream before reading it).
 * - Deadlines: `dialTimeoutMs` to connect (TCP and TLS), then `requestTimeoutMs` for the reply,
 *   also sent to etcd as `grpc-timeout`.
 *
 * Thread-safety: any number of concurrent calls and streams from one event loop.
 */
export interface GrpcChannelOptions {
  /** `http(s)://host:port`, all of one scheme. */
  hosts: string[];
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
  dialTimeoutMs: number;
  requestTimeoutMs: number;
}

export interface CallKind {
  /** Safe to send again after any transport failure (a read). */
  idempotent: boolean;
}

/** One open bidirectional stream: write request messages, receive replies until it ends. */
export interface GrpcStream {
  write(message: Buffer): void;
  /** Cancel the stream (RST_STREAM CANCEL); no more callbacks after this. */
  cancel(): void;
}

export interface GrpcStreamHandlers {
  /** One message, as the chunks it arrived in (`ProtoMessage`). */
  message(m: readonly Buffer[]): void;
  /** The stream ended: `error` is an EtcdStatusError, a transport error, or undefined for a clean end. */
  end(error: Error | undefined): void;
}

/** Per-stream and connection flow-control window we grant etcd. */
const WINDOW_BYTES = 16 << 20;
const NGHTTP2_REFUSED_STREAM = 7;
const NGHTTP2_CANCEL = 8;

export class GrpcChannel {
  private readonly sessions: (Promise<ClientHttp2Session> | undefined)[];
  /** The sessions above once connected, to notice one that died quietly. */
  private readonly connected: (ClientHttp2Session | undefined)[];
  /** The endpoint that answered last; calls start there. */
  private current = 0;
  private http2: Promise<typeof import('node:http2')> | undefined;
  private closed = false;

  constructor(private readonly options: GrpcChannelOptions) {
    this.sessions = options.hosts.map(() => undefined);
    this.connected = options.hosts.map(() => undefined);
  }

  /**
   * A unary call with failover: `method` is the gRPC path (`etcdserverpb.KV/Range`), `metadata`
   * extra headers (the auth token). Resolves with the reply message, as the chunks it arrived in.
   */
  async call(
    method: string,
    message: Buffer,
    metadata: Record<string, string>,
    kind: CallKind,
  ): Promise<readonly Buffer[]> {
    const attempts = Math.max(2, this.options.hosts.length);
    let lastError: unknown;
    for (let attempt = 0; attempt < attempts && !this.closed; attempt++) {
      const index = this.current;
      try {
        const reply = await this.unary(index, method, message, metadata);
        this.current = index;
        return reply;
      } catch (e) {
        lastError = e;
        if (e instanceof EtcdStatusError) {
          // "unavailable" from etcd (no leader, shutting down) means it did nothing: a read may ask again.
          if (e.grpcCode !== 14 || !kind.idempotent) throw e;
        } else if (!(kind.idempotent || notSent(e))) {
          throw e;
        }
        this.moveOn(index);
      }
    }
    throw lastError ?? closedError();
  }

  /** Open a bidirectional stream on the current endpoint; failures reach `handlers.end`. */
  async openStream(
    method: string,
    metadata: Record<string, string>,
    handlers: GrpcStreamHandlers,
  ): Promise<GrpcStream> {
    const index = this.current;
    let session: ClientHttp2Session;
    try {
      session = await this.session(index);
    } catch (e) {
      this.moveOn(index);
      throw e;
    }
    let req: ClientHttp2Stream;
    try {
      req = session.request(requestHeaders(method, metadata, undefined));
    } catch (e) {
      this.moveOn(index);
      throw explain(session, e);
    }
    let ended = false;
    const end = (error: Error | undefined) => {
      if (ended) return;
      ended = true;
      if (error && !(error instanceof EtcdStatusError)) this.moveOn(index);
      handlers.end(error && explain(session, error));
    };
    readReplies(req, {
      message: (m) => {
        if (!ended) handlers.message(m);
      },
      end,
    });
    return {
      write: (m) => {
        if (!ended && !req.destroyed) req.write(frame(m));
      },
      cancel: () => {
        ended = true;
        if (!req.destroyed) req.close(NGHTTP2_CANCEL);
      },
    };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.sessions) {
      s?.then(
        (session) => session.destroy(),
        () => undefined,
      );
    }
    this.sessions.fill(undefined);
    this.connected.fill(undefined);
  }

  private moveOn(from: number): void {
    if (this.current === from) this.current = (from + 1) % this.options.hosts.length;
  }

  private async unary(
    index: number,
    method: string,
    message: Buffer,
    metadata: Record<string, string>,
  ): Promise<readonly Buffer[]> {
    const session = await this.session(index);
    const budget = this.options.requestTimeoutMs;
    return new Promise<readonly Buffer[]>((resolve, reject) => {
      let reply: readonly Buffer[] | undefined;
      let req: ClientHttp2Stream;
      try {
        req = session.request(requestHeaders(method, metadata, budget), { endStream: false });
      } catch (e) {
        reject(explain(session, e));
        return;
      }
      const timer = setTimeout(() => {
        req.close(NGHTTP2_CANCEL);
        reject(Object.assign(new Error(`no reply within ${budget} ms`), { code: 'ETIMEDOUT' }));
      }, budget);
      readReplies(req, {
        message: (m) => {
          reply ??= m;
        },
        end: (error) => {
          clearTimeout(timer);
          if (error) reject(explain(session, error));
          else if (reply === undefined) reject(new Error(`${method}: etcd sent no reply message`));
          else resolve(reply);
        },
      });
      req.end(frame(message));
    });
  }

  /** The HTTP/2 session to endpoint `index`, connected (or failed) within the dial timeout. */
  private session(index: number): Promise<ClientHttp2Session> {
    if (this.closed) return Promise.reject(closedError());
    const existing = this.sessions[index];
    // A session can die without an event of its own (a TLS alert after the handshake reaches only
    // its streams): a destroyed one is replaced.
    const known = this.connected[index];
    if (existing && !(known && (known.destroyed || known.closed))) return existing;
    this.connected[index] = undefined;
    const s: Promise<ClientHttp2Session> = this.connect(index, () => {
      if (this.sessions[index] === s) this.sessions[index] = undefined;
    });
    s.then(
      (session) => {
        if (this.sessions[index] === s) this.connected[index] = session;
      },
      () => undefined,
    );
    this.sessions[index] = s;
    return s;
  }

  /** Connect to endpoint `index`; `forget` runs when the session fails, is closed or told to go away. */
  private async connect(index: number, forget: () => void): Promise<ClientHttp2Session> {
    this.http2 ??= import('node:http2');
    const http2 = await this.http2;
    const host = this.options.hosts[index]!;
    const tls = this.options.tls;
    // Large flow-control windows: a big range reply (thousands of resources) then streams in
    // without waiting for a window update every 64 KiB.
    const opts: SecureClientSessionOptions = { settings: { initialWindowSize: WINDOW_BYTES } };
    if (host.startsWith('https://')) {
      if (tls?.ca) opts.ca = tls.ca;
      if (tls?.cert) {
        opts.cert = tls.cert;
        opts.key = tls.key;
      }
    }
    const ms = this.options.dialTimeoutMs;
    return new Promise<ClientHttp2Session>((resolve, reject) => {
      const session = http2.connect(host, opts);
      let connected = false;
      const timer = setTimeout(() => {
        session.destroy(
          Object.assign(new Error(`could not connect within ${ms} ms`), { code: 'ECONNECT_TIMEOUT' }),
        );
      }, ms);
      session.once('connect', () => {
        connected = true;
        clearTimeout(timer);
        try {
          session.setLocalWindowSize(WINDOW_BYTES);
        } catch {
          // a runtime without connection-level window control keeps the default
        }
        resolve(session);
      });
      session.on('error', (e) => {
        sessionErrors.set(session, e);
        clearTimeout(timer);
        forget();
        if (!connected) reject(e);
      });
      session.on('goaway', forget);
      session.on('close', () => {
        clearTimeout(timer);
        forget();
        if (!connected) {
          reject(Object.assign(new Error('connection closed while connecting'), { code: 'ECONNRESET' }));
        }
      });
    });
  }
}

/**
 * Why a session failed, kept for the calls on it: a server that rejects our certificate does so
 * after the handshake (TLS 1.3), and the calls only see "session destroyed".
 */
const sessionErrors = new WeakMap<ClientHttp2Session, Error>();

/**
 * The session's first failure, when there is one, instead of a call's generic transport error
 * ("session destroyed"); a transport error is remembered as the session's failure.
 */
function explain(session: ClientHttp2Session, e: unknown): Error {
  if (e instanceof EtcdStatusError) return e;
  const first = sessionErrors.get(session);
  if (first) return first;
  if (session.destroyed) sessionErrors.set(session, e as Error);
  return e as Error;
}

function closedError(): Error {
  return Object.assign(new Error('the client is closed'), { code: 'ERR_CLIENT_CLOSED' });
}

function requestHeaders(method: string, metadata: Record<string, string>, timeoutMs: number | undefined) {
  const h: Record<string, string> = {
    ':method': 'POST',
    ':path': `/${method}`,
    'content-type': 'application/grpc',
    te: 'trailers',
    ...metadata,
  };
  if (timeoutMs !== undefined) h['grpc-timeout'] = `${Math.max(1, Math.ceil(timeoutMs))}m`;
  return h;
}

/** A message in gRPC's length-prefixed framing (uncompressed). */
function frame(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

/**
 * Read a gRPC reply stream: messages as they complete, then the status from the trailers (or from
 * the headers of a trailers-only reply). Transport failures end it with Node's error. Exported for
 * its tests.
 */
export function readReplies(req: ClientHttp2Stream, handlers: GrpcStreamHandlers): void {
  /** Received bytes not yet cut into messages, `buffered` bytes in all. */
  let chunks: Buffer[] = [];
  let buffered = 0;
  /** Bytes needed before the next message can be cut out. */
  let need = 5;
  let status: { code: number; message: string } | undefined;
  let httpStatus = 0;
  let done = false;
  const end = (error: Error | undefined) => {
    if (done) return;
    done = true;
    handlers.end(error);
  };
  const takeStatus = (h: IncomingHttpHeaders) => {
    const code = h['grpc-status'];
    if (code === undefined) return;
    const raw = String(h['grpc-message'] ?? '');
    let message = raw;
    try {
      message = decodeURIComponent(raw);
    } catch {
      // keep it as sent
    }
    status = { code: Number(code), message };
  };
  req.on('response', (h) => {
    httpStatus = Number(h[':status'] ?? 0);
    takeStatus(h);
  });
  req.on('trailers', takeStatus);
  /**
   * The next `n` buffered bytes, as views of the chunks they arrived in: a 4 MB range reply is
   * handed over as its chunks, never copied into one buffer (see decodeRangeResponse).
   */
  const take = (n: number): Buffer[] => {
    const parts: Buffer[] = [];
    buffered -= n;
    while (n > 0) {
      const c = chunks[0]!;
      if (c.length <= n) {
        parts.push(c);
        chunks.shift();
        n -= c.length;
      } else {
        parts.push(c.subarray(0, n));
        chunks[0] = c.subarray(n);
        n = 0;
      }
    }
    return parts;
  };
  req.on('data', (chunk: Buffer) => {
    if (done || chunk.length === 0) return;
    chunks.push(chunk);
    buffered += chunk.length;
    while (buffered >= need && !done) {
      // A frame header split across chunks (rare): join what is buffered.
      if (chunks[0]!.length < 5) chunks = [Buffer.concat(chunks, buffered)];
      const first = chunks[0]!;
      if (first[0] !== 0) {
        req.close(NGHTTP2_CANCEL);
        end(new Error('etcd sent a compressed message, which this client did not ask for'));
        return;
      }
      const len = first.readUInt32BE(1);
      if (buffered < 5 + len) {
        need = 5 + len;
        return;
      }
      take(5);
      need = 5;
      handlers.message(take(len));
    }
  });
  req.on('error', (e) => end(e));
  req.on('close', () => {
    if (status) {
      end(status.code === 0 ? undefined : new EtcdStatusError(status.code, status.message));
      return;
    }
    if (req.rstCode === NGHTTP2_REFUSED_STREAM) {
      end(Object.assign(new Error('etcd refused the stream'), { code: 'EREFUSED_STREAM' }));
      return;
    }
    const what = httpStatus !== 0 && httpStatus !== 200 ? `HTTP ${httpStatus}` : 'the stream ended';
    end(Object.assign(new Error(`${what} without a gRPC status`), { code: 'ECONNRESET' }));
  });
}

/** A transport failure after which a write surely did not reach etcd, so it may be sent again. */
function notSent(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return (
    code === 'ECONNREFUSED' ||
    code === 'ENOTFOUND' ||
    code === 'EAI_AGAIN' ||
    code === 'EHOSTUNREACH' ||
    code === 'ECONNECT_TIMEOUT' ||
    code === 'EREFUSED_STREAM' ||
    code === 'ERR_HTTP2_GOAWAY_SESSION'
  );
}
