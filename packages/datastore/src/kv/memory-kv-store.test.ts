import { describe, expect, it } from 'vitest';
import { isDatastoreError } from '../errors.js';
import type { KVWatchMessage } from './kv-store.js';
import { MemoryKVStore } from './memory-kv-store.js';

/** Collect `n` messages from a watch, failing after a short time instead of hanging. */
async function take(iterable: AsyncIterable<KVWatchMessage>, n: number): Promise<KVWatchMessage[]> {
  const out: KVWatchMessage[] = [];
  const it = iterable[Symbol.asyncIterator]();
  while (out.length < n) {
    const r = await Promise.race([
      it.next(),
      new Promise<never>((_, rej) =>
        setTimeout(() => rej(new Error(`only ${out.length} of ${n} messages`)), 500),
      ),
    ]);
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

function summary(m: KVWatchMessage): string {
  switch (m.kind) {
    case 'events':
      return m.events
        .map((e) =>
          e.kind === 'put'
            ? `put ${e.kv.key}=${e.kv.value}@${e.kv.modRevision}`
            : `del ${e.key}@${e.modRevision}`,
        )
        .join(',');
    case 'resync':
      return `resync@${m.list.revision}:${m.list.kvs.map((kv) => `${kv.key}=${kv.value}`).join(',')}`;
    default:
      return m.kind;
  }
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isDatastoreError(e) ? e.code : e).toBe(code);
}

describe('MemoryKVStore', () => {
  it('starts at revision 1 and bumps one global revision per write', async () => {
    const s = new MemoryKVStore();
    expect(await s.revision()).toBe('1');
    const a = await s.create('/a', 'x');
    const b = await s.put('/b', 'y');
    const a2 = await s.update('/a', 'x2', a.modRevision);
    expect([a.modRevision, b.modRevision, a2.modRevision]).toEqual(['2', '3', '4']);
    expect(a2.createRevision).toBe('2');
    expect(await s.revision()).toBe('4');
    expect(await s.get('/a')).toEqual({ key: '/a', value: 'x2', modRevision: '4', createRevision: '2' });
  });

  it('create fails already-exists and changes nothing', async () => {
    const s = new MemoryKVStore();
    await s.create('/a', 'x');
    await rejectsWith(s.create('/a', 'y'), 'already-exists');
    expect(s.dump()).toEqual({ revision: '2', compactRevision: '0', kvs: { '/a': 'x' } });
  });

  it('update is compare-and-swap on modRevision', async () => {
    const s = new MemoryKVStore();
    const a = await s.create('/a', '1');
    await s.update('/a', '2', a.modRevision);
    await rejectsWith(s.update('/a', '3', a.modRevision), 'conflict');
    await rejectsWith(s.update('/missing', '3', '2'), 'not-found');
    await rejectsWith(s.update('/a', '3', 'abc'), 'invalid');
    expect(s.dump().kvs).toEqual({ '/a': '2' });
  });

  it('delete is unconditional or CAS, returns the deleted KV, and resets createRevision on re-create', async () => {
    const s = new MemoryKVStore();
    const a = await s.create('/a', '1');
    await s.put('/a', '2');
    await rejectsWith(s.delete('/a', a.modRevision), 'conflict');
    const gone = await s.delete('/a', '3');
    expect(gone).toEqual({ key: '/a', value: '2', modRevision: '3', createRevision: '2' });
    await rejectsWith(s.delete('/a'), 'not-found');
    expect(await s.get('/a')).toBeUndefined();
    const again = await s.create('/a', 'new');
    expect(again.createRevision).toBe('5');
  });

  it('lists a prefix sorted by UTF-8 bytes at the current revision', async () => {
    const s = new MemoryKVStore();
    for (const k of ['/p/b', '/p/a', '/q/x', '/p/\u{1F600}', '/p/\uFFFD', '/p']) await s.put(k, k);
    const l = await s.list('/p/');
    expect(l.kvs.map((kv) => kv.key)).toEqual(['/p/a', '/p/b', '/p/\uFFFD', '/p/\u{1F600}']);
    expect(l.revision).toBe('7');
    expect((await s.list('')).kvs).toHaveLength(6);
  });

  it('watch from a revision replays history in order, then follows live writes under the prefix', async () => {
    const s = new MemoryKVStore();
    const a = await s.create('/w/a', '1'); // 2
    await s.put('/other', 'z'); // 3
    await s.update('/w/a', '2', a.modRevision); // 4
    const w = s.watch('/w/', { fromRevision: '2' });
    await s.delete('/w/a'); // 5
    await s.create('/w/b', 'b'); // 6
    const msgs = await take(w, 4);
    expect(msgs.map(summary)).toEqual(['put /w/a=1@2', 'put /w/a=2@4', 'del /w/a@5', 'put /w/b=b@6']);
    const del = msgs[2]!;
    expect(del.kind === 'events' && del.events[0]!.prev?.value).toBe('2');
    expect(msgs.map((m) => (m.kind === 'events' ? m.revision : ''))).toEqual(['2', '4', '5', '6']);
  });

  it('watch without a revision starts after now', async () => {
    const s = new MemoryKVStore();
    await s.put('/a', 'old');
    const w = s.watch('/');
    await s.put('/a', 'new');
    expect((await take(w, 1)).map(summary)).toEqual(['put /a=new@3']);
  });

  it('a watch from a compacted revision yields resync with the current state, then continues', async () => {
    const s = new MemoryKVStore();
    await s.put('/r/a', '1'); // 2
    await s.put('/r/b', '1'); // 3
    await s.delete('/r/a'); // 4
    await s.compact('4');
    await rejectsWith(s.compact('4'), 'compacted');
    await rejectsWith(s.compact('99'), 'invalid');
    const w = s.watch('/r/', { fromRevision: '2' });
    await s.put('/r/c', '1'); // 5
    expect((await take(w, 2)).map(summary)).toEqual(['resync@4:/r/b=1', 'put /r/c=1@5']);
    // From the compaction revision itself history is still there.
    expect((await take(s.watch('/r/', { fromRevision: '4' }), 2)).map(summary)).toEqual([
      'del /r/a@4',
      'put /r/c=1@5',
    ]);
  });

  it('bounded history compacts itself', async () => {
    const s = new MemoryKVStore({ historyLimit: 3 });
    for (let i = 0; i < 6; i++) await s.put('/k', String(i)); // revisions 2..7
    expect(s.dump().compactRevision).toBe('5');
    expect((await take(s.watch('/', { fromRevision: '4' }), 1)).map(summary)).toEqual(['resync@7:/k=5']);
    expect((await take(s.watch('/', { fromRevision: '5' }), 3)).map(summary)).toEqual([
      'put /k=3@5',
      'put /k=4@6',
      'put /k=5@7',
    ]);
  });

  it('a watch ends on abort and on close', async () => {
    const s = new MemoryKVStore();
    const ac = new AbortController();
    const w = s.watch('/', { signal: ac.signal });
    const seen: string[] = [];
    const done = (async () => {
      for await (const m of w) seen.push(summary(m));
    })();
    await s.put('/a', '1');
    await new Promise((r) => setTimeout(r, 5));
    ac.abort();
    await done;
    await s.put('/a', '2');
    expect(seen).toEqual(['put /a=1@2']);

    const w2 = s.watch('/');
    const done2 = (async () => {
      for await (const _ of w2) {
        /* drain */
      }
    })();
    await s.close();
    await done2;
    await rejectsWith(s.get('/a'), 'unavailable');
  });

  it('interrupted watches report disconnected/reconnected and lose nothing', async () => {
    const s = new MemoryKVStore();
    const w = s.watch('/');
    await s.put('/a', '1');
    s.interruptWatches();
    await s.put('/a', '2');
    expect((await take(w, 4)).map(summary)).toEqual([
      'put /a=1@2',
      'disconnected',
      'reconnected',
      'put /a=2@3',
    ]);
  });

  it('returned KVs are frozen snapshots', async () => {
    const s = new MemoryKVStore();
    const kv = await s.put('/a', '1');
    expect(Object.isFrozen(kv)).toBe(true);
    await s.put('/a', '2');
    expect(kv.value).toBe('1');
  });
});
