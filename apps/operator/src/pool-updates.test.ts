import { describe, expect, it } from 'vitest';
import { POOL_SPEC_ANNOTATION, poolStep } from './pool-updates.js';
import type { PoolResource } from './render.js';

const desired = (spec: Record<string, unknown> = {}): PoolResource => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'IPPool',
  metadata: { name: 'default-ipv4-ippool', labels: { 'app.kubernetes.io/managed-by': 'tigera-operator' } },
  spec: {
    cidr: '198.19.0.0/16',
    ipipMode: 'Never',
    vxlanMode: 'CrossSubnet',
    natOutgoing: true,
    blockSize: 26,
    nodeSelector: 'all()',
    allowedUses: ['Workload', 'Tunnel'],
    ...spec,
  },
});

/** What the datastore holds after the create step: the pool, with defaults it adds. */
function storedFrom(step: ReturnType<typeof poolStep>): Record<string, unknown> {
  if (step.action !== 'create' && step.action !== 'update') throw new Error(`no pool in ${step.action}`);
  const p = structuredClone(step.pool) as {
    metadata: Record<string, unknown>;
    spec: Record<string, unknown>;
  };
  return {
    ...p,
    metadata: { ...p.metadata, resourceVersion: '7', uid: 'u' },
    spec: { ...p.spec, assignmentMode: 'Automatic' },
  };
}

describe('poolStep', () => {
  it('creates a missing pool with a record of what it wrote', () => {
    const step = poolStep(desired(), undefined);
    expect(step.action).toBe('create');
    const meta = (storedFrom(step).metadata ?? {}) as { annotations: Record<string, string> };
    expect(JSON.parse(meta.annotations[POOL_SPEC_ANNOTATION]!)).toMatchObject({ vxlanMode: 'CrossSubnet' });
  });

  it('keeps a pool it made while the Installation says the same', () => {
    const stored = storedFrom(poolStep(desired(), undefined));
    expect(poolStep(desired(), stored)).toEqual({ action: 'keep', why: 'same' });
  });

  it('carries an Installation edit into the pool it made, keeping fields it does not set', () => {
    const stored = storedFrom(poolStep(desired(), undefined));
    const step = poolStep(desired({ vxlanMode: 'Always' }), stored);
    expect(step.action).toBe('update');
    if (step.action !== 'update') return;
    expect(step.changed).toEqual(['vxlanMode']);
    const spec = step.pool.spec as Record<string, unknown>;
    expect(spec).toMatchObject({ vxlanMode: 'Always', assignmentMode: 'Automatic', cidr: '198.19.0.0/16' });
    expect((step.pool.metadata as Record<string, unknown>).resourceVersion).toBe('7');
    // The record now says what was written: the next pass keeps it.
    expect(poolStep(desired({ vxlanMode: 'Always' }), storedFrom(step))).toEqual({
      action: 'keep',
      why: 'same',
    });
  });

  it('never overwrites a pool someone edited, nor one it did not make', () => {
    const stored = storedFrom(poolStep(desired(), undefined)) as { spec: Record<string, unknown> };
    stored.spec.natOutgoing = false;
    expect(poolStep(desired({ vxlanMode: 'Always' }), stored)).toEqual({ action: 'keep', why: 'edited' });
    const foreign = { metadata: { name: 'default-ipv4-ippool' }, spec: { cidr: '198.19.0.0/16' } };
    expect(poolStep(desired(), foreign)).toEqual({ action: 'keep', why: 'not-recorded' });
  });

  it('refuses to move a pool’s CIDR in place, saying what to do instead', () => {
    const stored = storedFrom(poolStep(desired(), undefined));
    const step = poolStep(desired({ cidr: '198.18.128.0/17' }), stored);
    expect(step.action).toBe('refuse');
    if (step.action === 'refuse')
      expect(step.message).toMatch(
        /changes its cidr from 198\.19\.0\.0\/16 to 198\.18\.128\.0\/17.*cannot change in place: add a pool/,
      );
  });
});
