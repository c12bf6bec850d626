import { describe, expect, it } from 'vitest';
import { median, renderBench } from './bench.js';

describe('lab bench output', () => {
  it('medians of odd and even samples', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeUndefined();
  });
  it('one row per measure, dashes where nothing was measured', () => {
    const text = renderBench(
      {
        pods: 3,
        podCreateMs: [300, 200, 250],
        routeConvergenceMs: { n1: 1200, n2: null },
        connectMs: { sameNode: [], crossNode: [1, 3] },
        unreachable: 1,
      },
      'table',
    );
    expect(text.split('\n')).toEqual([
      'MEASURE                                       MEDIAN     MIN        MAX        SAMPLES',
      'pod create (Pod, CNI ADD, listener, status)   250.0 ms   200.0 ms   300.0 ms   3',
      'first block routed on every other node (BGP)  1200.0 ms  1200.0 ms  1200.0 ms  1',
      'TCP connect + reply, same node                -          -          -          0',
      'TCP connect + reply, across nodes             2.0 ms     1.0 ms     3.0 ms     2',
      '1 pairs unreachable',
    ]);
  });
});
