import type { HostEndpoint, Node } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { autoHostEndpoint, planHostEndpoints, syncedNodeLabels } from './node-sync.js';

const node = (labels: Record<string, string>, annotations?: Record<string, string>): Node =>
  ({
    apiVersion: 'projectcalico.org/v3',
    kind: 'Node',
    metadata: { name: 'n1', labels, ...(annotations ? { annotations } : {}) },
    spec: {},
  }) as Node;

describe('syncedNodeLabels', () => {
  it('reaches a fixed point: once synced, nothing more to write', () => {
    const first = syncedNodeLabels(node({ own: '1' }), { zone: 'a' })!;
    expect(first.metadata.labels).toEqual({ own: '1', zone: 'a' });
    expect(syncedNodeLabels(first, { zone: 'a' })).toBeUndefined();
    const second = syncedNodeLabels(first, { rack: '7' })!;
    expect(second.metadata.labels).toEqual({ own: '1', rack: '7' });
    expect(second.metadata.annotations?.['projectcalico.org/kube-labels']).toBe('{"rack":"7"}');
  });
});

describe('planHostEndpoints', () => {
  it('never touches a HostEndpoint without the created-by label', () => {
    const mine = autoHostEndpoint(node({}));
    const theirs = {
      ...mine,
      metadata: { name: 'n1-eth0' },
      spec: { node: 'n1', interfaceName: 'eth0' },
    } as HostEndpoint;
    expect(planHostEndpoints([], [theirs, mine], false).deletes.map((h) => h.metadata.name)).toEqual([
      'n1-auto-hep',
    ]);
    expect(planHostEndpoints([node({})], [theirs], true).creates.map((h) => h.metadata.name)).toEqual([
      'n1-auto-hep',
    ]);
  });
});
