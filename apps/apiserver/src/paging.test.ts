import { describe, expect, it } from 'vitest';
import type { ApiServerError } from './errors.js';
import { pageOf, sortItems } from './paging.js';

const item = (name: string, namespace?: string) => ({
  metadata: { name, ...(namespace ? { namespace } : {}) },
});
const names = (items: { metadata?: unknown }[]) =>
  items.map((i) => {
    const m = i.metadata as { name: string; namespace?: string };
    return m.namespace ? `${m.namespace}/${m.name}` : m.name;
  });

describe('paging', () => {
  const sorted = sortItems([item('b', 'y'), item('a', 'z'), item('c', 'y'), item('a', 'y')]);

  it('orders by namespace, then name', () => {
    expect(names(sorted)).toEqual(['y/a', 'y/b', 'y/c', 'z/a']);
  });

  it('pages with limit and continue, counting what remains, ending without a token', () => {
    const p1 = pageOf(sorted, '3', null);
    expect([names(p1.items), p1.remainingItemCount]).toEqual([['y/a', 'y/b', 'y/c'], 1]);
    const p2 = pageOf(sorted, '3', p1.continue!);
    expect([names(p2.items), p2.continue]).toEqual([['z/a'], undefined]);
    expect(pageOf(sorted, null, null).items).toHaveLength(4);
    expect(pageOf(sorted, '4', null).continue).toBeUndefined();
  });

  it('continues after the last key even when it was deleted in between', () => {
    const p1 = pageOf(sorted, '2', null);
    const after = sortItems([item('a', 'y'), item('c', 'y'), item('a', 'z')]);
    expect(names(pageOf(after, '2', p1.continue!).items)).toEqual(['y/c', 'z/a']);
  });

  it('refuses a token it did not make and a limit that is not a number', () => {
    expect(() => pageOf(sorted, null, 'garbage')).toThrow(/continue key is not valid/);
    expect(() => pageOf(sorted, 'x', null)).toThrow(
      expect.objectContaining<Partial<ApiServerError>>({ code: 'bad-request' }),
    );
  });
});
