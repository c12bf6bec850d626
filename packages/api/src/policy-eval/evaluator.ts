/**
 * The policy evaluator: given the resources and one IPv4 TCP or UDP flow, says whether Calico lets
 * the flow through, and traces why. Pure: data in, a trace out. It reads the projectcalico.org/v3
 * API as documented and shares no code with Felix's calculation or rules, so that the randomised
 * dataplane test (packages/felix/src/policy-fuzz.int.test.ts) compares Felix's nftables with a
 * second reading of the same resources, and `calicoctl policy explain` (and anything else showing
 * a flow's trace) answers with what that test checked.
 *
 *   flow ──► source is an endpoint?      ──► its egress:  tiers ─► policies ─► rules ─┐
 *        └─► destination is an endpoint? ──► its ingress: tiers ─► policies ─► rules ─┴─► both allow?
 *                                             (each direction again with the staged policies
 *                                              committed: the would-be verdict)
 *
 * Per direction, the tiers holding at least one policy that applies (tiers by order, unset last,
 * then name; policies by order, unset last, then name): the first matching rule decides. Allow:
 * allowed in this direction. Deny: denied. Pass: on to the next tier. Log: on to the next rule. A
 * tier that ends without a verdict denies, unless its defaultAction is Pass. No tier applies, or
 * the last one passed: the endpoint's profiles decide (first Allow allows, first Deny denies); no
 * profile allowing denies. Rule matching: match.ts; endpoints and policy selection: model.ts.
 *
 * Staged policies never decide a packet. Their would-be verdict commits them: a staged policy
 * with `stagedAction: Set` (the default) takes the place of the enforced policy of the same kind,
 * namespace and name (a StagedKubernetesNetworkPolicy that of `knp.default.<name>`), or joins its
 * tier if there is none; `Delete` removes that enforced policy. (`Learn` and `Ignore` change
 * nothing.)
 *
 * Host endpoints (by `expectedIPs`): their policies in the direction they are on, like a
 * workload's; preDNAT and doNotTrack policies, which run before or outside connection tracking,
 * are left out, and the failsafe ports (FelixConfiguration) are not known here.
 */
import type { K8sEndpointSlice, K8sService } from '../convert/k8s-service.js';
import { parseIP } from '../net/cidr.js';
import { type MatchContext, ruleChecks, type Side } from './match.js';
import {
  type Endpoint,
  globalPolicy,
  LabelSources,
  namespacedPolicy,
  type PolicyView,
  policyLabel,
  stagedKubernetesPolicy,
  summary,
} from './model.js';
import type {
  Decision,
  Direction,
  DirectionTrace,
  Flow,
  PolicyKind,
  PolicyTrace,
  PolicyWorld,
  ProfileTrace,
  RuleTrace,
  StagedTrace,
  TierTrace,
  Verdict,
} from './types.js';

interface TierView {
  readonly name: string;
  readonly order: number;
  readonly defaultAction: 'Deny' | 'Pass';
}

/** The documented default tier, which always exists. */
const DEFAULT_TIER: TierView = { name: 'default', order: 1_000_000, defaultAction: 'Deny' };

/** What a staged policy changes: its view (Set) and the enforced policy it replaces or removes. */
interface StagedChange {
  readonly view: PolicyView;
  readonly action: 'Set' | 'Delete';
  /** `Kind ns/name` of the enforced policy it stands for. */
  readonly target: string;
}

const ENFORCED_KIND: Record<string, PolicyKind> = {
  StagedNetworkPolicy: 'NetworkPolicy',
  StagedGlobalNetworkPolicy: 'GlobalNetworkPolicy',
  StagedKubernetesNetworkPolicy: 'NetworkPolicy',
};

function byOrderThenName<T extends { order: number; name: string }>(a: T, b: T): number {
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

const finiteOrder = (order: number) => (Number.isFinite(order) ? { order } : {});

interface Outcome {
  readonly allowed: boolean;
  readonly reason: string;
  readonly decision: Decision;
  readonly tiers: TierTrace[];
  readonly profiles: ProfileTrace[];
}

export class PolicyEvaluator {
  readonly #sources: LabelSources;
  readonly #byIP = new Map<string, Endpoint>();
  readonly #tiers = new Map<string, TierView>();
  readonly #policies: PolicyView[];
  readonly #staged: StagedChange[];
  readonly #services: readonly K8sService[];
  readonly #slices: readonly K8sEndpointSlice[];

  constructor(world: PolicyWorld) {
    this.#sources = new LabelSources(world.profiles);
    // Host endpoints first: a workload's address wins where both claim one.
    for (const h of world.hostEndpoints ?? []) {
      const ep = this.#sources.hostEndpoint(h);
      for (const ip of ep.ips) this.#byIP.set(ip, ep);
    }
    for (const w of world.workloadEndpoints) {
      const ep = this.#sources.workloadEndpoint(w);
      for (const ip of ep.ips) this.#byIP.set(ip, ep);
    }
    this.#tiers.set(DEFAULT_TIER.name, DEFAULT_TIER);
    for (const t of world.tiers) {
      this.#tiers.set(t.metadata.name, {
        name: t.metadata.name,
        order: t.spec.order ?? Number.POSITIVE_INFINITY,
        defaultAction: t.spec.defaultAction ?? 'Deny',
      });
    }
    const s = this.#sources;
    this.#policies = [
      ...world.networkPolicies.map((p) => namespacedPolicy('NetworkPolicy', p, s)),
      ...world.globalNetworkPolicies.map((p) => globalPolicy('GlobalNetworkPolicy', p, s)),
    ];
    const staged: { view: PolicyView; action: string | undefined }[] = [
      ...(world.stagedNetworkPolicies ?? []).map((p) => ({
        view: namespacedPolicy('StagedNetworkPolicy', p, s),
        action: p.spec.stagedAction,
      })),
      ...(world.stagedGlobalNetworkPolicies ?? []).map((p) => ({
        view: globalPolicy('StagedGlobalNetworkPolicy', p, s),
        action: p.spec.stagedAction,
      })),
      ...(world.stagedKubernetesNetworkPolicies ?? []).map((p) => ({
        view: stagedKubernetesPolicy(p, s),
        action: p.spec.stagedAction,
      })),
    ];
    this.#staged = staged
      .filter((x) => x.action === undefined || x.action === 'Set' || x.action === 'Delete')
      .map(({ view, action }) => ({
        view,
        action: (action ?? 'Set') as 'Set' | 'Delete',
        target: policyLabel({ ...view, kind: ENFORCED_KIND[view.kind]! }),
      }));
    this.#services = world.services ?? [];
    this.#slices = world.endpointSlices ?? [];
  }

  /** Whether the flow passes: the source's egress policy and the destination's ingress policy. */
  evaluate(flow: Flow): Verdict {
    if (parseIP(flow.srcIP)?.family !== 4 || parseIP(flow.dstIP)?.family !== 4) {
      throw new RangeError(`only IPv4 flows are evaluated: ${flow.srcIP} → ${flow.dstIP}`);
    }
    const src = this.#side(flow.srcIP, flow.srcPort);
    const dst = this.#side(flow.dstIP, flow.dstPort);
    const ctx: MatchContext = {
      flow,
      src,
      dst,
      sources: this.#sources,
      services: this.#services,
      slices: this.#slices,
    };
    const egress = src.endpoint ? this.#direction(src.endpoint, 'egress', ctx) : undefined;
    const ingress = dst.endpoint ? this.#direction(dst.endpoint, 'ingress', ctx) : undefined;
    const stagedOf = (d: DirectionTrace | undefined) => d?.staged?.allowed ?? d?.allowed ?? true;
    return {
      allowed: (egress?.allowed ?? true) && (ingress?.allowed ?? true),
      stagedAllowed: stagedOf(egress) && stagedOf(ingress),
      ...(egress ? { egress } : {}),
      ...(ingress ? { ingress } : {}),
      ...(src.endpoint ? { source: summary(src.endpoint) } : {}),
      ...(dst.endpoint ? { destination: summary(dst.endpoint) } : {}),
    };
  }

  /** `namespace/name` of the workload endpoint (or `hostendpoint/name`) owning `ip`, if any. */
  endpointAt(ip: string): string | undefined {
    return this.#byIP.get(ip)?.key;
  }

  /** The enforced policies (`Kind [ns/]name`) applying to the endpoint at `ip` in `direction`, unordered. */
  policiesApplyingAt(ip: string, direction: Direction): string[] {
    const ep = this.#byIP.get(ip);
    if (!ep) return [];
    return this.#applying(this.#policies, ep, direction).map((p) => policyLabel(p));
  }

  #side(ip: string, port: number): Side {
    const endpoint = this.#byIP.get(ip);
    return endpoint ? { ip, port, endpoint } : { ip, port };
  }

  #applying(policies: readonly PolicyView[], ep: Endpoint, direction: Direction): PolicyView[] {
    return policies.filter(
      (p) =>
        p.types.includes(direction) &&
        !(ep.kind === 'HostEndpoint' && p.untracked) &&
        p.selection(ep).every((c) => c.ok),
    );
  }

  #direction(ep: Endpoint, direction: Direction, ctx: MatchContext): DirectionTrace {
    const enforced = this.#outcome(this.#policies, ep, direction, ctx);
    const notSelecting = this.#policies
      .filter(
        (p) =>
          p.types.includes(direction) &&
          (p.namespace === undefined || p.namespace === ep.namespace) &&
          !p.selection(ep).every((c) => c.ok),
      )
      .map((p) => policyTrace(p, p.selection(ep), [], 'none'));
    const staged = this.#stagedOutcome(ep, direction, ctx);
    return {
      endpoint: ep.key,
      endpointKind: ep.kind,
      direction,
      ...enforced,
      notSelecting,
      ...(staged ? { staged } : {}),
    };
  }

  /** The direction with the staged policies that concern the endpoint committed; undefined if none does. */
  #stagedOutcome(ep: Endpoint, direction: Direction, ctx: MatchContext): StagedTrace | undefined {
    const enforcedHere = new Set(this.#applying(this.#policies, ep, direction).map((p) => policyLabel(p)));
    const relevant = this.#staged.filter(
      (s) =>
        enforcedHere.has(s.target) ||
        (s.action === 'Set' && this.#applying([s.view], ep, direction).length > 0),
    );
    if (relevant.length === 0) return undefined;
    const targets = new Set(relevant.map((s) => s.target));
    const committed = [
      ...this.#policies.filter((p) => !targets.has(policyLabel(p))),
      ...relevant.filter((s) => s.action === 'Set').map((s) => s.view),
    ];
    const outcome = this.#outcome(committed, ep, direction, ctx, relevant);
    return {
      policies: relevant.map((s) => ({
        kind: s.view.kind,
        name: s.view.name,
        ...(s.view.namespace !== undefined ? { namespace: s.view.namespace } : {}),
        stagedAction: s.action,
      })),
      ...outcome,
    };
  }

  #outcome(
    policies: readonly PolicyView[],
    ep: Endpoint,
    direction: Direction,
    ctx: MatchContext,
    staged: readonly StagedChange[] = [],
  ): Outcome {
    const byTier = new Map<string, PolicyView[]>();
    for (const p of this.#applying(policies, ep, direction)) {
      if (!this.#tiers.has(p.tier))
        throw new Error(`${policyLabel(p)} is in tier ${p.tier}, which does not exist`);
      const list = byTier.get(p.tier);
      if (list) list.push(p);
      else byTier.set(p.tier, [p]);
    }
    const stagedAction = new Map(staged.map((s) => [s.view, s.action]));
    const tiers = [...byTier.keys()].map((t) => this.#tiers.get(t)!).sort(byOrderThenName);
    const traces: TierTrace[] = [];
    const passed: string[] = [];
    for (const tier of tiers) {
      const t = this.#tier(
        tier,
        byTier.get(tier.name)!.sort(byOrderThenName),
        ep,
        direction,
        ctx,
        stagedAction,
      );
      traces.push(t.trace);
      if (t.trace.result === 'Pass') {
        passed.push(t.reason);
        continue;
      }
      return {
        allowed: t.trace.result === 'Allow',
        reason: t.reason,
        decision: t.decision,
        tiers: traces,
        profiles: [],
      };
    }
    const prefix =
      tiers.length === 0 ? 'no policy applies; ' : `passed (${passed.join('; ')}), so profiles decide; `;
    const profiles: ProfileTrace[] = [];
    for (const name of ep.profiles) {
      const p = this.#profileTrace(name, direction, ctx);
      profiles.push(p);
      if (p.result === 'none') continue;
      const reason = `${prefix}profile ${name} ${direction}[${p.matchedRule}] ${p.result}`;
      const decision: Decision = { kind: 'profile', profile: name, rule: p.matchedRule! };
      return { allowed: p.result === 'Allow', reason, decision, tiers: traces, profiles };
    }
    const reason = `${prefix}${ep.profiles.length === 0 ? 'the endpoint has no profile' : 'no profile allowed'}`;
    return { allowed: false, reason, decision: { kind: 'no-profile' }, tiers: traces, profiles };
  }

  #tier(
    tier: TierView,
    policies: readonly PolicyView[],
    ep: Endpoint,
    direction: Direction,
    ctx: MatchContext,
    stagedAction: ReadonlyMap<PolicyView, 'Set' | 'Delete'>,
  ): { trace: TierTrace; reason: string; decision: Decision } {
    const traces: PolicyTrace[] = [];
    const tierTrace = (result: TierTrace['result'], by: TierTrace['by']): TierTrace => ({
      name: tier.name,
      ...finiteOrder(tier.order),
      defaultAction: tier.defaultAction,
      policies: traces,
      result,
      by,
    });
    for (const p of policies) {
      const rules: RuleTrace[] = [];
      let decided: 'Allow' | 'Deny' | 'Pass' | undefined;
      const list = direction === 'ingress' ? p.ingress : p.egress;
      for (let i = 0; i < list.length && decided === undefined; i++) {
        const rule = list[i]!;
        const r = ruleChecks(rule, ctx, p.namespace);
        rules.push({ index: i, action: rule.action, ...r });
        if (r.matched && rule.action !== 'Log') decided = rule.action;
      }
      const sa = stagedAction.get(p);
      traces.push(policyTrace(p, p.selection(ep), rules, decided ?? 'none', sa));
      if (decided === undefined) continue;
      const index = rules.length - 1;
      const reason = `tier ${tier.name}: ${policyLabel(p)} ${direction}[${index}] ${decided}`;
      const decision: Decision = { kind: 'rule', tier: tier.name, policy: policyLabel(p), rule: index };
      return { trace: tierTrace(decided, 'rule'), reason, decision };
    }
    const decision: Decision = { kind: 'end-of-tier', tier: tier.name };
    if (tier.defaultAction === 'Pass') {
      return {
        trace: tierTrace('Pass', 'end-of-tier'),
        reason: `end of tier ${tier.name} (defaultAction Pass)`,
        decision,
      };
    }
    const reason = `end of tier ${tier.name}: no policy allowed or passed (defaultAction Deny)`;
    return { trace: tierTrace('Deny', 'end-of-tier'), reason, decision };
  }

  #profileTrace(name: string, direction: Direction, ctx: MatchContext): ProfileTrace {
    const profile = this.#sources.profiles.get(name);
    if (!profile) return { name, found: false, rules: [], result: 'none' };
    const list = (direction === 'ingress' ? profile.spec.ingress : profile.spec.egress) ?? [];
    const rules: RuleTrace[] = [];
    for (let i = 0; i < list.length; i++) {
      const rule = list[i]!;
      const r = ruleChecks(rule, ctx, undefined);
      rules.push({ index: i, action: rule.action, ...r });
      if (!r.matched) continue;
      if (rule.action === 'Allow' || rule.action === 'Deny') {
        return { name, found: true, rules, result: rule.action, matchedRule: i };
      }
      // Pass ends this profile; Log goes on.
      if (rule.action === 'Pass') break;
    }
    return { name, found: true, rules, result: 'none' };
  }
}

function policyTrace(
  p: PolicyView,
  selection: PolicyTrace['selection'],
  rules: readonly RuleTrace[],
  result: PolicyTrace['result'],
  stagedAction?: 'Set' | 'Delete',
): PolicyTrace {
  return {
    kind: p.kind,
    name: p.name,
    ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
    ...finiteOrder(p.order),
    selection,
    rules,
    result,
    ...(result !== 'none' ? { matchedRule: rules.length - 1 } : {}),
    ...(stagedAction ? { stagedAction } : {}),
  };
}
