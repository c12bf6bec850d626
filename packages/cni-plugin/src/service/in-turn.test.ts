import { describe, expect, test } from 'vitest';
import { InTurn } from './in-turn.js';

/** A promise with its resolve and reject at hand. */
function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('InTurn', () => {
  test('work of one key starts only after the previous one settled (an ADD still running holds back the DEL)', async () => {
    const q = new InTurn();
    const events: string[] = [];
    const add = deferred();
    const addDone = q.run('c1/eth0', async () => {
      events.push('ADD start');
      await add.promise;
      events.push('ADD end');
      return 'added';
    });
    const delDone = q.run('c1/eth0', async () => {
      events.push('DEL start');
      return 'deleted';
    });
    await tick();
    await tick();
    expect(events).toEqual(['ADD start']);
    add.resolve();
    expect(await addDone).toBe('added');
    expect(await delDone).toBe('deleted');
    expect(events).toEqual(['ADD start', 'ADD end', 'DEL start']);
    await tick();
    expect(q.size).toBe(0);
  });

  test('a failed piece of work does not stop the next one of its key, and keeps its own error', async () => {
    const q = new InTurn();
    const first = q.run('c1/eth0', async () => {
      throw new Error('etcd unavailable');
    });
    const second = q.run('c1/eth0', async () => 'ran');
    await expect(first).rejects.toThrow('etcd unavailable');
    expect(await second).toBe('ran');
  });

  test('different keys, and work without a key, run concurrently', async () => {
    const q = new InTurn();
    const events: string[] = [];
    const hold = deferred();
    const a = q.run('c1/eth0', async () => {
      events.push('c1');
      await hold.promise;
    });
    const b = q.run('c2/eth0', async () => {
      events.push('c2');
    });
    const c = q.run(undefined, async () => {
      events.push('none');
    });
    await b;
    await c;
    // All three ran while c1's work is still held.
    expect([...events].sort()).toEqual(['c1', 'c2', 'none']);
    hold.resolve();
    await a;
  });
});
