import { describe, expect, it } from 'vitest';
import {
  connectivityMatrix,
  connectivityReport,
  mergeConnectivityReports,
  type ProbeResult,
  table,
} from './render.js';

const PODS = [
  { id: 'a/p1', ip: '198.19.0.1' },
  { id: 'a/p2', ip: '198.19.0.65' },
  { id: 'b/p3', ip: '198.19.0.129' },
];
const ok = (id: string): ProbeResult => ({ id, reachable: true, reply: id, ms: 1.5 });

describe('connectivity report', () => {
  it('counts a cell reachable only when the destination itself answered', () => {
    const results = new Map<string, ProbeResult[] | Error>([
      ['a/p1', [ok('a/p2'), { id: 'b/p3', reachable: false, error: 'timeout', ms: 1500 }]],
      ['a/p2', [ok('a/p1'), { id: 'b/p3', reachable: true, reply: 'a/p1', ms: 2 }]],
      ['b/p3', new Error('nsenter: cannot open /run/netns/x')],
    ]);
    const r = connectivityReport('tcp', 80, PODS, results);
    expect(r.cells.map((c) => [c.from, c.to, c.reachable, c.error])).toEqual([
      ['a/p1', 'a/p2', true, undefined],
      ['a/p1', 'b/p3', false, 'timeout'],
      ['a/p2', 'a/p1', true, undefined],
      ['a/p2', 'b/p3', false, 'answered by a/p1'],
      ['b/p3', 'a/p1', false, 'nsenter: cannot open /run/netns/x'],
      ['b/p3', 'a/p2', false, 'nsenter: cannot open /run/netns/x'],
    ]);
    expect([r.reachable, r.unreachable, r.allReachable]).toEqual([2, 4, false]);
  });
  it('draws the matrix with a summary and the failures', () => {
    const results = new Map<string, ProbeResult[] | Error>(
      PODS.map((s) => [s.id, PODS.filter((d) => d.id !== s.id).map((d) => ok(d.id))]),
    );
    const r = connectivityReport('udp', 53, PODS, results);
    expect(r.allReachable).toBe(true);
    expect(connectivityMatrix(r)).toBe(
      [
        'FROM \\ TO (udp/53)  a/p1  a/p2  b/p3',
        'a/p1                ·     ok    ok',
        'a/p2                ok    ·     ok',
        'b/p3                ok    ok    ·',
        '6/6 reachable',
      ].join('\n'),
    );
  });
  it('dual stack: one matrix per family, cells tagged with theirs, counts over both', () => {
    const v6 = [
      { id: 'a/p1', ip: 'fd00:19::1' },
      { id: 'a/p2', ip: 'fd00:19::41' },
    ];
    const all = (pods: { id: string }[]) =>
      new Map<string, ProbeResult[] | Error>(
        pods.map((s) => [s.id, pods.filter((d) => d.id !== s.id).map((d) => ok(d.id))]),
      );
    const r4 = connectivityReport('tcp', 80, PODS.slice(0, 2), all(PODS.slice(0, 2)), 4);
    const r6 = connectivityReport(
      'tcp',
      80,
      v6,
      new Map([
        ['a/p1', [ok('a/p2')]],
        ['a/p2', [{ id: 'a/p1', reachable: false, error: 'timeout', ms: 1500 }]],
      ]),
      6,
    );
    const r = mergeConnectivityReports([r4, r6]);
    expect(r.families).toEqual([4, 6]);
    expect(r.cells.map((c) => [c.family, c.from, c.toIP, c.reachable])).toEqual([
      [4, 'a/p1', '198.19.0.65', true],
      [4, 'a/p2', '198.19.0.1', true],
      [6, 'a/p1', 'fd00:19::41', true],
      [6, 'a/p2', 'fd00:19::1', false],
    ]);
    expect([r.reachable, r.unreachable, r.allReachable]).toEqual([3, 1, false]);
    expect(connectivityMatrix(r)).toBe(
      [
        'FROM \\ TO (tcp/80 IPv4)  a/p1  a/p2',
        'a/p1                     ·     ok',
        'a/p2                     ok    ·',
        'FROM \\ TO (tcp/80 IPv6)  a/p1  a/p2',
        'a/p1                     ·     ok',
        'a/p2                     --    ·',
        '3/4 reachable',
        '  a/p2 -> a/p1 (fd00:19::1): timeout',
      ].join('\n'),
    );
  });
  it('says so when there is nothing to test', () => {
    const r = connectivityReport('tcp', 80, [PODS[0]!], new Map());
    expect(r.allReachable).toBe(false);
    expect(connectivityMatrix(r)).toMatch(/no pairs to test: create at least two pods/);
  });
  it('aligns tables without trailing spaces', () => {
    expect(
      table(
        ['A', 'LONGER'],
        [
          ['xx', 'y'],
          ['z', ''],
        ],
      ),
    ).toBe('A   LONGER\nxx  y\nz');
  });
});
