/** The informer's calculation (InformerStore) and its serving rule, over a source driven by hand. */
import { describe, expect, it } from 'vitest';
import { isDatastoreError } from './errors.js';
import { Informer, InformerStore } from './informer.js';
import type { SourceEvent, SyncSource } from './syncer.js';

interface Item {
  readonly ns?: string;
  readonly name: string;
  readonly rv: string;
  readonly node?: string;
}

const keyOf = (i: Item) => (i.ns ? `${i.ns}/${i.name}` : i.name);
const item = (name: string, rv: number, extra: Partial<Item> = {}): Item => ({
  name,
  rv: String(rv),
  ...extra,
});
const names = (xs: readonly Item[]) => xs.map((x) => `${keyOf(x)}@${x.rv}`);

function store() {
  return new InformerStore<Item>({
    keyOf,
    namespaceOf: (i) => i.ns,
    versionOf: (i) => i.rv,
    indexes: { node: (i) => (i.node ? [i.node] : []) },
  });
}

describe('InformerStore', () => {
  it('answers by key, by namespace and by index, and keeps the indexes right across updates and deletes', () => {
    const s = store();
    s.set(item('a', 1, { ns: 'x', node: 'n1' }));
    s.set(item('b', 2, { ns: 'y', node: 'n1' }));
    s.set(item('c', 3, { node: 'n2' }));
    expect(s.get('x/a')?.rv).toBe('1');
    expect(s.get('a')).toBeUndefined();
    expect(names(s.list())).toEqual(['c@3', 'x/a@1', 'y/b@2']);
    expect(names(s.list('x'))).toEqual(['x/a@1']);
    expect(names(s.byIndex('node', 'n1'))).toEqual(['x/a@1', 'y/b@2']);
    // Moved to another node: filed under the new value only.
    s.set(item('a', 4, { ns: 'x', node: 'n2' }));
    expect(names(s.byIndex('node', 'n1'))).toEqual(['y/b@2']);
    expect(names(s.byIndex('node', 'n2'))).toEqual(['c@3', 'x/a@4']);
    s.delete('y/b', '2');
    expect(s.byIndex('node', 'n1')).toEqual([]);
    expect(s.list('y')).toEqual([]);
    expect(s.size).toBe(2);
  });

  it('names an index that was never declared', () => {
    expect(() => store().byIndex('pod', 'p')).toThrow(/no index named "pod"/);
  });

  it('ignores a change older than one applied: an own write is not undone by a late watch event', () => {
    const s = store();
    expect(s.set(item('a', 10))).toBe(true);
    expect(s.set(item('a', 7))).toBe(false);
    expect(s.set(item('a', 10))).toBe(false);
    expect(s.get('a')?.rv).toBe('10');
    // A delete of the item as it was before the newest change is ignored too.
    expect(s.delete('a', '7')).toBe(false);
    expect(s.get('a')?.rv).toBe('10');
    expect(s.delete('a', '10')).toBe(true);
    // The watch's put from before the delete does not bring it back; a recreation does.
    expect(s.set(item('a', 10))).toBe(false);
    expect(s.get('a')).toBeUndefined();
    expect(s.set(item('a', 12))).toBe(true);
    // A delete without a revision (a list that no longer has it) always applies.
    expect(s.delete('a')).toBe(true);
    expect(s.set(item('a', 11))).toBe(true);
  });

  it('applies every change when revisions are not integers', () => {
    const s = store();
    s.set({ name: 'a', rv: 'x2' });
    expect(s.set({ name: 'a', rv: 'x1' })).toBe(true);
    expect(s.get('a')?.rv).toBe('x1');
  });
});

/** A source whose lists and watch events the test hands out. */
function handSource() {
  const lists: { items: Item[]; revision: string }[] = [];
  let listCalls = 0;
  let push: ((e: SourceEvent<Item> | 'end') => void) | undefined;
  const pending: (SourceEvent<Item> | 'end')[] = [];
  const source: SyncSource<Item> = {
    name: 'items',
    keyOf,
    async list() {
      listCalls++;
      const l = lists.shift();
      if (!l) throw new Error('list failed');
      return l;
    },
    async *watch(_revision, signal) {
      for (;;) {
        while (pending.length === 0) {
          if (signal.aborted) return;
          await new Promise<void>((r) => {
            push = () => r();
            signal.addEventListener('abort', () => r(), { once: true });
          });
        }
        const e = pending.shift()!;
        if (e === 'end') throw new Error('watch broke');
        yield e;
      }
    },
  };
  return {
    source,
    lists,
    listCalls: () => listCalls,
    emit(e: SourceEvent<Item> | 'end') {
      pending.push(e);
      push?.(e);
    },
  };
}

async function until(what: string, f: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const unavailable = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return isDatastoreError(e, 'unavailable');
  }
  return false;
};

describe('Informer', () => {
  it('serves only once listed and while its watch is up, unless the caller allows stale reads', async () => {
    const h = handSource();
    const changes: string[] = [];
    const inf = new Informer<Item>({
      source: h.source,
      versionOf: (i) => i.rv,
      retryMs: 5,
      onChange: (c) => changes.push(`${c.kind} ${keyOf(c.item)}@${c.item.rv}`),
    });
    expect(unavailable(() => inf.list())).toBe(true);
    h.lists.push({ items: [item('a', 1), item('b', 2)], revision: '2' });
    inf.start();
    await inf.synced();
    expect(inf.serving).toBe(true);
    expect(names(inf.list())).toEqual(['a@1', 'b@2']);

    h.emit({ kind: 'set', item: item('a', 3) });
    h.emit({ kind: 'delete', item: item('b', 2) });
    await until('the events', () => inf.get('b') === undefined);
    expect(inf.get('a')?.rv).toBe('3');

    h.emit({ kind: 'disconnected', error: new Error('lost') });
    await until('down', () => !inf.serving);
    expect(unavailable(() => inf.get('a'))).toBe(true);
    expect(unavailable(() => inf.byIndex('x', 'y'))).toBe(true);
    expect(inf.get('a', { allowStale: true })?.rv).toBe('3');
    h.emit({ kind: 'reconnected' });
    await until('up', () => inf.serving);

    // The watch breaks for good: down until a fresh list, which replaces what is held.
    h.emit('end');
    await until('down after the break', () => !inf.serving);
    h.lists.push({ items: [item('a', 3), item('c', 9)], revision: '9' });
    await until('relisted', () => inf.serving);
    expect(names(inf.list())).toEqual(['a@3', 'c@9']);
    expect(h.listCalls()).toBeGreaterThanOrEqual(2);
    expect(changes).toEqual(['set a@1', 'set b@2', 'set a@3', 'delete b@2', 'set c@9']);
    await inf.stop();
    expect(inf.serving).toBe(false);
  });

  it('a resync replaces everything: an item it lacks goes even after a newer own write', async () => {
    const h = handSource();
    const inf = new Informer<Item>({ source: h.source, versionOf: (i) => i.rv, retryMs: 5 });
    h.lists.push({ items: [item('a', 1)], revision: '1' });
    inf.start();
    await inf.synced();
    inf.wrote(item('a', 5));
    inf.wrote(item('n', 6));
    expect(inf.get('a')?.rv).toBe('5');
    // A watch event from before the own write changes nothing.
    h.emit({ kind: 'set', item: item('a', 4) });
    h.emit({ kind: 'resync', items: [item('a', 7)] });
    await until('resync', () => inf.get('a')?.rv === '7');
    expect(names(inf.list())).toEqual(['a@7']);
    inf.removed('a', '7');
    expect(inf.get('a')).toBeUndefined();
    await inf.stop();
  });
});
