/**
 * IPPool rules that compare a write with stored state, through the typed client on the memory
 * store: overlap with other pools on create, immutable CIDR / block size / LoadBalancer use on
 * update, and that a refused write leaves the store untouched.
 */
import { type IPPool, ValidationError } from '@calico-ts/api';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryKVStore } from './kv/memory-kv-store.js';
import { KVDatastore } from './kv-datastore.js';
import { errorOf, ipPool } from './testing-internal/datastore-contract.js';

const POOLS = '/calico/resources/v3/projectcalico.org/ippools/';

let store: MemoryKVStore;
let ds: KVDatastore;

beforeEach(() => {
  store = new MemoryKVStore();
  ds = new KVDatastore(store, { backend: 'memory' });
});

/** Expect `write` to fail `invalid` with exactly these field errors, and to write nothing. */
async function expectRefused(
  write: () => Promise<unknown>,
  errors: { path: string; rule: string }[],
  subject: string,
): Promise<void> {
  const before = store.dump();
  const revision = await store.revision();
  const e = await errorOf(write());
  expect(e.code).toBe('invalid');
  expect(e.message).toBe(
    `${subject} was not written: ${errors.map((f) => `${f.path}: ${f.rule}`).join('; ')}`,
  );
  expect(e.cause).toBeInstanceOf(ValidationError);
  expect((e.cause as ValidationError).errors).toEqual(errors);
  expect(store.dump()).toEqual(before);
  expect(await store.revision()).toBe(revision);
}

describe('IPPool create: no overlap with another stored pool', () => {
  const overlapping: [string, string, string][] = [
    ['IPv4 equal', '10.10.0.0/16', '10.10.0.0/16'],
    ['IPv4 containing', '10.10.0.0/16', '10.0.0.0/8'],
    ['IPv4 contained', '10.10.0.0/16', '10.10.64.0/18'],
    ['IPv6 equal', 'fd00:10::/48', 'fd00:10::/48'],
    ['IPv6 containing', 'fd00:10::/48', 'fd00::/16'],
    ['IPv6 contained', 'fd00:10::/48', 'fd00:10:0:8::/64'],
  ];
  for (const [what, existing, cidr] of overlapping) {
    it(`refuses ${what} (${cidr} over ${existing}) on create and on apply`, async () => {
      await ds.create(ipPool('existing', existing));
      const rule = `IPPool(new-pool) CIDR overlaps with IPPool(existing) CIDR ${existing}`;
      const errors = [{ path: 'spec.cidr', rule }];
      await expectRefused(() => ds.create(ipPool('new-pool', cidr)), errors, 'IPPool "new-pool"');
      await expectRefused(() => ds.apply(ipPool('new-pool', cidr)), errors, 'IPPool "new-pool"');
      expect((await ds.list('IPPool')).items.map((p) => p.metadata.name)).toEqual(['existing']);
    });
  }

  const separate: [string, string, string][] = [
    ['IPv4 adjacent below', '10.10.0.0/16', '10.9.0.0/16'],
    ['IPv4 adjacent above', '10.10.0.0/16', '10.11.0.0/16'],
    ['IPv6 adjacent', 'fd00:10::/48', 'fd00:11::/48'],
    ['another family', '10.10.0.0/16', 'fd00:10::/48'],
  ];
  for (const [what, existing, cidr] of separate) {
    it(`accepts ${what} (${cidr} next to ${existing})`, async () => {
      await ds.create(ipPool('existing', existing));
      const created = await ds.create(ipPool('new-pool', cidr));
      expect(created.spec.cidr).toBe(cidr);
      const applied = await ds.apply(ipPool('applied', '10.200.0.0/16'));
      expect(applied.metadata.resourceVersion).toBe(await store.revision());
      expect((await ds.list('IPPool')).items.map((p) => `${p.metadata.name} ${p.spec.cidr}`).sort()).toEqual(
        [`existing ${existing}`, `new-pool ${cidr}`, 'applied 10.200.0.0/16'].sort(),
      );
    });
  }

  it('allowPoolOverlap (a split) lets a pool overlap, and only that rule', async () => {
    await ds.create(ipPool('parent', '10.10.0.0/16'));
    const child = await ds.create(ipPool('child', '10.10.0.0/17'), { allowPoolOverlap: true });
    expect(child.spec.cidr).toBe('10.10.0.0/17');
    // Validation of the pool itself still applies.
    const e = await errorOf(ds.create(ipPool('bad', '10.10.0.0/33'), { allowPoolOverlap: true }));
    expect(e.code).toBe('invalid');
    expect((await ds.list('IPPool')).items.map((p) => p.metadata.name).sort()).toEqual(['child', 'parent']);
  });

  it('names every pool the new one overlaps, with the stored CIDR', async () => {
    await ds.create(ipPool('a', '10.1.0.0/16'));
    await ds.create(ipPool('b', '10.2.0.0/16'));
    await ds.create(ipPool('c', '10.3.0.0/16'));
    await expectRefused(
      () => ds.create(ipPool('wide', '10.0.0.0/14')),
      [
        { path: 'spec.cidr', rule: 'IPPool(wide) CIDR overlaps with IPPool(a) CIDR 10.1.0.0/16' },
        { path: 'spec.cidr', rule: 'IPPool(wide) CIDR overlaps with IPPool(b) CIDR 10.2.0.0/16' },
        { path: 'spec.cidr', rule: 'IPPool(wide) CIDR overlaps with IPPool(c) CIDR 10.3.0.0/16' },
      ],
      'IPPool "wide"',
    );
  });

  it('creating an existing pool again fails already-exists, not overlap', async () => {
    await ds.create(ipPool('p', '10.1.0.0/16'));
    const e = await errorOf(ds.create(ipPool('p', '10.1.0.0/16')));
    expect(e.code).toBe('already-exists');
    expect(e.message).toBe('IPPool "p" already exists');
  });

  it('a resource invalid on its own reports its own errors first', async () => {
    await ds.create(ipPool('a', '10.1.0.0/16'));
    const e = await errorOf(ds.create(ipPool('b', '10.1.0.1/16')));
    expect(e.code).toBe('invalid');
    expect((e.cause as ValidationError).errors.map((f) => f.path)).toEqual(['spec.cidr']);
    expect(e.message).toContain('is not strictly masked');
  });
});

describe('IPPool update: what may not change from the stored version', () => {
  async function stored(spec: Partial<IPPool['spec']> = {}): Promise<IPPool> {
    return ds.create(ipPool('p', '10.10.0.0/16', spec));
  }
  function withSpec(p: IPPool, spec: Partial<IPPool['spec']>): IPPool {
    return { ...p, spec: { ...p.spec, ...spec } };
  }

  it('refuses a CIDR change on update and on apply', async () => {
    const v1 = await stored();
    const errors = [
      { path: 'spec.cidr', rule: 'IPPool CIDR cannot be modified (stored 10.10.0.0/16, given 10.20.0.0/16)' },
    ];
    await expectRefused(() => ds.update(withSpec(v1, { cidr: '10.20.0.0/16' })), errors, 'IPPool "p"');
    await expectRefused(() => ds.apply(ipPool('p', '10.20.0.0/16')), errors, 'IPPool "p"');
    // Narrowing or widening is a change too.
    await expectRefused(
      () => ds.update(withSpec(v1, { cidr: '10.10.0.0/17' })),
      [
        {
          path: 'spec.cidr',
          rule: 'IPPool CIDR cannot be modified (stored 10.10.0.0/16, given 10.10.0.0/17)',
        },
      ],
      'IPPool "p"',
    );
  });

  it('refuses a blockSize change, also when the new one is left to its default', async () => {
    const v1 = await stored({ blockSize: 24 });
    await expectRefused(
      () => ds.update(withSpec(v1, { blockSize: 28 })),
      [{ path: 'spec.blockSize', rule: 'IPPool BlockSize cannot be modified (stored 24, given 28)' }],
      'IPPool "p"',
    );
    await expectRefused(
      () => ds.apply(ipPool('p', '10.10.0.0/16')),
      [{ path: 'spec.blockSize', rule: 'IPPool BlockSize cannot be modified (stored 24, given 26)' }],
      'IPPool "p"',
    );
  });

  it("reports a CIDR and a blockSize change together, in upstream's order", async () => {
    const v1 = await stored();
    await expectRefused(
      () => ds.update(withSpec(v1, { cidr: 'fd00::/64', blockSize: 120 })),
      [
        { path: 'spec.cidr', rule: 'IPPool CIDR cannot be modified (stored 10.10.0.0/16, given fd00::/64)' },
        { path: 'spec.blockSize', rule: 'IPPool BlockSize cannot be modified (stored 26, given 120)' },
      ],
      'IPPool "p"',
    );
  });

  it('refuses giving a LoadBalancer pool another use; the other way is allowed', async () => {
    const lb = await ds.create(ipPool('lb', '10.30.0.0/16', { allowedUses: ['LoadBalancer'] }));
    await expectRefused(
      () => ds.update(withSpec(lb, { allowedUses: ['Workload'] })),
      [
        {
          path: 'spec.allowedUses',
          rule: 'IPPool allowed use cannot be changed from LoadBalacer to Workload or Tunnel',
        },
      ],
      'IPPool "lb"',
    );
    const v1 = await stored();
    const v2 = await ds.update(withSpec(v1, { allowedUses: ['LoadBalancer'] }));
    expect(v2.spec.allowedUses).toEqual(['LoadBalancer']);
  });

  it('accepts changes to encapsulation, NAT, disabled and selectors', async () => {
    const v1 = await stored({ ipipMode: 'Always' });
    const v2 = await ds.update(
      withSpec(v1, {
        ipipMode: 'Never',
        vxlanMode: 'CrossSubnet',
        natOutgoing: true,
        nodeSelector: 'a == "b"',
      }),
    );
    expect(v2.spec).toMatchObject({ ipipMode: 'Never', vxlanMode: 'CrossSubnet', natOutgoing: true });
    const v3 = await ds.update(withSpec(v2, { disabled: true }));
    expect(v3.spec.disabled).toBe(true);
    const v4 = await ds.apply(ipPool('p', '10.10.0.0/16', { vxlanMode: 'Always' }));
    expect(v4.spec).toMatchObject({ cidr: '10.10.0.0/16', vxlanMode: 'Always', blockSize: 26 });
    expect((await ds.get('IPPool', 'p')).spec.vxlanMode).toBe('Always');
  });

  it('accepts an unchanged apply and update', async () => {
    const v1 = await stored({ natOutgoing: true });
    const applied = await ds.apply(ipPool('p', '10.10.0.0/16', { natOutgoing: true }));
    expect(applied.spec).toEqual(v1.spec);
    expect(applied.metadata.uid).toBe(v1.metadata.uid);
    const updated = await ds.update(applied);
    expect(updated.spec).toEqual(v1.spec);
    expect(Number(updated.metadata.resourceVersion)).toBeGreaterThan(
      Number(applied.metadata.resourceVersion),
    );
  });

  it('lets a stored non-canonical CIDR be rewritten in canonical form, and nothing else', async () => {
    // Written by some other client without validation: same network, another spelling.
    await store.put(
      `${POOLS}v6`,
      JSON.stringify({
        kind: 'IPPool',
        apiVersion: 'projectcalico.org/v3',
        metadata: { name: 'v6', uid: 'u-1', creationTimestamp: '2026-01-02T03:04:05Z' },
        spec: { cidr: 'FD00:0:0:0::/64', blockSize: 122 },
      }),
    );
    const old = await ds.get('IPPool', 'v6');
    expect(old.spec.cidr).toBe('FD00:0:0:0::/64');
    const updated = await ds.update(old);
    expect(updated.spec.cidr).toBe('fd00::/64');
    expect(JSON.parse((await store.get(`${POOLS}v6`))!.value).spec.cidr).toBe('fd00::/64');
  });

  it('an update of a missing pool fails not-found, a stale one conflict, before any rule', async () => {
    const v1 = await stored();
    const v2 = await ds.update({ ...v1, metadata: { ...v1.metadata, labels: { x: 'y' } } });
    const stale = await errorOf(ds.update(withSpec(v1, { cidr: '10.20.0.0/16' })));
    expect(stale.code).toBe('conflict');
    expect(stale.message).toContain('IPPool "p" was changed by someone else');
    const gone = await errorOf(ds.update({ ...v2, metadata: { ...v2.metadata, name: 'gone' } }));
    expect(gone.code).toBe('not-found');
    expect(gone.message).toBe('IPPool "gone" not found');
    expect((await ds.get('IPPool', 'p')).metadata.resourceVersion).toBe(v2.metadata.resourceVersion);
  });
});
