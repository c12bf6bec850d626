/**
 * The typed client's semantics, one test body for every backend: KVDatastore over MemoryKVStore
 * (unit) and over EtcdKVStore against a real etcd (integration). Tests use their own names, so a
 * shared store is fine.
 */
import { type IPPool, type NetworkSet, type Resource, ValidationError } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { DatastoreError, isDatastoreError } from '../errors.js';
import type { KVStore } from '../kv/kv-store.js';
import type { KVDatastore } from '../kv-datastore.js';
import type { WatchEvent } from '../types.js';

export interface DatastoreContractEnv {
  /** The client under test. */
  datastore(): KVDatastore;
  /** Another, independent client on the same store (another process, in etcd's case). */
  newClient(): Promise<KVDatastore>;
  /** The raw store under the datastore. */
  kv(): KVStore;
  compact(revision: string): Promise<void>;
  /**
   * Store something under `namespace`/`name` of NetworkSet that the client cannot decode, around
   * the client. Default: a value that is not JSON, through the raw store (etcd and memory take
   * any bytes; the Kubernetes backend takes only objects, so it writes an invalid spec instead).
   */
  writeUndecodable?(namespace: string, name: string): Promise<'stored' | 'refused'>;
}

let n = 0;
/** A name no other test in this run uses. */
export function uniqueName(base: string): string {
  n++;
  return `${base}-${process.pid.toString(36)}-${Date.now().toString(36)}-${n}`;
}

export function ipPool(name: string, cidr: string, extra: Partial<IPPool['spec']> = {}): IPPool {
  return { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name }, spec: { cidr, ...extra } };
}

export function networkSet(name: string, namespace: string, labels: Record<string, string> = {}): NetworkSet {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkSet',
    metadata: { name, namespace, labels },
    spec: { nets: ['198.18.0.0/24'] },
  };
}

export async function errorOf(p: Promise<unknown>): Promise<DatastoreError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof DatastoreError)) throw new Error(`expected a DatastoreError, got ${String(e)}`);
  return e;
}

/** Pull typed watch events until `pred` holds, failing after `ms`. */
export async function take<K extends Resource['kind']>(
  it: AsyncIterator<WatchEvent<K>>,
  pred: (events: WatchEvent<K>[]) => boolean,
  ms = 10_000,
): Promise<WatchEvent<K>[]> {
  const out: WatchEvent<K>[] = [];
  const deadline = Date.now() + ms;
  while (!pred(out)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`watch gave only: ${out.map(describeEvent).join(' | ')}`);
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([
      it.next(),
      new Promise<'timeout'>((res) => {
        timer = setTimeout(() => res('timeout'), left);
      }),
    ]);
    clearTimeout(timer);
    if (r === 'timeout') continue;
    if (r.done) throw new Error(`watch ended after: ${out.map(describeEvent).join(' | ')}`);
    out.push(r.value);
  }
  return out;
}

export function describeEvent(e: WatchEvent<Resource['kind']>): string {
  switch (e.kind) {
    case 'added':
    case 'modified':
    case 'deleted':
      return `${e.kind} ${e.resource.metadata.name}${e.resource.metadata.labels?.n ? ` n=${e.resource.metadata.labels.n}` : ''}`;
    case 'resync':
      return `resync [${e.items.map((i) => i.metadata.name).join(',')}]`;
    case 'error':
      return `error ${e.key}`;
    default:
      return e.kind;
  }
}

/** Get → change a label counter → update, retrying on conflict; returns how many conflicts it met. */
export async function incrementCounter(ds: KVDatastore, name: string): Promise<number> {
  for (let conflicts = 0; ; conflicts++) {
    const pool = await ds.get('IPPool', name);
    const n = Number(pool.metadata.labels?.counter ?? '0');
    try {
      await ds.update({
        ...pool,
        metadata: { ...pool.metadata, labels: { ...pool.metadata.labels, counter: String(n + 1) } },
      });
      return conflicts;
    } catch (e) {
      if (!isDatastoreError(e, 'conflict')) throw e;
    }
  }
}

export function datastoreContract(
  name: string,
  env: DatastoreContractEnv,
  opts: { increments?: number } = {},
): void {
  describe(`Datastore contract: ${name}`, () => {
    it('create fills uid and creationTimestamp, returns the store revision, and get reads it back', async () => {
      const ds = env.datastore();
      const name = uniqueName('pool');
      const created = await ds.create(ipPool(name, '198.19.0.0/24', { natOutgoing: true }));
      expect(created.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(created.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(created.metadata.resourceVersion).toBe(
        (await env.kv().get(`/calico/resources/v3/projectcalico.org/ippools/${name}`))?.modRevision,
      );
      expect(created.spec).toEqual({
        cidr: '198.19.0.0/24',
        vxlanMode: 'Never',
        ipipMode: 'Never',
        natOutgoing: true,
        blockSize: 26,
        nodeSelector: 'all()',
        allowedUses: ['Workload', 'Tunnel'],
        assignmentMode: 'Automatic',
      });
      expect(await ds.get('IPPool', name)).toEqual(created);
      const again = await errorOf(ds.create(ipPool(name, '198.19.1.0/24')));
      expect(again.code).toBe('already-exists');
      expect(again.message).toBe(`IPPool "${name}" already exists`);
      expect((await errorOf(ds.get('IPPool', uniqueName('none')))).code).toBe('not-found');
    });

    it('rejects an invalid resource with every field error and writes nothing', async () => {
      const ds = env.datastore();
      const before = await env.kv().revision();
      const bad = {
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: { name: 'Bad_Name', resourceVersion: '12' },
        spec: { cidr: '10.0.0.1/16', blockSize: 99, ipipMode: 'Sometimes' },
      } as unknown as IPPool;
      for (const op of [() => ds.create(bad), () => ds.apply(bad)]) {
        const e = await errorOf(op());
        expect(e.code).toBe('invalid');
        expect(e.cause).toBeInstanceOf(ValidationError);
        const paths = (e.cause as ValidationError).errors.map((f) => f.path);
        expect(paths).toEqual(
          expect.arrayContaining(['metadata.name', 'spec.blockSize', 'spec.cidr', 'spec.ipipMode']),
        );
      }
      const created = await errorOf(ds.create(bad));
      expect((created.cause as ValidationError).errors.map((f) => f.path)).toContain(
        'metadata.resourceVersion',
      );
      expect(await env.kv().revision()).toBe(before);
    });

    it('update is compare-and-swap: from the same resourceVersion exactly one writer wins', async () => {
      const ds = env.datastore();
      const other = await env.newClient();
      try {
        const name = uniqueName('pool');
        const v1 = await ds.create(ipPool(name, '198.19.2.0/24'));
        const a = { ...v1, metadata: { ...v1.metadata, labels: { by: 'a' } } };
        const b = { ...v1, metadata: { ...v1.metadata, labels: { by: 'b' } } };
        const results = await Promise.allSettled([ds.update(a), other.update(b)]);
        const won = results.filter((r) => r.status === 'fulfilled');
        const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(1);
        expect((lost[0]!.reason as DatastoreError).code).toBe('conflict');
        const stored = await ds.get('IPPool', name);
        const winner = (won[0] as PromiseFulfilledResult<IPPool>).value;
        expect(stored.metadata.labels).toEqual(winner.metadata.labels);
        expect(stored.metadata.resourceVersion).toBe(winner.metadata.resourceVersion);
        expect(stored.metadata.uid).toBe(v1.metadata.uid);
        // A stale update after the race loses too.
        expect((await errorOf(ds.update(a))).code).toBe('conflict');
        // Update needs the version and identity it read.
        const noRv = { ...stored, metadata: { ...stored.metadata, resourceVersion: undefined } };
        expect((await errorOf(ds.update(noRv))).code).toBe('invalid');
        const gone = { ...stored, metadata: { ...stored.metadata, name: uniqueName('gone') } };
        expect((await errorOf(ds.update(gone))).code).toBe('not-found');
      } finally {
        await other.close();
      }
    });

    it(`racing increments from several clients lose no update`, async () => {
      const total = opts.increments ?? 1000;
      const clients = [env.datastore(), ...(await Promise.all([1, 2, 3].map(() => env.newClient())))];
      try {
        const name = uniqueName('counter');
        await clients[0]!.create(ipPool(name, '198.19.3.0/24'));
        let next = 0;
        let conflicts = 0;
        await Promise.all(
          clients.flatMap((c) =>
            [0, 1].map(async () => {
              while (next < total) {
                next++;
                conflicts += await incrementCounter(c, name);
              }
            }),
          ),
        );
        const final = await clients[0]!.get('IPPool', name);
        expect(final.metadata.labels?.counter).toBe(String(total));
        expect(conflicts).toBeGreaterThan(0);
      } finally {
        for (const c of clients.slice(1)) await c.close();
      }
    }, 120_000);

    it('apply creates or updates, keeping uid and creationTimestamp', async () => {
      const ds = env.datastore();
      const name = uniqueName('pool');
      const first = await ds.apply(ipPool(name, '198.19.4.0/24'));
      const second = await ds.apply(ipPool(name, '198.19.4.0/24', { natOutgoing: true }));
      expect(second.metadata.uid).toBe(first.metadata.uid);
      expect(second.metadata.creationTimestamp).toBe(first.metadata.creationTimestamp);
      expect(Number(second.metadata.resourceVersion)).toBeGreaterThan(Number(first.metadata.resourceVersion));
      expect(second.spec.natOutgoing).toBe(true);
    });

    it('delete returns the object; with a stale resourceVersion it fails conflict', async () => {
      const ds = env.datastore();
      const name = uniqueName('pool');
      const v1 = await ds.create(ipPool(name, '198.19.5.0/24'));
      const v2 = await ds.update({ ...v1, metadata: { ...v1.metadata, labels: { x: 'y' } } });
      expect(
        (await errorOf(ds.delete('IPPool', name, { resourceVersion: v1.metadata.resourceVersion }))).code,
      ).toBe('conflict');
      const gone = await ds.delete('IPPool', name, { resourceVersion: v2.metadata.resourceVersion });
      expect(gone).toEqual(v2);
      expect((await errorOf(ds.get('IPPool', name))).code).toBe('not-found');
      expect((await errorOf(ds.delete('IPPool', name))).code).toBe('not-found');
    });

    it('lists by namespace, name and selector at one revision', async () => {
      const ds = env.datastore();
      const ns1 = uniqueName('ns');
      const ns2 = uniqueName('ns');
      await ds.create(networkSet('a', ns1, { color: 'red' }));
      await ds.create(networkSet('b', ns1, { color: 'blue' }));
      await ds.create(networkSet('a', ns2, { color: 'red' }));
      const inNs1 = await ds.list('NetworkSet', { namespace: ns1 });
      expect(inNs1.items.map((s) => `${s.metadata.namespace}/${s.metadata.name}`)).toEqual([
        `${ns1}/a`,
        `${ns1}/b`,
      ]);
      expect(inNs1.revision).toBe(await env.kv().revision());
      const red = await ds.list('NetworkSet', { selector: 'color == "red"' });
      const mine = red.items.filter((s) => s.metadata.namespace === ns1 || s.metadata.namespace === ns2);
      expect(mine.map((s) => `${s.metadata.namespace}/${s.metadata.name}`).sort()).toEqual(
        [`${ns1}/a`, `${ns2}/a`].sort(),
      );
      const named = await ds.list('NetworkSet', { namespace: ns2, name: 'a' });
      expect(named.items).toHaveLength(1);
      expect((await errorOf(ds.list('NetworkSet', { selector: 'color ==' }))).code).toBe('invalid');
      const profiles = await ds.list('Profile');
      expect(profiles.items.map((p) => p.metadata.name)).toContain('projectcalico-default-allow');
      expect((await ds.get('Profile', 'projectcalico-default-allow')).spec).toEqual({
        ingress: [{ action: 'Allow' }],
        egress: [{ action: 'Allow' }],
      });
    });

    it('stores policies under their name with the name annotation; reads pre-v3.32 default.<name> keys', async () => {
      const ds = env.datastore();
      const name = uniqueName('gnp');
      const gnp = await ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'GlobalNetworkPolicy',
        metadata: { name },
        spec: { selector: 'all()', ingress: [{ action: 'Allow' }] },
      });
      expect(gnp.metadata.annotations).toBeUndefined();
      expect(gnp.metadata.labels).toEqual({ 'projectcalico.org/tier': 'default' });
      const raw = await env.kv().get(`/calico/resources/v3/projectcalico.org/globalnetworkpolicies/${name}`);
      expect(JSON.parse(raw!.value).metadata.annotations).toEqual({
        'projectcalico.org/metadata': JSON.stringify({ name }),
      });

      const legacy = uniqueName('old');
      await env.kv().put(
        `/calico/resources/v3/projectcalico.org/networkpolicies/ns1/default.${legacy}`,
        JSON.stringify({
          kind: 'NetworkPolicy',
          apiVersion: 'projectcalico.org/v3',
          metadata: {
            name: `default.${legacy}`,
            namespace: 'ns1',
            uid: 'u-old',
            creationTimestamp: '2024-01-01T00:00:00Z',
          },
          spec: { tier: 'default', order: 10, selector: 'all()', types: ['Ingress'] },
        }),
      );
      const old = await ds.get('NetworkPolicy', legacy, { namespace: 'ns1' });
      expect(old.metadata.name).toBe(legacy);
      expect(old.spec.order).toBe(10);
      const listed = await ds.list('NetworkPolicy', { namespace: 'ns1', name: legacy });
      expect(listed.items.map((p) => p.metadata.name)).toEqual([legacy]);
      const updated = await ds.update({ ...old, spec: { ...old.spec, order: 20 } });
      expect(updated.spec.order).toBe(20);
      const deleted = await ds.delete('NetworkPolicy', legacy, { namespace: 'ns1' });
      expect(deleted.spec.order).toBe(20);
      expect(
        await env.kv().get(`/calico/resources/v3/projectcalico.org/networkpolicies/ns1/default.${legacy}`),
      ).toBeUndefined();
    });

    it('watch from a revision sees every later change, in order, typed', async () => {
      const ds = env.datastore();
      const ns = uniqueName('ns');
      const start = await ds.list('NetworkSet', { namespace: ns });
      const ac = new AbortController();
      const it = ds
        .watch('NetworkSet', { namespace: ns, revision: start.revision, signal: ac.signal })
        [Symbol.asyncIterator]();
      const a = await ds.create(networkSet('a', ns, { n: '1' }));
      const a2 = await ds.update({ ...a, metadata: { ...a.metadata, labels: { n: '2' } } });
      await ds.create(networkSet('b', ns));
      await ds.delete('NetworkSet', 'a', { namespace: ns });
      await ds.create(networkSet('elsewhere', uniqueName('ns')));
      const events = await take(it, (e) => e.length >= 4);
      ac.abort();
      expect(events.map(describeEvent)).toEqual([
        'added a n=1',
        'modified a n=2',
        'added b',
        'deleted a n=2',
      ]);
      const mod = events[1]!;
      expect(mod.kind === 'modified' && mod.previous?.metadata.labels).toEqual({ n: '1' });
      expect(mod.kind === 'modified' && mod.resource).toEqual(a2);
      const revs = events.map((e) => ('revision' in e ? Number(e.revision) : 0));
      expect(revs).toEqual([...revs].sort((x, y) => x - y));
    });

    it('watch from a compacted revision yields resync with the current state, never a silent gap', async () => {
      const ds = env.datastore();
      const ns = uniqueName('ns');
      const start = await ds.list('NetworkSet', { namespace: ns });
      await ds.create(networkSet('a', ns));
      await ds.create(networkSet('b', ns));
      await ds.delete('NetworkSet', 'a', { namespace: ns });
      await env.compact(await env.kv().revision());
      const ac = new AbortController();
      const it = ds
        .watch('NetworkSet', { namespace: ns, revision: start.revision, signal: ac.signal })
        [Symbol.asyncIterator]();
      const first = await take(it, (e) => e.length >= 1);
      await ds.create(networkSet('c', ns));
      const next = await take(it, (e) => e.length >= 1);
      ac.abort();
      expect(first.map(describeEvent)).toEqual(['resync [b]']);
      expect(next.map(describeEvent)).toEqual(['added c']);
    });

    it('watch reports a value it cannot decode as an error event, not silently', async () => {
      const ds = env.datastore();
      const ns = uniqueName('ns');
      const ac = new AbortController();
      const w = ds.watch('NetworkSet', {
        namespace: ns,
        revision: await env.kv().revision(),
        signal: ac.signal,
      });
      const it = w[Symbol.asyncIterator]();
      let outcome: 'stored' | 'refused' = 'stored';
      if (env.writeUndecodable) outcome = await env.writeUndecodable(ns, 'broken');
      else await env.kv().put(`/calico/resources/v3/projectcalico.org/networksets/${ns}/broken`, '{not json');
      if (outcome === 'refused') {
        // The store itself refused it (a schema-checking API server): nothing to misreport.
        await ds.create(networkSet('fine', ns));
        const events = await take(it, (e) => e.length >= 1);
        ac.abort();
        expect(events.map(describeEvent)).toEqual(['added fine']);
        return;
      }
      const events = await take(it, (e) => e.length >= 1);
      ac.abort();
      expect(events.map(describeEvent)).toEqual([
        `error /calico/resources/v3/projectcalico.org/networksets/${ns}/broken`,
      ]);
    });
  });
}
