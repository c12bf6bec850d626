/**
 * Folding `DataplaneDiff`s into a whole `DataplaneState`: what the rule renderer consumes. The
 * tunnel parts of a diff replace the state's whole (each is emitted whole when it changes).
 */
import type { DataplaneDiff, DataplaneState, EncapDiff } from './types.js';

const ENCAP_KEYS = ['vxlan', 'vxlanV6', 'ipip', 'tunnelSources', 'poolEncaps'] as const;

export function emptyDataplaneState(): DataplaneState {
  return { inSync: false, ipSets: {}, policies: {}, profiles: {}, endpoints: {}, pools: {} };
}

function fold<V>(
  current: Readonly<Record<string, V>>,
  updated: readonly V[],
  removed: readonly string[],
  keyOf: (v: V) => string,
): Record<string, V> {
  if (updated.length === 0 && removed.length === 0) return { ...current };
  const next: Record<string, V> = { ...current };
  for (const id of removed) delete next[id];
  for (const v of updated) next[keyOf(v)] = v;
  return next;
}

/** A new state: `state` with `diff` applied. Neither input is modified. */
export function applyDataplaneDiff(state: DataplaneState, diff: DataplaneDiff): DataplaneState {
  const encap: { -readonly [K in keyof EncapDiff]: EncapDiff[K] } = {};
  for (const k of ENCAP_KEYS) {
    const v = diff[k] ?? state[k];
    if (v !== undefined) (encap as Record<string, unknown>)[k] = v;
  }
  return {
    inSync: state.inSync || diff.inSync,
    ipSets: fold(state.ipSets, diff.ipSetsUpdated, diff.ipSetsRemoved, (s) => s.id),
    policies: fold(state.policies, diff.policiesUpdated, diff.policiesRemoved, (p) => p.id),
    profiles: fold(state.profiles, diff.profilesUpdated, diff.profilesRemoved, (p) => p.id),
    endpoints: fold(state.endpoints, diff.endpointsUpdated, diff.endpointsRemoved, (e) => e.key),
    pools: fold(state.pools, diff.poolsUpdated, diff.poolsRemoved, (p) => p.name),
    ...encap,
  };
}

/** True when the diff changes nothing, neither the rules nor the tunnels. */
export function isEmptyDiff(diff: DataplaneDiff): boolean {
  return !changesRules(diff) && ENCAP_KEYS.every((k) => diff[k] === undefined);
}

/**
 * True when the diff changes what the nftables rules are made of: IP sets, policies, profiles,
 * endpoints, pools, or the hosts tunnelled packets are accepted from. (The tunnels' devices and
 * routes are programmed apart from the rules.)
 */
export function changesRules(diff: DataplaneDiff): boolean {
  return !(
    diff.tunnelSources === undefined &&
    diff.ipSetsUpdated.length === 0 &&
    diff.ipSetsRemoved.length === 0 &&
    diff.policiesUpdated.length === 0 &&
    diff.policiesRemoved.length === 0 &&
    diff.profilesUpdated.length === 0 &&
    diff.profilesRemoved.length === 0 &&
    diff.endpointsUpdated.length === 0 &&
    diff.endpointsRemoved.length === 0 &&
    diff.poolsUpdated.length === 0 &&
    diff.poolsRemoved.length === 0
  );
}
