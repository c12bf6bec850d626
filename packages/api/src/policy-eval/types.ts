/**
 * The vocabulary of the policy evaluator: a flow, the resources it reads (a `PolicyWorld`), and
 * the trace it returns. Every type here is plain data (JSON as it stands), so a trace can be
 * printed by calicoctl, sent to a web console, or compared in a test.
 */
import type { HostEndpoint, WorkloadEndpoint } from '../resources/endpoints.js';
import type { GlobalNetworkPolicy, NetworkPolicy, Profile, Tier } from '../resources/policy.js';
import type { K8sEndpointSlice, K8sService } from '../convert/k8s-service.js';
import type {
  StagedGlobalNetworkPolicy,
  StagedKubernetesNetworkPolicy,
  StagedNetworkPolicy,
} from '../resources/staged.js';

export type FlowProtocol = 'tcp' | 'udp';
export type Direction = 'ingress' | 'egress';

/** One IPv4 TCP or UDP flow, as its first packet shows it. */
export interface Flow {
  readonly srcIP: string;
  readonly dstIP: string;
  readonly protocol: FlowProtocol;
  readonly srcPort: number;
  readonly dstPort: number;
}

/** Everything the evaluator reads; absent lists are empty. */
export interface PolicyWorld {
  readonly workloadEndpoints: readonly WorkloadEndpoint[];
  readonly hostEndpoints?: readonly HostEndpoint[];
  readonly profiles: readonly Profile[];
  readonly tiers: readonly Tier[];
  readonly networkPolicies: readonly NetworkPolicy[];
  readonly globalNetworkPolicies: readonly GlobalNetworkPolicy[];
  readonly stagedNetworkPolicies?: readonly StagedNetworkPolicy[];
  readonly stagedGlobalNetworkPolicies?: readonly StagedGlobalNetworkPolicy[];
  readonly stagedKubernetesNetworkPolicies?: readonly StagedKubernetesNetworkPolicy[];
  /** Kubernetes Services and their EndpointSlices, for rules with `services`. */
  readonly services?: readonly K8sService[];
  readonly endpointSlices?: readonly K8sEndpointSlice[];
}

export type EndpointKind = 'WorkloadEndpoint' | 'HostEndpoint';

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
  readonly ok: boolean;
  /** What it was tested on, e.g. `labels of alpha/a1 {app=web}`, `port 8080`. */
  readonly on: string;
}

export interface RuleTrace {
  readonly index: number;
  readonly action: 'Allow' | 'Deny' | 'Pass' | 'Log';
  readonly matched: boolean;
  /** The criteria tested in order; a rule that does not match ends with the first failed one. */
  readonly checks: readonly Check[];
}

/** How one policy in a tier treated the flow. */
export interface PolicyTrace {
  readonly kind: PolicyKind;
  readonly name: string;
  readonly namespace?: string;
  readonly order?: number;
  /** Why the policy applies to (or does not select) the endpoint. */
  readonly selection: readonly Check[];
  /** The rules evaluated, up to the one that decided. */
  readonly rules: readonly RuleTrace[];
  /** The action of the rule that decided, or `none`: no rule matched (Log rules go on). */
  readonly result: 'Allow' | 'Deny' | 'Pass' | 'none';
  readonly matchedRule?: number;
  /** Set on a staged policy standing in for what it would change. */
  readonly stagedAction?: 'Set' | 'Delete';
}

export interface TierTrace {
  readonly name: string;
  readonly order?: number;
  readonly defaultAction: 'Deny' | 'Pass';
  readonly policies: readonly PolicyTrace[];
  readonly result: 'Allow' | 'Deny' | 'Pass';
  /** `rule`: a policy's rule decided; `end-of-tier`: no policy did, the tier's defaultAction did. */
  readonly by: 'rule' | 'end-of-tier';
}

export interface ProfileTrace {
  readonly name: string;
  /** False when the endpoint names a profile that does not exist. */
  readonly found: boolean;
  readonly rules: readonly RuleTrace[];
  readonly result: 'Allow' | 'Deny' | 'none';
  readonly matchedRule?: number;
}

/** What decided a direction. */
export type Decision =
  | { readonly kind: 'rule'; readonly tier: string; readonly policy: string; readonly rule: number }
  | { readonly kind: 'end-of-tier'; readonly tier: string }
  | { readonly kind: 'profile'; readonly profile: string; readonly rule: number }
  | { readonly kind: 'no-profile' };

/** The verdict of one endpoint's policy in one direction, with every step that led to it. */
export interface DirectionTrace {
  /** `namespace/name` of a workload endpoint, `hostendpoint/name` of a host endpoint. */
  readonly endpoint: string;
  readonly endpointKind: EndpointKind;
  readonly direction: Direction;
  readonly allowed: boolean;
  /** One line saying what decided, e.g. `tier security: GlobalNetworkPolicy deny-all egress[0] Deny`. */
  readonly reason: string;
  readonly decision: Decision;
  /** The tiers with a policy applying, in order, up to the one that decided. */
  readonly tiers: readonly TierTrace[];
  /** The endpoint's profiles, when the tiers left the decision to them. */
  readonly profiles: readonly ProfileTrace[];
  /** Policies of this direction that do not select the endpoint (same namespace or global). */
  readonly notSelecting: readonly PolicyTrace[];
  /** What this direction would be with the staged policies committed; absent when none applies. */
  readonly staged?: StagedTrace;
}

export interface StagedTrace {
  /** The staged policies that would change this direction's policy (Set: apply; Delete: remove). */
  readonly policies: readonly { kind: PolicyKind; name: string; namespace?: string; stagedAction: 'Set' | 'Delete' }[];
  readonly allowed: boolean;
  readonly reason: string;
  readonly decision: Decision;
  readonly tiers: readonly TierTrace[];
  readonly profiles: readonly ProfileTrace[];
}

/** The endpoint an address belongs to, as the evaluator saw it. */
export interface EndpointSummary {
  readonly kind: EndpointKind;
  /** `namespace/name`, or `hostendpoint/name`. */
  readonly key: string;
  readonly name: string;
  readonly namespace?: string;
  /** Every label policy selectors see: own, Calico's, and the profiles' labelsToApply. */
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceAccount?: string;
  readonly profiles: readonly string[];
}

export interface Verdict {
  readonly allowed: boolean;
  /** The source endpoint's egress; absent when the source is no endpoint. */
  readonly egress?: DirectionTrace;
  /** The destination endpoint's ingress; absent when the destination is no endpoint. */
  readonly ingress?: DirectionTrace;
  /** What the verdict would be with the staged policies committed (equal to `allowed` if none applies). */
  readonly stagedAllowed: boolean;
  readonly source?: EndpointSummary;
  readonly destination?: EndpointSummary;
}
