/**
 * One prefix watch of `EtcdKVStore`, over the etcd3 package's watch manager (all of a client's
 * watches share one gRPC stream, which etcd3 reconnects by itself). What it delivers and where it
 * resumes is the shared `WatchCursor`; this file is the etcd3 side:
 *
 *   etcd3 Watcher                    EtcdPrefixWatch                   WatchCursor
 *   'connected' (header rev) ──────► re-arm the resume point ───────► connected(rev)
 *   'data' (events) ───────────────► re-arm ─────────────────────────► deliver(events)
 *   'disconnected' (etcd3 retries) ► re-arm ─────────────────────────► down(error)
 *   'error' (etcd cancelled it) ───► compacted? (range read at next) ─► resyncFrom(list), new
 *                                    else the end                        Watcher from after it
 *
 * etcd3 moves its resume point to a response header's revision + 1, which can run ahead of the
 * events actually delivered (catch-up batches carry the current revision); it is re-armed to the
 * cursor's `next` after every message, so a reconnect resumes exactly after what was delivered.
 * A watch whose revision was compacted (at start or across a reconnect) is cancelled by etcd; a
 * range read at that revision confirms the compaction. Owns at most one etcd3 `Watcher` at a time.
 *
 * Thread-safety: one per watch, used from one event loop.
 */
import type { Etcd3, IWatchResponse, Watcher } from 'etcd3';
import type { DatastoreError } from '../errors.js';
import { toEvent } from './etcd-kv-convert.js';
import { prefixEnd, ZERO_KEY } from './etcd-options.js';
import type { KVList, KVWatchMessage } from './kv-store.js';
import type { StoreLifecycle } from './store-lifecycle.js';
import { WatchCursor } from './watch-cursor.js';
import { RetryDelay } from './watch-link.js';

/** What a watch needs of its store. */
export interface EtcdWatchHost {
  readonly etcd: Etcd3;
  readonly lifecycle: StoreLifecycle;
  list(prefix: string): Promise<KVList>;
  /** Wrap a foreign error with what was being done, classified. */
  fail(e: unknown, what: string): DatastoreError;
}

export class EtcdPrefixWatch {
  readonly #cursor: WatchCursor;
  #watcher: Watcher | undefined;

  constructor(
    private readonly store: EtcdWatchHost,
    private readonly prefix: string,
    from: number | undefined,
    signal: AbortSignal | undefined,
  ) {
    this.#cursor = new WatchCursor(
      store.lifecycle.openStream(() => this.#stop(), signal),
      from,
    );
  }

  get stream(): AsyncIterable<KVWatchMessage> {
    return this.#cursor.stream;
  }

  start(): void {
    if (this.#cursor.done) return;
    const start = this.prefix === '' ? ZERO_KEY : Buffer.from(this.prefix);
    let builder = this.store.etcd
      .watch()
      .inRange({ start, end: prefixEnd(start) })
      .withPreviousKV();
    const next = this.#cursor.next;
    if (next !== undefined) builder = builder.startRevision(String(next));
    const w = builder.watcher();
    this.#watcher = w;
    w.on('connected', (res) => this.#onConnected(w, res));
    w.on('data', (res) => this.#onData(w, res));
    w.on('disconnected', (err) => this.#onDisconnected(w, err));
    w.on('error', (err) => void this.#onCancelled(w, err));
  }

  /** Whether `w` is the live watcher of a watch that still delivers. */
  #live(w: Watcher): boolean {
    return w === this.#watcher && !this.#cursor.done;
  }

  /** Resume from what was delivered, not from where etcd3 would. */
  #rearm(w: Watcher): void {
    const next = this.#cursor.next;
    if (next !== undefined) w.request.start_revision = next;
  }

  #onConnected(w: Watcher, res: IWatchResponse): void {
    if (!this.#live(w)) return;
    this.#cursor.connected(Number(res.header.revision));
    this.#rearm(w);
  }

  #onData(w: Watcher, res: IWatchResponse): void {
    if (!this.#live(w)) return;
    this.#cursor.deliver(
      res.events,
      (ev) => Number(ev.kv.mod_revision),
      (ev) => toEvent(ev.type, ev.kv, ev.prev_kv),
    );
    this.#rearm(w);
  }

  #onDisconnected(w: Watcher, err: Error): void {
    if (!this.#live(w)) return;
    this.#rearm(w);
    this.#cursor.down(this.store.fail(err, `watch ${this.prefix}`));
  }

  /** etcd cancelled the watch: compaction (resync and go on) or a real error (end the stream). */
  async #onCancelled(w: Watcher, err: Error): Promise<void> {
    if (!this.#live(w)) return;
    this.#watcher = undefined;
    const cursor = this.#cursor;
    const delay = new RetryDelay();
    while (!cursor.done) {
      try {
        if (cursor.next !== undefined && (await this.#isCompacted(cursor.next))) {
          if (await cursor.resyncFrom(() => this.store.list(this.prefix))) this.start();
          return;
        }
        cursor.fail(this.store.fail(err, `watch ${this.prefix} cancelled by etcd`));
        return;
      } catch (e) {
        // etcd went away while we looked; report once and try again.
        const de = this.store.fail(e, `watch ${this.prefix}`);
        if (!cursor.lost(de, this.store.lifecycle.isClosed)) return;
        await new Promise((r) => setTimeout(r, delay.next()));
      }
    }
  }

  /** A range read at `revision` fails with "compacted" exactly when a watch from it would. */
  async #isCompacted(revision: number): Promise<boolean> {
    try {
      await this.store.etcd.kv.range({ key: ZERO_KEY, count_only: true, revision });
      return false;
    } catch (e) {
      const de = this.store.fail(e, 'probe revision');
      if (de.code === 'compacted') return true;
      if (de.code === 'invalid') return false; // a future revision
      throw e;
    }
  }

  #stop(): void {
    const w = this.#watcher;
    this.#watcher = undefined;
    w?.removeAllListeners();
    // Keep an error listener: a late cancel must not become an unhandled 'error' event.
    w?.on('error', () => undefined);
    w?.cancel().catch(() => undefined);
  }
}
