import type { AllocationBlock } from '@calico-ts/datastore';
import { describe, expect, it } from 'vitest';
import { ipamMetrics, NO_POOL } from './ipam-metrics.js';
import { MetricsRegistry } from './metrics.js';

describe('MetricsRegistry', () => {
  it('renders the text exposition format: HELP, TYPE, sorted labels, escaped values', () => {
    const reg = new MetricsRegistry();
    const c = reg.counter('a_total', 'Things.\nTwo lines.', ['controller', 'op']);
    c.inc({ op: 'create', controller: 'ns' });
    c.inc({ controller: 'ns', op: 'create' }, 2);
    c.inc({ controller: 'we"ird\\', op: 'x' });
    reg.gauge('b', 'A gauge.').set({}, 1.5);
    expect(reg.render()).toBe(
      [
        '# HELP a_total Things.\\nTwo lines.',
        '# TYPE a_total counter',
        'a_total{controller="ns",op="create"} 3',
        'a_total{controller="we\\"ird\\\\",op="x"} 1',
        '# HELP b A gauge.',
        '# TYPE b gauge',
        'b 1.5',
        '',
      ].join('\n'),
    );
  });

  it('refuses wrong labels, a counter going down, and a counter being set', () => {
    const reg = new MetricsRegistry();
    const c = reg.counter('c_total', 'C.', ['controller']);
    expect(() => c.inc({})).toThrow(/takes labels controller/);
    expect(() => c.inc({ controller: 'x' }, -1)).toThrow(/cannot go down/);
    expect(() => c.set({ controller: 'x' }, 1)).toThrow(/counter/);
    expect(() => reg.gauge('c_total', 'C.', ['controller'])).toThrow(/twice/);
  });

  it('replace() drops series that are no longer computed', () => {
    const reg = new MetricsRegistry();
    const g = reg.gauge('g', 'G.', ['node']);
    g.replace([
      [{ node: 'a' }, 1],
      [{ node: 'b' }, 2],
    ]);
    g.replace([[{ node: 'b' }, 3]]);
    expect(reg.render()).toContain('g{node="b"} 3\n');
    expect(reg.render()).not.toContain('node="a"');
  });
});

function block(cidr: string, affinity: string | null, nodes: (string | null)[]): AllocationBlock {
  const attributes = nodes.map((n) => ({ handle_id: 'h', secondary: n === null ? null : { node: n } }));
  return {
    cidr,
    affinity,
    allocations: nodes.map((_n, i) => i),
    unallocated: [],
    attributes,
    sequenceNumber: 0n,
    sequenceNumberForAllocation: null,
    deleted: false,
  };
}

describe('ipamMetrics', () => {
  it('counts in-use, borrowed and candidate allocations and blocks by pool and node', () => {
    const pools = [{ name: 'p1', cidr: '10.0.0.0/16' }];
    const m = ipamMetrics(
      [
        block('10.0.0.0/26', 'host:a', ['a', 'a', 'b']),
        block('10.0.0.64/26', 'host:b', ['b']),
        block('192.168.0.0/26', null, [null]),
      ],
      pools,
      [{ ip: '10.0.0.2', node: 'b' }],
    );
    const get = (rows: typeof m.inUse, labels: Record<string, string>) =>
      rows.find(([l]) => JSON.stringify(l) === JSON.stringify(labels))?.[1];
    expect(get(m.inUse, { ippool: 'p1', node: 'a' })).toBe(2);
    expect(get(m.inUse, { ippool: 'p1', node: 'b' })).toBe(2);
    expect(get(m.inUse, { ippool: NO_POOL, node: '' })).toBe(1);
    expect(get(m.borrowed, { ippool: 'p1', node: 'b' })).toBe(1);
    expect(get(m.borrowed, { ippool: 'p1', node: 'a' })).toBeUndefined();
    expect(get(m.blocks, { ippool: 'p1', node: 'a' })).toBe(1);
    expect(get(m.blocks, { ippool: NO_POOL, node: '' })).toBe(1);
    expect(get(m.gcCandidates, { ippool: 'p1', node: 'b' })).toBe(1);
    expect(get(m.gcCandidates, { ippool: 'p1', node: 'a' })).toBe(0);
    expect(m.poolSize).toEqual([[{ ippool: 'p1' }, 65536]]);
    expect(get(m.blocksPerNode, { node: 'b' })).toBe(1);
    expect(get(m.allocationsPerNode, { node: 'b' })).toBe(2);
    expect(get(m.borrowedPerNode, { node: 'b' })).toBe(1);
  });
});
