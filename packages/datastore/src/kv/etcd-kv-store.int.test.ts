import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EtcdServer, etcdAvailable, startEtcd } from '../testing/index.js';
import {
  codeOf,
  collect,
  eventsOnly,
  freshPrefix,
  kvStoreContract,
  summarize,
} from '../testing-internal/kv-store-contract.js';
import { EtcdKVStore } from './etcd-kv-store.js';

describe.skipIf(!etcdAvailable())('EtcdKVStore against a real etcd', () => {
  let etcd: EtcdServer;
  let store: EtcdKVStore;
  beforeAll(async () => {
    etcd = await startEtcd();
    store = new EtcdKVStore({ endpoints: etcd.endpoints });
  });
  afterAll(async () => {
    await store?.close();
    await etcd?.stop();
  });

  kvStoreContract('EtcdKVStore', { store: () => store, compact: (r) => etcd.compact(r) });

  it('writes exactly the bytes given, readable by etcdctl', async () => {
    const p = freshPrefix();
    await store.create(`${p}k`, '{"a":"ü & <b>"}');
    const r = await etcd.etcdctl(['get', '--prefix', p]);
    expect(r).toEqual({ stdout: `${p}k\n{"a":"ü & <b>"}\n`, stderr: '', code: 0 });
  });

  it('a watch resumes across an etcd restart with no gap and no duplicate', async () => {
    const p = freshPrefix();
    const first = await store.put(`${p}n`, '0');
    const ac = new AbortController();
    const it = store.watch(p, { fromRevision: first.modRevision, signal: ac.signal })[Symbol.asyncIterator]();
    for (let i = 1; i <= 20; i++) await store.put(`${p}n`, String(i));
    await collect(it, (m) => eventsOnly(m).length >= 21).then((m) =>
      expect(eventsOnly(m).map((x) => summarize(x, p))).toEqual(
        Array.from({ length: 21 }, (_, i) => `put n=${i}`),
      ),
    );
    await etcd.restart();
    // The client comes back on its own; retry writes until it has.
    for (let i = 21; i <= 40; i++) {
      for (let attempt = 0; ; attempt++) {
        try {
          await store.put(`${p}n`, String(i));
          break;
        } catch (e) {
          if (attempt > 50) throw e;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
    const after = await collect(it, (m) => eventsOnly(m).length >= 20, 20_000);
    ac.abort();
    expect(eventsOnly(after).map((x) => summarize(x, p))).toEqual(
      Array.from({ length: 20 }, (_, i) => `put n=${i + 21}`),
    );
    const kinds = after.map((m) => m.kind).filter((k) => k !== 'events');
    expect(kinds).toEqual(['disconnected', 'reconnected']);
  }, 60_000);
});

describe.skipIf(!etcdAvailable())('EtcdKVStore failures', () => {
  it('reports unavailable when etcd is down, and works again when it is back', async () => {
    await using etcd = await startEtcd();
    const store = new EtcdKVStore({ endpoints: etcd.endpoints, dialTimeoutMs: 2000, requestTimeoutMs: 2000 });
    try {
      await store.put('/x', '1');
      const ac = new AbortController();
      const it = store.watch('/', { signal: ac.signal })[Symbol.asyncIterator]();
      await new Promise((r) => setTimeout(r, 200));
      await etcd.restart().then(() => undefined);
      await etcd.etcdctl(['put', '/y', '2']);
      const msgs = await collect(it, (m) => eventsOnly(m).length >= 1, 20_000);
      ac.abort();
      expect(msgs.map((m) => summarize(m))).toEqual(['disconnected', 'reconnected', 'put /y=2']);
      const down = msgs[0]!;
      expect(down.kind === 'disconnected' && (down.error as { code?: string }).code).toBe('unavailable');
    } finally {
      await store.close();
    }
    const s2 = new EtcdKVStore({
      endpoints: ['http://127.0.0.1:1'],
      dialTimeoutMs: 1000,
      requestTimeoutMs: 1000,
    });
    expect(await codeOf(s2.get('/x'))).toBe('unavailable');
    await s2.close();
    expect(await codeOf(s2.get('/x'))).toBe('unavailable');
  }, 60_000);

  it('TLS: client certificates work; without one the connection is refused', async () => {
    await using etcd = await startEtcd({ tls: true });
    const tls = etcd.tls!;
    expect(etcd.clientUrl.startsWith('https://')).toBe(true);
    const good = new EtcdKVStore({
      endpoints: etcd.endpoints,
      tls: { ca: tls.ca, cert: tls.cert, key: tls.key },
    });
    const bad = new EtcdKVStore({ endpoints: etcd.endpoints, tls: { ca: tls.ca }, dialTimeoutMs: 2000 });
    try {
      const kv = await good.create('/tls/k', 'v');
      expect(kv.value).toBe('v');
      expect((await etcd.etcdctl(['get', '/tls/k', '--print-value-only'])).stdout).toBe('v\n');
      expect(['unauthorized', 'unavailable']).toContain(await codeOf(bad.get('/tls/k')));
      expect(await codeOf(bad.get('/tls/k'))).toBe('unauthorized');
    } finally {
      await good.close();
      await bad.close();
    }
  }, 60_000);

  it('rejects bad configuration at construction', () => {
    const cases: [string, () => unknown][] = [
      ['no endpoints', () => new EtcdKVStore({ endpoints: [] })],
      ['mixed schemes', () => new EtcdKVStore({ endpoints: ['http://a:1', 'https://b:2'] })],
      ['bad scheme', () => new EtcdKVStore({ endpoints: ['unix:///x'] })],
      [
        'cert without key',
        () => new EtcdKVStore({ endpoints: ['https://a:1'], tls: { cert: Buffer.from('x') } }),
      ],
      ['user without password', () => new EtcdKVStore({ endpoints: ['http://a:1'], username: 'u' })],
    ];
    for (const [what, make] of cases) {
      expect(() => make(), what).toThrow(expect.objectContaining({ code: 'config' }));
    }
  });
});
