/**
 * ReconcileLoop: when a controller's `pass` runs. Every controller here is level-triggered: a pass
 * reads the whole state it holds and writes the difference, so the loop only decides *when*:
 *
 *   watch event ──► schedule()        ─ debounce ─┐
 *   every periodMs ──► schedule()     ─ debounce ─┼──► run() ──► pass()   (one at a time;
 *   a pass that reports failures ──► retry()  ────┘                        requests made while it
 *                                                                          runs coalesce into one
 *                                                                          more pass after it)
 *
 * API: `run()` runs a pass now (or right after the one running) and resolves when that pass is
 * done; `schedule()` asks for one after the debounce; `retry()` after `retryMs`; `start()` starts
 * the periodic resync; `stop()` ends all timers and waits for a running pass.
 * Thread-safety: one event loop; at most one pass at a time. A pass that throws is logged by the
 * caller's `onError` and does not stop the loop.
 */

export interface ReconcileLoopOptions {
  /** One reconcile pass. Returns true when something failed and should be retried soon. */
  readonly pass: () => Promise<boolean | undefined>;
  readonly debounceMs?: number;
  readonly periodMs?: number;
  readonly retryMs?: number;
  /** A pass threw (it should not: passes report their failures); the loop retries. */
  readonly onError?: (e: unknown) => void;
}

export class ReconcileLoop {
  readonly #o: ReconcileLoopOptions;
  #timer: NodeJS.Timeout | undefined;
  #period: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  #stopped = false;

  constructor(opts: ReconcileLoopOptions) {
    this.#o = opts;
  }

  /** Start the periodic resync (the first pass is the caller's `run()`). */
  start(): void {
    if (this.#stopped || this.#period) return;
    this.#period = setInterval(() => this.schedule(), this.#o.periodMs ?? 5 * 60_000);
  }

  /** Ask for a pass after `delay` (default the debounce); requests while one is pending coalesce. */
  schedule(delay = this.#o.debounceMs ?? 50): void {
    if (this.#stopped || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.run();
    }, delay);
  }

  retry(): void {
    this.schedule(this.#o.retryMs ?? 1000);
  }

  /** A pass now, or one right after the running pass (shared by everyone who asks meanwhile). */
  run(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#next) return this.#next;
    if (this.#running) {
      this.#next = this.#running.then(() => {
        this.#next = undefined;
        return this.#stopped ? undefined : this.#begin();
      });
      return this.#next;
    }
    return this.#begin();
  }

  #begin(): Promise<void> {
    const p = (async () => {
      let failed = false;
      try {
        failed = (await this.#o.pass()) === true;
      } catch (e) {
        failed = true;
        this.#o.onError?.(e);
      }
      if (failed) this.retry();
    })().finally(() => {
      if (this.#running === p) this.#running = undefined;
    });
    this.#running = p;
    return p;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#period);
    this.#timer = undefined;
    this.#period = undefined;
    await this.#next;
    await this.#running;
  }
}
