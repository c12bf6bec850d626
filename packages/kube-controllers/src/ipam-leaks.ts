/**
 * Which IPAM allocations are leaks, and which deleted nodes give up their blocks: the deciding part
 * of the node controller's garbage collection (pure; upstream's node controller decides the same).
 *
 *   IPAM blocks ─► allocations by node ──┐
 *   Pods, Nodes (Kubernetes view) ───────┼─► judgeAllocations ─► a verdict per allocation,
 *                                        │                       the deleted nodes to release
 *   first-seen times, now, grace ────────┴─► planLeakRelease ──► release now / still pending
 *
 * An allocation is judged by what its attributes say it belongs to:
 *   - a pod (`namespace` + `pod`): valid while the Pod exists on that node and, once the Pod reports
 *     addresses, one of them is this one (an evicted Pod has none). Otherwise a leak: confirmed at
 *     once when the allocation's node is gone from Kubernetes, else a candidate, released after the
 *     grace period (0 turns that off: candidates are only counted).
 *   - a tunnel address (`type` ipipTunnelAddress, vxlanTunnelAddress, wireguardTunnelAddress):
 *     valid while its node exists; freed with the node.
 *   - anything else, or no `node` attribute, or no handle: never released on a guess.
 * A node gone from Kubernetes is released (its affinities, its empty blocks deleted) once none of
 * its allocations is valid or of unknown origin; its tunnel addresses go with it. An address is
 * released only when every address of its handle is released too (a dual-stack pod's two).
 */
import { formatIP } from '@calico-ts/api/net';
import type { AllocationBlock } from '@calico-ts/datastore';
import {
  allocationsOf,
  type GcState,
  gcKey,
  planGc,
  WINDOWS_RESERVED_HANDLE,
} from '@calico-ts/ipam/internal';

/** What the controller knows of a Pod (from its watch, or read again from the API). */
export interface PodFacts {
  /** `spec.nodeName`. */
  readonly nodeName?: string;
  /** The addresses the Pod shows: the CNI plugin's annotations, else its status. */
  readonly addresses: readonly string[];
  /** Whether the Pod's status reports an address yet (before that, any allocation of it is valid). */
  readonly reported: boolean;
  /** `status.phase` Failed with reason Evicted: its addresses are free to go. */
  readonly evicted: boolean;
}

/** Whether the Kubernetes Node behind a Calico node name exists, and its Kubernetes name. */
export type NodeFate =
  | { readonly kind: 'exists'; readonly kubernetesName: string }
  | { readonly kind: 'gone' }
  /** A Calico node that Kubernetes does not orchestrate: its allocations are not judged. */
  | { readonly kind: 'not-kubernetes' };

export interface LeakView {
  pod(namespace: string, name: string): PodFacts | undefined;
  node(calicoNode: string): NodeFate;
}

export type Verdict =
  /** In use, or not ours to judge: kept. */
  | 'valid'
  /** Owner gone, node still there: released after the grace period. */
  | 'candidate'
  /** Owner gone and node gone (or a tunnel address of a released node): released now. */
  | 'confirmed';

export interface JudgedAllocation {
  readonly ip: string;
  readonly block: string;
  readonly handleId: string;
  readonly sequenceNumber: bigint;
  readonly node: string;
  readonly attrs: Readonly<Record<string, string>>;
  readonly verdict: Verdict;
}

export interface Judgement {
  readonly allocations: readonly JudgedAllocation[];
  /** Nodes gone from Kubernetes with nothing valid left: release their affinities. */
  readonly nodesToRelease: readonly string[];
}

const TUNNEL_TYPES: ReadonlySet<string> = new Set([
  'ipipTunnelAddress',
  'vxlanTunnelAddress',
  'wireguardTunnelAddress',
]);

/** Every node the blocks mention: affinities (`host:<node>`) and allocations' `node` attributes. */
export function ipamNodes(blocks: readonly AllocationBlock[]): string[] {
  const out = new Set<string>();
  for (const block of blocks) {
    if (block.affinity?.startsWith('host:')) out.add(block.affinity.slice('host:'.length));
    for (const a of allocationsOf(block)) if (a.attrs.node) out.add(a.attrs.node);
  }
  return [...out].sort();
}

/** Is this address still the pod's? Upstream's checks, in its order. */
export function podOwnsAddress(pod: PodFacts | undefined, ip: string, fate: NodeFate): boolean {
  if (!pod) return false;
  // Rescheduled elsewhere: this node's allocation is no longer the pod's.
  if (fate.kind === 'exists' && pod.nodeName && pod.nodeName !== fate.kubernetesName) return false;
  if (!pod.reported) return true;
  if (pod.evicted) return false;
  return pod.addresses.includes(ip);
}

/** Every allocation judged, and the deleted nodes that can let go of their blocks. */
export function judgeAllocations(blocks: readonly AllocationBlock[], view: LeakView): Judgement {
  const fates = new Map<string, NodeFate>();
  const fateOf = (node: string) => {
    let f = fates.get(node);
    if (!f) {
      f = view.node(node);
      fates.set(node, f);
    }
    return f;
  };
  type Draft = Omit<JudgedAllocation, 'verdict'> & { verdict: Verdict; kind: 'pod' | 'tunnel' | 'other' };
  const byNode = new Map<string, Draft[]>();
  /** Nodes with an affine block, judged even when they hold no allocation. */
  const affineNodes = new Set<string>();
  for (const block of blocks) {
    if (block.affinity?.startsWith('host:')) affineNodes.add(block.affinity.slice('host:'.length));
    for (const a of allocationsOf(block)) {
      const node = a.attrs.node ?? '';
      // Without a handle nothing can be released safely; without a node nothing can be judged.
      if (a.handleId === null || a.handleId.toLowerCase() === WINDOWS_RESERVED_HANDLE || node === '')
        continue;
      const kind =
        a.attrs.type && TUNNEL_TYPES.has(a.attrs.type)
          ? 'tunnel'
          : a.attrs.namespace && a.attrs.pod
            ? 'pod'
            : 'other';
      const list = byNode.get(node) ?? [];
      list.push({
        ip: formatIP(a.ip),
        block: block.cidr,
        handleId: a.handleId,
        sequenceNumber: a.sequenceNumber,
        node,
        attrs: a.attrs,
        kind,
        verdict: 'valid',
      });
      byNode.set(node, list);
    }
  }
  for (const n of affineNodes) if (!byNode.has(n)) byNode.set(n, []);

  const nodesToRelease: string[] = [];
  for (const [node, list] of byNode) {
    const fate = fateOf(node);
    if (fate.kind === 'not-kubernetes') continue;
    let nothingValid = true;
    for (const d of list) {
      if (d.kind === 'other') {
        nothingValid = false;
        continue;
      }
      if (d.kind === 'tunnel') continue;
      if (podOwnsAddress(view.pod(d.attrs.namespace!, d.attrs.pod!), d.ip, fate)) {
        nothingValid = false;
        continue;
      }
      d.verdict = fate.kind === 'gone' ? 'confirmed' : 'candidate';
    }
    if (fate.kind === 'gone' && nothingValid) {
      for (const d of list) if (d.kind === 'tunnel') d.verdict = 'confirmed';
      nodesToRelease.push(node);
    }
  }
  const allocations: JudgedAllocation[] = [];
  for (const list of byNode.values()) {
    for (const { kind: _, ...d } of list) allocations.push(d);
  }
  return { allocations, nodesToRelease: nodesToRelease.sort() };
}

export interface LeakReleasePlan {
  /** Release now, each conditional on its handle and sequence number. */
  readonly release: readonly JudgedAllocation[];
  /** Candidates still inside their grace period (or all of them when collection is off). */
  readonly pending: readonly (JudgedAllocation & { readonly releaseAt: number })[];
  /** The new first-seen times (replaces the state's). */
  readonly firstSeen: Map<string, number>;
}

/**
 * What to release now: confirmed leaks, and candidates that have stayed candidates for
 * `gracePeriodMs` (0 = never: upstream's switch for turning collection off), keeping back any
 * whose handle still has an address that is not released now.
 */
export function planLeakRelease(
  judged: readonly JudgedAllocation[],
  state: Readonly<GcState>,
  now: number,
  gracePeriodMs: number,
): LeakReleasePlan {
  const grace = gracePeriodMs > 0 ? gracePeriodMs : Number.POSITIVE_INFINITY;
  const plan = planGc(
    judged.map((j) => ({
      ip: j.ip,
      block: j.block,
      handleId: j.handleId,
      sequenceNumber: j.sequenceNumber,
      attrs: { ...j.attrs },
      ownerAlive: j.verdict !== 'candidate',
    })),
    state.firstSeen,
    now,
    grace,
  );
  const expired = new Set(plan.release.map(gcKey));
  const releasable = (j: JudgedAllocation) => j.verdict === 'confirmed' || expired.has(gcKey(j));
  const keptHandles = new Set(judged.filter((j) => !releasable(j)).map((j) => j.handleId));
  const byKey = new Map(judged.map((j) => [gcKey(j), j]));
  const pending = plan.pending.map((p) => ({ ...byKey.get(gcKey(p))!, releaseAt: p.releaseAt }));
  const firstSeen = plan.firstSeen;
  // A candidate past its grace period that waits for the rest of its handle stays a candidate.
  for (const j of judged) {
    if (!expired.has(gcKey(j)) || !keptHandles.has(j.handleId)) continue;
    const since = state.firstSeen.get(gcKey(j)) ?? now;
    firstSeen.set(gcKey(j), since);
    pending.push({ ...j, releaseAt: since + grace });
  }
  return {
    release: judged.filter((j) => releasable(j) && !keptHandles.has(j.handleId)),
    pending,
    firstSeen,
  };
}
