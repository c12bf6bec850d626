/** planMirror: the writes that make the Calico datastore equal what Kubernetes implies. */
import type { Profile } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { planMirror } from './reconcile.js';

const profile = (
  name: string,
  labelsToApply: Record<string, string>,
  extra: Partial<Profile['metadata']> = {},
): Profile => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Profile',
  metadata: { name, ...extra },
  spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }], labelsToApply },
});

describe('planMirror', () => {
  it('creates what is missing, updates what differs, deletes what is no longer implied', () => {
    const desired = [
      profile('kns.a', { 'pcns.team': 'x' }),
      profile('kns.b', {}),
      profile('kns.c', { 'pcns.v': '2' }),
    ];
    const current = [
      profile('kns.b', {}, { uid: 'u-b', resourceVersion: '7' }),
      profile('kns.c', { 'pcns.v': '1' }, { uid: 'u-c', resourceVersion: '8' }),
      profile('kns.gone', {}, { uid: 'u-g', resourceVersion: '9' }),
    ];
    const plan = planMirror(desired, current);
    expect(plan.creates.map((r) => r.metadata)).toEqual([{ name: 'kns.a' }]);
    expect(plan.updates).toEqual([
      {
        ...profile('kns.c', { 'pcns.v': '2' }),
        metadata: { name: 'kns.c', uid: 'u-c', resourceVersion: '8' },
      },
    ]);
    expect(plan.deletes.map((r) => r.metadata.name)).toEqual(['kns.gone']);
  });

  it('ignores store-owned metadata and key order: equal content is no write', () => {
    const d = profile(
      'kns.a',
      { b: '1', a: '2' },
      { uid: 'k8s-uid', creationTimestamp: '2026-01-01T00:00:00Z' },
    );
    const c = profile('kns.a', { a: '2', b: '1' }, { uid: 'etcd-uid', resourceVersion: '3' });
    expect(planMirror([d], [c])).toEqual({ creates: [], updates: [], deletes: [] });
  });
});
