/**
 * A reference evaluator of Calico policy: given the resources and one IPv4 TCP or UDP flow, says
 * whether Calico lets the flow through, and why. Written from the projectcalico.org/v3 API
 * documentation, independently of Felix (it imports nothing of `calc/` or `rules/`), so that the
 * randomised dataplane test compares Felix's nftables with a second reading of the same rules.
 *
 *   flow ──► source is a workload?      ──► its egress:  tiers ─► policies ─► rules ─┐
 *        └─► destination is a workload? ──► its ingress: tiers ─► policies ─► rules ─┴─► both allow?
 *
 * The semantics, as documented:
 *   - An endpoint's labels are its own labels, the labels Calico adds (`projectcalico.org/namespace`,
 *     `projectcalico.org/orchestrator`) and the `labelsToApply` of its profiles (own labels win).
 *     A namespace's labels are those its `kns.<ns>` profile applies as `pcns.<label>`, a service
 *     account's those its `ksa.<ns>.<sa>` profile applies as `pcsa.<label>` (prefix removed), which
 *     include `projectcalico.org/name`.
 *   - A NetworkPolicy applies to endpoints of its namespace matching `selector` (and
 *     `serviceAccountSelector`, over the service account's labels); a GlobalNetworkPolicy to every
 *     endpoint matching `selector`, `namespaceSelector` (over the namespace's labels; `all()` means
 *     any namespaced endpoint) and `serviceAccountSelector`. `types` unset: Egress if there are
 *     only egress rules, both with both, else Ingress.
 *   - Per direction, the tiers holding at least one policy that applies (tiers by order, unset
 *     last, then name; policies by order, unset last, then name): the first matching rule
 *     decides. Allow: allowed in this direction. Deny: denied. Pass: on to the next tier. Log: on to
 *     the next rule. A tier that ends without a verdict denies, unless its defaultAction is Pass.
 *     No tier applies, or the last one passed: the endpoint's profiles decide (first Allow allows,
 *     first Deny denies); no profile allowing denies.
 *   - A rule matches when every criterion it carries does (ipVersion, protocol, notProtocol,
 *     source, destination). An EntityRule: `nets` (any), `notNets` (none), `ports` (any; a number,
 *     a `min:max` range or a named port), `notPorts` (none), and the endpoint criteria:
 *     `selector`, `serviceAccounts` (`names` and `selector`, over the service account's labels),
 *     `namespaceSelector` (`global()`: only non-namespaced endpoints) must all hold for the
 *     endpoint owning the address; in a NetworkPolicy, an EntityRule that uses `selector`,
 *     `notSelector` or `serviceAccounts` without `namespaceSelector` only matches endpoints of the
 *     policy's namespace. `notSelector` excludes addresses of endpoints matching it (an address
 *     that is no endpoint is not excluded). A named port matches the port the endpoint on that
 *     side declares under that name for the flow's protocol.
 *   - `services` (a Kubernetes Service, namespace defaulting to the policy's): as a source, the
 *     addresses of its EndpointSlices' endpoints; as a destination, an endpoint address with a
 *     port of its slice, or a cluster IP with a port of the Service. A Service that does not exist
 *     or has no endpoint addresses matches nothing.
 *   - Fail closed: a rule carrying a field the dataplane does not enforce (`http` with methods or
 *     paths, or a key this evaluator does not know) never matches if its action is Allow, Pass or
 *     Log; a Deny rule applies its other criteria.
 *
 * Only IPv4 TCP and UDP flows are evaluated; a rule with `icmp` never matches them and `notICMP`
 * is not supported (evaluate throws).
 */

import {
  ENDPOINT_SLICE_SERVICE_LABEL,
  type EntityRule,
  type GlobalNetworkPolicy,
  type K8sEndpointSlice,
  type K8sService,
  type NetworkPolicy,
  type Port,
  type Profile,
  parseSelector,
  type Rule,
  type Selector,
  type Tier,
  type WorkloadEndpoint,
} from '@calico-ts/api';
import { cidrContains, parseCidrOrIP, parseIP } from '@calico-ts/api/net';

export type FlowProtocol = 'tcp' | 'udp';
export type Direction = 'ingress' | 'egress';

export interface Flow {
  readonly srcIP: string;
  readonly dstIP: string;
  readonly protocol: FlowProtocol;
  readonly srcPort: number;
  readonly dstPort: number;
}

/** Everything the evaluator reads. */
export interface PolicyWorld {
  readonly workloadEndpoints: readonly WorkloadEndpoint[];
  readonly profiles: readonly Profile[];
  readonly tiers: readonly Tier[];
  readonly networkPolicies: readonly NetworkPolicy[];
  readonly globalNetworkPolicies: readonly GlobalNetworkPolicy[];
  readonly services?: readonly K8sService[];
  readonly endpointSlices?: readonly K8sEndpointSlice[];
}

/** The verdict of one endpoint's policy in one direction. */
export interface DirectionVerdict {
  /** `namespace/name` of the workload endpoint. */
  readonly endpoint: string;
  readonly direction: Direction;
  readonly allowed: boolean;
  /** What decided, e.g. `tier security: GlobalNetworkPolicy deny-all egress[0] Deny`. */
  readonly reason: string;
}

export interface Verdict {
  readonly allowed: boolean;
  /** The source endpoint's egress verdict; absent when the source is no workload endpoint. */
  readonly egress?: DirectionVerdict;
  /** The destination endpoint's ingress verdict; absent when the destination is no workload endpoint. */
  readonly ingress?: DirectionVerdict;
}

const NAMESPACE_PROFILE_PREFIX = 'kns.';
const SERVICE_ACCOUNT_PROFILE_PREFIX = 'ksa.';
const NAMESPACE_LABEL_PREFIX = 'pcns.';
const SERVICE_ACCOUNT_LABEL_PREFIX = 'pcsa.';
/** The documented default tier, which always exists. */
const DEFAULT_TIER = { name: 'default', order: 1_000_000, defaultAction: 'Deny' as const };

/** The keys of a Rule and an EntityRule this evaluator knows. */
const RULE_KEYS = new Set([
  'action',
  'ipVersion',
  'protocol',
  'icmp',
  'notProtocol',
  'notICMP',
  'source',
  'destination',
  'http',
  'metadata',
]);
const ENTITY_KEYS = new Set([
  'nets',
  'selector',
  'namespaceSelector',
  'services',
  'ports',
  'notNets',
  'notSelector',
  'notPorts',
  'serviceAccounts',
]);

interface Endpoint {
  readonly key: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceAccount?: string;
  readonly ips: readonly string[];
  readonly ports: readonly { name: string; protocol: string; port: number }[];
  readonly profiles: readonly string[];
}

interface PolicyView {
  readonly kind: 'NetworkPolicy' | 'GlobalNetworkPolicy';
  readonly name: string;
  /** Set for a NetworkPolicy. */
  readonly namespace?: string;
  readonly tier: string;
  readonly order: number;
  readonly types: readonly Direction[];
  readonly ingress: readonly Rule[];
  readonly egress: readonly Rule[];
  readonly appliesTo: (ep: Endpoint) => boolean;
}

interface TierView {
  readonly name: string;
  readonly order: number;
  readonly defaultAction: 'Deny' | 'Pass';
}

/** One side of a flow: its address and port, and the workload endpoint owning the address. */
interface Side {
  readonly ip: string;
  readonly port: number;
  readonly endpoint?: Endpoint;
}

function isBlank(s: string | undefined): boolean {
  return s === undefined || s.trim() === '';
}

function compile(text: string | undefined): Selector {
  return parseSelector(text ?? '');
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

function byOrderThenName<T extends { order: number; name: string }>(a: T, b: T): number {
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** `tcp`, `udp`, `sctp`, `icmp`, … or a protocol number for a v3 protocol value. */
function protocolName(p: string | number): string {
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

export class PolicyEvaluator {
  readonly #endpoints: Endpoint[];
  readonly #byIP = new Map<string, Endpoint>();
  readonly #profiles = new Map<string, Profile>();
  readonly #namespaceLabels = new Map<string, Record<string, string>>();
  readonly #serviceAccountLabels = new Map<string, Record<string, string>>();
  readonly #tiers = new Map<string, TierView>();
  readonly #policies: PolicyView[];
  readonly #services: readonly K8sService[];
  readonly #slices: readonly K8sEndpointSlice[];

  constructor(world: PolicyWorld) {
    for (const p of world.profiles) {
      this.#profiles.set(p.metadata.name, p);
      const name = p.metadata.name;
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
    this.#endpoints = world.workloadEndpoints.map((w) => this.#endpoint(w));
    for (const ep of this.#endpoints) for (const ip of ep.ips) this.#byIP.set(ip, ep);
    this.#tiers.set(DEFAULT_TIER.name, DEFAULT_TIER);
    for (const t of world.tiers) {
      this.#tiers.set(t.metadata.name, {
        name: t.metadata.name,
        order: t.spec.order ?? Number.POSITIVE_INFINITY,
        defaultAction: t.spec.defaultAction ?? 'Deny',
      });
    }
    this.#policies = [
      ...world.networkPolicies.map((p) => this.#networkPolicy(p)),
      ...world.globalNetworkPolicies.map((p) => this.#globalNetworkPolicy(p)),
    ];
    this.#services = world.services ?? [];
    this.#slices = world.endpointSlices ?? [];
  }

  /** Whether the flow passes: the source's egress policy and the destination's ingress policy. */
  evaluate(flow: Flow): Verdict {
    if (parseIP(flow.srcIP)?.family !== 4 || parseIP(flow.dstIP)?.family !== 4) {
      throw new RangeError(`only IPv4 flows are evaluated: ${flow.srcIP} → ${flow.dstIP}`);
    }
    const src: Side = this.#side(flow.srcIP, flow.srcPort);
    const dst: Side = this.#side(flow.dstIP, flow.dstPort);
    const egress = src.endpoint ? this.#direction(src.endpoint, 'egress', flow, src, dst) : undefined;
    const ingress = dst.endpoint ? this.#direction(dst.endpoint, 'ingress', flow, src, dst) : undefined;
    return {
      allowed: (egress?.allowed ?? true) && (ingress?.allowed ?? true),
      ...(egress ? { egress } : {}),
      ...(ingress ? { ingress } : {}),
    };
  }

  /** `namespace/name` of the workload endpoint owning `ip`, if any. */
  endpointAt(ip: string): string | undefined {
    return this.#byIP.get(ip)?.key;
  }

  /** The policies (`Kind name`) applying to the endpoint at `ip` in `direction`, unordered. */
  policiesApplyingAt(ip: string, direction: Direction): string[] {
    const ep = this.#byIP.get(ip);
    if (!ep) return [];
    return this.#policies
      .filter((p) => p.types.includes(direction) && p.appliesTo(ep))
      .map((p) => `${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}`);
  }

  // ---- model --------------------------------------------------------------------------------

  #endpoint(w: WorkloadEndpoint): Endpoint {
    const namespace = w.metadata.namespace ?? 'default';
    const labels: Record<string, string> = {};
    // Profiles' labelsToApply, then Calico's own labels, then the endpoint's (own labels win).
    for (const name of [...(w.spec.profiles ?? [])].reverse()) {
      Object.assign(labels, this.#profiles.get(name)?.spec.labelsToApply ?? {});
    }
    labels['projectcalico.org/namespace'] = namespace;
    if (w.spec.orchestrator) labels['projectcalico.org/orchestrator'] = w.spec.orchestrator;
    Object.assign(labels, w.metadata.labels ?? {});
    const ips: string[] = [];
    for (const n of w.spec.ipNetworks ?? []) {
      const c = parseCidrOrIP(n);
      if (c?.family === 4) ips.push(n.split('/')[0]!);
    }
    return {
      key: `${namespace}/${w.metadata.name}`,
      namespace,
      labels,
      ...(w.spec.serviceAccountName ? { serviceAccount: w.spec.serviceAccountName } : {}),
      ips,
      ports: (w.spec.ports ?? [])
        .filter((p) => p.name)
        .map((p) => ({ name: p.name!, protocol: protocolName(p.protocol), port: p.port })),
      profiles: w.spec.profiles ?? [],
    };
  }

  #serviceAccountLabelsOf(ep: Endpoint): Record<string, string> | undefined {
    if (!ep.serviceAccount) return undefined;
    return (
      this.#serviceAccountLabels.get(`${ep.namespace}.${ep.serviceAccount}`) ?? {
        'projectcalico.org/name': ep.serviceAccount,
      }
    );
  }

  #namespaceLabelsOf(ep: Endpoint): Record<string, string> {
    return this.#namespaceLabels.get(ep.namespace) ?? { 'projectcalico.org/name': ep.namespace };
  }

  #serviceAccountSelectorMatches(text: string | undefined, ep: Endpoint): boolean {
    if (isBlank(text)) return true;
    const sa = this.#serviceAccountLabelsOf(ep);
    return sa !== undefined && compile(text).matches(sa);
  }

  #common(p: NetworkPolicy | GlobalNetworkPolicy) {
    const spec = p.spec;
    const types =
      spec.types && spec.types.length > 0
        ? spec.types.map((t) => (t === 'Ingress' ? 'ingress' : 'egress') as Direction)
        : defaultTypes(spec);
    return {
      name: p.metadata.name,
      tier: spec.tier || DEFAULT_TIER.name,
      order: spec.order ?? Number.POSITIVE_INFINITY,
      types,
      ingress: spec.ingress ?? [],
      egress: spec.egress ?? [],
    };
  }

  #networkPolicy(p: NetworkPolicy): PolicyView {
    const namespace = p.metadata.namespace ?? 'default';
    const selector = compile(p.spec.selector);
    return {
      ...this.#common(p),
      kind: 'NetworkPolicy',
      namespace,
      appliesTo: (ep) =>
        ep.namespace === namespace &&
        selector.matches(ep.labels) &&
        this.#serviceAccountSelectorMatches(p.spec.serviceAccountSelector, ep),
    };
  }

  #globalNetworkPolicy(p: GlobalNetworkPolicy): PolicyView {
    const selector = compile(p.spec.selector);
    const nsSelector = isBlank(p.spec.namespaceSelector) ? undefined : compile(p.spec.namespaceSelector);
    return {
      ...this.#common(p),
      kind: 'GlobalNetworkPolicy',
      appliesTo: (ep) =>
        selector.matches(ep.labels) &&
        (nsSelector === undefined || nsSelector.matches(this.#namespaceLabelsOf(ep))) &&
        this.#serviceAccountSelectorMatches(p.spec.serviceAccountSelector, ep),
    };
  }

  #side(ip: string, port: number): Side {
    const endpoint = this.#byIP.get(ip);
    return endpoint ? { ip, port, endpoint } : { ip, port };
  }

  // ---- evaluation ---------------------------------------------------------------------------

  #direction(ep: Endpoint, direction: Direction, flow: Flow, src: Side, dst: Side): DirectionVerdict {
    const verdict = (allowed: boolean, reason: string): DirectionVerdict => ({
      endpoint: ep.key,
      direction,
      allowed,
      reason,
    });
    const applying = this.#policies.filter((p) => p.types.includes(direction) && p.appliesTo(ep));
    const byTier = new Map<string, PolicyView[]>();
    for (const p of applying) {
      if (!this.#tiers.has(p.tier))
        throw new Error(`policy ${p.name} is in tier ${p.tier}, which does not exist`);
      const list = byTier.get(p.tier);
      if (list) list.push(p);
      else byTier.set(p.tier, [p]);
    }
    const tiers = [...byTier.keys()].map((t) => this.#tiers.get(t)!).sort(byOrderThenName);
    const passed: string[] = [];
    for (const tier of tiers) {
      const policies = byTier.get(tier.name)!.sort(byOrderThenName);
      let passedOn: string | undefined;
      for (const p of policies) {
        const rules = direction === 'ingress' ? p.ingress : p.egress;
        const where = `tier ${tier.name}: ${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}`;
        for (let i = 0; i < rules.length && passedOn === undefined; i++) {
          const rule = rules[i]!;
          if (!this.#ruleMatches(rule, flow, src, dst, p.namespace)) continue;
          const at = `${where} ${direction}[${i}] ${rule.action}`;
          if (rule.action === 'Allow') return verdict(true, at);
          if (rule.action === 'Deny') return verdict(false, at);
          if (rule.action === 'Pass') passedOn = at;
          // Log: on to the next rule.
        }
        if (passedOn !== undefined) break;
      }
      if (passedOn !== undefined) {
        passed.push(passedOn);
        continue;
      }
      if (tier.defaultAction === 'Pass') {
        passed.push(`end of tier ${tier.name} (defaultAction Pass)`);
        continue;
      }
      return verdict(false, `end of tier ${tier.name}: no policy allowed or passed (defaultAction Deny)`);
    }
    const prefix =
      tiers.length === 0 ? 'no policy applies; ' : `passed (${passed.join('; ')}), so profiles decide; `;
    for (const name of ep.profiles) {
      const profile = this.#profiles.get(name);
      if (!profile) continue;
      const rules = (direction === 'ingress' ? profile.spec.ingress : profile.spec.egress) ?? [];
      for (let i = 0; i < rules.length; i++) {
        const rule = rules[i]!;
        if (!this.#ruleMatches(rule, flow, src, dst, undefined)) continue;
        const at = `${prefix}profile ${name} ${direction}[${i}] ${rule.action}`;
        if (rule.action === 'Allow') return verdict(true, at);
        if (rule.action === 'Deny') return verdict(false, at);
        if (rule.action === 'Pass') break;
      }
    }
    return verdict(false, `${prefix}no profile allowed`);
  }

  /** True if the rule matches the flow; `namespace` is the NetworkPolicy's, undefined otherwise. */
  #ruleMatches(rule: Rule, flow: Flow, src: Side, dst: Side, namespace: string | undefined): boolean {
    if (rule.notICMP !== undefined) throw new Error('notICMP is not supported by this evaluator');
    if (rule.action !== 'Deny' && carriesUnenforcedField(rule)) return false;
    if (rule.ipVersion !== undefined && rule.ipVersion !== 4) return false;
    if (rule.protocol !== undefined && protocolName(rule.protocol) !== flow.protocol) return false;
    if (rule.notProtocol !== undefined && protocolName(rule.notProtocol) === flow.protocol) return false;
    if (rule.icmp !== undefined) return false;
    return (
      this.#entityMatches(rule.source, 'source', flow.protocol, src, namespace) &&
      this.#entityMatches(rule.destination, 'destination', flow.protocol, dst, namespace)
    );
  }

  #entityMatches(
    er: EntityRule | undefined,
    side: 'source' | 'destination',
    protocol: FlowProtocol,
    at: Side,
    namespace: string | undefined,
  ): boolean {
    if (!er) return true;
    if (er.nets && er.nets.length > 0 && !er.nets.some((n) => cidrContains(n, at.ip))) return false;
    if (er.notNets?.some((n) => cidrContains(n, at.ip))) return false;
    if (!this.#endpointCriteriaMatch(er, at.endpoint, namespace)) return false;
    if (!isBlank(er.notSelector) && at.endpoint && compile(er.notSelector).matches(at.endpoint.labels)) {
      return false;
    }
    if (er.ports && er.ports.length > 0 && !er.ports.some((p) => portMatches(p, protocol, at))) return false;
    if (er.notPorts?.some((p) => portMatches(p, protocol, at))) return false;
    if (er.services && !this.#serviceMatches(er.services, side, protocol, at, namespace)) return false;
    return true;
  }

  /** selector, serviceAccounts, namespaceSelector, and the policy's namespace where that applies. */
  #endpointCriteriaMatch(er: EntityRule, ep: Endpoint | undefined, namespace: string | undefined): boolean {
    const sa = er.serviceAccounts;
    const usesServiceAccounts = sa !== undefined && ((sa.names?.length ?? 0) > 0 || !isBlank(sa.selector));
    const usesSelector = !isBlank(er.selector);
    const usesNamespaceSelector = !isBlank(er.namespaceSelector);
    const sameNamespaceOnly =
      !usesNamespaceSelector &&
      namespace !== undefined &&
      (usesSelector || usesServiceAccounts || !isBlank(er.notSelector));
    if (!usesSelector && !usesServiceAccounts && !usesNamespaceSelector && !sameNamespaceOnly) return true;
    // From here on only an address of an endpoint can match.
    if (!ep) return false;
    if (usesSelector && !compile(er.selector).matches(ep.labels)) return false;
    if (usesServiceAccounts) {
      if ((sa!.names?.length ?? 0) > 0 && !(ep.serviceAccount && sa!.names!.includes(ep.serviceAccount))) {
        return false;
      }
      if (!this.#serviceAccountSelectorMatches(sa!.selector, ep)) return false;
    }
    if (usesNamespaceSelector) {
      // Every endpoint here is a workload endpoint, so namespaced: global() selects none of them.
      if (er.namespaceSelector!.trim() === 'global()') return false;
      if (!compile(er.namespaceSelector).matches(this.#namespaceLabelsOf(ep))) return false;
    }
    if (sameNamespaceOnly && ep.namespace !== namespace) return false;
    return true;
  }

  #serviceMatches(
    svc: { name?: string; namespace?: string },
    side: 'source' | 'destination',
    protocol: FlowProtocol,
    at: Side,
    namespace: string | undefined,
  ): boolean {
    const ns = svc.namespace || namespace;
    if (!svc.name || !ns) return false;
    const service = this.#services.find(
      (s) => s.metadata.name === svc.name && (s.metadata.namespace ?? 'default') === ns,
    );
    if (!service) return false;
    const slices = this.#slices.filter(
      (s) =>
        (s.metadata.namespace ?? 'default') === ns &&
        s.metadata.labels?.[ENDPOINT_SLICE_SERVICE_LABEL] === svc.name &&
        s.addressType === 'IPv4',
    );
    const addresses = slices.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses));
    if (addresses.length === 0) return false;
    if (side === 'source') return addresses.includes(at.ip);
    for (const s of slices) {
      const addrs = (s.endpoints ?? []).flatMap((e) => e.addresses);
      if (!addrs.includes(at.ip)) continue;
      if ((s.ports ?? []).some((p) => p.port === at.port && protocolName(p.protocol ?? 'TCP') === protocol)) {
        return true;
      }
    }
    const clusterIPs = service.spec?.clusterIPs ?? (service.spec?.clusterIP ? [service.spec.clusterIP] : []);
    if (!clusterIPs.includes(at.ip)) return false;
    return (service.spec?.ports ?? []).some(
      (p) => p.port === at.port && protocolName(p.protocol ?? 'TCP') === protocol,
    );
  }
}

/** `http` with a method or a path, or a key (in the rule or its EntityRules) not in the API. */
export function carriesUnenforcedField(rule: Rule): boolean {
  const http = rule.http;
  if (http && ((http.methods?.length ?? 0) > 0 || (http.paths?.length ?? 0) > 0)) return true;
  if (Object.keys(rule).some((k) => !RULE_KEYS.has(k))) return true;
  for (const er of [rule.source, rule.destination]) {
    if (er && Object.keys(er).some((k) => !ENTITY_KEYS.has(k))) return true;
  }
  return false;
}

function portMatches(p: Port, protocol: FlowProtocol, at: Side): boolean {
  if (typeof p === 'number') return at.port === p;
  if (/^[0-9]+$/.test(p)) return at.port === Number(p);
  const range = /^([0-9]+):([0-9]+)$/.exec(p);
  if (range) return at.port >= Number(range[1]) && at.port <= Number(range[2]);
  // A named port: the port this side's endpoint declares under the name, for this protocol.
  return (at.endpoint?.ports ?? []).some(
    (d) => d.name === p && d.protocol === protocol && d.port === at.port,
  );
}
