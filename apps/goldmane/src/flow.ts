/**
 * The flow vocabulary of the aggregator: upstream's messages (`proto/api.proto`) as plain data, with
 * enum values by name as the wire decoder gives them. Pure.
 */

/** The ultimate action on a flow, or of a policy rule. */
export const ACTIONS = ['ActionUnspecified', 'Allow', 'Deny', 'Pass'] as const;
/** An {@link ACTIONS} value. */
export type Action = (typeof ACTIONS)[number];

/** What a flow's endpoint is. */
export const ENDPOINT_TYPES = [
  'EndpointTypeUnspecified',
  'WorkloadEndpoint',
  'HostEndpoint',
  'NetworkSet',
  'Network',
] as const;
/** An {@link ENDPOINT_TYPES} value. */
export type EndpointType = (typeof ENDPOINT_TYPES)[number];

/** Which end measured the flow. */
export const REPORTERS = ['ReporterUnspecified', 'Src', 'Dst'] as const;
/** A {@link REPORTERS} value. */
export type Reporter = (typeof REPORTERS)[number];

/** The kind of the resource behind a policy hit. */
export const POLICY_KINDS = [
  'KindUnspecified',
  'CalicoNetworkPolicy',
  'GlobalNetworkPolicy',
  'StagedNetworkPolicy',
  'StagedGlobalNetworkPolicy',
  'StagedKubernetesNetworkPolicy',
  'NetworkPolicy',
  'ClusterNetworkPolicyAdminTier',
  'ClusterNetworkPolicyBaselineTier',
  'Profile',
  'EndOfTier',
] as const;
/** A {@link POLICY_KINDS} value. */
export type PolicyKind = (typeof POLICY_KINDS)[number];

/** Sort orders of a list. */
export const SORT_BYS = [
  'Time',
  'DestName',
  'DestNamespace',
  'DestType',
  'SourceName',
  'SourceNamespace',
  'SourceType',
] as const;
/** A {@link SORT_BYS} value. */
export type SortBy = (typeof SORT_BYS)[number];

/** The fields FilterHints can enumerate. */
export const FILTER_TYPES = [
  'FilterTypeUnspecified',
  'FilterTypeDestName',
  'FilterTypeSourceName',
  'FilterTypeDestNamespace',
  'FilterTypeSourceNamespace',
  'FilterTypePolicyTier',
  'FilterTypePolicyName',
] as const;
/** A {@link FILTER_TYPES} value. */
export type FilterType = (typeof FILTER_TYPES)[number];

/** How a string filter compares. */
export const MATCH_TYPES = ['Exact', 'Fuzzy'] as const;
/** A {@link MATCH_TYPES} value: Fuzzy is a substring match. */
export type MatchType = (typeof MATCH_TYPES)[number];

/** One policy rule (or tier/profile default) that acted on a flow. */
export interface PolicyHit {
  /** The policy's resource kind. */
  readonly kind: PolicyKind;
  /** Its namespace; empty for cluster-scoped kinds. */
  readonly namespace: string;
  /** Its name. */
  readonly name: string;
  /** Its tier. */
  readonly tier: string;
  /** What the rule did. */
  readonly action: Action;
  /** The policy's place among those traversed. */
  readonly policyIndex: number;
  /** The rule's place in the policy; -1 for a default. */
  readonly ruleIndex: number;
  /** For EndOfTier: the first policy of the tier that selected the flow. */
  readonly trigger: PolicyHit | null;
}

/** The policies a flow went through. */
export interface PolicyTrace {
  /** What the dataplane enforced. */
  readonly enforcedPolicies: readonly PolicyHit[];
  /** What it would do with staged policies in force. */
  readonly pendingPolicies: readonly PolicyHit[];
}

/** What makes flows one flow (upstream's FlowKey). */
export interface FlowKey {
  /** Source name: aggregated workload name, host endpoint, network set, or pub/pvt. */
  readonly sourceName: string;
  /** Source namespace. */
  readonly sourceNamespace: string;
  /** Source endpoint type. */
  readonly sourceType: EndpointType;
  /** Destination name. */
  readonly destName: string;
  /** Destination namespace. */
  readonly destNamespace: string;
  /** Destination endpoint type. */
  readonly destType: EndpointType;
  /** Destination port. */
  readonly destPort: number;
  /** Destination service name, if any. */
  readonly destServiceName: string;
  /** Destination service namespace, if any. */
  readonly destServiceNamespace: string;
  /** Destination service port name, if any. */
  readonly destServicePortName: string;
  /** Destination service port, if any. */
  readonly destServicePort: number;
  /** L4 protocol: tcp, udp, sctp, icmp … */
  readonly proto: string;
  /** Which end measured it. */
  readonly reporter: Reporter;
  /** The ultimate action. */
  readonly action: Action;
  /** The policy trace. */
  readonly policies: PolicyTrace;
}

/** Counters of a flow over one interval. */
export interface FlowStats {
  /** Packets in. */
  readonly packetsIn: number;
  /** Packets out. */
  readonly packetsOut: number;
  /** Bytes in. */
  readonly bytesIn: number;
  /** Bytes out. */
  readonly bytesOut: number;
  /** Connections started in the interval. */
  readonly numConnectionsStarted: number;
  /** Connections completed in the interval. */
  readonly numConnectionsCompleted: number;
  /** Connections open at the interval's end. */
  readonly numConnectionsLive: number;
}

/** A flow: a key, a time range, labels and counters (upstream's Flow). */
export interface Flow extends FlowStats {
  /** The key. */
  readonly key: FlowKey;
  /** Start, seconds since the epoch. */
  readonly startTime: number;
  /** End, seconds since the epoch. */
  readonly endTime: number;
  /** Labels every source endpoint had, `k=v`. */
  readonly sourceLabels: readonly string[];
  /** Labels every destination endpoint had, `k=v`. */
  readonly destLabels: readonly string[];
}

/** A flow with the id of its key (upstream's FlowResult). */
export interface FlowResult {
  /** 1:1 with the key while the server runs. */
  readonly id: number;
  /** The flow. */
  readonly flow: Flow;
}

function hitString(h: PolicyHit): string {
  return JSON.stringify([
    h.kind,
    h.namespace,
    h.name,
    h.tier,
    h.action,
    h.policyIndex,
    h.ruleIndex,
    h.trigger ? hitString(h.trigger) : null,
  ]);
}

/** A string equal for two keys exactly when every field of the keys, policy trace included, is. */
export function flowKeyString(k: FlowKey): string {
  return JSON.stringify([
    k.sourceName,
    k.sourceNamespace,
    k.sourceType,
    k.destName,
    k.destNamespace,
    k.destType,
    k.destPort,
    k.destServiceName,
    k.destServiceNamespace,
    k.destServicePortName,
    k.destServicePort,
    k.proto,
    k.reporter,
    k.action,
    k.policies.enforcedPolicies.map(hitString),
    k.policies.pendingPolicies.map(hitString),
  ]);
}
