/**
 * What the evaluator makes of the resources: endpoints with the labels selectors see, and
 * policies as "applies to this endpoint? (with the checks that say why) + rules".
 *
 *   WorkloadEndpoint, HostEndpoint + Profiles ──► Endpoint (labels, namespace, SA, IPs, ports)
 *   (Staged)(Global)NetworkPolicy, staged k8s ──► PolicyView (tier, order, types, appliesTo)
 *
 * The documented semantics: an endpoint's labels are its profiles' `labelsToApply`, then the
 * labels Calico adds (`projectcalico.org/namespace`, `projectcalico.org/orchestrator`), then its
 * own (own labels win). A namespace's labels are those its `kns.<ns>` profile applies as
 * `pcns.<label>`, a service account's those its `ksa.<ns>.<sa>` profile applies as `pcsa.<label>`
 * (prefix removed). A NetworkPolicy applies to endpoints of its namespace matching `selector`
 * (and `serviceAccountSelector` over the service account's labels); a GlobalNetworkPolicy to every
 * endpoint matching `selector`, `namespaceSelector` (over the namespace's labels; `all()` means
 * any namespaced endpoint) and `serviceAccountSelector`. `types` unset: Egress if there are only
 * egress rules, both with both, else Ingress.
 */
import { convertK8sNetworkPolicy } from '../convert/k8s-network-policy.js';
import { parseCidrOrIP } from '../net/cidr.js';
import type { HostEndpoint, WorkloadEndpoint } from '../resources/endpoints.js';
import type { GlobalNetworkPolicy, NetworkPolicy, Profile } from '../resources/policy.js';
import type { Rule } from '../resources/rule.js';
import type { StagedKubernetesNetworkPolicy } from '../resources/staged.js';
import { parseSelector, type Selector } from '../selector/index.js';
import type { Check, Direction, EndpointKind, EndpointSummary, PolicyKind } from './types.js';

export const NAMESPACE_PROFILE_PREFIX = 'kns.';
export const SERVICE_ACCOUNT_PROFILE_PREFIX = 'ksa.';
const NAMESPACE_LABEL_PREFIX = 'pcns.';
const SERVICE_ACCOUNT_LABEL_PREFIX = 'pcsa.';

export interface Endpoint {
  readonly kind: EndpointKind;
  readonly key: string;
  readonly name: string;
  /** Undefined for a host endpoint. */
  readonly namespace?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceAccount?: string;
  readonly ips: readonly string[];
  readonly ports: readonly { name: string; protocol: string; port: number }[];
  readonly profiles: readonly string[];
}

export interface PolicyView {
  readonly kind: PolicyKind;
  readonly name: string;
  /** Set for a namespaced policy. */
  readonly namespace?: string;
  readonly tier: string;
  readonly order: number;
  readonly types: readonly Direction[];
  readonly ingress: readonly Rule[];
  readonly egress: readonly Rule[];
  /** Host endpoints only: preDNAT and doNotTrack policies run elsewhere and are not evaluated. */
  readonly untracked: boolean;
  /** The checks deciding whether the policy applies to `ep`; it applies when all are ok. */
  readonly selection: (ep: Endpoint) => Check[];
}

export function isBlank(s: string | undefined): boolean {
  return s === undefined || s.trim() === '';
}

const compiled = new Map<string, Selector>();
/** The parsed selector (cached: a trace evaluates the same few selectors many times). */
export function compile(text: string | undefined): Selector {
  const t = text ?? '';
  let s = compiled.get(t);
  if (!s) {
    s = parseSelector(t);
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(t, s);
  }
  return s;
}

/** `{a=1, b=2}`: labels as a trace prints them, sorted. */
export function showLabels(labels: Readonly<Record<string, string>>): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`);
  return `{${parts.join(', ')}}`;
}

/** Labels with `prefix`, the prefix taken off; other labels left out. */
function unprefixed(
  labels: Readonly<Record<string, string>> | undefined,
  prefix: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels ?? {}))
    if (k.startsWith(prefix)) out[k.slice(prefix.length)] = v;
  return out;
}

/** `tcp`, `udp`, `sctp`, `icmp`, … or a protocol number for a v3 protocol value. */
export function protocolName(p: string | number): string {
  const byNumber: Record<number, string> = {
    1: 'icmp',
    6: 'tcp',
    17: 'udp',
    58: 'icmpv6',
    132: 'sctp',
    136: 'udplite',
  };
  if (typeof p === 'number') return byNumber[p] ?? String(p);
  if (/^[0-9]+$/.test(p)) return byNumber[Number(p)] ?? String(Number(p));
  return p.toLowerCase();
}

function defaultTypes(p: { ingress?: readonly Rule[]; egress?: readonly Rule[] }): Direction[] {
  const hasIngress = (p.ingress?.length ?? 0) > 0;
  const hasEgress = (p.egress?.length ?? 0) > 0;
  if (hasEgress && hasIngress) return ['ingress', 'egress'];
  if (hasEgress) return ['egress'];
  return ['ingress'];
}

export function summary(ep: Endpoint): EndpointSummary {
  return {
    kind: ep.kind,
    key: ep.key,
    name: ep.name,
    ...(ep.namespace !== undefined ? { namespace: ep.namespace } : {}),
    labels: ep.labels,
    ...(ep.serviceAccount ? { serviceAccount: ep.serviceAccount } : {}),
    profiles: ep.profiles,
  };
}

/** Namespaces' and service accounts' labels, read from the kns./ksa. profiles. */
export class LabelSources {
  readonly profiles = new Map<string, Profile>();
  readonly #namespaceLabels = new Map<string, Record<string, string>>();
  readonly #serviceAccountLabels = new Map<string, Record<string, string>>();

  constructor(profiles: readonly Profile[]) {
    for (const p of profiles) {
      const name = p.metadata.name;
      this.profiles.set(name, p);
      if (name.startsWith(NAMESPACE_PROFILE_PREFIX)) {
        this.#namespaceLabels.set(
          name.slice(NAMESPACE_PROFILE_PREFIX.length),
          unprefixed(p.spec.labelsToApply, NAMESPACE_LABEL_PREFIX),
        );
      } else if (name.startsWith(SERVICE_ACCOUNT_PROFILE_PREFIX)) {
        // ksa.<namespace>.<serviceaccount>: a namespace name has no dot.
        this.#serviceAccountLabels.set(
          name.slice(SERVICE_ACCOUNT_PROFILE_PREFIX.length),
          unprefixed(p.spec.labelsToApply, SERVICE_ACCOUNT_LABEL_PREFIX),
        );
      }
    }
  }

  /** Undefined for a host endpoint, which is in no namespace. */
  namespaceLabelsOf(ep: Endpoint): Record<string, string> | undefined {
    if (ep.namespace === undefined) return undefined;
    return this.#namespaceLabels.get(ep.namespace) ?? { 'projectcalico.org/name': ep.namespace };
  }

  serviceAccountLabelsOf(ep: Endpoint): Record<string, string> | undefined {
    if (!ep.serviceAccount || ep.namespace === undefined) return undefined;
    return (
      this.#serviceAccountLabels.get(`${ep.namespace}.${ep.serviceAccount}`) ?? {
        'projectcalico.org/name': ep.serviceAccount,
      }
    );
  }

  /** A `serviceAccountSelector`-like check; undefined when the selector is blank (no check). */
  serviceAccountCheck(what: string, text: string | undefined, ep: Endpoint): Check | undefined {
    if (isBlank(text)) return undefined;
    const sa = this.serviceAccountLabelsOf(ep);
    if (sa === undefined)
      return { what: `${what} ${text}`, ok: false, on: `${ep.key}, which has no service account` };
    return {
      what: `${what} ${text}`,
      ok: compile(text).matches(sa),
      on: `labels of service account ${ep.namespace}/${ep.serviceAccount} ${showLabels(sa)}`,
    };
  }

  /** A `namespaceSelector` check over the endpoint's namespace (a host endpoint has none). */
  namespaceCheck(what: string, text: string, ep: Endpoint): Check {
    const ns = this.namespaceLabelsOf(ep);
    if (ns === undefined) {
      // Not namespaced: `global()` selects it, `all()` (any namespace) does not, and any other
      // selector is tested on no labels at all, as the `pcns.`-prefixed form Felix uses is.
      const t = text.trim();
      const ok = t === 'global()' ? true : t === 'all()' ? false : compile(text).matches({});
      return { what: `${what} ${text}`, ok, on: `${ep.key}, which is in no namespace` };
    }
    const ok = text.trim() === 'global()' ? false : compile(text).matches(ns);
    return { what: `${what} ${text}`, ok, on: `labels of namespace ${ep.namespace} ${showLabels(ns)}` };
  }

  workloadEndpoint(w: WorkloadEndpoint): Endpoint {
    const namespace = w.metadata.namespace ?? 'default';
    const labels: Record<string, string> = {};
    for (const name of [...(w.spec.profiles ?? [])].reverse()) {
      Object.assign(labels, this.profiles.get(name)?.spec.labelsToApply ?? {});
    }
    labels['projectcalico.org/namespace'] = namespace;
    if (w.spec.orchestrator) labels['projectcalico.org/orchestrator'] = w.spec.orchestrator;
    Object.assign(labels, w.metadata.labels ?? {});
    const ips: string[] = [];
    for (const n of w.spec.ipNetworks ?? []) {
      if (parseCidrOrIP(n)?.family === 4) ips.push(n.split('/')[0]!);
    }
    return {
      kind: 'WorkloadEndpoint',
      key: `${namespace}/${w.metadata.name}`,
      name: w.metadata.name,
      namespace,
      labels,
      ...(w.spec.serviceAccountName ? { serviceAccount: w.spec.serviceAccountName } : {}),
      ips,
      ports: namedPorts(w.spec.ports),
      profiles: w.spec.profiles ?? [],
    };
  }

  hostEndpoint(h: HostEndpoint): Endpoint {
    const labels: Record<string, string> = {};
    for (const name of [...(h.spec.profiles ?? [])].reverse()) {
      Object.assign(labels, this.profiles.get(name)?.spec.labelsToApply ?? {});
    }
    Object.assign(labels, h.metadata.labels ?? {});
    return {
      kind: 'HostEndpoint',
      key: `hostendpoint/${h.metadata.name}`,
      name: h.metadata.name,
      labels,
      ips: (h.spec.expectedIPs ?? []).filter((ip) => parseCidrOrIP(ip)?.family === 4),
      ports: namedPorts(h.spec.ports),
      profiles: h.spec.profiles ?? [],
    };
  }
}

function namedPorts(
  ports: readonly { name?: string; protocol: string | number; port: number }[] | undefined,
): Endpoint['ports'] {
  return (ports ?? [])
    .filter((p) => p.name)
    .map((p) => ({ name: p.name!, protocol: protocolName(p.protocol), port: p.port }));
}

type AnyNetworkPolicySpec = NetworkPolicy['spec'] & { stagedAction?: string };
type AnyGlobalPolicySpec = GlobalNetworkPolicy['spec'] & { stagedAction?: string };

function common(kind: PolicyKind, name: string, spec: AnyNetworkPolicySpec | AnyGlobalPolicySpec) {
  const types =
    spec.types && spec.types.length > 0
      ? spec.types.map((t) => (t === 'Ingress' ? 'ingress' : 'egress') as Direction)
      : defaultTypes(spec);
  const g = spec as AnyGlobalPolicySpec;
  return {
    kind,
    name,
    tier: spec.tier || 'default',
    order: spec.order ?? Number.POSITIVE_INFINITY,
    types,
    ingress: spec.ingress ?? [],
    egress: spec.egress ?? [],
    untracked: g.preDNAT === true || g.doNotTrack === true,
  };
}

/** A NetworkPolicy (or its staged form): endpoints of its namespace matching its selectors. */
export function namespacedPolicy(
  kind: PolicyKind,
  p: { metadata: { name: string; namespace?: string }; spec: AnyNetworkPolicySpec },
  sources: LabelSources,
): PolicyView {
  const namespace = p.metadata.namespace ?? 'default';
  const selector = p.spec.selector ?? '';
  return {
    ...common(kind, p.metadata.name, p.spec),
    namespace,
    selection: (ep) => {
      const checks: Check[] = [
        {
          what: `namespace ${namespace}`,
          ok: ep.namespace === namespace,
          on:
            ep.namespace === undefined ? `${ep.key}, which is in no namespace` : `namespace ${ep.namespace}`,
        },
      ];
      if (!checks[0]!.ok) return checks;
      checks.push(selectorCheck('selector', selector, ep));
      const sa = sources.serviceAccountCheck('serviceAccountSelector', p.spec.serviceAccountSelector, ep);
      if (sa) checks.push(sa);
      return checks;
    },
  };
}

/** A GlobalNetworkPolicy (or its staged form). */
export function globalPolicy(
  kind: PolicyKind,
  p: { metadata: { name: string }; spec: AnyGlobalPolicySpec },
  sources: LabelSources,
): PolicyView {
  const selector = p.spec.selector ?? '';
  const nsSelector = p.spec.namespaceSelector;
  return {
    ...common(kind, p.metadata.name, p.spec),
    selection: (ep) => {
      const checks: Check[] = [selectorCheck('selector', selector, ep)];
      if (!isBlank(nsSelector)) checks.push(sources.namespaceCheck('namespaceSelector', nsSelector!, ep));
      const sa = sources.serviceAccountCheck('serviceAccountSelector', p.spec.serviceAccountSelector, ep);
      if (sa) checks.push(sa);
      return checks;
    },
  };
}

/** A StagedKubernetesNetworkPolicy as the NetworkPolicy it would become (`knp.default.<name>`). */
export function stagedKubernetesPolicy(p: StagedKubernetesNetworkPolicy, sources: LabelSources): PolicyView {
  const { stagedAction: _, ...spec } = p.spec;
  const np = convertK8sNetworkPolicy({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: p.metadata.name, namespace: p.metadata.namespace ?? 'default' },
    spec,
  } as Parameters<typeof convertK8sNetworkPolicy>[0]);
  return namespacedPolicy('StagedKubernetesNetworkPolicy', np, sources);
}

export function selectorCheck(what: string, text: string, ep: Endpoint): Check {
  const shown = isBlank(text) ? 'all()' : text;
  return { what: `${what} ${shown}`, ok: compile(text).matches(ep.labels), on: `labels of ${ep.key}` };
}

/** `Kind [ns/]name`, as a trace names a policy. */
export function policyLabel(p: { kind: string; name: string; namespace?: string }): string {
  return `${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}`;
}
