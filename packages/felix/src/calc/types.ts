/**
 * What goes into the calculation graph (datastore changes) and what comes out of it (the desired
 * dataplane state: IP sets, active policies and profiles with normalised rules, local endpoints
 * with their ordered tiers, IP pools; and this node's tunnels: VXLAN, IPIP and the hosts the
 * rules accept tunnelled packets from).
 */
import type {
  GlobalNetworkPolicy,
  GlobalNetworkSet,
  HostEndpoint,
  IPPool,
  K8sEndpointSlice,
  K8sService,
  NetworkPolicy,
  NetworkSet,
  Node,
  Profile,
  StagedGlobalNetworkPolicy,
  StagedKubernetesNetworkPolicy,
  StagedNetworkPolicy,
  Tier,
  WorkloadEndpoint,
} from '@calico-ts/api';
import type { IpipState } from './ipip-resolver.js';
import type { BlockRecord } from './route-resolver.js';
import type { VxlanState } from './vxlan-resolver.js';

/**
 * An IPAM block as the graph takes it: the datastore's block record under the name of its key
 * (the syncer's `ipam-blocks` source delivers `{ key, value }`; `ipamBlockResource` wraps it).
 */
export interface IPAMBlockResource {
  readonly kind: 'IPAMBlock';
  readonly metadata: { readonly name: string; readonly namespace?: string };
  /** The block as stored: its CIDR, affinity and allocations. */
  readonly spec: BlockRecord;
}

/** The kinds the calculation graph consumes. */
export type CalcResource =
  | WorkloadEndpoint
  | HostEndpoint
  | NetworkPolicy
  | GlobalNetworkPolicy
  | StagedNetworkPolicy
  | StagedGlobalNetworkPolicy
  | StagedKubernetesNetworkPolicy
  | Tier
  | Profile
  | NetworkSet
  | GlobalNetworkSet
  | IPPool
  | K8sService
  | K8sEndpointSlice
  | Node
  | IPAMBlockResource;

export type CalcKind = CalcResource['kind'];

/** Enough of a resource to name it: what a delete carries. */
export interface ResourceRef {
  readonly kind: CalcKind;
  readonly metadata: { readonly name: string; readonly namespace?: string };
}

/** One datastore change, or the datastore's signal that the initial listing is complete. */
export type CalcUpdate =
  | { readonly kind: 'set'; readonly resource: CalcResource }
  | { readonly kind: 'delete'; readonly resource: ResourceRef | CalcResource }
  | { readonly kind: 'in-sync' };

// ---- normalised rules ------------------------------------------------------------------------

/** An inclusive port range; a single port has `first === last`. */
export interface PortRange {
  readonly first: number;
  readonly last: number;
}

/** `tcp`, `udp`, `icmp`, `icmpv6`, `sctp`, `udplite` or a protocol number. */
export type RuleProtocol = string | number;

export interface ICMPMatch {
  readonly type: number;
  readonly code?: number;
}

export type RuleAction = 'allow' | 'deny' | 'pass' | 'log';

/**
 * A policy or profile rule with its EntityRules resolved: selectors (combined with namespace and
 * service-account parts) and named ports are replaced by IP set IDs, nets are canonical CIDRs.
 * The shape of upstream's `calc.ParsedRule`.
 */
export interface NormalizedRule {
  readonly action: RuleAction;
  readonly ipVersion?: 4 | 6;
  readonly protocol?: RuleProtocol;
  readonly notProtocol?: RuleProtocol;
  readonly icmp?: ICMPMatch;
  readonly notICMP?: ICMPMatch;

  readonly srcNets: readonly string[];
  readonly notSrcNets: readonly string[];
  readonly dstNets: readonly string[];
  readonly notDstNets: readonly string[];

  readonly srcPorts: readonly PortRange[];
  readonly notSrcPorts: readonly PortRange[];
  readonly dstPorts: readonly PortRange[];
  readonly notDstPorts: readonly PortRange[];

  readonly srcIPSetIds: readonly string[];
  readonly notSrcIPSetIds: readonly string[];
  readonly dstIPSetIds: readonly string[];
  readonly notDstIPSetIds: readonly string[];

  readonly srcNamedPortIPSetIds: readonly string[];
  readonly notSrcNamedPortIPSetIds: readonly string[];
  readonly dstNamedPortIPSetIds: readonly string[];
  readonly notDstNamedPortIPSetIds: readonly string[];

  /** Destination `services`: sets of `addr,proto:port` (the endpoints', and the cluster IPs'). */
  readonly dstIPPortSetIds: readonly string[];

  /**
   * Paths of the rule's fields this dataplane does not enforce (`http`, an unknown key). An
   * Allow, Pass or Log rule with any is rendered as matching nothing; a Deny rule applies its
   * other criteria. Absent when the rule is enforced in full.
   */
  readonly unenforced?: readonly string[];
}

// ---- desired dataplane state -----------------------------------------------------------------

export type NamedPortProtocol = 'tcp' | 'udp' | 'sctp';

/** The Kubernetes Service a `services` match names. */
export interface ServiceRef {
  readonly namespace: string;
  readonly name: string;
  /**
   * True for a destination match: members are `addr,proto:port` of the endpoints and cluster IPs.
   * False for a source match: members are the endpoints' addresses.
   */
  readonly includePorts: boolean;
}

/**
 * What an IP set stands for: endpoints matching a selector, optionally narrowed to a named port;
 * or, with `service` set (and `selector` empty), the endpoints of a Kubernetes Service.
 */
export interface IPSetDefinition {
  readonly id: string;
  /** Canonical selector text; '' for a service set. */
  readonly selector: string;
  readonly namedPort?: { readonly name: string; readonly protocol: NamedPortProtocol };
  readonly service?: ServiceRef;
}

/**
 * An IP set with its members. `net` sets hold CIDRs (`10.0.0.1/32`, `10.1.0.0/16`); `ip-port`
 * (named port) sets hold `addr,proto:port` (`10.0.0.1,tcp:8080`).
 */
export interface IPSetState extends IPSetDefinition {
  readonly type: 'net' | 'ip-port';
  /** Sorted, without duplicates. */
  readonly members: readonly string[];
}

export type PolicyKind = 'np' | 'gnp';

export interface PolicyState {
  /** `np/<namespace>/<name>` or `gnp/<name>`: the policy part of its chain names. */
  readonly id: string;
  readonly kind: PolicyKind;
  readonly namespace?: string;
  readonly name: string;
  readonly tier: string;
  readonly inbound: readonly NormalizedRule[];
  readonly outbound: readonly NormalizedRule[];
}

export interface ProfileState {
  /** The profile name, e.g. `kns.default`. */
  readonly id: string;
  readonly inbound: readonly NormalizedRule[];
  readonly outbound: readonly NormalizedRule[];
}

export type TierDefaultAction = 'Deny' | 'Pass';

/** One tier as it applies to one endpoint: the policy IDs in evaluation order, per direction. */
export interface EndpointTier {
  readonly name: string;
  readonly defaultAction: TierDefaultAction;
  readonly ingressPolicies: readonly string[];
  readonly egressPolicies: readonly string[];
}

export interface EndpointState {
  /** `wep/<namespace>/<name>` or `hep/<name>`. */
  readonly key: string;
  readonly kind: 'wep' | 'hep';
  readonly name: string;
  readonly namespace?: string;
  /** The host-side interface; `*` for a host endpoint covering all interfaces; absent if unknown. */
  readonly interfaceName?: string;
  readonly ipv4Nets: readonly string[];
  readonly ipv6Nets: readonly string[];
  /** Tiers with at least one policy selecting this endpoint, in order. */
  readonly tiers: readonly EndpointTier[];
  /** Host endpoints only: tiers of `applyOnForward` policies, for forwarded traffic. */
  readonly forwardTiers: readonly EndpointTier[];
  /** Host endpoints only: tiers of `doNotTrack` policies, applied before conntrack (both directions). */
  readonly untrackedTiers: readonly EndpointTier[];
  /** Host endpoints only: tiers of `preDNAT` policies, applied to ingress before DNAT (no egress). */
  readonly preDNATTiers: readonly EndpointTier[];
  /** Profiles that exist, in the endpoint's order. */
  readonly profileIds: readonly string[];
}

export interface PoolState {
  readonly name: string;
  readonly cidr: string;
  readonly natOutgoing: boolean;
  readonly disabled: boolean;
}

/**
 * What the rules need of the tunnels (the renderer's `TunnelRules`): the hosts VXLAN and IPIP
 * packets are accepted from, and the hosts NAT outgoing leaves alone. A field is absent when its
 * tunnel (or exclusion) is off.
 */
export interface TunnelSources {
  /** IPv4 addresses of the nodes VXLAN packets are accepted from. */
  readonly vxlanSources?: readonly string[];
  /** IPv6 addresses of the nodes VXLAN packets are accepted from. */
  readonly vxlanSourcesV6?: readonly string[];
  /** Addresses of the nodes IPIP packets are accepted from. */
  readonly ipipSources?: readonly string[];
  /** Hosts that NAT outgoing leaves alone (the other nodes). */
  readonly natExcludedHosts?: readonly string[];
}

/** Which encapsulations the enabled pools use: what the pod MTU is reduced for. */
export interface PoolEncaps {
  /** An enabled pool uses VXLAN. */
  readonly vxlan: boolean;
  /** An enabled pool uses IPIP. */
  readonly ipip: boolean;
}

/**
 * This node's tunnels, each part present in a diff only when it changed (and only once the
 * datastore is in sync, so a partial view never removes routes).
 */
export interface EncapDiff {
  /** The IPv4 VXLAN state (vxlan.calico, its routes, neighbours, FDB). */
  readonly vxlan?: VxlanState;
  /** The IPv6 VXLAN state (vxlan-v6.calico); only with IPv6 support on. */
  readonly vxlanV6?: VxlanState;
  /** The IPIP state (tunl0, its routes to other nodes' blocks). */
  readonly ipip?: IpipState;
  /** The hosts the rules accept tunnel packets from and exclude from NAT. */
  readonly tunnelSources?: TunnelSources;
  /** Which encapsulations the enabled pools use. */
  readonly poolEncaps?: PoolEncaps;
}

/** The changes to the desired dataplane state since the previous flush. Lists are sorted by ID. */
export interface DataplaneDiff extends EncapDiff {
  /** True once the datastore has reported in-sync (and stays true). */
  readonly inSync: boolean;
  readonly ipSetsUpdated: readonly IPSetState[];
  readonly ipSetsRemoved: readonly string[];
  readonly policiesUpdated: readonly PolicyState[];
  readonly policiesRemoved: readonly string[];
  readonly profilesUpdated: readonly ProfileState[];
  readonly profilesRemoved: readonly string[];
  readonly endpointsUpdated: readonly EndpointState[];
  readonly endpointsRemoved: readonly string[];
  readonly poolsUpdated: readonly PoolState[];
  readonly poolsRemoved: readonly string[];
}

/**
 * The whole desired dataplane state, keyed by ID: what `DataplaneDiff`s add up to. The tunnel
 * parts are the ones last emitted (absent until the graph emits them).
 */
export interface DataplaneState extends EncapDiff {
  readonly inSync: boolean;
  readonly ipSets: Readonly<Record<string, IPSetState>>;
  readonly policies: Readonly<Record<string, PolicyState>>;
  readonly profiles: Readonly<Record<string, ProfileState>>;
  readonly endpoints: Readonly<Record<string, EndpointState>>;
  readonly pools: Readonly<Record<string, PoolState>>;
}
