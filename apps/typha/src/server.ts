/**
 * TyphaServer: one datastore syncer fanned out to many agents.
 *
 *   Syncer (one list+watch per source) ──► onUpdate ──► encode the line once ──► cache[source][key]
 *                                                                          └──► write to every client
 *                                                                               of a syncer type
 *                                                                               that has the source
 *   client connects (TLS: CA-verified, CN / URI SAN checked) ──► hello {node, syncer}
 *       ──► hello-ok, the cached lines of its sources, snapshot-end (+ in-sync) as one write
 *       ──► then every delta, in the syncer's order
 *   every PingInterval: ping each client; a client silent for PongTimeout is dropped
 *   a client whose unsent bytes pass its limit (snapshot + MaxBufferBytes) is dropped: it
 *   reconnects and gets a fresh snapshot, so a slow client never holds the others up
 *
 * API: `start()` listens and starts the syncer; `stop()` closes every connection and the syncer.
 * `port`, `inSync`, `stats()` for health and tests.
 * Thread-safety: one event loop.
 */

import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';
import { type Datastore, Syncer, type SyncSource } from '@calico-ts/datastore';
import { peerMismatch } from './peer-identity.js';
import {
  type ClientMessage,
  decodeClientMessage,
  encodeMessage,
  LineSplitter,
  PROTOCOL_VERSION,
  SYNCER_TYPES,
  type SyncerType,
} from './protocol.js';
import { sourcesOf } from './syncer-sources.js';

/** TLS for the server: its certificate, and the CA its clients' certificates must chain to. */
export interface TyphaServerTls {
  readonly ca: string | Buffer;
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  /** A client certificate must have this CN (TYPHA_CLIENTCN) … */
  readonly clientCN?: string;
  /** … or this URI SAN (TYPHA_CLIENTURISAN). */
  readonly clientURISAN?: string;
}

/** How a {@link TyphaServer} is built. */
export interface TyphaServerOptions {
  /** The datastore sources (see `typhaSources`). */
  readonly sources: readonly SyncSource[];
  /** Decides which sources each syncer type gets. */
  readonly backend: Datastore['backend'];
  readonly host?: string;
  /** 0 (the default) picks a free port. */
  readonly port?: number;
  /** Absent: plain TCP (upstream also serves without TLS when no certificate is configured). */
  readonly tls?: TyphaServerTls;
  readonly pingIntervalMs?: number;
  readonly pongTimeoutMs?: number;
  /** Unsent bytes (beyond a snapshot still being sent) after which a client is dropped. */
  readonly maxBufferBytes?: number;
  readonly maxConnections?: number;
  readonly serverName?: string;
  readonly log?: Logger;
  /** Passed to the syncer. */
  readonly retryMs?: number;
  /** Told of timings as they happen (the Prometheus metrics). */
  readonly observer?: TyphaServerObserver;
}

/** Timings a {@link TyphaServer} reports as they happen. */
export interface TyphaServerObserver {
  /** A client answered a ping after `seconds`. */
  pingLatency?(seconds: number): void;
  /** A client's snapshot was handed to the kernel `seconds` after it was written. */
  snapshotSent?(seconds: number): void;
}

/** Counters of a running server. */
export interface TyphaServerStats {
  /** Connections that completed the hello. */
  readonly clients: number;
  /** Clients that completed the hello since the start. */
  readonly accepted: number;
  /** Clients dropped for being too far behind. */
  readonly droppedSlow: number;
  /** Clients dropped for not answering pings. */
  readonly droppedSilent: number;
  /** Connections refused (certificate, hello, limit). */
  readonly refused: number;
  /** Updates the syncer delivered. */
  readonly updates: number;
  /** Keys in the cache, per syncer type: what a new client of that type gets as its snapshot. */
  readonly cacheSize: Readonly<Record<SyncerType, number>>;
}

interface Conn {
  readonly socket: Socket;
  syncer?: SyncerType;
  sources?: ReadonlySet<string>;
  lastHeard: number;
  limit: number;
  readonly name: string;
}

export class TyphaServer {
  readonly #o: TyphaServerOptions;
  readonly #log: Logger;
  readonly #syncer: Syncer;
  readonly #keyOf = new Map<string, (item: unknown) => string>();
  /** Source → key → the encoded `set` line. */
  readonly #cache = new Map<string, Map<string, string>>();
  readonly #conns = new Set<Conn>();
  #server: Server | undefined;
  #pingTimer: NodeJS.Timeout | undefined;
  #inSync = false;
  #droppedSlow = 0;
  #droppedSilent = 0;
  #refused = 0;
  #updates = 0;
  #accepted = 0;

  constructor(opts: TyphaServerOptions) {
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
    for (const s of opts.sources) {
      this.#keyOf.set(s.name, (item) => s.keyOf(item));
      this.#cache.set(s.name, new Map());
    }
    this.#syncer = new Syncer({
      sources: opts.sources,
      onUpdate: (u) => this.#onUpdate(u.kind, u.source, u.item),
      onInSync: () => this.#onInSync(),
      onConnection: (source, connected, why) => {
        if (!connected) this.#log.warn({ source, why }, 'datastore source down; clients keep their state');
      },
      log: this.#log,
      ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
    });
  }

  /** Whether the server's syncer has listed every source once. */
  get inSync(): boolean {
    return this.#inSync;
  }

  /** The port listened on (after `start`). */
  get port(): number {
    const a = this.#server?.address();
    if (!a || typeof a === 'string') throw new Error('TyphaServer: not listening');
    return a.port;
  }

  stats(): TyphaServerStats {
    let clients = 0;
    for (const c of this.#conns) if (c.syncer) clients++;
    const cacheSize = {} as Record<SyncerType, number>;
    for (const type of SYNCER_TYPES) {
      let n = 0;
      for (const source of sourcesOf(type, this.#o.backend)) n += this.#cache.get(source)?.size ?? 0;
      cacheSize[type] = n;
    }
    return {
      clients,
      accepted: this.#accepted,
      droppedSlow: this.#droppedSlow,
      droppedSilent: this.#droppedSilent,
      refused: this.#refused,
      updates: this.#updates,
      cacheSize,
    };
  }

  async start(): Promise<void> {
    const tls = this.#o.tls;
    const server = tls
      ? createTlsServer(
          { ca: tls.ca, cert: tls.cert, key: tls.key, requestCert: true, rejectUnauthorized: true },
          (s) => this.#onSecureConnection(s),
        )
      : createTcpServer((s) => this.#onConnection(s));
    server.on('tlsClientError', (e: Error) => {
      this.#refused++;
      this.#log.warn({ err: e.message }, 'TLS handshake with a client failed');
    });
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#o.port ?? 0, this.#o.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const every = this.#o.pingIntervalMs ?? 10_000;
    this.#pingTimer = setInterval(() => this.#pingAll(), every);
    this.#pingTimer.unref();
    this.#syncer.start();
  }

  async stop(): Promise<void> {
    clearInterval(this.#pingTimer);
    for (const c of this.#conns) c.socket.destroy();
    this.#conns.clear();
    const server = this.#server;
    if (server) await new Promise<void>((r) => server.close(() => r()));
    await this.#syncer.stop();
  }

  // ---- syncer side ----------------------------------------------------------------------------

  #onUpdate(kind: 'set' | 'delete', source: string, item: unknown): void {
    this.#updates++;
    const key = this.#keyOf.get(source)!(item);
    const cache = this.#cache.get(source)!;
    let line: string;
    if (kind === 'set') {
      line = encodeMessage({ t: 'set', s: source, k: key, v: item });
      cache.set(key, line);
    } else {
      line = encodeMessage({ t: 'delete', s: source, k: key, v: item });
      cache.delete(key);
    }
    for (const c of this.#conns) {
      if (c.sources?.has(source)) this.#write(c, line);
    }
  }

  #onInSync(): void {
    this.#inSync = true;
    this.#log.info({}, 'in sync with the datastore');
    const line = encodeMessage({ t: 'in-sync' });
    for (const c of this.#conns) if (c.syncer) this.#write(c, line);
  }

  // ---- client side ----------------------------------------------------------------------------

  #onSecureConnection(socket: TLSSocket): void {
    const tls = this.#o.tls!;
    const why = peerMismatch(socket.getPeerCertificate(), {
      ...(tls.clientCN !== undefined ? { cn: tls.clientCN } : {}),
      ...(tls.clientURISAN !== undefined ? { uriSan: tls.clientURISAN } : {}),
    });
    if (why !== undefined) {
      this.#refuse(socket, `client certificate refused: ${why}`);
      return;
    }
    this.#onConnection(socket);
  }

  #refuse(socket: Socket, reason: string): void {
    this.#refused++;
    this.#log.warn({ peer: socket.remoteAddress, reason }, 'client refused');
    socket.end(encodeMessage({ t: 'error', reason }));
    socket.destroySoon?.();
  }

  #onConnection(socket: Socket): void {
    const max = this.#o.maxConnections;
    if (max !== undefined && this.#conns.size >= max) {
      this.#refuse(socket, `too many connections (${max})`);
      return;
    }
    socket.setNoDelay(true);
    socket.setEncoding('utf8');
    const conn: Conn = {
      socket,
      lastHeard: Date.now(),
      limit: this.#o.maxBufferBytes ?? 64 * 1024 * 1024,
      name: `${socket.remoteAddress}:${socket.remotePort}`,
    };
    this.#conns.add(conn);
    const lines = new LineSplitter(64 * 1024);
    socket.on('data', (chunk: string) => {
      conn.lastHeard = Date.now();
      try {
        for (const line of lines.push(chunk)) this.#onMessage(conn, decodeClientMessage(line));
      } catch (e) {
        this.#refuse(socket, (e as Error).message);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => this.#conns.delete(conn));
  }

  #onMessage(conn: Conn, m: ClientMessage): void {
    if (m.t === 'pong') {
      // The pong carries the ping's own timestamp back.
      const rtt = Date.now() - m.ts;
      if (Number.isFinite(rtt) && rtt >= 0) this.#o.observer?.pingLatency?.(rtt / 1000);
      return;
    }
    if (conn.syncer) throw new Error('second hello');
    if (m.version !== PROTOCOL_VERSION) {
      this.#refuse(conn.socket, `protocol version ${m.version} not supported (${PROTOCOL_VERSION})`);
      return;
    }
    conn.syncer = m.syncer;
    this.#accepted++;
    conn.sources = new Set(sourcesOf(m.syncer, this.#o.backend));
    this.#log.info({ node: m.node, client: m.client, syncer: m.syncer, peer: conn.name }, 'client connected');
    this.#sendSnapshot(conn);
  }

  /** hello-ok, the current state of the client's sources, snapshot-end and in-sync: one write. */
  #sendSnapshot(conn: Conn): void {
    const parts = [encodeMessage({ t: 'hello-ok', server: this.#o.serverName ?? 'typha' })];
    for (const source of conn.sources!) {
      const cache = this.#cache.get(source);
      if (cache) for (const line of cache.values()) parts.push(line);
    }
    parts.push(encodeMessage({ t: 'snapshot-end' }));
    if (this.#inSync) parts.push(encodeMessage({ t: 'in-sync' }));
    const chunk = parts.join('');
    const base = conn.limit;
    // The snapshot may exceed the limit by itself; until it is sent, the limit is raised by it.
    conn.limit = base + Buffer.byteLength(chunk);
    const t0 = performance.now();
    conn.socket.write(chunk, (err) => {
      conn.limit = base;
      if (!err) this.#o.observer?.snapshotSent?.((performance.now() - t0) / 1000);
    });
  }

  #write(conn: Conn, line: string): void {
    if (conn.socket.destroyed) return;
    conn.socket.write(line);
    if (conn.socket.writableLength > conn.limit) {
      this.#droppedSlow++;
      this.#log.warn(
        { peer: conn.name, buffered: conn.socket.writableLength },
        'client too far behind; dropped',
      );
      conn.socket.destroy();
      this.#conns.delete(conn);
    }
  }

  #pingAll(): void {
    const now = Date.now();
    const timeout = this.#o.pongTimeoutMs ?? 60_000;
    const ping = encodeMessage({ t: 'ping', ts: now });
    for (const c of this.#conns) {
      if (now - c.lastHeard > timeout) {
        this.#droppedSilent++;
        this.#log.warn({ peer: c.name }, 'client silent past the pong timeout; dropped');
        c.socket.destroy();
        this.#conns.delete(c);
      } else if (c.syncer) this.#write(c, ping);
    }
  }
}
