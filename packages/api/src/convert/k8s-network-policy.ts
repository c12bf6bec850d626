/**
 * Kubernetes `networking.k8s.io/v1` NetworkPolicy → Calico v3 NetworkPolicy, shaped as upstream's
 * `K8sNetworkPolicyToCalico` shapes it (`libcalico-go/lib/backend/k8s/conversion/conversion.go`):
 *
 * - name `knp.default.<name>`, namespace kept, tier `default`, order 1000;
 * - selector `projectcalico.org/orchestrator == 'k8s'` ANDed with the podSelector's terms
 *   (matchLabels sorted by key, then matchExpressions in order);
 * - per k8s rule: ports are grouped by protocol (TCP when unset; a port without a number means every
 *   port of that protocol; no ports at all means any protocol), protocols sorted, and one Allow
 *   rule emitted per protocol × peer, the numeric ports of a protocol merged into ranges;
 * - a podSelector peer → `selector` (same namespace); a namespaceSelector peer → `namespaceSelector`
 *   over namespace labels, `all()` when empty; an ipBlock → `nets` + `notNets` from `except`.
 *
 * Where upstream degrades silently this converter reports instead: an unparsable ipBlock CIDR
 * would make upstream's peer match everything; here the rule is refused. Unknown selector operators
 * would be skipped (widening the selector); here they are refused.
 */
import { ApiError } from '../errors.js';
import { formatCidr, parseCidr } from '../net/cidr.js';
import type { EntityRule, NetworkPolicy, Rule } from '../resources/index.js';

// ---------------------------------------------------------------------------------------------
// The input: networking.k8s.io/v1 NetworkPolicy

export interface K8sLabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface K8sLabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: K8sLabelSelectorRequirement[];
}

export interface K8sIPBlock {
  cidr: string;
  except?: string[];
}

export interface K8sNetworkPolicyPeer {
  podSelector?: K8sLabelSelector;
  namespaceSelector?: K8sLabelSelector;
  ipBlock?: K8sIPBlock;
}

export interface K8sNetworkPolicyPort {
  /** TCP when unset. */
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  /** A number or a named container port; unset means every port. */
  port?: number | string;
  /** Last port of a range starting at `port` (numeric `port` only). */
  endPort?: number;
}

export interface K8sNetworkPolicyIngressRule {
  ports?: K8sNetworkPolicyPort[];
  from?: K8sNetworkPolicyPeer[];
}

export interface K8sNetworkPolicyEgressRule {
  ports?: K8sNetworkPolicyPort[];
  to?: K8sNetworkPolicyPeer[];
}

export interface K8sNetworkPolicySpec {
  podSelector: K8sLabelSelector;
  ingress?: K8sNetworkPolicyIngressRule[];
  egress?: K8sNetworkPolicyEgressRule[];
  policyTypes?: ('Ingress' | 'Egress')[];
}

export interface K8sObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface K8sNetworkPolicy {
  apiVersion?: 'networking.k8s.io/v1';
  kind?: 'NetworkPolicy';
  metadata: K8sObjectMeta;
  spec: K8sNetworkPolicySpec;
}

/** True for a decoded document that declares itself a Kubernetes networking/v1 NetworkPolicy. */
export function isK8sNetworkPolicy(doc: unknown): doc is K8sNetworkPolicy {
  if (typeof doc !== 'object' || doc === null) return false;
  const d = doc as Record<string, unknown>;
  return d.apiVersion === 'networking.k8s.io/v1' && d.kind === 'NetworkPolicy';
}

// ---------------------------------------------------------------------------------------------
// Selectors

export const K8S_NETWORK_POLICY_NAME_PREFIX = 'knp.default.';
const ORCHESTRATOR_TERM = "projectcalico.org/orchestrator == 'k8s'";

class RuleError extends Error {}

function selectorTerms(sel: K8sLabelSelector, path: string): string[] {
  const terms: string[] = [];
  const labels = sel.matchLabels ?? {};
  for (const k of Object.keys(labels).sort()) terms.push(`${k} == '${labels[k]}'`);
  (sel.matchExpressions ?? []).forEach((e, i) => {
    const values = (e.values ?? []).join("', '");
    switch (e.operator) {
      case 'In':
        terms.push(`${e.key} in { '${values}' }`);
        break;
      case 'NotIn':
        terms.push(`${e.key} not in { '${values}' }`);
        break;
      case 'Exists':
        terms.push(`has(${e.key})`);
        break;
      case 'DoesNotExist':
        terms.push(`! has(${e.key})`);
        break;
      default:
        throw new RuleError(
          `${path}.matchExpressions[${i}].operator: unknown operator ${JSON.stringify(e.operator)} (want In, NotIn, Exists or DoesNotExist)`,
        );
    }
  });
  return terms;
}

/**
 * A Kubernetes label selector in Calico selector syntax, as upstream writes it: matchLabels sorted
 * by key as `k == 'v'`, then matchExpressions in order as `k in { 'a', 'b' }`,
 * `k not in { 'a', 'b' }`, `has(k)`, `! has(k)`, all joined by ` && `.
 *
 * `kind: 'pod'` (the default) prefixes `projectcalico.org/orchestrator == 'k8s'`, so only pods are
 * selected. `kind: 'namespace'` selects namespaces by their labels: an empty selector is `all()`
 * and an absent one is `''` (no namespace selection). Throws `ApiError('conversion-failed')` for an
 * unknown operator.
 */
export function k8sLabelSelectorToCalico(
  sel: K8sLabelSelector | undefined | null,
  kind: 'pod' | 'namespace' = 'pod',
): string {
  try {
    return selectorToCalico(sel, kind, kind === 'pod' ? 'podSelector' : 'namespaceSelector');
  } catch (e) {
    if (e instanceof RuleError) throw new ApiError('conversion-failed', e.message);
    throw e;
  }
}

function selectorToCalico(
  sel: K8sLabelSelector | undefined | null,
  kind: 'pod' | 'namespace',
  path: string,
): string {
  const terms = kind === 'pod' ? [ORCHESTRATOR_TERM] : [];
  if (!sel) return terms.join(' && ');
  const own = selectorTerms(sel, path);
  if (kind === 'namespace' && own.length === 0) return 'all()';
  return [...terms, ...own].join(' && ');
}

// ---------------------------------------------------------------------------------------------
// Ports

type Port = number | string;

interface NumericRange {
  min: number;
  max: number;
}

/** A k8s port (with endPort) as a Calico port: a number, `"min:max"`, or a port name. */
function k8sPortToCalico(p: K8sNetworkPolicyPort, path: string): Port {
  let text = String(p.port);
  if (p.endPort !== undefined && p.endPort !== null) text = `${text}:${p.endPort}`;
  if (/^[0-9]+$/.test(text)) {
    const n = Number(text);
    if (n > 65535) throw new RuleError(`${path}.port: ${n} is not a port number (0-65535)`);
    return n;
  }
  const range = /^([0-9]+):([0-9]+)$/.exec(text);
  if (range) {
    const min = Number(range[1]);
    const max = Number(range[2]);
    if (min > 65535 || max > 65535) throw new RuleError(`${path}: port range ${text} is outside 0-65535`);
    if (min > max) {
      throw new RuleError(
        `${path}.endPort: port range ${text}: minimum ${min} is greater than maximum ${max}`,
      );
    }
    return min === max ? min : text;
  }
  if (!/^[a-zA-Z0-9_.-]{1,128}$/.test(text))
    throw new RuleError(`${path}.port: invalid port ${JSON.stringify(text)}`);
  return text;
}

function numericRange(p: Port): NumericRange | undefined {
  if (typeof p === 'number') return { min: p, max: p };
  const m = /^([0-9]+):([0-9]+)$/.exec(p);
  return m ? { min: Number(m[1]), max: Number(m[2]) } : undefined;
}

/**
 * The fewest ports covering the given ones, as upstream's `SimplifyPorts`: with two or more
 * numeric ports, named ports first (in order) then merged ascending ranges; otherwise unchanged.
 */
export function simplifyPorts(ports: readonly Port[]): Port[] {
  if (ports.length <= 1) return [...ports];
  const named: Port[] = [];
  const numbers: number[] = [];
  for (const p of ports) {
    const r = numericRange(p);
    if (!r) {
      named.push(p);
      continue;
    }
    for (let i = r.min; i <= r.max; i++) numbers.push(i);
  }
  if (numbers.length <= 1) return [...ports];
  numbers.sort((a, b) => a - b);
  const out = [...named];
  let i = 0;
  while (i < numbers.length) {
    const first = numbers[i]!;
    let last = first;
    i++;
    while (i < numbers.length && numbers[i]! <= last + 1) {
      last = numbers[i]!;
      i++;
    }
    out.push(first === last ? first : `${first}:${last}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Rules

interface PeerFields {
  selector?: string;
  namespaceSelector?: string;
  nets?: string[];
  notNets?: string[];
}

function peerToCalico(peer: K8sNetworkPolicyPeer | undefined, path: string): PeerFields {
  if (!peer) return {};
  if (peer.ipBlock) {
    const net = (text: string, at: string): string => {
      const c = typeof text === 'string' ? parseCidr(text) : undefined;
      if (!c) throw new RuleError(`${at}: ${JSON.stringify(text)} is not a CIDR`);
      return formatCidr(c);
    };
    const out: PeerFields = { nets: [net(peer.ipBlock.cidr, `${path}.ipBlock.cidr`)] };
    const except = (peer.ipBlock.except ?? []).map((e, i) => net(e, `${path}.ipBlock.except[${i}]`));
    if (except.length) out.notNets = except;
    return out;
  }
  const out: PeerFields = {};
  const selector = selectorToCalico(peer.podSelector, 'pod', `${path}.podSelector`);
  const namespaceSelector = selectorToCalico(
    peer.namespaceSelector,
    'namespace',
    `${path}.namespaceSelector`,
  );
  if (selector) out.selector = selector;
  if (namespaceSelector) out.namespaceSelector = namespaceSelector;
  return out;
}

function k8sRuleToCalico(
  peers: K8sNetworkPolicyPeer[] | undefined,
  ports: K8sNetworkPolicyPort[] | undefined,
  ingress: boolean,
  path: string,
): Rule[] {
  const peerPath = ingress ? 'from' : 'to';
  // Ports by protocol; `null` means every port of that protocol. The key '' (no protocol) is used
  // only when the k8s rule lists no ports at all.
  const byProtocol = new Map<string, Port[] | null>();
  if (!ports || ports.length === 0) {
    byProtocol.set('', null);
  } else {
    ports.forEach((p, i) => {
      const protocol = p.protocol ?? 'TCP';
      const hasPort = p.port !== undefined && p.port !== null;
      if (!hasPort) {
        byProtocol.set(protocol, null);
        return;
      }
      const port = k8sPortToCalico(p, `${path}.ports[${i}]`);
      const existing = byProtocol.get(protocol);
      // An earlier "every port" entry for this protocol wins.
      if (existing === null) return;
      byProtocol.set(protocol, [...(existing ?? []), port]);
    });
  }
  const protocols = [...byProtocol.keys()].sort();
  const peerList: (K8sNetworkPolicyPeer | undefined)[] = peers?.length ? peers : [undefined];
  const peerFields = peerList.map((p, i) => peerToCalico(p, `${path}.${peerPath}[${i}]`));

  const rules: Rule[] = [];
  for (const protocol of protocols) {
    const ps = byProtocol.get(protocol);
    const calicoPorts = ps ? simplifyPorts(ps) : undefined;
    for (const f of peerFields) {
      // Fields in upstream's EntityRule order, so printed output matches key for key.
      const entity = (withPorts: boolean): EntityRule => ({
        ...(f.nets ? { nets: f.nets } : {}),
        ...(f.selector ? { selector: f.selector } : {}),
        ...(f.namespaceSelector ? { namespaceSelector: f.namespaceSelector } : {}),
        ...(withPorts && calicoPorts?.length ? { ports: calicoPorts } : {}),
        ...(f.notNets ? { notNets: f.notNets } : {}),
      });
      const rule: Rule = { action: 'Allow' };
      if (protocol) rule.protocol = protocol as Rule['protocol'];
      if (ingress) {
        rule.source = entity(false);
        rule.destination = calicoPorts?.length ? { ports: calicoPorts } : {};
      } else {
        rule.source = {};
        rule.destination = entity(true);
      }
      rules.push(rule);
    }
  }
  return rules;
}

// ---------------------------------------------------------------------------------------------
// UIDs

/**
 * The UID upstream gives a resource derived from a Kubernetes object: the object's UUID with the
 * bit order of every byte reversed except the version byte (6) and variant byte (8), so the
 * derived object never shares its source's UID (`ConvertUID`).
 */
export function convertK8sUID(uid: string): string {
  let hex = uid.toLowerCase();
  if (hex.startsWith('urn:uuid:')) hex = hex.slice('urn:uuid:'.length);
  if (hex.startsWith('{') && hex.endsWith('}')) hex = hex.slice(1, -1);
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(hex))
    hex = hex.replaceAll('-', '');
  if (!/^[0-9a-f]{32}$/.test(hex)) {
    throw new ApiError('conversion-failed', `metadata.uid: ${JSON.stringify(uid)} is not a UUID`);
  }
  const bytes: number[] = [];
  for (let i = 0; i < 16; i++) bytes.push(Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16));
  const reverse = (b: number): number => {
    let r = 0;
    for (let i = 0; i < 8; i++) r |= ((b >> i) & 1) << (7 - i);
    return r;
  };
  const out = bytes.map((b, i) => (i === 6 || i === 8 ? b : reverse(b)));
  const h = out.map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// ---------------------------------------------------------------------------------------------
// The policy

export interface K8sNetworkPolicyConversion {
  policy: NetworkPolicy;
  /**
   * One line per k8s rule that could not be converted and was left out (as upstream leaves them
   * out: a dropped allow rule only ever narrows what the policy admits).
   */
  errors: string[];
}

/**
 * Convert, leaving out any k8s rule that cannot be converted and reporting it in `errors` (what
 * kube-controllers wants: the rest of the policy still applies). Throws
 * `ApiError('conversion-failed')` only when the policy as a whole cannot be converted.
 */
export function convertK8sNetworkPolicyPartial(np: K8sNetworkPolicy): K8sNetworkPolicyConversion {
  if (typeof np !== 'object' || np === null)
    throw new ApiError('conversion-failed', 'a NetworkPolicy must be a map');
  const md = np.metadata;
  if (!md || typeof md.name !== 'string' || md.name === '') {
    throw new ApiError('conversion-failed', 'NetworkPolicy metadata.name is required');
  }
  const label = `NetworkPolicy ${md.namespace ? `${md.namespace}/` : ''}${md.name}`;
  const spec = np.spec;
  if (!spec || typeof spec !== 'object')
    throw new ApiError('conversion-failed', `${label}: spec is required`);

  const errors: string[] = [];
  const convertRules = (
    list: (K8sNetworkPolicyIngressRule | K8sNetworkPolicyEgressRule)[] | undefined,
    ingress: boolean,
  ): Rule[] => {
    const out: Rule[] = [];
    (list ?? []).forEach((r, i) => {
      const path = `spec.${ingress ? 'ingress' : 'egress'}[${i}]`;
      const peers = ingress ? (r as K8sNetworkPolicyIngressRule).from : (r as K8sNetworkPolicyEgressRule).to;
      try {
        out.push(...k8sRuleToCalico(peers, r.ports, ingress, path));
      } catch (e) {
        if (!(e instanceof RuleError)) throw e;
        errors.push(`${label}: ${e.message}; rule left out`);
      }
    });
    return out;
  };
  const ingress = convertRules(spec.ingress, true);
  const egress = convertRules(spec.egress, false);

  // Types: what policyTypes says. When it is absent, what the Kubernetes API server fills in:
  // Ingress, plus Egress if there are egress rules.
  const policyTypes = spec.policyTypes ?? [];
  let wantIngress = policyTypes.includes('Ingress');
  let wantEgress = policyTypes.includes('Egress');
  if (policyTypes.length === 0) {
    wantIngress = true;
    wantEgress = (spec.egress ?? []).length > 0;
  }
  const types: ('Ingress' | 'Egress')[] = [];
  if (wantIngress) types.push('Ingress');
  if (wantEgress) types.push('Egress');
  if (types.length === 0) types.push('Ingress');

  let selector: string;
  try {
    selector = selectorToCalico(spec.podSelector ?? {}, 'pod', 'spec.podSelector');
  } catch (e) {
    if (e instanceof RuleError) throw new ApiError('conversion-failed', `${label}: ${e.message}`);
    throw e;
  }

  const policy: NetworkPolicy = {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: {
      name: K8S_NETWORK_POLICY_NAME_PREFIX + md.name,
      ...(md.namespace ? { namespace: md.namespace } : {}),
      ...(md.uid ? { uid: convertK8sUID(md.uid) } : {}),
      ...(md.resourceVersion ? { resourceVersion: md.resourceVersion } : {}),
      ...(md.creationTimestamp ? { creationTimestamp: md.creationTimestamp } : {}),
    },
    spec: {
      tier: 'default',
      order: 1000,
      selector,
      ...(ingress.length ? { ingress } : {}),
      ...(egress.length ? { egress } : {}),
      types,
    },
  };
  return { policy, errors };
}

/**
 * Convert a Kubernetes NetworkPolicy to the Calico NetworkPolicy upstream would derive from it.
 * Throws `ApiError('conversion-failed')` naming the field when any part of it cannot be converted.
 */
export function convertK8sNetworkPolicy(np: K8sNetworkPolicy): NetworkPolicy {
  const { policy, errors } = convertK8sNetworkPolicyPartial(np);
  if (errors.length) throw new ApiError('conversion-failed', errors.join('\n'));
  return policy;
}
