/**
 * The informer on a real kube-apiserver: one paginated list, then a watch; lookups answered from
 * memory (counted with the API server's own `apiserver_request_total`); creates, updates and
 * deletes by another client followed; a watch that comes back after its revision was compacted
 * away (410 Gone) relists and drops what it missed the deletion of.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NetworkSet } from '@calico-ts/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKVStore } from './factory.js';
import { Informer, informerKeyOf, resourceInformer } from './informer.js';
import type { KVStore } from './kv/kv-store.js';
import { KVDatastore } from './kv-datastore.js';
import { resourceSource } from './syncer.js';
import {
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  readApiRequestCounts,
  requestsBetween,
  startKubeApiServer,
} from './testing/index.js';
import { networkSet, uniqueName } from './testing-internal/datastore-contract.js';

const CRDS = join(dirname(fileURLToPath(import.meta.url)), '../../../deploy/crds/calico-crds.yaml');
const missing = missingKubePrerequisites({ crds: CRDS });
if (missing.length > 0) {
  describe('informer on a real kube-apiserver', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

async function until(what: string, f: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const nets = (n: NetworkSet | undefined) => n?.spec.nets;

describe.skipIf(missing.length > 0)('informer on a real kube-apiserver', () => {
  let api: KubeApiServer;
  let kv: KVStore;
  let ds: KVDatastore;
  const ns = uniqueName('inf');
  const informers: Informer<unknown>[] = [];

  const kubectl = (args: string[], input?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const child = execFile(
        findKubectl()!,
        ['--kubeconfig', api.kubeconfigPath, ...args],
        { maxBuffer: 64 * 1024 * 1024 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
      );
      child.stdin!.end(input ?? '');
    });

  beforeAll(async () => {
    api = await startKubeApiServer();
    await kubectl(['apply', '--server-side', '-f', CRDS]);
    await kubectl(['wait', '--for', 'condition=established', '--timeout', '60s', 'crd', '--all']);
    await kubectl(['create', 'namespace', ns]);
    kv = await createKVStore({
      datastoreType: 'kubernetes',
      etcdEndpoints: [],
      kubeconfig: api.kubeconfigPath,
    });
    ds = new KVDatastore(kv, { backend: 'kubernetes' });
    // More than one page (the store lists 500 at a time).
    const items = Array.from({ length: 520 }, (_, i) => ({
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'NetworkSet',
      metadata: { name: `s${i}`, namespace: ns },
      spec: { nets: [`198.18.${i >> 8}.${i & 255}/32`] },
    }));
    await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  }, 180_000);

  afterAll(async () => {
    await Promise.all(informers.map((i) => i.stop()));
    await kv?.close();
    await api?.stop();
  });

  it('lists in pages once, then answers lookups from memory: 0 requests where gets made 40', async () => {
    const c0 = await readApiRequestCounts(api);
    const inf = resourceInformer(ds, 'NetworkSet', {
      indexes: { net: (s) => s.spec.nets ?? [] },
    });
    informers.push(inf as Informer<unknown>);
    inf.start();
    await inf.synced();
    const c1 = await readApiRequestCounts(api);
    expect(inf.list({ namespace: ns })).toHaveLength(520);
    expect(requestsBetween(c0, c1)['LIST networksets']).toBe(2);

    // The same lookups, by get and from the informer.
    for (let i = 0; i < 40; i++) await ds.get('NetworkSet', `s${i}`, { namespace: ns });
    const c2 = await readApiRequestCounts(api);
    for (let i = 0; i < 40; i++) expect(nets(inf.get(`${ns}/s${i}`) as NetworkSet)).toHaveLength(1);
    expect(inf.byIndex('net', '198.18.0.7/32').map(informerKeyOf)).toEqual([`${ns}/s7`]);
    const c3 = await readApiRequestCounts(api);
    expect(requestsBetween(c1, c2)['GET networksets']).toBe(40);
    const fromInformer = requestsBetween(c2, c3);
    expect(fromInformer['GET networksets'] ?? 0).toBe(0);
    expect(fromInformer['LIST networksets'] ?? 0).toBe(0);
  }, 60_000);

  it('follows creates, updates and deletes made by another client', async () => {
    const inf = resourceInformer(ds, 'NetworkSet', { indexes: { net: (s) => s.spec.nets ?? [] } });
    informers.push(inf as Informer<unknown>);
    inf.start();
    await inf.synced();
    const other = new KVDatastore(
      await createKVStore({ datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: api.kubeconfigPath }),
      { backend: 'kubernetes' },
    );
    try {
      await other.create({ ...networkSet('fresh', ns), spec: { nets: ['198.19.0.1/32'] } });
      await until('the create', () => inf.get(`${ns}/fresh`) !== undefined);
      const s1 = await other.get('NetworkSet', 's1', { namespace: ns });
      await other.update({ ...s1, spec: { nets: ['198.19.1.1/32'] } });
      await until('the update', () => nets(inf.get(`${ns}/s1`) as NetworkSet)?.[0] === '198.19.1.1/32');
      expect(inf.byIndex('net', '198.19.1.1/32').map(informerKeyOf)).toEqual([`${ns}/s1`]);
      expect(inf.byIndex('net', '198.18.0.1/32')).toEqual([]);
      await other.delete('NetworkSet', 's2', { namespace: ns });
      await until('the delete', () => inf.get(`${ns}/s2`) === undefined);
      expect(inf.serving).toBe(true);
    } finally {
      await other.close();
    }
  }, 60_000);

  it('a watch whose revision was compacted away gets 410, relists, and holds what is there now', async () => {
    // What an informer held when its watch went away: a real list, before the changes below.
    const source = resourceSource(ds, 'NetworkSet');
    const stale = await source.list();
    await ds.create({ ...networkSet('late', ns), spec: { nets: ['198.19.2.1/32'] } });
    await ds.delete('NetworkSet', 's3', { namespace: ns });
    const s4 = await ds.get('NetworkSet', 's4', { namespace: ns });
    await ds.update({ ...s4, spec: { nets: ['198.19.4.4/32'] } });
    // Only this test's informer watches from here on (the others' relists would count too).
    await Promise.all(informers.splice(0).map((i) => i.stop()));
    // Compact the history away; the restarted API server keeps no watch cache from before.
    const now = await ds.list('NetworkSet', { namespace: ns });
    await api.etcd.compact(now.revision);
    await api.restart();

    let lists = 0;
    const deleted: string[] = [];
    const inf = new Informer<NetworkSet>({
      source: {
        ...source,
        // The first list is the stale one: the watch starts from its (compacted) revision.
        list: () => (lists++ === 0 ? Promise.resolve(stale) : source.list()),
      },
      namespaceOf: (s) => s.metadata.namespace,
      versionOf: (s) => s.metadata.resourceVersion,
      retryMs: 50,
      onChange: (c) => {
        if (c.kind === 'delete') deleted.push(informerKeyOf(c.item));
      },
    });
    informers.push(inf as Informer<unknown>);
    const c0 = await readApiRequestCounts(api);
    inf.start();
    await inf.synced();
    await until('the relist after 410', () => inf.get(`${ns}/s3`, { allowStale: true }) === undefined);
    const c1 = await readApiRequestCounts(api);
    expect(deleted).toContain(`${ns}/s3`);
    expect(inf.get(`${ns}/late`)).toBeDefined();
    expect(nets(inf.get(`${ns}/s4`))).toEqual(['198.19.4.4/32']);
    const held = inf
      .list({ namespace: ns })
      .map((s) => s.metadata.name)
      .sort();
    const current = (await ds.list('NetworkSet', { namespace: ns })).items.map((s) => s.metadata.name).sort();
    expect(held).toEqual(current);
    // The list requests are the watch's own after its 410, one paged list of 520 (the informer's
    // first list was the stale one, and it never listed again): a replay of events makes none.
    expect(lists).toBe(1);
    expect(requestsBetween(c0, c1)['LIST networksets']).toBe(2);
  }, 120_000);
});
