/**
 * Typha against a real private etcd, over TLS: two Felix-type clients get the snapshot, in-sync
 * and then every create, update and delete; a client whose Typha goes away reconnects and resyncs
 * to the same state seeing only what changed (no duplicates, no losses); clients with a
 * certificate from another CA, with the wrong CN, or with none are refused; and etcd serves one
 * watch per source however many clients there are (its `etcd_debugging_mvcc_watcher_total`).
 */
import type { Resource } from '@calico-ts/api';
import {
  createKVStore,
  KVDatastore,
  type KVDatastore as KVDatastoreT,
  type KVStore,
} from '@calico-ts/datastore';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TyphaClient, type TyphaClientTls } from './client.js';
import { TyphaServer } from './server.js';
import { sourcesOf, typhaSources } from './syncer-sources.js';
import { makeTyphaCerts, type TyphaTestCerts } from './testing-internal/certs.js';
import { Consumer, until } from './testing-internal/consumer.js';

const run = etcdAvailable();

function gnp(name: string, order: number): Resource {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'GlobalNetworkPolicy',
    metadata: { name },
    spec: { order, selector: 'all()', ingress: [{ action: 'Allow' }], types: ['Ingress'] },
  } as unknown as Resource;
}

async function watcherCount(etcd: EtcdServer): Promise<number> {
  const text = await (await fetch(`${etcd.clientUrl}/metrics`)).text();
  const m = /^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(text);
  if (!m) throw new Error('etcd metrics have no etcd_debugging_mvcc_watcher_total');
  return Number(m[1]);
}

describe.skipIf(!run)('Typha with etcd', () => {
  let etcd: EtcdServer;
  let kv: KVStore;
  let ds: KVDatastoreT;
  let certs: TyphaTestCerts;
  let server: TyphaServer;
  let port: number;
  const clients: TyphaClient[] = [];

  const newServer = (p = 0) =>
    new TyphaServer({
      sources: typhaSources(ds, kv),
      backend: 'etcdv3',
      port: p,
      tls: { ca: certs.ca, cert: certs.server.cert, key: certs.server.key, clientCN: 'typha-client' },
      pingIntervalMs: 200,
      pongTimeoutMs: 5000,
    });

  const clientTls = (pair = certs.client): TyphaClientTls => ({
    ca: certs.ca,
    cert: pair.cert,
    key: pair.key,
    serverCN: 'typha-server',
  });

  function connect(c: Consumer, tls: TyphaClientTls | null = clientTls()): TyphaClient {
    const client = new TyphaClient({
      addresses: () => [`127.0.0.1:${port}`],
      node: c.name,
      client: 'test',
      syncerType: 'felix',
      ...(tls ? { tls } : {}),
      retryMs: 50,
      maxRetryMs: 200,
      readTimeoutMs: 3000,
      ...c.callbacks(),
    });
    clients.push(client);
    client.start();
    return client;
  }

  beforeAll(async () => {
    [etcd, certs] = await Promise.all([startEtcd(), makeTyphaCerts()]);
    kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints } as never);
    ds = new KVDatastore(kv, { backend: 'etcdv3' });
    await ds.create(gnp('before-typha', 10) as never);
    server = newServer();
    await server.start();
    port = server.port;
  });

  afterAll(async () => {
    for (const c of clients) await c.stop();
    await server?.stop();
    await ds?.close();
    await etcd?.stop();
    await certs?.[Symbol.asyncDispose]();
  });

  it('serves a snapshot, in-sync and then deltas to two clients, on one watch per source', async () => {
    const a = new Consumer('node-a');
    const b = new Consumer('node-b');
    connect(a);
    connect(b);
    await until('both clients in sync', () => a.inSync && b.inSync);
    for (const c of [a, b]) {
      expect(c.has('GlobalNetworkPolicy', 'before-typha')).toBe(true);
      expect(c.has('ClusterInformation', 'default')).toBe(false);
      expect([...c.sources()].every((s) => sourcesOf('felix', 'etcdv3').includes(s))).toBe(true);
    }
    // Each source's watch starts after its list; wait for all of them, then it must stay so.
    const sources = typhaSources(ds, kv).length;
    let watchers = 0;
    await until(`${sources} watchers`, () => {
      void watcherCount(etcd).then((n) => {
        watchers = n;
      });
      return watchers === sources;
    });

    await ds.create(gnp('p1', 100) as never);
    await until('p1 created everywhere', () => a.order('p1') === 100 && b.order('p1') === 100);
    const p1 = await ds.get('GlobalNetworkPolicy', 'p1');
    await ds.update({ ...p1, spec: { ...p1.spec, order: 200 } } as never);
    await until('p1 updated everywhere', () => a.order('p1') === 200 && b.order('p1') === 200);
    await ds.delete('GlobalNetworkPolicy', 'p1');
    await until(
      'p1 deleted everywhere',
      () => !a.has('GlobalNetworkPolicy', 'p1') && !b.has('GlobalNetworkPolicy', 'p1'),
    );
    expect(a.duplicates).toBe(0);

    // More clients, still one watch per source.
    const more = [new Consumer('node-c'), new Consumer('node-d'), new Consumer('node-e')];
    for (const c of more) connect(c);
    await until('three more in sync', () => more.every((c) => c.inSync));
    expect(await watcherCount(etcd)).toBe(sources);
    expect(server.stats().clients).toBe(5);
  });

  it('resyncs a client whose Typha went away to the same state, with only the changes', async () => {
    const a = new Consumer('node-r');
    const client = connect(a);
    await ds.create(gnp('stays', 1) as never);
    await ds.create(gnp('changes', 2) as never);
    await ds.create(gnp('goes', 3) as never);
    await until(
      'in sync with the three',
      () => a.inSync && a.order('goes') === 3 && a.order('changes') === 2,
    );
    expect(client.connections).toBe(1);

    await server.stop();
    await until('the client saw Typha go', () => a.connected === false);
    const changes = await ds.get('GlobalNetworkPolicy', 'changes');
    await ds.update({ ...changes, spec: { ...changes.spec, order: 20 } } as never);
    await ds.delete('GlobalNetworkPolicy', 'goes');
    await ds.create(gnp('new', 4) as never);
    a.events.length = 0;

    server = newServer(port);
    await server.start();
    await until('resynced', () => a.connected === true && client.connections === 2);
    const gnpEvents = a.events
      .filter((e) => e.source === 'GlobalNetworkPolicy')
      .map((e) => `${e.kind} ${e.key}`);
    expect(gnpEvents.sort()).toEqual(['delete goes', 'set changes', 'set new']);
    expect(a.order('changes')).toBe(20);
    expect(a.has('GlobalNetworkPolicy', 'stays')).toBe(true);
    // Same state as a client that connects fresh.
    const fresh = new Consumer('node-fresh');
    connect(fresh);
    await until('fresh in sync', () => fresh.inSync);
    expect(a.snapshot()).toEqual(fresh.snapshot());
    expect(a.duplicates).toBe(0);
  });

  it('refuses a client with a certificate from another CA, with the wrong CN, or with none', async () => {
    for (const [what, tls] of [
      ['another CA', clientTls(certs.otherCa)],
      ['wrong CN', clientTls(certs.wrongCn)],
      ['no certificate', { ca: certs.ca, serverCN: 'typha-server' } as unknown as TyphaClientTls],
      ['no TLS', null],
    ] as const) {
      const refusedBefore = server.stats().refused;
      const c = new Consumer(`node-${what}`);
      const client = connect(c, tls);
      await until(`${what}: refused`, () => c.failures > 0 && server.stats().refused > refusedBefore);
      expect(c.inSync, what).toBe(false);
      expect(c.size(), what).toBe(0);
      await client.stop();
    }
  });

  it('the client refuses a Typha whose certificate does not carry the expected CN', async () => {
    const c = new Consumer('node-picky');
    const client = connect(c, { ...clientTls(), serverCN: 'not-typha' });
    await until('refused Typha', () => c.failures > 0);
    expect(c.lastError).toMatch(/CN not-typha/);
    expect(c.inSync).toBe(false);
    await client.stop();
  });
});
