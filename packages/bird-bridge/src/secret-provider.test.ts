import { describe, expect, test } from 'vitest';
import { MemorySecretProvider } from './secret-provider.js';

describe('MemorySecretProvider', () => {
  test('answers only followed secrets, and notifies only for them', async () => {
    const p = new MemorySecretProvider({ a: { k: 'one' }, b: { k: 'two' } });
    let calls = 0;
    const off = p.subscribe(() => calls++);
    expect(p.value('a', 'k')).toBeUndefined();
    await p.follow(['a']);
    expect([p.value('a', 'k'), p.value('a', 'other'), p.value('b', 'k')]).toEqual([
      'one',
      undefined,
      undefined,
    ]);
    p.set('b', { k: 'three' });
    expect(calls).toBe(0);
    p.set('a', { k: 'four' });
    expect([calls, p.value('a', 'k')]).toEqual([1, 'four']);
    p.set('a', undefined);
    expect([calls, p.value('a', 'k')]).toEqual([2, undefined]);
    off();
    p.set('a', { k: 'five' });
    expect(calls).toBe(2);
    await p.follow([]);
    expect([p.followed(), p.value('a', 'k')]).toEqual([[], undefined]);
  });

  test('close stops answering and notifying', async () => {
    const p = new MemorySecretProvider({ a: { k: 'one' } });
    let calls = 0;
    p.subscribe(() => calls++);
    await p.follow(['a']);
    await p.close();
    await p.follow(['a']);
    p.set('a', { k: 'two' });
    expect([calls, p.value('a', 'k')]).toEqual([0, undefined]);
  });
});
