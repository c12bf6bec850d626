/**
 * A policy names a tier that must exist when it is created (upstream clientv3's policy Create gets
 * the tier first): NetworkPolicy, GlobalNetworkPolicy and their staged forms, on create and on an
 * apply that creates. The `default` tier always exists and is not looked up. A refused write
 * writes nothing.
 */
import type { Kind, Resource, ValidationError } from '@calico-ts/api';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryKVStore } from './kv/memory-kv-store.js';
import { KVDatastore } from './kv-datastore.js';
import { errorOf } from './testing-internal/datastore-contract.js';

const V3 = 'projectcalico.org/v3';

let store: MemoryKVStore;
let ds: KVDatastore;
beforeEach(() => {
  store = new MemoryKVStore();
  ds = new KVDatastore(store, { backend: 'memory' });
});

const SPEC = { selector: 'all()', ingress: [{ action: 'Allow' }] };
const policies = (tier?: string): Resource[] =>
  [
    { kind: 'NetworkPolicy', metadata: { name: 'np', namespace: 'prod' }, spec: { ...SPEC, tier } },
    { kind: 'GlobalNetworkPolicy', metadata: { name: 'gnp' }, spec: { ...SPEC, tier } },
    { kind: 'StagedNetworkPolicy', metadata: { name: 'snp', namespace: 'prod' }, spec: { ...SPEC, tier } },
    { kind: 'StagedGlobalNetworkPolicy', metadata: { name: 'sgnp' }, spec: { ...SPEC, tier } },
  ].map((p) => ({ apiVersion: V3, ...p, spec: tier === undefined ? SPEC : p.spec }) as Resource);
const create = (r: Resource) => ds.create(r as Resource & { kind: Kind });
const apply = (r: Resource) => ds.apply(r as Resource & { kind: Kind });

describe('a policy’s tier must exist', () => {
  it('refuses every policy kind in a missing tier, on create and on apply, writing nothing', async () => {
    const before = store.dump();
    for (const p of policies('security')) {
      for (const write of [() => create(p), () => apply(p)]) {
        const e = await errorOf(write());
        expect(e.code).toBe('invalid');
        expect(e.message).toMatch(
          /was not written: spec\.tier: tier "security" does not exist; create the Tier before policies in it$/,
        );
        expect((e.cause as ValidationError).errors).toEqual([
          {
            path: 'spec.tier',
            rule: 'tier "security" does not exist; create the Tier before policies in it',
          },
        ]);
      }
    }
    expect(store.dump()).toEqual(before);
  });

  it('accepts them once the tier exists; the default tier (named or not) needs no Tier object', async () => {
    for (const p of [...policies(), ...policies('default')]) await apply(p);
    await ds.create({
      apiVersion: V3,
      kind: 'Tier',
      metadata: { name: 'security' },
      spec: { order: 100 },
    } as never);
    for (const p of policies('security'))
      await create({ ...p, metadata: { ...p.metadata, name: `security-${p.metadata.name}` } });
    const names = (await ds.list('GlobalNetworkPolicy')).items.map((p) => p.metadata.name).sort();
    expect(names).toEqual(['gnp', 'security-gnp']);
  });
});
