/**
 * Where one etcd prefix watch stands, and the messages its consumer gets: the part of a watch that
 * does not depend on how the events arrive. `EtcdKVStore` (etcd3's watch manager over grpc-js) and
 * `EtcdHttp2KVStore` (one Watch stream per prefix over node:http2) feed it; each keeps only the
 * code that talks to its transport.
 *
 *   transport                         cursor                        consumer
 *   watch created at revision R ──►   connected(R) ──────────────►  `reconnected` if it was lost
 *   events (any batching) ────────►   deliver() ── one message per revision, none twice ──►
 *   stream lost ──────────────────►   lost(error) ── `disconnected` once, or the end (not
 *                                                     `unavailable`, or the store closed)
 *   start revision compacted ─────►   resyncFrom(list) ── `resync` with the list ──►
 *
 * `next` is the first revision not yet delivered. A transport reopens (or re-arms) its watch from
 * it, so a reconnect resumes exactly after the last delivered event: no gap, and the events a
 * server replays below `next` are dropped here. Undefined until the server says what "now" is,
 * for a watch from now. After a resync it is the list's revision + 1.
 *
 * Thread-safety: one per watch, used from one event loop.
 */
import type { DatastoreError } from '../errors.js';
import type { KVEvent, KVList, KVWatchMessage } from './kv-store.js';
import type { PushStream } from './push-stream.js';
import { parseRevision } from './revision.js';
import { WatchLink } from './watch-link.js';

/** The first revision a watch asked for reports; undefined (and for 0): from now. */
export function watchStart(fromRevision: string | undefined): number | undefined {
  const from = fromRevision === undefined ? undefined : parseRevision(fromRevision, 'fromRevision');
  return from && from > 0 ? from : undefined;
}

export class WatchCursor {
  /** The first revision not yet delivered; undefined until etcd tells us "now" for a watch from now. */
  next: number | undefined;
  readonly #link: WatchLink;

  constructor(
    readonly stream: PushStream<KVWatchMessage>,
    from: number | undefined,
  ) {
    this.next = from;
    this.#link = new WatchLink((m) => stream.push(m));
  }

  /** The consumer is gone or the watch has ended: nothing more is delivered. */
  get done(): boolean {
    return this.stream.done;
  }

  /** The server created the watch; `revision` is its "now". */
  connected(revision: number): void {
    if (this.next === undefined) this.next = revision + 1;
    this.#link.up();
  }

  /**
   * Events in revision order, as the server sent them: one `events` message per revision, without
   * those already delivered before a reconnect.
   */
  deliver<E>(events: readonly E[], revisionOf: (e: E) => number, toEvent: (e: E) => KVEvent): void {
    let batch: KVEvent[] = [];
    let batchRev = -1;
    const flush = () => {
      if (batch.length > 0) this.stream.push({ kind: 'events', events: batch, revision: String(batchRev) });
      batch = [];
    };
    for (const ev of events) {
      const rev = revisionOf(ev);
      if (this.next !== undefined && rev < this.next) continue; // already delivered before a reconnect
      if (rev !== batchRev) {
        flush();
        batchRev = rev;
      }
      batch.push(toEvent(ev));
    }
    flush();
    if (batchRev >= 0) this.next = batchRev + 1;
  }

  /** The connection is lost and the watch retries: `disconnected`, once until it is back. */
  down(error: DatastoreError): void {
    this.#link.down(error);
  }

  /**
   * The watch failed with `error`. True when it is worth retrying (etcd unreachable, store open):
   * the consumer is told `disconnected`. Otherwise the stream fails with `error` and this is false.
   */
  lost(error: DatastoreError, storeClosed: boolean): boolean {
    if (error.code !== 'unavailable' || storeClosed) {
      this.stream.fail(error);
      return false;
    }
    this.down(error);
    return true;
  }

  /** The watch's history is compacted away: deliver a `resync` with `list()` and go on after it. */
  async resyncFrom(list: () => Promise<KVList>): Promise<boolean> {
    const l = await list();
    if (this.done) return false;
    this.stream.push({ kind: 'resync', list: l, reason: 'compacted' });
    this.next = Number(l.revision) + 1;
    return true;
  }

  /** The watch cannot go on: the consumer sees what was buffered, then `error`. */
  fail(error: DatastoreError): void {
    this.stream.fail(error);
  }
}
