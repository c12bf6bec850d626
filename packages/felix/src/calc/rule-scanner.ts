/**
 * Rule normalisation: projectcalico.org/v3 rules → `NormalizedRule`s plus the IP sets they use.
 *
 * Two upstream steps in one:
 *   1. `libcalico-go/.../updateprocessors/rules.go`: each EntityRule's selector, namespaceSelector
 *      (labels prefixed `pcns.`), serviceAccounts (`pcsa.`) and the policy's own namespace become
 *      one endpoint selector, written as text exactly as upstream writes it.
 *   2. `felix/calc/rule_scanner.go`: a positive selector absorbs the notSelector
 *      (`(sel) && (!(notSel))`), named ports become named-port IP sets filtered by the positive
 *      selector, and every selector is replaced by the ID of the IP set of its canonical text.
 * The IDs therefore hash the same text upstream hashes, so set names match upstream's.
 */
import {
  type EntityRule,
  NAMESPACE_LABEL,
  type Port,
  type Protocol,
  parseSelector,
  prefixSelectorLabels,
  printSelector,
  type Rule,
  type ServiceAccountMatch,
} from '@calico-ts/api';
import { isNamedPort, unenforcedRuleFields } from '@calico-ts/api/internal';
import { formatCidr, parseCidrOrIP } from '@calico-ts/api/net';
import { namedPortIPSetId, selectorIPSetId, serviceIPSetId } from './ids.js';
import type {
  ICMPMatch,
  IPSetDefinition,
  NamedPortProtocol,
  NormalizedRule,
  PortRange,
  RuleAction,
  RuleProtocol,
} from './types.js';

export const SERVICE_ACCOUNT_LABEL = 'projectcalico.org/serviceaccount';
export const NAMESPACE_LABEL_PREFIX = 'pcns.';
export const SERVICE_ACCOUNT_LABEL_PREFIX = 'pcsa.';

export interface ScannedRules {
  readonly inbound: NormalizedRule[];
  readonly outbound: NormalizedRule[];
  /** Every IP set the rules refer to, one entry per ID. */
  readonly ipSets: IPSetDefinition[];
}

/** Normalises a policy's or profile's rules; `namespace` is set for a NetworkPolicy only. */
export function scanRules(
  ingress: readonly Rule[] | undefined,
  egress: readonly Rule[] | undefined,
  namespace: string | undefined,
): ScannedRules {
  const sets = new Map<string, IPSetDefinition>();
  const inbound = (ingress ?? []).map((r) => normalizeRule(r, namespace, sets));
  const outbound = (egress ?? []).map((r) => normalizeRule(r, namespace, sets));
  return { inbound, outbound, ipSets: [...sets.values()] };
}

/** Canonical text of `text` with every label prefixed, as upstream's parseSelectorAttachPrefix. */
function prefixedSelectorText(text: string, prefix: string): string {
  return printSelector(prefixSelectorLabels(parseSelector(text).root, prefix));
}

/** The service-account part of an EntityRule (upstream `parseServiceAccounts`). */
function serviceAccountSelector(sam: ServiceAccountMatch): string {
  let updated = '';
  if (sam.selector) updated = prefixedSelectorText(sam.selector, SERVICE_ACCOUNT_LABEL_PREFIX);
  const names = sam.names ?? [];
  if (names.length === 0) return updated;
  const namesSel = printSelector({ kind: 'in', label: SERVICE_ACCOUNT_LABEL, values: names });
  return updated ? `(${updated}) && (${namesSel})` : namesSel;
}

/**
 * The one selector for all endpoints an EntityRule matches (upstream `getEndpointSelector`), or ''
 * when the rule does not restrict endpoints by selector.
 */
export function entityRuleSelector(er: EntityRule | undefined, namespace: string | undefined): string {
  if (!er) return '';
  const nsSelectorText = er.namespaceSelector ?? '';
  const notSelector = er.notSelector ?? '';
  let nsSel = '';
  if (nsSelectorText !== '') {
    nsSel = prefixedSelectorText(nsSelectorText, NAMESPACE_LABEL_PREFIX)
      .replaceAll('all()', `has(${NAMESPACE_LABEL})`)
      .replaceAll('global()', `!has(${NAMESPACE_LABEL})`);
  } else if (namespace) {
    nsSel = `${NAMESPACE_LABEL} == '${namespace}'`;
  }
  const parts: string[] = [];
  if (er.serviceAccounts) {
    const sa = serviceAccountSelector(er.serviceAccounts);
    if (sa !== '') parts.push(sa);
  }
  if (er.selector) parts.push(er.selector);
  let selector = '';
  if (parts.length === 1) selector = parts[0]!;
  else if (parts.length > 1) selector = `(${parts.join(') && (')})`;
  if (nsSel !== '' && (selector !== '' || notSelector !== '' || nsSelectorText !== '')) {
    selector = selector !== '' ? `(${nsSel}) && (${selector})` : nsSel;
  }
  return selector;
}

const PROTOCOL_NAMES: Readonly<Record<string, RuleProtocol>> = {
  tcp: 'tcp',
  udp: 'udp',
  icmp: 'icmp',
  icmpv6: 'icmpv6',
  sctp: 'sctp',
  udplite: 'udplite',
};

/** `TCP` → `tcp`, `"17"` → 17, 58 → 58. */
export function normalizeProtocol(p: Protocol | undefined): RuleProtocol | undefined {
  if (p === undefined) return undefined;
  if (typeof p === 'number') return p;
  if (/^[0-9]+$/.test(p)) return Number(p);
  return PROTOCOL_NAMES[p.toLowerCase()] ?? p.toLowerCase();
}

/** The protocol a named port is looked up with: UDP or SCTP if the rule says so, else TCP. */
function namedPortProtocol(p: RuleProtocol | undefined): NamedPortProtocol {
  if (p === 'udp' || p === 17) return 'udp';
  if (p === 'sctp' || p === 132) return 'sctp';
  return 'tcp';
}

function splitPorts(ports: readonly Port[] | undefined): { numeric: PortRange[]; named: string[] } {
  const numeric: PortRange[] = [];
  const named: string[] = [];
  for (const p of ports ?? []) {
    if (isNamedPort(p)) {
      named.push(String(p));
    } else if (typeof p === 'number') {
      numeric.push({ first: p, last: p });
    } else {
      const [lo, hi] = p.split(':');
      const first = Number(lo);
      numeric.push({ first, last: hi === undefined ? first : Number(hi) });
    }
  }
  return { numeric, named };
}

/** Canonical network CIDRs (host bits cleared); anything that does not parse is left out. */
function canonicalNets(nets: readonly string[] | undefined): string[] {
  const out: string[] = [];
  for (const n of nets ?? []) {
    const c = parseCidrOrIP(n);
    if (c) out.push(formatCidr(c));
  }
  return out;
}

function icmpMatch(f: { type?: number; code?: number } | undefined): ICMPMatch | undefined {
  if (!f || f.type === undefined) return undefined;
  return f.code === undefined ? { type: f.type } : { type: f.type, code: f.code };
}

const ACTIONS: Readonly<Record<Rule['action'], RuleAction>> = {
  Allow: 'allow',
  Deny: 'deny',
  Pass: 'pass',
  Log: 'log',
};

/** upstream `combineMatchesIfPossible`: a positive selector absorbs the negated one. */
function combineSelectors(positive: string, negated: string): [string, string] {
  if (positive === '' || negated === '') return [positive, negated];
  return [`(${positive}) && (!(${negated}))`, ''];
}

function normalizeRule(
  rule: Rule,
  namespace: string | undefined,
  sets: Map<string, IPSetDefinition>,
): NormalizedRule {
  const protocol = normalizeProtocol(rule.protocol);
  const [srcRaw, notSrcRaw] = combineSelectors(
    entityRuleSelector(rule.source, namespace),
    rule.source?.notSelector ?? '',
  );
  const [dstRaw, notDstRaw] = combineSelectors(
    entityRuleSelector(rule.destination, namespace),
    rule.destination?.notSelector ?? '',
  );
  const canon = (s: string) => (s === '' ? '' : parseSelector(s).text);
  const srcSel = canon(srcRaw);
  const dstSel = canon(dstRaw);
  const notSrcSel = canon(notSrcRaw);
  const notDstSel = canon(notDstRaw);

  const srcPorts = splitPorts(rule.source?.ports);
  const dstPorts = splitPorts(rule.destination?.ports);
  const notSrcPorts = splitPorts(rule.source?.notPorts);
  const notDstPorts = splitPorts(rule.destination?.notPorts);
  const npProto = namedPortProtocol(protocol);

  const selectorSet = (sel: string): string[] => {
    if (sel === '') return [];
    const id = selectorIPSetId(sel);
    if (!sets.has(id)) sets.set(id, { id, selector: sel });
    return [id];
  };
  // Named ports are always filtered by the positive selector of their side (all() without one).
  const namedPortSets = (names: readonly string[], positive: string): string[] =>
    names.map((name) => {
      const sel = positive === '' ? 'all()' : positive;
      const id = namedPortIPSetId(sel, npProto, name);
      if (!sets.has(id)) sets.set(id, { id, selector: sel, namedPort: { name, protocol: npProto } });
      return id;
    });

  const srcNamedPortIPSetIds = namedPortSets(srcPorts.named, srcSel);
  const dstNamedPortIPSetIds = namedPortSets(dstPorts.named, dstSel);
  const notSrcNamedPortIPSetIds = namedPortSets(notSrcPorts.named, srcSel);
  const notDstNamedPortIPSetIds = namedPortSets(notDstPorts.named, dstSel);
  // A named-port set already filters by the selector; keep the selector set only when numeric
  // ports (or no named ports) need it.
  const srcIPSetIds = srcPorts.numeric.length > 0 || srcPorts.named.length === 0 ? selectorSet(srcSel) : [];
  const dstIPSetIds = dstPorts.numeric.length > 0 || dstPorts.named.length === 0 ? selectorSet(dstSel) : [];

  // Services (upstream: a source service is an address set, a destination one an address-and-
  // port set). The namespace defaults to the policy's own. A set with no members (no such
  // Service, no endpoints, no Kubernetes API at all) makes the rule match nothing.
  const serviceSet = (svc: { name?: string; namespace?: string }, includePorts: boolean): string[] => {
    const ns = svc.namespace || namespace || '';
    const name = svc.name ?? '';
    const id = serviceIPSetId(ns, name, includePorts);
    if (!sets.has(id)) sets.set(id, { id, selector: '', service: { namespace: ns, name, includePorts } });
    return [id];
  };
  if (rule.source?.services) srcIPSetIds.push(...serviceSet(rule.source.services, false));
  const dstIPPortSetIds = rule.destination?.services ? serviceSet(rule.destination.services, true) : [];

  const out: {
    -readonly [K in keyof NormalizedRule]: NormalizedRule[K];
  } = {
    action: ACTIONS[rule.action],
    srcNets: canonicalNets(rule.source?.nets),
    notSrcNets: canonicalNets(rule.source?.notNets),
    dstNets: canonicalNets(rule.destination?.nets),
    notDstNets: canonicalNets(rule.destination?.notNets),
    srcPorts: srcPorts.numeric,
    notSrcPorts: notSrcPorts.numeric,
    dstPorts: dstPorts.numeric,
    notDstPorts: notDstPorts.numeric,
    srcIPSetIds,
    notSrcIPSetIds: selectorSet(notSrcSel),
    dstIPSetIds,
    notDstIPSetIds: selectorSet(notDstSel),
    srcNamedPortIPSetIds,
    notSrcNamedPortIPSetIds,
    dstNamedPortIPSetIds,
    notDstNamedPortIPSetIds,
    dstIPPortSetIds,
  };
  const unenforced = unenforcedRuleFields(rule).map((f) => f.path);
  if (unenforced.length > 0) out.unenforced = unenforced;
  if (rule.ipVersion !== undefined) out.ipVersion = rule.ipVersion;
  if (protocol !== undefined) out.protocol = protocol;
  const notProtocol = normalizeProtocol(rule.notProtocol);
  if (notProtocol !== undefined) out.notProtocol = notProtocol;
  const icmp = icmpMatch(rule.icmp);
  if (icmp) out.icmp = icmp;
  const notICMP = icmpMatch(rule.notICMP);
  if (notICMP) out.notICMP = notICMP;
  return out;
}
