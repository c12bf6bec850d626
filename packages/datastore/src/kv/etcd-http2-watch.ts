/**
 * One prefix watch of `EtcdHttp2KVStore`: one gRPC Watch stream per prefix over node:http2,
 * reopened whenever it breaks. What it delivers and where it resumes is the shared `WatchCursor`;
 * this file is the stream side:
 *
 *   run() ──► openOnce(): open the stream, write a create_request from cursor.next
 *                 created ──► cursor.connected(revision)     events ──► cursor.deliver()
 *                 ends with how: ┬ compacted (etcd cancelled, compact_revision set)
 *                                │     ──► cursor.resyncFrom(list), reopen at once
 *                                ├ cancelled (a gRPC status other than UNAVAILABLE/CANCELLED, or
 *                                │  etcd's cancel without compaction) ──► the stream fails
 *                                └ ended (transport lost, stream closed) ──► cursor.lost(error):
 *                                      `disconnected` once, reopen after 100 ms doubling to 2 s
 *
 * The pause resets once a stream was created or a resync went through. `reconnected` is reported
 * when etcd confirms the new watch, not when the stream opens.
 *
 * Thread-safety: one per watch, used from one event loop.
 */
import type { DatastoreError } from '../errors.js';
import type { GrpcStream, GrpcStreamHandlers } from './etcd-grpc-channel.js';
import { toEvent } from './etcd-http2-convert.js';
import { EtcdStatusError } from './etcd-http2-errors.js';
import { prefixEnd, ZERO_KEY } from './etcd-options.js';
import { decodeWatchResponse, type WatchResponse, watchCreateRequest } from './etcd-proto/watch.js';
import type { KVList, KVWatchMessage } from './kv-store.js';
import type { StoreLifecycle } from './store-lifecycle.js';
import { WatchCursor } from './watch-cursor.js';
import { RetryDelay } from './watch-link.js';

/** What a watch needs of its store. */
export interface Http2WatchHost {
  readonly lifecycle: StoreLifecycle;
  list(prefix: string): Promise<KVList>;
  /** Wrap a foreign error with what was being done, classified. */
  fail(e: unknown, what: string): DatastoreError;
  /** Open a Watch stream with the store's credentials. */
  openWatchStream(what: string, handlers: GrpcStreamHandlers): Promise<GrpcStream>;
}

type WatchOutcome =
  | { kind: 'ended'; created: boolean; error: Error | undefined }
  | { kind: 'compacted' }
  | { kind: 'cancelled'; error: Error };

export class Http2PrefixWatch {
  readonly #cursor: WatchCursor;
  #current: GrpcStream | undefined;
  readonly #key: Buffer;
  readonly #rangeEnd: Buffer;

  constructor(
    private readonly store: Http2WatchHost,
    private readonly prefix: string,
    from: number | undefined,
    signal: AbortSignal | undefined,
  ) {
    this.#key = prefix === '' ? ZERO_KEY : Buffer.from(prefix);
    this.#rangeEnd = prefixEnd(this.#key);
    this.#cursor = new WatchCursor(
      store.lifecycle.openStream(() => this.#stop(), signal),
      from,
    );
  }

  get stream(): AsyncIterable<KVWatchMessage> {
    return this.#cursor.stream;
  }

  start(): void {
    void this.#run();
  }

  async #run(): Promise<void> {
    const cursor = this.#cursor;
    const delay = new RetryDelay();
    while (!cursor.done) {
      let outcome: WatchOutcome;
      try {
        outcome = await this.#openOnce();
      } catch (e) {
        outcome = { kind: 'ended', created: false, error: e as Error };
      }
      if (cursor.done) return;
      if (outcome.kind === 'compacted') {
        try {
          if (!(await cursor.resyncFrom(() => this.store.list(this.prefix)))) return;
          delay.reset();
          continue;
        } catch (e) {
          if (!this.#lost(e)) return;
        }
      } else if (outcome.kind === 'cancelled') {
        cursor.fail(this.store.fail(outcome.error, `watch ${this.prefix} cancelled by etcd`));
        return;
      } else {
        if (outcome.created) delay.reset();
        const error =
          outcome.error ?? Object.assign(new Error('the watch stream ended'), { code: 'ECONNRESET' });
        if (!this.#lost(error)) return;
      }
      await new Promise((r) => setTimeout(r, delay.next()));
    }
  }

  /** Report a lost stream; false (and the stream failed) when the error is not one to retry. */
  #lost(e: unknown): boolean {
    return this.#cursor.lost(this.store.fail(e, `watch ${this.prefix}`), this.store.lifecycle.isClosed);
  }

  /** Open the stream and feed its messages until it ends; resolves with how it ended. */
  #openOnce(): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve, reject) => {
      let created = false;
      let settled = false;
      let opened: GrpcStream | undefined;
      const finish = (outcome: WatchOutcome) => {
        if (settled) return;
        settled = true;
        opened?.cancel();
        if (this.#current === opened) this.#current = undefined;
        resolve(outcome);
      };
      this.store
        .openWatchStream(`watch ${this.prefix}`, {
          message: (m) => {
            if (settled) return;
            let res: WatchResponse;
            try {
              res = decodeWatchResponse(m);
            } catch (e) {
              finish({ kind: 'ended', created, error: e as Error });
              return;
            }
            if (res.created) {
              created = true;
              this.#cursor.connected(res.revision);
            }
            if (res.events.length > 0) {
              this.#cursor.deliver(res.events, (ev) => ev.kv.modRevision, toEvent);
            }
            if (res.canceled) {
              finish(
                res.compactRevision > 0
                  ? { kind: 'compacted' }
                  : {
                      kind: 'cancelled',
                      error: new EtcdStatusError(2, res.cancelReason || 'etcd cancelled the watch'),
                    },
              );
            }
          },
          end: (error) => {
            if (error instanceof EtcdStatusError && error.grpcCode !== 14 && error.grpcCode !== 1) {
              finish({ kind: 'cancelled', error });
            } else {
              finish({ kind: 'ended', created, error });
            }
          },
        })
        .then((s) => {
          opened = s;
          if (settled || this.#cursor.done) {
            s.cancel();
            if (!settled) finish({ kind: 'ended', created, error: undefined });
            return;
          }
          this.#current = s;
          const next = this.#cursor.next;
          s.write(
            watchCreateRequest({
              key: this.#key,
              rangeEnd: this.#rangeEnd,
              ...(next !== undefined ? { startRevision: next } : {}),
              prevKv: true,
            }).finish(),
          );
        }, reject);
    });
  }

  #stop(): void {
    const s = this.#current;
    this.#current = undefined;
    s?.cancel();
  }
}
