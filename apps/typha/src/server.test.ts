/**
 * TyphaServer on the in-memory datastore over loopback TCP: a client that stops reading is dropped
 * once its unsent bytes pass the limit while a reading client gets every update; a client that
 * never answers pings is dropped; a bgp client gets only bird-bridge's sources, and its own node's
 * affinities under the name its syncer uses.
 */
import { connect, type Socket } from 'node:net';
import type { Resource } from '@calico-ts/api';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TyphaClient } from './client.js';
import { TyphaMetrics } from './metrics.js';
import { encodeMessage, PROTOCOL_VERSION } from './protocol.js';
import { TyphaServer, type TyphaServerOptions } from './server.js';
import { affinityFilter, sourcesOf, typhaSources } from './syncer-sources.js';
import { Consumer, until } from './testing-internal/consumer.js';

const V3 = 'projectcalico.org/v3';

function gnp(name: string, description: string): Resource & { kind: 'GlobalNetworkPolicy' } {
  return {
    apiVersion: V3,
    kind: 'GlobalNetworkPolicy',
    metadata: { name, annotations: { note: description } },
    spec: { order: 1, selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Allow' }] },
  } as unknown as Resource & { kind: 'GlobalNetworkPolicy' };
}

describe('TyphaServer', () => {
  let kv: MemoryKVStore;
  let ds: KVDatastore;
  let server: TyphaServer;
  const sockets: Socket[] = [];
  const clients: TyphaClient[] = [];

  async function serve(o: Partial<TyphaServerOptions> = {}): Promise<void> {
    server = new TyphaServer({ sources: typhaSources(ds, kv), backend: 'memory', ...o });
    await server.start();
    await until('in sync', () => server.inSync);
  }

  function rawHello(syncer = 'felix'): Socket {
    const s = connect({ host: '127.0.0.1', port: server.port });
    s.on('error', () => {});
    sockets.push(s);
    s.write(
      encodeMessage({
        t: 'hello',
        version: PROTOCOL_VERSION,
        node: 'raw',
        client: 'raw',
        syncer: syncer as 'felix',
      }),
    );
    return s;
  }

  function client(c: Consumer, syncerType: 'felix' | 'bgp' = 'felix', node = c.name): TyphaClient {
    const t = new TyphaClient({
      addresses: () => [`127.0.0.1:${server.port}`],
      node,
      client: 'test',
      syncerType,
      retryMs: 50,
      ...(syncerType === 'bgp' ? { filter: affinityFilter(node) } : {}),
      ...c.callbacks(),
    });
    clients.push(t);
    t.start();
    return t;
  }

  beforeEach(() => {
    kv = new MemoryKVStore();
    ds = new KVDatastore(kv, { backend: 'memory' });
  });

  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    for (const c of clients.splice(0)) await c.stop();
    await server?.stop();
    await ds.close();
  });

  it('drops a client that stops reading, and keeps serving one that reads', async () => {
    await serve({ maxBufferBytes: 256 * 1024 });
    const reader = new Consumer('reader');
    client(reader);
    const slow = rawHello();
    await until('both connected', () => server.stats().clients === 2 && reader.inSync);
    slow.pause();
    const big = 'x'.repeat(100_000);
    // ~40 MB of updates: more than loopback's socket buffers hold, so Typha's own buffer grows.
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 20; i++) {
        const name = `p${i}`;
        if (round === 0) await ds.create(gnp(name, `${round}${big}`));
        else {
          const cur = await ds.get('GlobalNetworkPolicy', name);
          await ds.update({ ...cur, metadata: { ...cur.metadata, annotations: { note: `${round}${big}` } } });
        }
      }
      await until(`the reader has round ${round}`, () =>
        Array.from(
          { length: 20 },
          (_, i) =>
            reader.get('GlobalNetworkPolicy', `p${i}`) as
              | { metadata?: { annotations?: { note?: string } } }
              | undefined,
        ).every((p) => p?.metadata?.annotations?.note?.startsWith(`${round}x`)),
      );
    }
    expect(server.stats().droppedSlow).toBe(1);
    expect(server.stats().clients).toBe(1);
    expect(reader.connected).toBe(true);
  });

  it('serves its Prometheus metrics: connections, updates, cache size, ping latency, snapshot time', async () => {
    await ds.create(gnp('m1', 'one'));
    let metrics: TyphaMetrics | undefined;
    await serve({
      pingIntervalMs: 50,
      observer: {
        pingLatency: (x) => metrics?.observer.pingLatency?.(x),
        snapshotSent: (x) => metrics?.observer.snapshotSent?.(x),
      },
    });
    metrics = new TyphaMetrics(() => server.stats());
    const http = await metrics.serve('127.0.0.1', 0);
    try {
      const port = (http.address() as { port: number }).port;
      const scrape = async () => {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`);
        expect(res.status).toBe(200);
        return res.text();
      };
      const value = (text: string, series: string) => {
        const line = text.split('\n').find((l) => l.startsWith(`${series} `));
        return line === undefined ? undefined : Number(line.slice(series.length + 1));
      };
      const felix = new Consumer('felix');
      client(felix);
      const bgp = new Consumer('bgp');
      client(bgp, 'bgp', 'node1');
      await until('both in sync', () => felix.inSync && bgp.inSync);
      await ds.create(gnp('m2', 'two'));
      await until('the update delivered', () => felix.get('GlobalNetworkPolicy', 'm2') !== undefined);
      // A few pings answered.
      await new Promise((r) => setTimeout(r, 300));
      const text = await scrape();
      expect(value(text, 'typha_connections_active')).toBe(2);
      expect(value(text, 'typha_connections_accepted')).toBe(2);
      expect(value(text, 'typha_connections_dropped{reason="slow"}')).toBe(0);
      expect(value(text, 'typha_updates_total')).toBe(server.stats().updates);
      expect(value(text, 'typha_updates_total')).toBeGreaterThanOrEqual(2);
      // Felix's sources hold the two policies; bird-bridge's do not include policies.
      expect(value(text, 'typha_cache_size{syncer="felix"}')).toBe(server.stats().cacheSize.felix);
      expect(server.stats().cacheSize.felix).toBeGreaterThanOrEqual(2);
      expect(server.stats().cacheSize.bgp).toBeLessThan(server.stats().cacheSize.felix);
      expect(value(text, 'typha_client_snapshot_send_secs_count')).toBe(2);
      expect(value(text, 'typha_ping_latency_count')).toBeGreaterThan(0);
      expect(value(text, 'typha_ping_latency_sum')).toBeGreaterThanOrEqual(0);
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
    } finally {
      await new Promise((r) => http.close(r));
    }
  });

  it('drops a client that does not answer pings', async () => {
    await serve({ pingIntervalMs: 50, pongTimeoutMs: 300 });
    const silent = rawHello();
    silent.resume(); // reads (and ignores) the snapshot and the pings, never answers
    const closed = new Promise<void>((r) => silent.once('close', () => r()));
    const alive = new Consumer('alive');
    client(alive);
    await closed;
    expect(server.stats().droppedSilent).toBe(1);
    // The real client answers pings and stays.
    await new Promise((r) => setTimeout(r, 500));
    expect(alive.connected).toBe(true);
    expect(server.stats().clients).toBe(1);
  });

  it("gives a bgp client bird-bridge's sources, with only its own node's affinities", async () => {
    await kv.put(
      '/calico/ipam/v2/host/n1/ipv4/block/10.0.0.0-26',
      JSON.stringify({ state: 'confirmed', deleted: false }),
    );
    await kv.put(
      '/calico/ipam/v2/host/n2/ipv4/block/10.0.0.64-26',
      JSON.stringify({ state: 'confirmed', deleted: false }),
    );
    await ds.create(gnp('felix-only', 'x'));
    await ds.create({
      apiVersion: V3,
      kind: 'BGPPeer',
      metadata: { name: 'rr' },
      spec: { peerIP: '192.0.2.1', asNumber: 64512 },
    } as never);
    await serve();
    const bgp = new Consumer('n1');
    const felix = new Consumer('n1-felix');
    client(bgp, 'bgp', 'n1');
    client(felix, 'felix', 'n1');
    await until('both in sync', () => bgp.inSync && felix.inSync);
    expect([...bgp.sources()].sort()).toEqual(['BGPPeer', 'affinities']);
    expect([...(bgp.state.get('affinities')?.keys() ?? [])]).toEqual([
      '/calico/ipam/v2/host/n1/ipv4/block/10.0.0.0-26',
    ]);
    expect(felix.has('GlobalNetworkPolicy', 'felix-only')).toBe(true);
    expect(bgp.has('GlobalNetworkPolicy', 'felix-only')).toBe(false);
    expect(sourcesOf('bgp', 'memory')).not.toContain('GlobalNetworkPolicy');
  });
});
