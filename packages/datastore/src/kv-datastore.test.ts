import { describe, expect, it } from 'vitest';
import type { KVStore } from './kv/kv-store.js';
import { MemoryKVStore } from './kv/memory-kv-store.js';
import { KVDatastore } from './kv-datastore.js';
import {
  datastoreContract,
  describeEvent,
  ipPool,
  networkSet,
  take,
} from './testing-internal/datastore-contract.js';

/** A second "client" of the same memory store: closing it must not close the shared store. */
function sharing(store: KVStore): KVStore {
  return new Proxy(store, {
    get: (target, prop, receiver) =>
      prop === 'close' ? async () => undefined : Reflect.get(target, prop, receiver).bind(target),
  });
}

const store = new MemoryKVStore();
const ds = new KVDatastore(store, { backend: 'memory' });
datastoreContract('KVDatastore over MemoryKVStore', {
  datastore: () => ds,
  newClient: async () => new KVDatastore(sharing(store), { backend: 'memory' }),
  kv: () => store,
  compact: (r) => store.compact(r),
});

describe('KVDatastore (memory specifics)', () => {
  it('writes upstream-shaped JSON with an injected clock and uid', async () => {
    const s = new MemoryKVStore();
    const d = new KVDatastore(s, {
      backend: 'memory',
      now: () => new Date('2026-01-02T03:04:05.678Z'),
      newUid: () => '2b6c4a3e-1f0d-4c1e-9a53-4b6f7f0c8e11',
    });
    expect(d.backend).toBe('memory');
    await d.create(ipPool('pool-1', '198.19.0.0/16', { natOutgoing: true }));
    expect(s.dump().kvs).toEqual({
      '/calico/resources/v3/projectcalico.org/ippools/pool-1':
        '{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"pool-1",' +
        '"uid":"2b6c4a3e-1f0d-4c1e-9a53-4b6f7f0c8e11","creationTimestamp":"2026-01-02T03:04:05Z"},' +
        '"spec":{"cidr":"198.19.0.0/16","vxlanMode":"Never","ipipMode":"Never","natOutgoing":true,"blockSize":26,' +
        '"nodeSelector":"all()","allowedUses":["Workload","Tunnel"],"assignmentMode":"Automatic"}}',
    });
  });

  it('passes disconnects through and refuses to touch the built-in profile', async () => {
    const s = new MemoryKVStore();
    const d = new KVDatastore(s, { backend: 'memory' });
    const ac = new AbortController();
    const it = d.watch('NetworkSet', { signal: ac.signal })[Symbol.asyncIterator]();
    s.interruptWatches();
    await d.create(networkSet('a', 'ns'));
    const events = await take(it, (e) => e.length >= 3);
    ac.abort();
    expect(events.map(describeEvent)).toEqual(['disconnected', 'reconnected', 'added a']);
    const profile = {
      apiVersion: 'projectcalico.org/v3' as const,
      kind: 'Profile' as const,
      metadata: { name: 'projectcalico-default-allow' },
      spec: {},
    };
    await expect(d.create(profile)).rejects.toMatchObject({ code: 'invalid' });
    await expect(d.delete('Profile', 'projectcalico-default-allow')).rejects.toMatchObject({
      code: 'invalid',
    });
    expect(s.dump().kvs).toEqual({
      '/calico/resources/v3/projectcalico.org/networksets/ns/a': expect.any(String),
    });
  });

  it('rejects a bad backend name at construction', () => {
    expect(() => new KVDatastore(new MemoryKVStore(), { backend: 'consul' as never })).toThrow(
      expect.objectContaining({ code: 'config' }),
    );
  });

  it('creates a guarded resource only while the guard key is unchanged', async () => {
    const s = new MemoryKVStore();
    const d = new KVDatastore(s, { backend: 'memory' });
    const guard = await s.create('/calico/ipam/v2/handle/h1', '{"id":"h1"}');
    const made = await d.createGuarded(networkSet('a', 'ns'), guard);
    expect(made.metadata.name).toBe('a');
    // Written back unchanged, at the create's revision.
    const after = await s.get('/calico/ipam/v2/handle/h1');
    expect(after?.value).toBe('{"id":"h1"}');
    expect(after?.modRevision).toBe(made.metadata.resourceVersion);
    // Changed since it was read: refused, nothing written.
    await expect(d.createGuarded(networkSet('b', 'ns'), guard)).rejects.toMatchObject({ code: 'conflict' });
    // Gone (a DEL released the handle): refused, nothing written.
    await s.delete('/calico/ipam/v2/handle/h1');
    await expect(d.createGuarded(networkSet('c', 'ns'), after!)).rejects.toMatchObject({
      code: 'not-found',
      message: expect.stringContaining('/calico/ipam/v2/handle/h1 no longer exists'),
    });
    expect((await d.list('NetworkSet', { namespace: 'ns' })).items.map((n) => n.metadata.name)).toEqual([
      'a',
    ]);
    // The resource already there, guard fine: already-exists, as create says it.
    const g2 = await s.create('/calico/ipam/v2/handle/h2', '{}');
    await expect(d.createGuarded(networkSet('a', 'ns'), g2)).rejects.toMatchObject({
      code: 'already-exists',
    });
  });
});
