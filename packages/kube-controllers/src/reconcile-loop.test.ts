import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReconcileLoop } from './reconcile-loop.js';

function gate() {
  let open!: () => void;
  const p = new Promise<void>((r) => {
    open = r;
  });
  return { p, open };
}

describe('ReconcileLoop', () => {
  afterEach(() => vi.useRealTimers());

  it('runs one pass at a time, and requests made during a pass coalesce into one more', async () => {
    const g = gate();
    let passes = 0;
    let concurrent = 0;
    let maxConcurrent = 0;
    const loop = new ReconcileLoop({
      pass: async () => {
        passes++;
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        if (passes === 1) await g.p;
        concurrent--;
        return false;
      },
    });
    const first = loop.run();
    const a = loop.run();
    const b = loop.run();
    expect(a).toBe(b);
    g.open();
    await Promise.all([first, a, b]);
    expect(passes).toBe(2);
    expect(maxConcurrent).toBe(1);
    await loop.stop();
  });

  it('debounces scheduled passes, retries a failed one, and keeps going after a pass that throws', async () => {
    vi.useFakeTimers();
    const results = [true, undefined, 'throw', undefined] as const;
    let passes = 0;
    const errors: unknown[] = [];
    const loop = new ReconcileLoop({
      debounceMs: 10,
      retryMs: 100,
      periodMs: 1_000,
      pass: async () => {
        const r = results[passes++];
        if (r === 'throw') throw new Error('boom');
        return r;
      },
      onError: (e) => errors.push(e),
    });
    loop.schedule();
    loop.schedule();
    loop.schedule();
    await vi.advanceTimersByTimeAsync(10);
    expect(passes).toBe(1); // three requests, one pass; it failed
    await vi.advanceTimersByTimeAsync(100);
    expect(passes).toBe(2); // the retry
    loop.start();
    await vi.advanceTimersByTimeAsync(1_010);
    expect(passes).toBe(3); // the periodic resync; it throws
    expect((errors[0] as Error).message).toBe('boom');
    await vi.advanceTimersByTimeAsync(100);
    expect(passes).toBe(4); // retried after the throw
    await loop.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(passes).toBe(4); // nothing after stop
  });
});
