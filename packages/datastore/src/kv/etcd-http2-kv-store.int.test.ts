/**
 * EtcdHttp2KVStore (etcd's gRPC over node:http2) against a real etcd 3.4: the same
 * KVStore contract the gRPC store and the memory store pass, the typed client and IPAM contracts on
 * top of it, and the transport's own cases — bytes as etcdctl sees them, both transports reading
 * each other's writes, a watch across a restart, etcd down, mutual TLS, user/password auth.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KVDatastore } from '../kv-datastore.js';
import { type EtcdServer, etcdAvailable, startEtcd } from '../testing/index.js';
import { datastoreContract } from '../testing-internal/datastore-contract.js';
import {
  codeOf,
  collect,
  eventsOnly,
  freshPrefix,
  kvStoreContract,
  summarize,
} from '../testing-internal/kv-store-contract.js';
import { EtcdHttp2KVStore } from './etcd-http2-kv-store.js';
import { EtcdKVStore } from './etcd-kv-store.js';

describe.skipIf(!etcdAvailable())('EtcdHttp2KVStore against a real etcd', () => {
  let etcd: EtcdServer;
  let store: EtcdHttp2KVStore;
  let ds: KVDatastore;
  beforeAll(async () => {
    etcd = await startEtcd();
    store = new EtcdHttp2KVStore({ endpoints: etcd.endpoints });
    ds = new KVDatastore(store, { backend: 'etcdv3' });
  });
  afterAll(async () => {
    await store?.close();
    await etcd?.stop();
  });

  kvStoreContract('EtcdHttp2KVStore', { store: () => store, compact: (r) => etcd.compact(r) });

  datastoreContract('KVDatastore over EtcdHttp2KVStore', {
    datastore: () => ds,
    newClient: async () =>
      new KVDatastore(new EtcdHttp2KVStore({ endpoints: etcd.endpoints }), { backend: 'etcdv3' }),
    kv: () => store,
    compact: (r) => etcd.compact(r),
  });

  it('writes exactly the bytes given, readable by etcdctl, and reads what etcdctl wrote', async () => {
    const p = freshPrefix();
    await store.create(`${p}k`, '{"a":"ü & <b>"}');
    const r = await etcd.etcdctl(['get', '--prefix', p]);
    expect(r).toEqual({ stdout: `${p}k\n{"a":"ü & <b>"}\n`, stderr: '', code: 0 });
    await etcd.etcdctl(['put', `${p}ü/empty`, '']);
    const got = await store.get(`${p}ü/empty`);
    expect(got?.value).toBe('');
    expect(got?.key).toBe(`${p}ü/empty`);
  });

  it('agrees with the gRPC store on every field of what it reads and writes', async () => {
    const grpc = new EtcdKVStore({ endpoints: etcd.endpoints });
    try {
      const p = freshPrefix();
      const a = await store.create(`${p}a`, 'x');
      const b = await grpc.put(`${p}b`, 'y');
      const a2 = await grpc.update(`${p}a`, 'x2', a.modRevision);
      expect(await store.get(`${p}a`)).toEqual(await grpc.get(`${p}a`));
      expect(await store.list(p)).toEqual(await grpc.list(p));
      expect(await store.get(`${p}a`)).toEqual(a2);
      expect(await store.delete(`${p}b`)).toEqual(b);
      expect(await store.revision()).toBe(await grpc.revision());
    } finally {
      await grpc.close();
    }
  });

  it('a key with a lease disappears when the lease runs out', async () => {
    const p = freshPrefix();
    const kv = await store.putWithTTL(`${p}ttl`, 'v', 1);
    expect(kv.value).toBe('v');
    expect(await store.get(`${p}ttl`)).toEqual(kv);
    const deadline = Date.now() + 10_000;
    while ((await store.get(`${p}ttl`)) !== undefined && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(await store.get(`${p}ttl`)).toBeUndefined();
  }, 20_000);

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

describe.skipIf(!etcdAvailable())('EtcdHttp2KVStore failures', () => {
  it('reports unavailable when etcd is down, and works again when it is back', async () => {
    await using etcd = await startEtcd();
    const store = new EtcdHttp2KVStore({
      endpoints: etcd.endpoints,
      dialTimeoutMs: 2000,
      requestTimeoutMs: 2000,
    });
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
    const s2 = new EtcdHttp2KVStore({
      endpoints: ['http://127.0.0.1:1'],
      dialTimeoutMs: 1000,
      requestTimeoutMs: 1000,
    });
    expect(await codeOf(s2.get('/x'))).toBe('unavailable');
    await s2.close();
    expect(await codeOf(s2.get('/x'))).toBe('unavailable');
  }, 60_000);

  it('moves on to the next endpoint when one does not answer', async () => {
    await using etcd = await startEtcd();
    const store = new EtcdHttp2KVStore({ endpoints: ['http://127.0.0.1:1', ...etcd.endpoints] });
    try {
      const kv = await store.put('/multi', 'v');
      expect(await store.get('/multi')).toEqual(kv);
    } finally {
      await store.close();
    }
  }, 30_000);

  it('TLS: client certificates work; without one the connection is refused', async () => {
    await using etcd = await startEtcd({ tls: true });
    const tls = etcd.tls!;
    expect(etcd.clientUrl.startsWith('https://')).toBe(true);
    const good = new EtcdHttp2KVStore({
      endpoints: etcd.endpoints,
      tls: { ca: tls.ca, cert: tls.cert, key: tls.key },
    });
    const bad = new EtcdHttp2KVStore({ endpoints: etcd.endpoints, tls: { ca: tls.ca }, dialTimeoutMs: 2000 });
    const untrusting = new EtcdHttp2KVStore({
      endpoints: etcd.endpoints,
      tls: { cert: tls.cert, key: tls.key },
      dialTimeoutMs: 2000,
    });
    try {
      const kv = await good.create('/tls/k', 'v');
      expect(kv.value).toBe('v');
      expect((await etcd.etcdctl(['get', '/tls/k', '--print-value-only'])).stdout).toBe('v\n');
      expect(await good.get('/tls/k')).toEqual(kv);
      expect(await codeOf(bad.get('/tls/k'))).toBe('unauthorized');
      expect(await codeOf(untrusting.get('/tls/k'))).toBe('unauthorized');
    } finally {
      await good.close();
      await bad.close();
      await untrusting.close();
    }
  }, 60_000);

  it('user and password: a token from etcd; a wrong password is unauthorized', async () => {
    await using etcd = await startEtcd();
    for (const args of [
      ['user', 'add', 'root:rootpw'],
      ['role', 'add', 'root'],
      ['user', 'grant-role', 'root', 'root'],
      ['auth', 'enable'],
    ]) {
      const r = await etcd.etcdctl(args);
      expect(r.code, r.stderr).toBe(0);
    }
    const good = new EtcdHttp2KVStore({ endpoints: etcd.endpoints, username: 'root', password: 'rootpw' });
    const wrong = new EtcdHttp2KVStore({ endpoints: etcd.endpoints, username: 'root', password: 'nope' });
    const anonymous = new EtcdHttp2KVStore({ endpoints: etcd.endpoints });
    try {
      const kv = await good.put('/auth/k', 'v');
      expect(await good.get('/auth/k')).toEqual(kv);
      expect(await codeOf(wrong.get('/auth/k'))).toBe('unauthorized');
      expect(await codeOf(anonymous.get('/auth/k'))).toBe('unauthorized');
    } finally {
      await good.close();
      await wrong.close();
      await anonymous.close();
    }
  }, 60_000);

  it('rejects bad configuration at construction', () => {
    const cases: [string, () => unknown][] = [
      ['no endpoints', () => new EtcdHttp2KVStore({ endpoints: [] })],
      ['mixed schemes', () => new EtcdHttp2KVStore({ endpoints: ['http://a:1', 'https://b:2'] })],
      ['bad scheme', () => new EtcdHttp2KVStore({ endpoints: ['unix:///x'] })],
      [
        'cert without key',
        () => new EtcdHttp2KVStore({ endpoints: ['https://a:1'], tls: { cert: Buffer.from('x') } }),
      ],
      ['user without password', () => new EtcdHttp2KVStore({ endpoints: ['http://a:1'], username: 'u' })],
    ];
    for (const [what, make] of cases) {
      expect(() => make(), what).toThrow(expect.objectContaining({ code: 'config' }));
    }
  });
});
