/**
 * What the graph keeps of a policy (NetworkPolicy, GlobalNetworkPolicy): parsed once per update.
 *
 *   (G)NP ──► policyInfo ──► PolicyInfo: ID, tier, order, types, stages (doNotTrack, preDNAT,
 *                            applyOnForward), one selector (own ∧ namespace ∧ service account),
 *                            the rules and their JSON (to tell a rule change from a metadata one)
 *
 * Pure.
 */
import {
  andSelectors,
  DEFAULT_TIER,
  type GlobalNetworkPolicy,
  NAMESPACE_LABEL,
  type NetworkPolicy,
  parseSelector,
  prefixSelectorLabels,
  printSelector,
  type Rule,
  type Selector,
} from '@calico-ts/api';
import { defaultPolicyTypes } from '@calico-ts/api/internal';
import {
  NAMESPACE_LABEL_PREFIX,
  SERVICE_ACCOUNT_LABEL,
  SERVICE_ACCOUNT_LABEL_PREFIX,
} from './rule-scanner.js';
import type { PolicyKind } from './types.js';

export interface PolicyInfo {
  readonly id: string;
  readonly kind: PolicyKind;
  readonly name: string;
  readonly namespace?: string;
  readonly tier: string;
  /** +Infinity when unset. */
  readonly order: number;
  readonly ingress: boolean;
  readonly egress: boolean;
  readonly doNotTrack: boolean;
  readonly preDNAT: boolean;
  readonly applyOnForward: boolean;
  readonly selector: Selector;
  readonly ingressRules: readonly Rule[];
  readonly egressRules: readonly Rule[];
  /** JSON of the rules, to tell a rule change from a metadata change. */
  readonly rulesKey: string;
}

const KIND_NAMES: Readonly<Record<PolicyKind, string>> = { np: 'NetworkPolicy', gnp: 'GlobalNetworkPolicy' };

export function tieBreakKey(p: { name: string; namespace?: string; kind: PolicyKind }): string {
  return `${p.name}/${p.namespace ?? ''}/${KIND_NAMES[p.kind]}`;
}

/** Label-prefixed selector text with `all()` replaced, as upstream's policy update processors do. */
function prefixedPolicySelector(text: string | undefined, prefix: string, allLabel: string): string {
  if (!text || text.trim() === '') return '';
  return printSelector(prefixSelectorLabels(parseSelector(text).root, prefix)).replaceAll(
    'all()',
    `has(${allLabel})`,
  );
}

export function policyInfo(p: NetworkPolicy | GlobalNetworkPolicy, id: string): PolicyInfo {
  const kind: PolicyKind = p.kind === 'NetworkPolicy' ? 'np' : 'gnp';
  const spec = p.spec;
  const parts: string[] = [spec.selector ?? ''];
  if (kind === 'np') {
    parts.push(`${NAMESPACE_LABEL} == '${p.metadata.namespace ?? ''}'`);
  } else {
    const nsSel = (spec as GlobalNetworkPolicy['spec']).namespaceSelector;
    parts.push(prefixedPolicySelector(nsSel, NAMESPACE_LABEL_PREFIX, NAMESPACE_LABEL));
  }
  parts.push(
    prefixedPolicySelector(spec.serviceAccountSelector, SERVICE_ACCOUNT_LABEL_PREFIX, SERVICE_ACCOUNT_LABEL),
  );
  const types =
    spec.types && spec.types.length > 0 ? spec.types : defaultPolicyTypes(spec.ingress, spec.egress);
  const g = spec as GlobalNetworkPolicy['spec'];
  const ingressRules = spec.ingress ?? [];
  const egressRules = spec.egress ?? [];
  const info: PolicyInfo = {
    id,
    kind,
    name: p.metadata.name,
    tier: spec.tier || DEFAULT_TIER,
    order: spec.order ?? Number.POSITIVE_INFINITY,
    ingress: types.includes('Ingress'),
    egress: types.includes('Egress'),
    doNotTrack: g.doNotTrack === true,
    preDNAT: g.preDNAT === true,
    applyOnForward: g.applyOnForward === true || g.doNotTrack === true || g.preDNAT === true,
    selector: parseSelector(andSelectors(...parts)),
    ingressRules,
    egressRules,
    rulesKey: JSON.stringify([ingressRules, egressRules]),
  };
  return kind === 'np' ? { ...info, namespace: p.metadata.namespace ?? '' } : info;
}
