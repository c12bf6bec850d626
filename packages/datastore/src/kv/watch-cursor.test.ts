/**
 * The watch bookkeeping the stores share, seen from the consumer: what `WatchCursor` delivers and
 * where it resumes, when `WatchLink` reports the connection, how `RetryDelay` paces retries, and
 * what `StoreLifecycle.close()` does to open watches.
 */
import { describe, expect, it } from 'vitest';
import { DatastoreError } from '../errors.js';
import type { KVEvent, KVWatchMessage } from './kv-store.js';
import { PushStream } from './push-stream.js';
import { StoreLifecycle } from './store-lifecycle.js';
import { WatchCursor, watchStart } from './watch-cursor.js';
import { RetryDelay, WatchLink } from './watch-link.js';

interface Ev {
  key: string;
  rev: number;
}
const put = (e: Ev): KVEvent => ({
  kind: 'put',
  kv: { key: e.key, value: 'v', modRevision: String(e.rev), createRevision: String(e.rev) },
});

/** What the consumer sees: every message until the stream ends or fails. */
async function drain(stream: AsyncIterable<KVWatchMessage>): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const m of stream) {
      if (m.kind === 'events')
        out.push(`${m.revision}:${m.events.map((e) => (e.kind === 'put' ? e.kv.key : e.key)).join('+')}`);
      else if (m.kind === 'resync') out.push(`resync@${m.list.revision}`);
      else out.push(m.kind);
    }
  } catch (e) {
    out.push(`error ${(e as DatastoreError).code}`);
  }
  return out;
}

function cursor(from?: number): WatchCursor {
  return new WatchCursor(new PushStream<KVWatchMessage>(() => undefined), from);
}

describe('WatchCursor', () => {
  it('delivers one message per revision and never an event twice across a reconnect', async () => {
    const c = cursor();
    c.connected(9);
    expect(c.next).toBe(10);
    c.deliver(
      [
        { key: 'a', rev: 10 },
        { key: 'b', rev: 10 },
        { key: 'c', rev: 11 },
      ],
      (e) => e.rev,
      put,
    );
    expect(c.next).toBe(12);
    c.down(new DatastoreError('unavailable', 'lost'));
    c.down(new DatastoreError('unavailable', 'lost again'));
    c.connected(20);
    // The server replays from an older revision: what was delivered is dropped.
    c.deliver(
      [
        { key: 'c', rev: 11 },
        { key: 'd', rev: 12 },
      ],
      (e) => e.rev,
      put,
    );
    c.stream.end();
    expect(await drain(c.stream)).toEqual(['10:a+b', '11:c', 'disconnected', 'reconnected', '12:d']);
  });

  it("starts from the asked revision, not from the server's now", () => {
    const c = cursor(5);
    c.connected(40);
    expect(c.next).toBe(5);
  });

  it('retries only an unavailable etcd of an open store; anything else ends the stream', async () => {
    const a = cursor(1);
    expect(a.lost(new DatastoreError('unavailable', 'down'), false)).toBe(true);
    a.stream.end();
    expect(await drain(a.stream)).toEqual(['disconnected']);

    const b = cursor(1);
    expect(b.lost(new DatastoreError('unauthorized', 'no'), false)).toBe(false);
    expect(await drain(b.stream)).toEqual(['error unauthorized']);

    const c = cursor(1);
    expect(c.lost(new DatastoreError('unavailable', 'closed'), true)).toBe(false);
    expect(c.done).toBe(true);
  });

  it('after a compaction delivers the fresh list and goes on after its revision', async () => {
    const c = cursor(3);
    expect(await c.resyncFrom(async () => ({ kvs: [], revision: '17' }))).toBe(true);
    expect(c.next).toBe(18);
    c.stream.end();
    expect(await c.resyncFrom(async () => ({ kvs: [], revision: '30' }))).toBe(false);
    expect(await drain(c.stream)).toEqual(['resync@17']);
  });

  it('reads a start revision: none and 0 mean now, anything not a revision is refused', () => {
    expect(watchStart(undefined)).toBeUndefined();
    expect(watchStart('0')).toBeUndefined();
    expect(watchStart('42')).toBe(42);
    expect(() => watchStart('x')).toThrow(/fromRevision must be a decimal revision/);
  });
});

describe('WatchLink and RetryDelay', () => {
  it('says reconnected only after disconnected', () => {
    const seen: string[] = [];
    const link = new WatchLink((m) => seen.push(m.kind));
    link.up();
    link.down(new Error('x'));
    link.down(new Error('y'));
    link.up();
    link.up();
    expect(seen).toEqual(['disconnected', 'reconnected']);
  });

  it('doubles the pause up to its limit and starts over after a reset', () => {
    const d = new RetryDelay(100, 350);
    expect([d.next(), d.next(), d.next(), d.next()]).toEqual([100, 200, 350, 350]);
    d.reset();
    expect(d.next()).toBe(100);
  });
});

describe('StoreLifecycle', () => {
  it('ends every open watch on close, forgets ended ones, then refuses calls naming the store', async () => {
    const life = new StoreLifecycle('etcd http://198.18.0.1:2379');
    const stopped: string[] = [];
    const a = life.openStream(() => stopped.push('a'));
    const b = life.openStream(() => stopped.push('b'));
    a.push({ kind: 'reconnected' });
    await b.return();
    expect(stopped).toEqual(['b']);
    expect(life.close()).toBe(true);
    expect(life.close()).toBe(false);
    expect(stopped).toEqual(['b', 'a']);
    expect(await drain(a)).toEqual(['reconnected']);
    expect(life.isClosed).toBe(true);
    expect(() => life.checkOpen()).toThrow('etcd http://198.18.0.1:2379: the client is closed');
  });
});
