import type { AllocationBlock } from '@calico-ts/datastore';
import { newGcState } from '@calico-ts/ipam/internal';
import { describe, expect, it } from 'vitest';
import {
  ipamNodes,
  type JudgedAllocation,
  judgeAllocations,
  type LeakView,
  type NodeFate,
  type PodFacts,
  planLeakRelease,
} from './ipam-leaks.js';

interface Alloc {
  readonly ord: number;
  readonly handle: string | null;
  readonly attrs: Record<string, string>;
}

/** A /26 block in 198.19.<third>.0 with these allocations (sequence number = ordinal + 1). */
function block(third: number, affinity: string | null, allocs: readonly Alloc[]): AllocationBlock {
  const allocations: (number | null)[] = Array.from({ length: 64 }, () => null);
  const seq: Record<string, bigint> = {};
  const attributes = allocs.map((a, i) => {
    allocations[a.ord] = i;
    seq[String(a.ord)] = BigInt(a.ord + 1);
    return { handle_id: a.handle, secondary: a.attrs };
  });
  return {
    cidr: `198.19.${third}.0/26`,
    affinity,
    allocations,
    unallocated: allocations.flatMap((a, i) => (a === null ? [i] : [])),
    attributes,
    sequenceNumber: 100n,
    sequenceNumberForAllocation: seq,
    deleted: false,
  };
}

const podAlloc = (ord: number, node: string, pod: string, ns = 'web'): Alloc => ({
  ord,
  handle: `k8s-pod-network.${pod}`,
  attrs: { namespace: ns, pod, node, timestamp: '2026-11-26 00:00:00 +0000 UTC' },
});
const tunnel = (ord: number, node: string): Alloc => ({
  ord,
  handle: `vxlan-tunnel-addr-${node}`,
  attrs: { node, type: 'vxlanTunnelAddress' },
});
const running = (node: string, ...addresses: string[]): PodFacts => ({
  nodeName: node,
  addresses,
  reported: addresses.length > 0,
  evicted: false,
});

function view(pods: Record<string, PodFacts>, gone: readonly string[] = [], other: string[] = []): LeakView {
  return {
    pod: (ns, name) => pods[`${ns}/${name}`],
    node: (n): NodeFate =>
      other.includes(n)
        ? { kind: 'not-kubernetes' }
        : gone.includes(n)
          ? { kind: 'gone' }
          : { kind: 'exists', kubernetesName: n },
  };
}

const verdicts = (j: { allocations: readonly JudgedAllocation[] }) =>
  Object.fromEntries(j.allocations.map((a) => [a.ip, a.verdict]));

describe('judgeAllocations', () => {
  it('keeps a running pod’s address, and one whose pod has not reported an address yet', () => {
    const blocks = [block(0, 'host:n1', [podAlloc(1, 'n1', 'a'), podAlloc(2, 'n1', 'b')])];
    const j = judgeAllocations(
      blocks,
      view({ 'web/a': running('n1', '198.19.0.1'), 'web/b': { ...running('n1'), reported: false } }),
    );
    expect(verdicts(j)).toEqual({ '198.19.0.1': 'valid', '198.19.0.2': 'valid' });
    expect(j.nodesToRelease).toEqual([]);
  });

  it('a pod that is gone, moved to another node, evicted or showing another address leaves a candidate', () => {
    const blocks = [
      block(0, 'host:n1', [
        podAlloc(1, 'n1', 'gone'),
        podAlloc(2, 'n1', 'moved'),
        podAlloc(3, 'n1', 'evicted'),
        podAlloc(4, 'n1', 'other-ip'),
      ]),
    ];
    const j = judgeAllocations(
      blocks,
      view({
        'web/moved': running('n2', '198.19.0.2'),
        'web/evicted': { ...running('n1', '198.19.0.3'), evicted: true },
        'web/other-ip': running('n1', '198.19.0.9'),
      }),
    );
    expect(verdicts(j)).toEqual({
      '198.19.0.1': 'candidate',
      '198.19.0.2': 'candidate',
      '198.19.0.3': 'candidate',
      '198.19.0.4': 'candidate',
    });
  });

  it('on a deleted node, leaks are confirmed at once and the node is released with its tunnel address', () => {
    const blocks = [
      block(0, 'host:n3', [tunnel(0, 'n3'), podAlloc(1, 'n3', 'p1'), podAlloc(2, 'n3', 'p2')]),
      block(1, 'host:n3', []),
      block(2, 'host:n1', [tunnel(0, 'n1')]),
    ];
    const j = judgeAllocations(blocks, view({}, ['n3']));
    expect(verdicts(j)).toEqual({
      '198.19.0.0': 'confirmed',
      '198.19.0.1': 'confirmed',
      '198.19.0.2': 'confirmed',
      '198.19.2.0': 'valid',
    });
    expect(j.nodesToRelease).toEqual(['n3']);
  });

  it('a deleted node keeps its blocks and tunnel address while one of its pods still exists', () => {
    const blocks = [
      block(0, 'host:n3', [tunnel(0, 'n3'), podAlloc(1, 'n3', 'still'), podAlloc(2, 'n3', 'gone')]),
    ];
    const j = judgeAllocations(blocks, view({ 'web/still': running('n3', '198.19.0.1') }, ['n3']));
    expect(verdicts(j)).toEqual({ '198.19.0.0': 'valid', '198.19.0.1': 'valid', '198.19.0.2': 'confirmed' });
    expect(j.nodesToRelease).toEqual([]);
  });

  it('a deleted node with nothing allocated is released; one with an allocation of unknown origin is not', () => {
    const blocks = [
      block(0, 'host:n3', []),
      block(1, 'host:n4', [{ ord: 5, handle: 'made-by-hand', attrs: { node: 'n4' } }]),
    ];
    const j = judgeAllocations(blocks, view({}, ['n3', 'n4']));
    expect(verdicts(j)).toEqual({ '198.19.1.5': 'valid' });
    expect(j.nodesToRelease).toEqual(['n3']);
  });

  it('never judges allocations without a handle or a node, nor those of nodes Kubernetes does not run', () => {
    const blocks = [
      block(0, null, [
        { ord: 1, handle: null, attrs: { namespace: 'web', pod: 'x', node: 'n3' } },
        { ord: 2, handle: 'h2', attrs: { namespace: 'web', pod: 'y' } },
        podAlloc(3, 'bare', 'z'),
      ]),
    ];
    const j = judgeAllocations(blocks, view({}, ['n3'], ['bare']));
    expect(verdicts(j)).toEqual({ '198.19.0.3': 'valid' });
    expect(ipamNodes(blocks)).toEqual(['bare', 'n3']);
  });
});

describe('planLeakRelease', () => {
  const blocks = [
    block(0, 'host:n1', [podAlloc(1, 'n1', 'gone'), podAlloc(2, 'n1', 'alive')]),
    block(1, 'host:n3', [podAlloc(1, 'n3', 'on-deleted-node')]),
  ];
  const judged = judgeAllocations(
    blocks,
    view({ 'web/alive': running('n1', '198.19.0.2') }, ['n3']),
  ).allocations;
  const ips = (xs: readonly { ip: string }[]) => xs.map((x) => x.ip).sort();

  it('releases confirmed leaks at once and candidates only after the grace period', () => {
    const state = newGcState();
    const first = planLeakRelease(judged, state, 1_000, 10_000);
    expect(ips(first.release)).toEqual(['198.19.1.1']);
    expect(first.pending.map((p) => [p.ip, p.releaseAt])).toEqual([['198.19.0.1', 11_000]]);
    state.firstSeen = first.firstSeen;
    expect(ips(planLeakRelease(judged, state, 10_999, 10_000).release)).toEqual(['198.19.1.1']);
    const later = planLeakRelease(judged, state, 11_000, 10_000);
    expect(ips(later.release)).toEqual(['198.19.0.1', '198.19.1.1']);
    expect(later.pending).toEqual([]);
  });

  it('with a grace period of 0 candidates are counted, never released; a deleted node’s leaks still go', () => {
    const state = newGcState();
    const p = planLeakRelease(judged, state, 1_000, 0);
    state.firstSeen = p.firstSeen;
    const much = planLeakRelease(judged, state, 1_000 + 365 * 86_400_000, 0);
    expect(ips(much.release)).toEqual(['198.19.1.1']);
    expect(ips(much.pending)).toEqual(['198.19.0.1']);
  });

  it('an owner that comes back starts the grace period over', () => {
    const state = newGcState();
    state.firstSeen = planLeakRelease(judged, state, 0, 10_000).firstSeen;
    const back = judgeAllocations(
      blocks,
      view({ 'web/alive': running('n1', '198.19.0.2'), 'web/gone': running('n1', '198.19.0.1') }, ['n3']),
    ).allocations;
    state.firstSeen = planLeakRelease(back, state, 5_000, 10_000).firstSeen;
    expect(ips(planLeakRelease(judged, state, 12_000, 10_000).release)).toEqual(['198.19.1.1']);
  });

  it('keeps every address of a handle while one of them is still in use, and releases them together', () => {
    const dual = [
      block(0, 'host:n1', [podAlloc(1, 'n1', 'dual')]),
      block(1, 'host:n1', [podAlloc(7, 'n1', 'dual')]),
    ];
    const state = newGcState();
    // The pod shows only the second address: the first is a candidate, the second valid.
    const half = judgeAllocations(dual, view({ 'web/dual': running('n1', '198.19.1.7') })).allocations;
    expect(planLeakRelease(half, state, 0, 1).release).toEqual([]);
    state.firstSeen = planLeakRelease(half, state, 0, 1).firstSeen;
    const later = planLeakRelease(half, state, 5, 1);
    expect(later.release).toEqual([]);
    expect(ips(later.pending)).toEqual(['198.19.0.1']);
    // Pod gone: both are candidates; the first keeps its first-seen time, the second starts now.
    const gone = judgeAllocations(dual, view({})).allocations;
    state.firstSeen = later.firstSeen;
    const both = planLeakRelease(gone, state, 6, 1);
    expect(both.release).toEqual([]);
    state.firstSeen = both.firstSeen;
    expect(ips(planLeakRelease(gone, state, 7, 1).release)).toEqual(['198.19.0.1', '198.19.1.7']);
  });
});
