/**
 * The typed client and IPAM store against a real etcd 3.4, checked through the real etcdctl: the
 * bytes upstream components would see, CAS under contention, watches across a restart and a
 * compaction, validation that writes nothing, and TLS with client certificates.
 */
import { decodeDocuments, type IPPool, ValidationError } from '@calico-ts/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IPAM_CONFIG_KEY } from './ipam-records.js';
import { EtcdHttp2KVStore } from './kv/etcd-http2-kv-store.js';
import { EtcdKVStore } from './kv/etcd-kv-store.js';
import { KVDatastore } from './kv-datastore.js';
import { type EtcdServer, etcdAvailable, startEtcd } from './testing/index.js';
import {
  datastoreContract,
  describeEvent,
  errorOf,
  ipPool,
  networkSet,
  take,
  uniqueName,
} from './testing-internal/datastore-contract.js';

/** Every key and value under a prefix, read with the real etcdctl. */
async function etcdDump(etcd: EtcdServer, prefix: string): Promise<{ key: string; value: string }[]> {
  const r = await etcd.etcdctl(['get', '--prefix', prefix, '-w', 'json']);
  expect(r.code, r.stderr).toBe(0);
  const doc = JSON.parse(r.stdout) as { kvs?: { key: string; value?: string }[] };
  return (doc.kvs ?? []).map((kv) => ({
    key: Buffer.from(kv.key, 'base64').toString(),
    value: Buffer.from(kv.value ?? '', 'base64').toString(),
  }));
}

async function etcdRevision(etcd: EtcdServer): Promise<number> {
  const r = await etcd.etcdctl(['get', '/', '-w', 'json']);
  return (JSON.parse(r.stdout) as { header: { revision: number } }).header.revision;
}

describe.skipIf(!etcdAvailable())('KVDatastore on a real etcd', () => {
  let etcd: EtcdServer;
  let kv: EtcdKVStore;
  let ds: KVDatastore;
  beforeAll(async () => {
    etcd = await startEtcd();
    kv = new EtcdKVStore({ endpoints: etcd.endpoints });
    ds = new KVDatastore(kv, { backend: 'etcdv3' });
  });
  afterAll(async () => {
    await ds?.close();
    await etcd?.stop();
  });

  datastoreContract('KVDatastore over EtcdKVStore', {
    datastore: () => ds,
    newClient: async () =>
      new KVDatastore(new EtcdKVStore({ endpoints: etcd.endpoints }), { backend: 'etcdv3' }),
    kv: () => kv,
    compact: (r) => etcd.compact(r),
  });

  it('an IPPool lands at upstream’s key with upstream’s JSON, as etcdctl shows it', async () => {
    const name = uniqueName('pool');
    const created = await ds.create(
      ipPool(name, '198.19.128.0/18', { natOutgoing: true, vxlanMode: 'Always' }),
    );
    const { uid, creationTimestamp } = created.metadata;
    const r = await etcd.etcdctl(['get', '--prefix', '/calico/resources/v3/projectcalico.org/ippools/']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    const at = lines.indexOf(`/calico/resources/v3/projectcalico.org/ippools/${name}`);
    expect(at).toBeGreaterThanOrEqual(0);
    expect(lines[at + 1]).toBe(
      `{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"${name}","uid":"${uid}",` +
        `"creationTimestamp":"${creationTimestamp}"},"spec":{"cidr":"198.19.128.0/18","vxlanMode":"Always",` +
        '"ipipMode":"Never","natOutgoing":true,"blockSize":26,"nodeSelector":"all()",' +
        '"allowedUses":["Workload","Tunnel"],"assignmentMode":"Automatic"}}',
    );
    // resourceVersion is the key's mod_revision as etcd reports it.
    const j = await etcd.etcdctl([
      'get',
      `/calico/resources/v3/projectcalico.org/ippools/${name}`,
      '-w',
      'json',
    ]);
    expect(String((JSON.parse(j.stdout) as { kvs: { mod_revision: number }[] }).kvs[0]!.mod_revision)).toBe(
      created.metadata.resourceVersion,
    );
  });

  it('invalid YAML or a resource breaking rules is rejected with every error; etcd is unchanged', async () => {
    const before = await etcdDump(etcd, '/calico/');
    const rev = await etcdRevision(etcd);
    expect(() => decodeDocuments('kind: IPPool\nmetadata: {name: [oops\n', 'pool.yaml')).toThrow(
      expect.objectContaining({ code: 'decode-failed', message: expect.stringContaining('pool.yaml:') }),
    );
    const [doc] = decodeDocuments(
      [
        'apiVersion: projectcalico.org/v3',
        'kind: IPPool',
        'metadata:',
        '  name: Pool_1',
        'spec:',
        '  cidr: 198.19.0.1/16',
        '  blockSize: 12',
        '  ipipMode: Always',
        '  vxlanMode: Always',
        '  nodeSelector: "has(("',
      ].join('\n'),
      'pool.yaml',
    );
    const e = await errorOf(ds.create(doc as IPPool));
    expect(e.code).toBe('invalid');
    expect(e.cause).toBeInstanceOf(ValidationError);
    const fields = (e.cause as ValidationError).errors.map((f) => f.path);
    expect(fields).toEqual(
      expect.arrayContaining([
        'metadata.name',
        'spec.cidr',
        'spec.blockSize',
        'spec.ipipMode',
        'spec.nodeSelector',
      ]),
    );
    for (const f of ['metadata.name', 'spec.cidr', 'spec.blockSize', 'spec.nodeSelector'])
      expect(e.message).toContain(f);
    expect((await errorOf(ds.apply(doc as IPPool))).code).toBe('invalid');
    expect(await etcdDump(etcd, '/calico/')).toEqual(before);
    expect(await etcdRevision(etcd)).toBe(rev);
  });

  it('createGuarded writes only while its guard key is unchanged, over both etcd transports', async () => {
    const http2 = new KVDatastore(new EtcdHttp2KVStore({ endpoints: etcd.endpoints }), { backend: 'etcdv3' });
    try {
      for (const [transport, d] of [
        ['grpc', ds],
        ['http2', http2],
      ] as const) {
        const ns = uniqueName(`guard-${transport}`);
        const guardKey = `/calico/ipam/v2/handle/${ns}`;
        const guard = await kv.create(guardKey, '{"handleID":"x"}');
        await d.createGuarded(networkSet('a', ns), guard);
        // Released (a DEL): a create that comes now writes nothing.
        await kv.delete(guardKey);
        const gone = await errorOf(d.createGuarded(networkSet('b', ns), guard));
        expect(gone.code, transport).toBe('not-found');
        // Written again (another writer): the stale guard is refused too.
        await kv.create(guardKey, '{"handleID":"x"}');
        const stale = await errorOf(d.createGuarded(networkSet('c', ns), guard));
        expect(stale.code, transport).toBe('conflict');
        const names = (await etcdDump(etcd, `/calico/resources/v3/projectcalico.org/networksets/${ns}/`)).map(
          (e) => e.key.split('/').pop(),
        );
        expect(names, transport).toEqual(['a']);
      }
    } finally {
      await http2.close();
    }
  });

  it('a typed watch from revision R sees every change after R in order, across an etcd restart', async () => {
    const ns = uniqueName('ns');
    const start = await ds.list('NetworkSet', { namespace: ns });
    const ac = new AbortController();
    const it = ds
      .watch('NetworkSet', { namespace: ns, revision: start.revision, signal: ac.signal })
      [Symbol.asyncIterator]();
    for (let i = 0; i < 5; i++) await ds.create(networkSet(`before-${i}`, ns));
    await take(it, (e) => e.length >= 5);
    await etcd.restart();
    // Writes from etcdctl while our client is still reconnecting, then from the client itself.
    for (let i = 0; i < 3; i++) {
      const value = JSON.stringify({
        kind: 'NetworkSet',
        apiVersion: 'projectcalico.org/v3',
        metadata: { name: `during-${i}`, namespace: ns },
        spec: { nets: ['198.18.1.0/24'] },
      });
      const r = await etcd.etcdctl([
        'put',
        `/calico/resources/v3/projectcalico.org/networksets/${ns}/during-${i}`,
        value,
      ]);
      expect(r.code).toBe(0);
    }
    for (let i = 0; i < 3; i++) {
      for (let attempt = 0; ; attempt++) {
        try {
          await ds.create(networkSet(`after-${i}`, ns));
          break;
        } catch (e) {
          if (attempt > 50) throw e;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
    const events = await take(it, (e) => e.filter((x) => x.kind === 'added').length >= 6, 20_000);
    ac.abort();
    expect(events.map(describeEvent)).toEqual([
      'disconnected',
      'reconnected',
      'added during-0',
      'added during-1',
      'added during-2',
      'added after-0',
      'added after-1',
      'added after-2',
    ]);
  }, 60_000);
});

describe.skipIf(!etcdAvailable())('KVDatastore over TLS', () => {
  it('works with a client certificate; without one the connection is refused', async () => {
    await using etcd = await startEtcd({ tls: true });
    const { ca, cert, key } = etcd.tls!;
    const good = new KVDatastore(new EtcdKVStore({ endpoints: etcd.endpoints, tls: { ca, cert, key } }), {
      backend: 'etcdv3',
    });
    const bad = new KVDatastore(
      new EtcdKVStore({ endpoints: etcd.endpoints, tls: { ca }, dialTimeoutMs: 2000 }),
      {
        backend: 'etcdv3',
      },
    );
    try {
      const pool = await good.create(ipPool('tls-pool', '198.19.64.0/20'));
      expect((await good.get('IPPool', 'tls-pool')).metadata.uid).toBe(pool.metadata.uid);
      const r = await etcd.etcdctl([
        'get',
        '/calico/resources/v3/projectcalico.org/ippools/tls-pool',
        '--print-value-only',
      ]);
      expect(JSON.parse(r.stdout).spec.cidr).toBe('198.19.64.0/20');
      const e = await errorOf(bad.get('IPPool', 'tls-pool'));
      expect(['unauthorized', 'unavailable']).toContain(e.code);
      expect(e.code).toBe('unauthorized');
      const ipamKv = new EtcdKVStore({ endpoints: etcd.endpoints, tls: { ca, cert, key } });
      expect(await ipamKv.get(IPAM_CONFIG_KEY)).toBeUndefined();
      await ipamKv.close();
    } finally {
      await good.close();
      await bad.close();
    }
  }, 60_000);
});
