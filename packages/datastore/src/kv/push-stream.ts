/**
 * A single-consumer async stream fed by push: the producer calls `push`, `end` or `fail`; the
 * consumer iterates. Messages pushed before iteration starts are kept, so a watch registered at call
 * time misses nothing. `onClose` runs once when the stream ends for any reason (consumer `return`,
 * producer `end`/`fail`, or the abort signal), which is where producers detach their sources.
 */
export class PushStream<T> implements AsyncIterableIterator<T> {
  private readonly buffer: T[] = [];
  private head = 0;
  private waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  private failure: { error: unknown } | undefined;
  private ended = false;
  private closed = false;
  private readonly onAbort = () => this.end();

  constructor(
    private readonly onClose: () => void,
    private readonly signal?: AbortSignal,
  ) {
    if (signal?.aborted) {
      queueMicrotask(() => this.end());
    } else {
      signal?.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** True once the stream no longer accepts messages. */
  get done(): boolean {
    return this.ended;
  }

  push(value: T): void {
    if (this.ended) return;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve({ value, done: false });
    } else {
      this.buffer.push(value);
    }
  }

  /** No more messages; the consumer sees the buffered ones, then the end. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.close();
    const w = this.waiter;
    if (w && this.head >= this.buffer.length) {
      this.waiter = undefined;
      w.resolve({ value: undefined, done: true });
    }
  }

  /** The stream broke; the consumer sees the buffered messages, then `error` is thrown. */
  fail(error: unknown): void {
    if (this.ended) return;
    this.failure = { error };
    this.ended = true;
    this.close();
    const w = this.waiter;
    if (w && this.head >= this.buffer.length) {
      this.waiter = undefined;
      this.failure = undefined;
      w.reject(error);
    }
  }

  next(): Promise<IteratorResult<T>> {
    if (this.head < this.buffer.length) {
      const value = this.buffer[this.head++] as T;
      if (this.head > 1024 && this.head * 2 > this.buffer.length) {
        this.buffer.splice(0, this.head);
        this.head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.failure) {
      const { error } = this.failure;
      this.failure = undefined;
      return Promise.reject(error);
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.buffer.length = 0;
    this.head = 0;
    this.failure = undefined;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.signal?.removeEventListener('abort', this.onAbort);
    this.onClose();
  }
}
