/**
 * The open/closed state of a store that holds watches, and the teardown `close()` does. Shared by
 * the two etcd stores (`EtcdKVStore`, `EtcdHttp2KVStore`), whose close was the same code twice.
 *
 *   watch() ──► openStream(onStop) ──► the stream, kept here until it ends
 *   stream ends (consumer return, abort signal, end, fail) ──► onStop, and it is forgotten
 *   close() ──► every kept stream ended (its consumer sees what was buffered, then the end),
 *               later calls refused as `unavailable` ("<where>: the client is closed")
 *
 * The connection itself is the store's: `close()` says whether this was the first call, and the
 * store then closes its client.
 *
 * Thread-safety: one per store, used from one event loop.
 */
import { DatastoreError } from '../errors.js';
import type { KVWatchMessage } from './kv-store.js';
import { PushStream } from './push-stream.js';

export class StoreLifecycle {
  readonly #streams = new Set<PushStream<KVWatchMessage>>();
  #closed = false;

  /** `where`: the store's name in error messages (`etcd <hosts>`). */
  constructor(private readonly where: string) {}

  get isClosed(): boolean {
    return this.#closed;
  }

  /** The error of a call made after `close()`. */
  closedError(): DatastoreError {
    return new DatastoreError('unavailable', `${this.where}: the client is closed`);
  }

  /** Throws `closedError()` once the store is closed. */
  checkOpen(): void {
    if (this.#closed) throw this.closedError();
  }

  /**
   * A watch's stream, kept until it ends for any reason; `close()` ends it. `onStop` runs once when
   * it ends, which is where the watch detaches from its connection.
   */
  openStream(onStop: () => void, signal?: AbortSignal): PushStream<KVWatchMessage> {
    const stream: PushStream<KVWatchMessage> = new PushStream<KVWatchMessage>(() => {
      this.#streams.delete(stream);
      onStop();
    }, signal);
    this.#streams.add(stream);
    return stream;
  }

  /** Marks the store closed and ends every open watch; false when it was closed already. */
  close(): boolean {
    if (this.#closed) return false;
    this.#closed = true;
    for (const s of [...this.#streams]) s.end();
    this.#streams.clear();
    return true;
  }
}
