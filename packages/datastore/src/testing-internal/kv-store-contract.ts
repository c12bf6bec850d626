/**
 * The KVStore contract, one test body run against every implementation (MemoryKVStore in unit
 * tests, EtcdKVStore against a real etcd in integration tests). Each test works under its own
 * fresh prefix, so a shared server is fine.
 */
import { describe, expect, it } from 'vitest';
import { isDatastoreError } from '../errors.js';
import type { KVStore, KVWatchMessage } from '../kv/kv-store.js';

export interface KVContractEnv {
  store(): KVStore;
  /** Forget history before `revision`, the way the backend does it. */
  compact(revision: string): Promise<void>;
}

let counter = 0;
export function freshPrefix(): string {
  counter++;
  return `/contract/${process.pid}-${Date.now().toString(36)}-${counter}/`;
}

export async function codeOf(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'resolved',
    (e: unknown) => (isDatastoreError(e) ? e.code : `non-datastore error: ${String(e)}`),
  );
}

/** Read messages until `pred` says enough, failing after `ms` instead of hanging. */
export async function collect(
  it: AsyncIterator<KVWatchMessage>,
  pred: (msgs: KVWatchMessage[]) => boolean,
  ms = 10_000,
): Promise<KVWatchMessage[]> {
  const out: KVWatchMessage[] = [];
  const deadline = Date.now() + ms;
  while (!pred(out)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`watch gave only: ${out.map((m) => summarize(m)).join(' | ')}`);
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([
      it.next(),
      new Promise<'timeout'>((res) => {
        timer = setTimeout(() => res('timeout'), left);
      }),
    ]);
    clearTimeout(timer);
    if (r === 'timeout') continue;
    if (r.done) throw new Error(`watch ended after: ${out.map((m) => summarize(m)).join(' | ')}`);
    out.push(r.value);
  }
  return out;
}

/** One line per message, revisions relative to nothing: `put /k=v`, `del /k`, `resync[...]`. */
export function summarize(m: KVWatchMessage, strip = ''): string {
  const k = (key: string) => (strip && key.startsWith(strip) ? key.slice(strip.length) : key);
  switch (m.kind) {
    case 'events':
      return m.events
        .map((e) => (e.kind === 'put' ? `put ${k(e.kv.key)}=${e.kv.value}` : `del ${k(e.key)}`))
        .join(',');
    case 'resync':
      return `resync[${m.list.kvs.map((kv) => `${k(kv.key)}=${kv.value}`).join(',')}]`;
    default:
      return m.kind;
  }
}

export function eventsOnly(msgs: KVWatchMessage[]): Extract<KVWatchMessage, { kind: 'events' }>[] {
  return msgs.filter((m): m is Extract<KVWatchMessage, { kind: 'events' }> => m.kind === 'events');
}

export function kvStoreContract(name: string, env: KVContractEnv): void {
  describe(`KVStore contract: ${name}`, () => {
    it('stamps one store-wide revision per write, with create and mod revisions', async () => {
      const s = env.store();
      const p = freshPrefix();
      const before = Number(await s.revision());
      const a = await s.create(`${p}a`, '1');
      const b = await s.put(`${p}b`, '2');
      const a2 = await s.update(`${p}a`, '3', a.modRevision);
      expect(Number(a.modRevision)).toBe(before + 1);
      expect(Number(b.modRevision)).toBe(before + 2);
      expect(a.createRevision).toBe(a.modRevision);
      expect(a2).toEqual({
        key: `${p}a`,
        value: '3',
        modRevision: String(before + 3),
        createRevision: a.modRevision,
      });
      expect(await s.get(`${p}a`)).toEqual(a2);
      expect(await s.get(`${p}missing`)).toBeUndefined();
      const b2 = await s.put(`${p}b`, '4');
      expect(b2.createRevision).toBe(b.modRevision);
      expect(await s.revision()).toBe(b2.modRevision);
    });

    it('create of an existing key fails already-exists and writes nothing', async () => {
      const s = env.store();
      const p = freshPrefix();
      const a = await s.create(`${p}a`, 'first');
      expect(await codeOf(s.create(`${p}a`, 'second'))).toBe('already-exists');
      expect(await s.get(`${p}a`)).toEqual(a);
    });

    it('update is compare-and-swap on modRevision', async () => {
      const s = env.store();
      const p = freshPrefix();
      const a = await s.create(`${p}a`, '1');
      const a2 = await s.update(`${p}a`, '2', a.modRevision);
      expect(await codeOf(s.update(`${p}a`, 'stale', a.modRevision))).toBe('conflict');
      expect(await codeOf(s.update(`${p}nope`, 'x', a.modRevision))).toBe('not-found');
      expect(await codeOf(s.update(`${p}a`, 'x', 'not-a-number'))).toBe('invalid');
      expect((await s.get(`${p}a`))?.value).toBe('2');
      expect((await s.get(`${p}a`))?.modRevision).toBe(a2.modRevision);
    });

    it('writeAll: creates and compare-and-swaps as one transaction, one revision, all or nothing', async () => {
      const s = env.store();
      const p = freshPrefix();
      const a = await s.create(`${p}a`, '1');
      const before = Number(await s.revision());
      const [a2, b] = await s.writeAll([
        { key: `${p}a`, value: '2', modRevision: a.modRevision },
        { key: `${p}b`, value: 'new' },
      ]);
      expect(a2).toEqual({
        key: `${p}a`,
        value: '2',
        modRevision: String(before + 1),
        createRevision: a.modRevision,
      });
      expect(b).toEqual({
        key: `${p}b`,
        value: 'new',
        modRevision: String(before + 1),
        createRevision: String(before + 1),
      });
      expect(await s.get(`${p}b`)).toEqual(b);

      // A stale revision anywhere: nothing is written, and the error names that key.
      const stale = s.writeAll([
        { key: `${p}c`, value: 'never' },
        { key: `${p}a`, value: 'x', modRevision: a.modRevision },
      ]);
      expect(await codeOf(stale)).toBe('conflict');
      expect(await s.get(`${p}c`)).toBeUndefined();
      // A create of an existing key: already-exists, nothing written.
      expect(await codeOf(s.writeAll([{ key: `${p}b`, value: 'again' }]))).toBe('already-exists');
      expect(await codeOf(s.writeAll([{ key: `${p}zz`, value: 'x', modRevision: a2.modRevision }]))).toBe(
        'not-found',
      );
      expect((await s.get(`${p}a`))?.value).toBe('2');
      expect((await s.get(`${p}b`))?.value).toBe('new');
      expect(await s.writeAll([])).toEqual([]);
    });

    it('readAll: gets and lists in one request, at one revision', async () => {
      const s = env.store();
      const p = freshPrefix();
      const a = await s.create(`${p}a`, '1');
      const b1 = await s.create(`${p}b/1`, 'x');
      const b2 = await s.create(`${p}b/2`, 'y');
      await s.create(`${p}c`, 'not under b/');
      const r = await s.readAll([
        { key: `${p}a` },
        { key: `${p}missing` },
        { key: `${p}b/`, prefix: true },
        { key: `${p}none/`, prefix: true },
      ]);
      expect(r.results).toEqual([[a], [], [b1, b2], []]);
      expect(r.revision).toBe(await s.revision());
    });

    it('readAll keysOnly: keys and revisions, every value empty', async () => {
      const s = env.store();
      const p = freshPrefix();
      const a = await s.create(`${p}a`, '1');
      const b1 = await s.create(`${p}b/1`, 'x');
      const b2 = await s.create(`${p}b/2`, 'y');
      const r = await s.readAll([
        { key: `${p}a`, keysOnly: true },
        { key: `${p}b/`, prefix: true, keysOnly: true },
        { key: `${p}b/`, prefix: true },
      ]);
      expect(r.results).toEqual([
        [{ ...a, value: '' }],
        [
          { ...b1, value: '' },
          { ...b2, value: '' },
        ],
        [b1, b2],
      ]);
    });

    it('exactly one of two racing updates from the same revision wins', async () => {
      const s = env.store();
      const p = freshPrefix();
      const a = await s.create(`${p}a`, '0');
      const results = await Promise.all([
        codeOf(s.update(`${p}a`, 'x', a.modRevision)),
        codeOf(s.update(`${p}a`, 'y', a.modRevision)),
      ]);
      expect(results.sort()).toEqual(['conflict', 'resolved']);
    });

    it('delete: unconditional or CAS; returns the deleted KV; absent is not-found', async () => {
      const s = env.store();
      const p = freshPrefix();
      const a = await s.create(`${p}a`, '1');
      const a2 = await s.put(`${p}a`, '2');
      expect(await codeOf(s.delete(`${p}a`, a.modRevision))).toBe('conflict');
      expect(await s.delete(`${p}a`, a2.modRevision)).toEqual(a2);
      expect(await codeOf(s.delete(`${p}a`))).toBe('not-found');
      expect(await codeOf(s.delete(`${p}a`, a2.modRevision))).toBe('not-found');
      const b = await s.put(`${p}b`, 'b');
      expect(await s.delete(`${p}b`)).toEqual(b);
      const again = await s.create(`${p}a`, 'new');
      expect(again.createRevision).toBe(again.modRevision);
    });

    it('lists exactly the prefix, sorted by key, with the store revision', async () => {
      const s = env.store();
      const p = freshPrefix();
      for (const k of ['b', 'a', 'c/d', 'a0']) await s.put(`${p}${k}`, k);
      await s.put(p.slice(0, -1), 'parent-without-slash');
      const l = await s.list(p);
      expect(l.kvs.map((kv) => kv.key.slice(p.length))).toEqual(['a', 'a0', 'b', 'c/d']);
      expect(l.revision).toBe(await s.revision());
      expect((await s.list(`${p}zzz`)).kvs).toEqual([]);
    });

    it('a watch from a revision replays every later change under the prefix, in order', async () => {
      const s = env.store();
      const p = freshPrefix();
      const a = await s.create(`${p}a`, '1');
      await s.put(`${freshPrefix()}other`, 'x');
      await s.update(`${p}a`, '2', a.modRevision);
      const ac = new AbortController();
      const it = s.watch(p, { fromRevision: a.modRevision, signal: ac.signal })[Symbol.asyncIterator]();
      await s.delete(`${p}a`);
      await s.create(`${p}b`, 'b');
      const msgs = await collect(it, (m) => eventsOnly(m).length >= 4);
      ac.abort();
      expect(eventsOnly(msgs).map((m) => summarize(m, p))).toEqual([
        'put a=1',
        'put a=2',
        'del a',
        'put b=b',
      ]);
      const revs = eventsOnly(msgs).map((m) => Number(m.revision));
      expect(revs).toEqual([...revs].sort((x, y) => x - y));
      expect(revs[0]).toBe(Number(a.modRevision));
      const del = eventsOnly(msgs)[2]!.events[0]!;
      expect(del.kind === 'delete' && del.prev?.value).toBe('2');
      const upd = eventsOnly(msgs)[1]!.events[0]!;
      expect(upd.kind === 'put' && upd.prev?.value).toBe('1');
    });

    it('a watch without a revision reports only what happens after it started', async () => {
      const s = env.store();
      const p = freshPrefix();
      await s.put(`${p}a`, 'before');
      const ac = new AbortController();
      const w = s.watch(p, { signal: ac.signal });
      const it = w[Symbol.asyncIterator]();
      // Give a remote watch time to be established before writing.
      await new Promise((r) => setTimeout(r, 200));
      await s.put(`${p}a`, 'after');
      const msgs = await collect(it, (m) => eventsOnly(m).length >= 1);
      ac.abort();
      expect(eventsOnly(msgs).map((m) => summarize(m, p))).toEqual(['put a=after']);
    });

    it('a watch from a compacted revision yields resync with the current state, then continues', async () => {
      const s = env.store();
      const p = freshPrefix();
      const first = await s.put(`${p}a`, '1');
      await s.put(`${p}b`, '1');
      await s.delete(`${p}a`);
      const last = await s.put(`${p}b`, '2');
      await env.compact(last.modRevision);
      const ac = new AbortController();
      const it = s.watch(p, { fromRevision: first.modRevision, signal: ac.signal })[Symbol.asyncIterator]();
      const head = await collect(it, (m) => m.length >= 1);
      await s.put(`${p}c`, '3');
      const rest = await collect(it, (m) => eventsOnly(m).length >= 1);
      ac.abort();
      expect(head.map((m) => summarize(m, p))).toEqual(['resync[b=2]']);
      const resync = head[0]!;
      expect(resync.kind === 'resync' && Number(resync.list.revision)).toBeGreaterThanOrEqual(
        Number(last.modRevision),
      );
      expect(eventsOnly(rest).map((m) => summarize(m, p))).toEqual(['put c=3']);
    });

    it('a watch ends when its signal aborts', async () => {
      const s = env.store();
      const p = freshPrefix();
      const ac = new AbortController();
      const seen: string[] = [];
      const done = (async () => {
        for await (const m of s.watch(p, { signal: ac.signal })) seen.push(summarize(m, p));
      })();
      await new Promise((r) => setTimeout(r, 200));
      await s.put(`${p}a`, '1');
      for (let i = 0; i < 100 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      ac.abort();
      await done;
      expect(seen).toEqual(['put a=1']);
    });
  });
}
