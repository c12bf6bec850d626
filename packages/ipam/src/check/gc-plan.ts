/**
 * Leak garbage collection, the deciding part (pure). The client lists allocations, asks the caller
 * whether each owner is alive, and hands the answers here with the time; this decides what to release.
 *
 * An allocation is a candidate from the first scan that finds its owner gone; it is released once it
 * has stayed a candidate for `gracePeriodMs` (0 = at once). An owner that comes back clears the
 * candidacy. Candidacy is keyed by address + handle + the allocation's sequence number, so an address
 * freed and handed out again starts over. First-seen times live in the caller's `GcState`, in memory,
 * as upstream's node controller keeps them.
 */
export interface GcState {
  /** Candidate key → time (ms) it was first seen with its owner gone. */
  firstSeen: Map<string, number>;
}

export function newGcState(): GcState {
  return { firstSeen: new Map() };
}

export interface GcObservation {
  ip: string;
  block: string;
  handleId: string | null;
  sequenceNumber: bigint;
  attrs: Record<string, string>;
  ownerAlive: boolean;
}

export function gcKey(o: Pick<GcObservation, 'ip' | 'handleId' | 'sequenceNumber'>): string {
  return `${o.ip}|${o.handleId ?? ''}|${o.sequenceNumber}`;
}

export interface GcPlan {
  /** Allocations to release now (with their handle and sequence number as preconditions). */
  release: GcObservation[];
  /** Allocations whose owner is gone but whose grace period is still running. */
  pending: (GcObservation & { firstSeen: number; releaseAt: number })[];
  /** The new first-seen map (replaces the state's). */
  firstSeen: Map<string, number>;
}

export function planGc(
  observations: readonly GcObservation[],
  previous: ReadonlyMap<string, number>,
  now: number,
  gracePeriodMs: number,
): GcPlan {
  const firstSeen = new Map<string, number>();
  const release: GcObservation[] = [];
  const pending: GcPlan['pending'] = [];
  for (const o of observations) {
    if (o.ownerAlive) continue;
    const key = gcKey(o);
    const since = previous.get(key) ?? now;
    if (now - since >= gracePeriodMs) {
      release.push(o);
    } else {
      firstSeen.set(key, since);
      pending.push({ ...o, firstSeen: since, releaseAt: since + gracePeriodMs });
    }
  }
  return { release, pending, firstSeen };
}
