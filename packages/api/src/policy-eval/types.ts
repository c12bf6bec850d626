/**
 * The vocabulary of the policy evaluator: a flow, the resources it reads (a `PolicyWorld`), and
 * the trace it returns. Every type here is plain data (JSON as it stands), so a trace can be
 * printed by calicoctl, sent to a web console, or compared in a test.
 */
import type { K8sEndpointSlice, K8sService } from '../convert/k8s-service.js';
import type { HostEndpoint, WorkloadEndpoint } from '../resources/endpoints.js';
import type { GlobalNetworkPolicy, NetworkPolicy, Profile, Tier } from '../resources/policy.js';
import type {
  StagedGlobalNetworkPolicy,
  StagedKubernetesNetworkPolicy,
  StagedNetworkPolicy,
} from '../resources/staged.js';

/** The transport protocols the evaluator explains. */
export type FlowProtocol = 'tcp' | 'udp';
/** Ingress: into the endpoint (the destination's policy); egress: out of it (the source's). */
export type Direction = 'ingress' | 'egress';

/** One IPv4 TCP or UDP flow, as its first packet shows it. */
export interface Flow {
  /** The source address, IPv4. */
  readonly srcIP: string;
  /** The destination address, IPv4. */
  readonly dstIP: string;
  /** `tcp` or `udp`. */
  readonly protocol: FlowProtocol;
  /** The source port, 1–65535. */
  readonly srcPort: number;
  /** The destination port, 1–65535. */
  readonly dstPort: number;
}

/** Everything the evaluator reads; absent lists are empty. */
export interface PolicyWorld {
  /** The pods (and other workloads): their labels, addresses, named ports and profiles. */
  readonly workloadEndpoints: readonly WorkloadEndpoint[];
  /** Host interfaces with policy, found by their `expectedIPs`. */
  readonly hostEndpoints?: readonly HostEndpoint[];
  /** Every profile, including the `kns.`/`ksa.` ones namespaces' and service accounts' labels come from. */
  readonly profiles: readonly Profile[];
  /** The tiers; `default` exists even when not listed. */
  readonly tiers: readonly Tier[];
  /** Enforced namespaced policies, Kubernetes ones as their `knp.default.*` conversion. */
  readonly networkPolicies: readonly NetworkPolicy[];
  /** Enforced global policies. */
  readonly globalNetworkPolicies: readonly GlobalNetworkPolicy[];
  /** Staged namespaced policies: evaluated only for the would-be verdict. */
  readonly stagedNetworkPolicies?: readonly StagedNetworkPolicy[];
  /** Staged global policies: evaluated only for the would-be verdict. */
  readonly stagedGlobalNetworkPolicies?: readonly StagedGlobalNetworkPolicy[];
  /** Staged Kubernetes NetworkPolicies, converted as kube-controllers would convert them. */
  readonly stagedKubernetesNetworkPolicies?: readonly StagedKubernetesNetworkPolicy[];
  /** Kubernetes Services, for rules with `services`. */
  readonly services?: readonly K8sService[];
  /** The Services' EndpointSlices, for rules with `services`. */
  readonly endpointSlices?: readonly K8sEndpointSlice[];
}

/** The kinds of endpoint that carry policy. */
export type EndpointKind = 'WorkloadEndpoint' | 'HostEndpoint';

/** The policy kinds a trace names. */
export type PolicyKind =
  | 'NetworkPolicy'
  | 'GlobalNetworkPolicy'
  | 'StagedNetworkPolicy'
  | 'StagedGlobalNetworkPolicy'
  | 'StagedKubernetesNetworkPolicy';

/** One criterion tested: a selector on some labels, a port, a net. */
export interface Check {
  /** The criterion as written, e.g. `source.selector app == 'web'`, `protocol TCP`. */
  readonly what: string;
  /** Whether it held. */
  readonly ok: boolean;
  /** What it was tested on, e.g. `labels of alpha/a1`, `port 8080`. */
  readonly on: string;
}

/** One rule as evaluated. */
export interface RuleTrace {
  /** Its position in the policy's (or profile's) ingress or egress rules. */
  readonly index: number;
  /** The rule's action. */
  readonly action: 'Allow' | 'Deny' | 'Pass' | 'Log';
  /** Whether every criterion held. */
  readonly matched: boolean;
  /** The criteria tested in order; a rule that does not match ends with the first failed one. */
  readonly checks: readonly Check[];
}

/** How one policy in a tier treated the flow. */
export interface PolicyTrace {
  /** The policy's kind. */
  readonly kind: PolicyKind;
  /** The policy's name (a Kubernetes one as `knp.default.<name>`). */
  readonly name: string;
  /** The namespace of a namespaced policy. */
  readonly namespace?: string;
  /** The policy's order; absent when unset (it then comes last in its tier). */
  readonly order?: number;
  /** Why the policy applies to (or does not select) the endpoint. */
  readonly selection: readonly Check[];
  /** The rules evaluated, up to the one that decided. */
  readonly rules: readonly RuleTrace[];
  /** The action of the rule that decided, or `none`: no rule matched (Log rules go on). */
  readonly result: 'Allow' | 'Deny' | 'Pass' | 'none';
  /** The index of the rule that decided, when one did. */
  readonly matchedRule?: number;
  /** Set on a staged policy standing in for what it would change. */
  readonly stagedAction?: 'Set' | 'Delete';
}

/** One tier as evaluated. */
export interface TierTrace {
  /** The tier's name. */
  readonly name: string;
  /** The tier's order; absent when unset. */
  readonly order?: number;
  /** What the end of the tier does when no policy decided. */
  readonly defaultAction: 'Deny' | 'Pass';
  /** The policies of the tier selecting the endpoint, in order, up to the one that decided. */
  readonly policies: readonly PolicyTrace[];
  /** What the tier did with the flow: Pass goes on to the next tier, or to the profiles. */
  readonly result: 'Allow' | 'Deny' | 'Pass';
  /** `rule`: a policy's rule decided; `end-of-tier`: no policy did, the tier's defaultAction did. */
  readonly by: 'rule' | 'end-of-tier';
}

/** One profile of the endpoint as evaluated. */
export interface ProfileTrace {
  /** The profile's name. */
  readonly name: string;
  /** False when the endpoint names a profile that does not exist. */
  readonly found: boolean;
  /** Its rules in this direction, up to the one that decided. */
  readonly rules: readonly RuleTrace[];
  /** Allow or Deny from a matching rule, or `none`: on to the next profile. */
  readonly result: 'Allow' | 'Deny' | 'none';
  /** The index of the rule that decided, when one did. */
  readonly matchedRule?: number;
}

/** A policy's rule decided. */
export interface RuleDecision {
  /** Always `rule`. */
  readonly kind: 'rule';
  /** The tier of the policy. */
  readonly tier: string;
  /** `Kind [namespace/]name` of the policy. */
  readonly policy: string;
  /** The index of its rule. */
  readonly rule: number;
}

/** No policy of a tier decided; its defaultAction (Deny, or Pass to the profiles) did. */
export interface EndOfTierDecision {
  /** Always `end-of-tier`. */
  readonly kind: 'end-of-tier';
  /** The tier. */
  readonly tier: string;
}

/** A profile's rule decided. */
export interface ProfileDecision {
  /** Always `profile`. */
  readonly kind: 'profile';
  /** The profile. */
  readonly profile: string;
  /** The index of its rule. */
  readonly rule: number;
}

/** The profiles were reached and none allowed or denied: denied. */
export interface NoProfileDecision {
  /** Always `no-profile`. */
  readonly kind: 'no-profile';
}

/** What decided a direction. */
export type Decision = RuleDecision | EndOfTierDecision | ProfileDecision | NoProfileDecision;

/** What a direction came to, and the walk that led there. */
export interface DirectionOutcome {
  /** Whether the flow passes in this direction. */
  readonly allowed: boolean;
  /** One line saying what decided, e.g. `tier security: GlobalNetworkPolicy deny-all egress[0] Deny`. */
  readonly reason: string;
  /** What decided, as data. */
  readonly decision: Decision;
  /** The tiers with a policy applying, in order, up to the one that decided. */
  readonly tiers: readonly TierTrace[];
  /** The endpoint's profiles, when the tiers left the decision to them. */
  readonly profiles: readonly ProfileTrace[];
}

/** The verdict of one endpoint's policy in one direction, with every step that led to it. */
export interface DirectionTrace extends DirectionOutcome {
  /** `namespace/name` of a workload endpoint, `hostendpoint/name` of a host endpoint. */
  readonly endpoint: string;
  /** Whether the endpoint is a workload or a host endpoint. */
  readonly endpointKind: EndpointKind;
  /** Egress of the source, or ingress of the destination. */
  readonly direction: Direction;
  /** Policies of this direction that do not select the endpoint (same namespace or global). */
  readonly notSelecting: readonly PolicyTrace[];
  /** What this direction would be with the staged policies committed; absent when none applies. */
  readonly staged?: StagedTrace;
}

/** A staged policy that changes a direction. */
export interface StagedChangeSummary {
  /** The staged policy's kind. */
  readonly kind: PolicyKind;
  /** Its name (a staged Kubernetes one as `knp.default.<name>`). */
  readonly name: string;
  /** Its namespace, for a namespaced one. */
  readonly namespace?: string;
  /** Set: it would apply (in place of the enforced policy of its name); Delete: that policy would go. */
  readonly stagedAction: 'Set' | 'Delete';
}

/** A direction with the staged policies committed. */
export interface StagedTrace extends DirectionOutcome {
  /** The staged policies that would change this direction's policy. */
  readonly policies: readonly StagedChangeSummary[];
}

/** The endpoint an address belongs to, as the evaluator saw it. */
export interface EndpointSummary {
  /** Workload or host endpoint. */
  readonly kind: EndpointKind;
  /** `namespace/name`, or `hostendpoint/name`. */
  readonly key: string;
  /** The endpoint resource's name. */
  readonly name: string;
  /** The namespace of a workload endpoint. */
  readonly namespace?: string;
  /** Every label policy selectors see: own, Calico's, and the profiles' labelsToApply. */
  readonly labels: Readonly<Record<string, string>>;
  /** The workload's service account. */
  readonly serviceAccount?: string;
  /** The endpoint's profiles, in order. */
  readonly profiles: readonly string[];
}

/** The answer for one flow. */
export interface Verdict {
  /** Whether the flow passes: the source's egress and the destination's ingress both allow. */
  readonly allowed: boolean;
  /** The source endpoint's egress; absent when the source is no endpoint. */
  readonly egress?: DirectionTrace;
  /** The destination endpoint's ingress; absent when the destination is no endpoint. */
  readonly ingress?: DirectionTrace;
  /** What the verdict would be with the staged policies committed (equal to `allowed` if none applies). */
  readonly stagedAllowed: boolean;
  /** The endpoint owning the source address, if any. */
  readonly source?: EndpointSummary;
  /** The endpoint owning the destination address, if any. */
  readonly destination?: EndpointSummary;
}
