import { describe, expect, it } from 'vitest';
import { type GcObservation, gcKey, planGc } from './gc-plan.js';

const obs = (ip: string, ownerAlive: boolean, seq = 1n): GcObservation => ({
  ip,
  block: '198.19.0.0/26',
  handleId: `h-${ip}`,
  sequenceNumber: seq,
  attrs: { node: 'node-1', pod: `pod-${ip}` },
  ownerAlive,
});

describe('planGc', () => {
  it('starts the grace period on first sight and releases once it has passed', () => {
    const o = [obs('198.19.0.1', false), obs('198.19.0.2', true)];
    const first = planGc(o, new Map(), 1_000, 60_000);
    expect(first.release).toEqual([]);
    expect(first.pending.map((p) => [p.ip, p.releaseAt])).toEqual([['198.19.0.1', 61_000]]);
    const second = planGc(o, first.firstSeen, 60_999, 60_000);
    expect(second.release).toEqual([]);
    const third = planGc(o, second.firstSeen, 61_000, 60_000);
    expect(third.release.map((r) => r.ip)).toEqual(['198.19.0.1']);
    expect(third.firstSeen.size).toBe(0);
  });

  it('forgets a candidate whose owner came back, or that disappeared', () => {
    const first = planGc([obs('198.19.0.1', false), obs('198.19.0.3', false)], new Map(), 0, 10);
    expect(first.firstSeen.size).toBe(2);
    const back = planGc([obs('198.19.0.1', true)], first.firstSeen, 5, 10);
    expect(back.firstSeen.size).toBe(0);
    const later = planGc([obs('198.19.0.1', false)], back.firstSeen, 11, 10);
    expect(later.release).toEqual([]);
  });

  it('treats a re-assigned address (new sequence number) as a new candidate', () => {
    const first = planGc([obs('198.19.0.1', false, 1n)], new Map(), 0, 10);
    const reassigned = planGc([obs('198.19.0.1', false, 2n)], first.firstSeen, 20, 10);
    expect(reassigned.release).toEqual([]);
    expect([...reassigned.firstSeen.keys()]).toEqual([gcKey(obs('198.19.0.1', false, 2n))]);
  });

  it('releases at once with a zero grace period', () => {
    expect(planGc([obs('198.19.0.1', false)], new Map(), 0, 0).release).toHaveLength(1);
  });
});
