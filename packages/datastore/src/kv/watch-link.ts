/**
 * How a watch that reconnects tells its consumer about the connection, and how fast it retries.
 * Shared by every store whose watch can lose its server: the two etcd stores (one per prefix) and
 * the Kubernetes store (one for all the collections a prefix spans).
 *
 *   first connect ──────────────► (nothing: a watch starts connected)
 *   lost ───── down(error) ─────► `disconnected`, once however often it is lost again
 *   back ───── up() ────────────► `reconnected`, once, and only after a `disconnected`
 *
 * `RetryDelay` is the pause between attempts: it starts at `initialMs` and doubles up to `maxMs`;
 * a connection that worked resets it. Pure: the caller sleeps, so the clock stays with the I/O.
 *
 * Thread-safety: one per watch, used from one event loop.
 */
import type { KVWatchMessage } from './kv-store.js';

export class WatchLink {
  /** What the consumer was last told: nothing yet, connected, or disconnected. */
  #state: 'new' | 'up' | 'down' = 'new';

  constructor(private readonly push: (m: KVWatchMessage) => void) {}

  /** The server confirmed the watch: `reconnected` when the consumer was told it was lost. */
  up(): void {
    if (this.#state === 'down') this.push({ kind: 'reconnected' });
    this.#state = 'up';
  }

  /** The connection is lost: `disconnected` with `error`, unless already reported. */
  down(error: Error): void {
    if (this.#state === 'down') return;
    this.#state = 'down';
    this.push({ kind: 'disconnected', error });
  }
}

export class RetryDelay {
  #ms: number;

  constructor(
    private readonly initialMs = 100,
    private readonly maxMs = 2_000,
  ) {
    this.#ms = initialMs;
  }

  /** The pause before the next attempt; the one after it is twice as long, up to `maxMs`. */
  next(): number {
    const ms = this.#ms;
    this.#ms = Math.min(ms * 2, this.maxMs);
    return ms;
  }

  /** A connection worked: the next pause is `initialMs` again. */
  reset(): void {
    this.#ms = this.initialMs;
  }
}
