/**
 * Flow filters as upstream's `Filter` defines them: each repeated field is an OR of its entries,
 * the fields are ANDed, an empty field matches everything. Policy matches look at every hit of
 * the trace, enforced and pending, and at an EndOfTier hit's trigger. Pure.
 */
import type { Action, Flow, FlowKey, MatchType, PolicyHit, PolicyKind } from './flow.js';

/** A string criterion. */
export interface StringMatch {
  /** The value to compare with. */
  readonly value: string;
  /** Exact, or Fuzzy (substring). */
  readonly type: MatchType;
}

/** A policy criterion; an empty or unspecified field matches anything. */
export interface PolicyMatch {
  /** The kind, or KindUnspecified. */
  readonly kind: PolicyKind;
  /** The tier, or empty. */
  readonly tier: string;
  /** The namespace, or empty. */
  readonly namespace: string;
  /** The name, or empty. */
  readonly name: string;
  /** The action, or ActionUnspecified. */
  readonly action: Action;
}

/** Criteria on flows (upstream's Filter). */
export interface Filter {
  /** On the source name. */
  readonly sourceNames: readonly StringMatch[];
  /** On the source namespace. */
  readonly sourceNamespaces: readonly StringMatch[];
  /** On the destination name. */
  readonly destNames: readonly StringMatch[];
  /** On the destination namespace. */
  readonly destNamespaces: readonly StringMatch[];
  /** On the protocol. */
  readonly protocols: readonly StringMatch[];
  /** On the destination port. */
  readonly destPorts: readonly number[];
  /** On the action. */
  readonly actions: readonly Action[];
  /** On the policy trace. */
  readonly policies: readonly PolicyMatch[];
}

/** The filter that matches every flow. */
export const EMPTY_FILTER: Filter = Object.freeze({
  sourceNames: [],
  sourceNamespaces: [],
  destNames: [],
  destNamespaces: [],
  protocols: [],
  destPorts: [],
  actions: [],
  policies: [],
});

function stringMatches(ms: readonly StringMatch[], v: string): boolean {
  if (ms.length === 0) return true;
  return ms.some((m) => (m.type === 'Fuzzy' ? v.includes(m.value) : v === m.value));
}

function hitMatches(m: PolicyMatch, h: PolicyHit): boolean {
  // An EndOfTier hit names its tier through the policy that triggered it.
  const named = h.kind === 'EndOfTier' && h.trigger ? h.trigger : h;
  return (
    (m.kind === 'KindUnspecified' || m.kind === h.kind) &&
    (m.tier === '' || m.tier === h.tier || m.tier === named.tier) &&
    (m.namespace === '' || m.namespace === named.namespace) &&
    (m.name === '' || m.name === named.name) &&
    (m.action === 'ActionUnspecified' || m.action === h.action)
  );
}

/** The hits of a key's trace, enforced then pending. */
export function hitsOf(k: FlowKey): PolicyHit[] {
  return [...k.policies.enforcedPolicies, ...k.policies.pendingPolicies];
}

/** True when the key passes every criterion of the filter. */
export function keyMatches(f: Filter, k: FlowKey): boolean {
  return (
    stringMatches(f.sourceNames, k.sourceName) &&
    stringMatches(f.sourceNamespaces, k.sourceNamespace) &&
    stringMatches(f.destNames, k.destName) &&
    stringMatches(f.destNamespaces, k.destNamespace) &&
    stringMatches(f.protocols, k.proto) &&
    (f.destPorts.length === 0 || f.destPorts.includes(k.destPort)) &&
    (f.actions.length === 0 || f.actions.includes(k.action)) &&
    (f.policies.length === 0 || f.policies.some((m) => hitsOf(k).some((h) => hitMatches(m, h))))
  );
}

/** True when the flow's key passes the filter. */
export function flowMatches(f: Filter, flow: Flow): boolean {
  return keyMatches(f, flow.key);
}
