import {
  type KV,
  type KVStore,
  type KVWatchMessage,
  type KVWatchOptions,
  MemoryKVStore,
} from '@calico-ts/datastore';
import { PushStream } from '@calico-ts/datastore/internal';
import { describe, expect, it, vi } from 'vitest';
import { KVReadMirror } from './kv-read-mirror.js';

const kv = (key: string, value: string, rev: number): KV => ({
  key,
  value,
  modRevision: String(rev),
  createRevision: String(rev),
});

/** A MemoryKVStore whose watches are fed by the test instead of by writes. */
function scriptedWatches(store: MemoryKVStore) {
  const streams: { prefix: string; from?: string; stream: PushStream<KVWatchMessage> }[] = [];
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      if (name === 'watch') {
        return (prefix: string, opts: KVWatchOptions = {}) => {
          const stream = new PushStream<KVWatchMessage>(() => undefined, opts.signal);
          streams.push({ prefix, ...(opts.fromRevision ? { from: opts.fromRevision } : {}), stream });
          return stream;
        };
      }
      const v = Reflect.get(target, name, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as KVStore;
  const watchOf = (prefix: string) => {
    const w = streams.find((s) => s.prefix === prefix);
    if (!w) throw new Error(`no watch on ${prefix}`);
    return w.stream;
  };
  return { proxy, streams, watchOf };
}

const values = (results: KV[][] | undefined) => results?.map((kvs) => kvs.map((k) => `${k.key}=${k.value}`));

describe('KVReadMirror', () => {
  it('answers as readAll does, then follows writes by others, keys exact or by prefix', async () => {
    const store = new MemoryKVStore();
    await store.put('/n/n1', 'node');
    await store.put('/pools/a', 'A');
    const reads = [{ key: '/n/n1' }, { key: '/pools/', prefix: true }];
    const m = await KVReadMirror.open(store, reads);
    try {
      expect(m.results()).toEqual((await store.readAll(reads)).results);
      await store.put('/n/n10', 'another node: not under the exact key /n/n1');
      await store.put('/pools/b', 'B');
      await store.delete('/pools/a');
      await store.put('/n/n1', 'node v2');
      await vi.waitFor(() => expect(values(m.results())).toEqual([['/n/n1=node v2'], ['/pools/b=B']]));
      expect(m.results()).toEqual((await store.readAll(reads)).results);
    } finally {
      m.close();
    }
  });

  it("applies this process's own writes at once, and ignores older events that arrive after them", async () => {
    const { proxy, watchOf } = scriptedWatches(new MemoryKVStore());
    const m = await KVReadMirror.open(proxy, [{ key: '/aff/', prefix: true }]);
    const before = m.version;
    m.notePut(kv('/aff/b1', 'mine', 10));
    expect(values(m.results())).toEqual([['/aff/b1=mine']]);
    expect(m.version).toBeGreaterThan(before);
    // The watch lags: an older write of the same key, then the noted one itself.
    watchOf('/aff/').push({
      kind: 'events',
      revision: '7',
      events: [{ kind: 'put', kv: kv('/aff/b1', 'old', 7) }],
    });
    watchOf('/aff/').push({
      kind: 'events',
      revision: '10',
      events: [{ kind: 'put', kv: kv('/aff/b1', 'mine', 10) }],
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(values(m.results())).toEqual([['/aff/b1=mine']]);
    // A delete this process made, then a stale put from before it.
    m.noteDelete('/aff/b1', '10');
    watchOf('/aff/').push({
      kind: 'events',
      revision: '9',
      events: [{ kind: 'put', kv: kv('/aff/b1', 'older', 9) }],
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(values(m.results())).toEqual([[]]);
    // Someone else's later create shows.
    watchOf('/aff/').push({
      kind: 'events',
      revision: '12',
      events: [{ kind: 'put', kv: kv('/aff/b1', 'theirs', 12) }],
    });
    await vi.waitFor(() => expect(values(m.results())).toEqual([['/aff/b1=theirs']]));
    m.close();
  });

  it('answers nothing while a watch is disconnected, and again once it is back', async () => {
    const store = new MemoryKVStore();
    const { proxy, watchOf, streams } = scriptedWatches(store);
    const m = await KVReadMirror.open(proxy, [{ key: '/a' }, { key: '/p/', prefix: true }]);
    const next = String(Number(await store.revision()) + 1);
    expect(streams.map((s) => s.from)).toEqual([next, next]);
    watchOf('/p/').push({ kind: 'disconnected', error: new Error('connection reset') });
    await vi.waitFor(() => expect(m.results()).toBeUndefined());
    watchOf('/p/').push({ kind: 'reconnected' });
    await vi.waitFor(() => expect(m.results()).toEqual([[], []]));
    m.close();
  });

  it('replaces what it holds for a read when its watch resyncs after compaction', async () => {
    const store = new MemoryKVStore();
    await store.put('/p/old', 'x');
    const { proxy, watchOf } = scriptedWatches(store);
    const m = await KVReadMirror.open(proxy, [{ key: '/p/', prefix: true }]);
    watchOf('/p/').push({
      kind: 'resync',
      reason: 'compacted',
      list: { kvs: [kv('/p/new', 'y', 40)], revision: '41' },
    });
    await vi.waitFor(() => expect(values(m.results())).toEqual([['/p/new=y']]));
    // The deleted key's history is the resync's revision: an older event for it changes nothing.
    watchOf('/p/').push({
      kind: 'events',
      revision: '30',
      events: [{ kind: 'put', kv: kv('/p/old', 'x2', 30) }],
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(values(m.results())).toEqual([['/p/new=y']]);
    m.close();
  });

  it('stays down after its watch fails or the mirror is closed', async () => {
    const { proxy, watchOf } = scriptedWatches(new MemoryKVStore());
    const m = await KVReadMirror.open(proxy, [{ key: '/p/', prefix: true }]);
    watchOf('/p/').fail(new Error('permission denied'));
    await vi.waitFor(() => expect(m.results()).toBeUndefined());
    const m2 = await KVReadMirror.open(new MemoryKVStore(), [{ key: '/p/', prefix: true }]);
    expect(m2.results()).toEqual([[]]);
    m2.close();
    expect(m2.results()).toBeUndefined();
    m.close();
  });
});

describe('KVReadMirror.open', () => {
  it('rejects, and leaves no watch running, when the store closes between its read and its watches', async () => {
    const store = new MemoryKVStore();
    const signals: AbortSignal[] = [];
    let watches = 0;
    const proxy = new Proxy(store, {
      get(target, name, receiver) {
        if (name === 'watch') {
          return (prefix: string, opts: KVWatchOptions = {}) => {
            if (++watches === 2) throw new Error('store closed');
            if (opts.signal) signals.push(opts.signal);
            return target.watch(prefix, opts);
          };
        }
        const v = Reflect.get(target, name, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as KVStore;
    await expect(KVReadMirror.open(proxy, [{ key: '/a' }, { key: '/b' }])).rejects.toThrow('store closed');
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
  });
});
