/**
 * TyphaClient: an agent's syncer, fed by Typha instead of the datastore. Same shape as
 * `@calico-ts/datastore`'s `Syncer` (`start`, `stop`, `inSync`, and the `onUpdate`, `onInSync`,
 * `onConnection` callbacks), so Felix's calculation code cannot tell the two apart.
 *
 *   connect (TLS: server CN / URI SAN checked) ──► hello ──► hello-ok
 *     ──► set… held aside ──► snapshot-end ──► compare with what the consumer has:
 *             gone ⇒ delete, new or changed ⇒ set, same ⇒ nothing   (a resync, never duplicates)
 *     ──► in-sync (the first one ever ⇒ onInSync) ──► deltas ⇒ onUpdate;  ping ⇒ pong
 *   nothing heard for ReadTimeout, an error, or the server closes ──► onConnection(typha, false),
 *   back off, connect again (the next address in turn) and resync as above
 *
 * Thread-safety: one event loop.
 */

import { createHash } from 'node:crypto';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';
import type { SyncerUpdate } from '@calico-ts/datastore';
import { peerMismatch } from './peer-identity.js';
import {
  decodeServerMessage,
  encodeMessage,
  LineSplitter,
  PROTOCOL_VERSION,
  type ServerMessage,
  type SyncerType,
} from './protocol.js';

/** TLS for a client: its certificate, the CA Typha's must chain to, and Typha's identity. */
export interface TyphaClientTls {
  readonly ca: string | Buffer;
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  /** Typha's certificate must have this CN (FELIX_TYPHACN) … */
  readonly serverCN?: string;
  /** … or this URI SAN (FELIX_TYPHAURISAN). Neither set: the usual host name check. */
  readonly serverURISAN?: string;
}

/** How a {@link TyphaClient} is built. */
export interface TyphaClientOptions {
  /** Typha's `host:port` addresses, asked again before each connection (a Service's endpoints). */
  readonly addresses: () => Promise<readonly string[]> | readonly string[];
  readonly node: string;
  /** Names the client in Typha's logs (e.g. `felix`). */
  readonly client: string;
  readonly syncerType: SyncerType;
  /** TLS material, or how to read it (files are read again for each connection). */
  readonly tls?: TyphaClientTls | (() => Promise<TyphaClientTls>);
  readonly onUpdate: (u: SyncerUpdate) => void;
  readonly onInSync: () => void;
  readonly onConnection?: (source: string, connected: boolean, why?: string) => void;
  /**
   * Renames or drops an update by source and key (undefined drops it); bird-bridge keeps its own
   * node's affinities this way.
   */
  readonly filter?: (source: string, key: string) => string | undefined;
  /** Nothing heard from Typha for this long (it pings every 10 s by default) ⇒ reconnect. */
  readonly readTimeoutMs?: number;
  /**
   * A write (the hello, a pong) not handed to the kernel within this long ⇒ reconnect (Felix's
   * TyphaWriteTimeout, default 10 s): Typha has stopped reading, so its pings' answers pile up.
   */
  readonly writeTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
  readonly log?: Logger;
}

/** The source name a Typha client reports its connection under. */
export const TYPHA_CONNECTION = 'typha';

interface Held {
  /** A digest of the line the item came in (the item's encoding), not the line: less memory. */
  readonly digest: string;
  readonly item: unknown;
}

function digestOf(line: string): string {
  return createHash('sha1').update(line).digest('base64');
}

export class TyphaClient {
  readonly #o: TyphaClientOptions;
  readonly #log: Logger;
  /** What the consumer has been told: `source\0key` → the item and its line's digest. */
  #known = new Map<string, Held & { readonly source: string }>();
  #inSync = false;
  #stopped = false;
  #socket: Socket | undefined;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #next = 0;
  #connections = 0;

  constructor(opts: TyphaClientOptions) {
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
  }

  /** Whether the first in-sync has been delivered. */
  get inSync(): boolean {
    return this.#inSync;
  }

  /** Connections that completed a snapshot (1 + the resyncs). */
  get connections(): number {
    return this.#connections;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#socket?.destroy();
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const base = this.#o.retryMs ?? 500;
    let delay = base;
    while (!this.#stopped) {
      let snapshotDone = false;
      try {
        const addrs = [...(await this.#o.addresses())];
        if (addrs.length === 0) throw new Error('no Typha address');
        const addr = addrs[this.#next++ % addrs.length]!;
        const tls = typeof this.#o.tls === 'function' ? await this.#o.tls() : this.#o.tls;
        await this.#session(addr, tls, () => {
          snapshotDone = true;
        });
      } catch (e) {
        if (this.#stopped) return;
        this.#o.onConnection?.(TYPHA_CONNECTION, false, (e as Error).message);
        this.#log.warn({ err: (e as Error).message, retryMs: delay }, 'Typha connection lost; reconnecting');
      }
      if (this.#stopped) return;
      if (snapshotDone) delay = base;
      await new Promise<void>((r) => {
        this.#wake = r;
        setTimeout(r, delay);
      });
      this.#wake = undefined;
      if (!snapshotDone) delay = Math.min(delay * 2, this.#o.maxRetryMs ?? 5000);
    }
  }

  /** One connection, from connect to close; rejects with why it ended. */
  #session(addr: string, tls: TyphaClientTls | undefined, onSnapshot: () => void): Promise<void> {
    const i = addr.lastIndexOf(':');
    const host = addr.slice(0, i).replace(/^\[|\]$/g, '');
    const port = Number(addr.slice(i + 1));
    if (i <= 0 || !Number.isInteger(port)) return Promise.reject(new Error(`bad Typha address ${addr}`));
    const socket: Socket = tls
      ? connectTls({
          host,
          port,
          ca: tls.ca,
          cert: tls.cert,
          key: tls.key,
          ...(tls.serverCN || tls.serverURISAN
            ? {
                checkServerIdentity: (_h, cert) => {
                  const why = peerMismatch(cert, {
                    ...(tls.serverCN !== undefined ? { cn: tls.serverCN } : {}),
                    ...(tls.serverURISAN !== undefined ? { uriSan: tls.serverURISAN } : {}),
                  });
                  return why === undefined ? undefined : new Error(`Typha ${why}`);
                },
              }
            : {}),
        })
      : connectTcp({ host, port });
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.setEncoding('utf8');
    socket.setTimeout(this.#o.connectTimeoutMs ?? 10_000);
    return new Promise<void>((resolve, reject) => {
      let ended = false;
      const end = (e: Error) => {
        if (ended) return;
        ended = true;
        socket.destroy();
        if (this.#stopped) resolve();
        else reject(e);
      };
      const writeTimeoutMs = this.#o.writeTimeoutMs ?? 10_000;
      const timers = new Set<NodeJS.Timeout>();
      const send = (line: string) => {
        const timer = setTimeout(
          () => end(new Error(`a write to Typha did not complete in ${writeTimeoutMs / 1000} s`)),
          writeTimeoutMs,
        );
        timers.add(timer);
        socket.write(line, () => {
          clearTimeout(timer);
          timers.delete(timer);
        });
      };
      socket.once('close', () => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
      });
      const lines = new LineSplitter();
      let held: Map<string, Held & { readonly source: string }> | undefined;
      let live = false;
      const onMessage = (m: ServerMessage, line: string) => {
        switch (m.t) {
          case 'hello-ok':
            held = new Map();
            return;
          case 'error':
            throw new Error(`Typha refused: ${m.reason}`);
          case 'ping':
            send(encodeMessage({ t: 'pong', ts: m.ts }));
            return;
          case 'snapshot-end':
            if (!held) throw new Error('snapshot-end before hello-ok');
            this.#resync(held);
            held = undefined;
            live = true;
            this.#connections++;
            onSnapshot();
            this.#o.onConnection?.(TYPHA_CONNECTION, true);
            return;
          case 'in-sync':
            if (!live) throw new Error('in-sync before snapshot-end');
            if (!this.#inSync) {
              this.#inSync = true;
              this.#o.onInSync();
            }
            return;
          case 'set':
          case 'delete': {
            const source = this.#o.filter ? this.#o.filter(m.s, m.k) : m.s;
            if (source === undefined) return;
            const id = `${source}\0${m.k}`;
            if (held) {
              if (m.t === 'set') held.set(id, { source, digest: digestOf(line), item: m.v });
              else held.delete(id);
            } else if (live) this.#apply(id, source, m.t, m.v, line);
            else throw new Error(`${m.t} before hello-ok`);
            return;
          }
        }
      };
      socket.on(tls ? 'secureConnect' : 'connect', () => {
        socket.setTimeout(this.#o.readTimeoutMs ?? 30_000);
        send(
          encodeMessage({
            t: 'hello',
            version: PROTOCOL_VERSION,
            node: this.#o.node,
            client: this.#o.client,
            syncer: this.#o.syncerType,
          }),
        );
      });
      socket.on('data', (chunk: string) => {
        try {
          for (const line of lines.push(chunk)) onMessage(decodeServerMessage(line), line);
        } catch (e) {
          end(e as Error);
        }
      });
      socket.on('timeout', () => end(new Error(live ? 'nothing heard from Typha' : 'Typha did not answer')));
      socket.on('error', (e) => end(e));
      socket.on('close', () => end(new Error('Typha closed the connection')));
    });
  }

  /** The snapshot against what the consumer has: deletes, then sets of what is new or changed. */
  #resync(held: Map<string, Held & { readonly source: string }>): void {
    for (const [id, old] of this.#known) {
      if (!held.has(id)) this.#o.onUpdate({ kind: 'delete', source: old.source, item: old.item });
    }
    for (const [id, h] of held) {
      const old = this.#known.get(id);
      // The server encodes an item once, so an unchanged item arrives as the same line.
      if (old === undefined || old.digest !== h.digest) {
        this.#o.onUpdate({ kind: 'set', source: h.source, item: h.item });
      }
    }
    this.#known = held;
  }

  #apply(id: string, source: string, kind: 'set' | 'delete', item: unknown, line: string): void {
    if (kind === 'set') {
      this.#known.set(id, { source, digest: digestOf(line), item });
      this.#o.onUpdate({ kind: 'set', source, item });
    } else {
      const old = this.#known.get(id);
      this.#known.delete(id);
      this.#o.onUpdate({ kind: 'delete', source, item: old?.item ?? item });
    }
  }
}
