/**
 * One table of what each kind needs: its spec schema, its extra name rule, its cross-field check,
 * and its write-path and read-path defaulting. `validate.ts` drives it.
 */
import * as z from 'zod';
import type { Kind } from '../kinds.js';
import type { ResourceObject } from '../meta.js';
import {
  type BGPConfiguration,
  type BGPFilter,
  type BGPPeer,
  bgpConfigurationSpecSchema,
  bgpFilterSpecSchema,
  bgpPeerSpecSchema,
  checkBGPConfiguration,
  checkBGPFilter,
  checkBGPPeer,
} from './bgp.js';
import type { CheckContext } from './common.js';
import {
  type ClusterInformation,
  checkFelixConfiguration,
  checkKubeControllersConfiguration,
  checkSingletonName,
  clusterInformationSpecSchema,
  defaultFelixConfiguration,
  defaultKubeControllersConfiguration,
  type FelixConfiguration,
  felixConfigurationSpecSchema,
  type KubeControllersConfiguration,
  kubeControllersConfigurationSpecSchema,
  kubeControllersConfigurationStatusSchema,
} from './config.js';
import {
  checkHostEndpoint,
  checkNetworkSet,
  checkNode,
  checkWorkloadEndpoint,
  defaultWorkloadEndpoint,
  type GlobalNetworkSet,
  globalNetworkSetSpecSchema,
  type HostEndpoint,
  hostEndpointSpecSchema,
  type NetworkSet,
  type Node,
  networkSetSpecSchema,
  nodeSpecSchema,
  nodeStatusSchema,
  type WorkloadEndpoint,
  workloadEndpointSpecSchema,
} from './endpoints.js';
import {
  checkIPPool,
  defaultIPPool,
  defaultIPPoolOnRead,
  type IPPool,
  type IPReservation,
  ipPoolSpecSchema,
  ipReservationSpecSchema,
} from './ippool.js';
import {
  type CalicoNodeStatus,
  calicoNodeStatusSpecSchema,
  calicoNodeStatusStatusSchema,
  checkCalicoNodeStatus,
} from './node-status.js';
import {
  checkGlobalNetworkPolicy,
  checkNetworkPolicy,
  checkProfile,
  checkTier,
  defaultPolicy,
  defaultPolicyOnWrite,
  defaultTier,
  type GlobalNetworkPolicy,
  globalNetworkPolicyNameProblem,
  globalNetworkPolicySpecSchema,
  type NetworkPolicy,
  networkPolicyNameProblem,
  networkPolicySpecSchema,
  type Profile,
  profileSpecSchema,
  type Tier,
  tierNameProblem,
  tierSpecSchema,
} from './policy.js';
import {
  checkStagedGlobalNetworkPolicy,
  checkStagedKubernetesNetworkPolicy,
  checkStagedNetworkPolicy,
  defaultStagedPolicy,
  defaultStagedPolicyOnWrite,
  type StagedGlobalNetworkPolicy,
  type StagedKubernetesNetworkPolicy,
  type StagedNetworkPolicy,
  stagedGlobalNetworkPolicySpecSchema,
  stagedKubernetesNetworkPolicySpecSchema,
  stagedNetworkPolicySpecSchema,
} from './staged.js';

/** Kind → its TypeScript resource type. */
export interface ResourceMap {
  BGPConfiguration: BGPConfiguration;
  BGPFilter: BGPFilter;
  BGPPeer: BGPPeer;
  CalicoNodeStatus: CalicoNodeStatus;
  ClusterInformation: ClusterInformation;
  FelixConfiguration: FelixConfiguration;
  GlobalNetworkPolicy: GlobalNetworkPolicy;
  GlobalNetworkSet: GlobalNetworkSet;
  HostEndpoint: HostEndpoint;
  IPPool: IPPool;
  IPReservation: IPReservation;
  KubeControllersConfiguration: KubeControllersConfiguration;
  NetworkPolicy: NetworkPolicy;
  NetworkSet: NetworkSet;
  Node: Node;
  Profile: Profile;
  StagedGlobalNetworkPolicy: StagedGlobalNetworkPolicy;
  StagedKubernetesNetworkPolicy: StagedKubernetesNetworkPolicy;
  StagedNetworkPolicy: StagedNetworkPolicy;
  Tier: Tier;
  WorkloadEndpoint: WorkloadEndpoint;
}

export type ResourceOf<K extends Kind> = ResourceMap[K];
/** Any projectcalico.org/v3 resource this project knows. */
export type Resource = ResourceMap[Kind];

export interface KindDefinition<K extends Kind> {
  /** The spec, fields in upstream's Go order (see go-encoding.ts for how each is stored). */
  readonly spec: z.ZodType;
  /**
   * The kinds whose Go type has a status: its schema, and whether it is a Go value (always stored,
   * {} when empty) rather than a pointer. Other kinds have no status upstream, which drops one.
   */
  readonly status?: { readonly schema: z.ZodType; readonly always: boolean };
  /** Replaces the default DNS-1123 subdomain name rule; returns the problem or undefined. */
  readonly nameProblem?: (name: string) => string | undefined;
  readonly check?: (spec: unknown, ctx: CheckContext) => void;
  /** What upstream's etcd-mode client (clientv3) fills in before it stores a resource. */
  readonly defaultOnWrite?: (r: ResourceOf<K>) => ResourceOf<K>;
  /** What a reader sees filled in; when it is the write defaulting, stored values already have it. */
  readonly defaultOnRead?: (r: ResourceOf<K>) => ResourceOf<K>;
}

export const KIND_DEFINITIONS: { readonly [K in Kind]: KindDefinition<K> } = {
  BGPConfiguration: { spec: bgpConfigurationSpecSchema, check: checkBGPConfiguration },
  BGPFilter: { spec: bgpFilterSpecSchema, check: checkBGPFilter },
  BGPPeer: { spec: bgpPeerSpecSchema, check: checkBGPPeer },
  CalicoNodeStatus: {
    spec: calicoNodeStatusSpecSchema,
    // A Go struct value: stored (zeroed) even before calico-node first reports.
    status: { schema: calicoNodeStatusStatusSchema, always: true },
    check: checkCalicoNodeStatus,
  },
  ClusterInformation: { spec: clusterInformationSpecSchema, check: checkSingletonName('ClusterInformation') },
  FelixConfiguration: {
    spec: felixConfigurationSpecSchema,
    check: checkFelixConfiguration,
    defaultOnWrite: defaultFelixConfiguration,
  },
  GlobalNetworkPolicy: {
    spec: globalNetworkPolicySpecSchema,
    nameProblem: globalNetworkPolicyNameProblem,
    check: checkGlobalNetworkPolicy,
    defaultOnWrite: defaultPolicyOnWrite,
    defaultOnRead: defaultPolicy,
  },
  GlobalNetworkSet: { spec: globalNetworkSetSpecSchema, check: checkNetworkSet },
  HostEndpoint: { spec: hostEndpointSpecSchema, check: checkHostEndpoint },
  IPPool: {
    spec: ipPoolSpecSchema,
    status: { schema: z.unknown(), always: false },
    check: checkIPPool,
    defaultOnWrite: defaultIPPool,
    defaultOnRead: defaultIPPoolOnRead,
  },
  IPReservation: { spec: ipReservationSpecSchema },
  KubeControllersConfiguration: {
    spec: kubeControllersConfigurationSpecSchema,
    status: { schema: kubeControllersConfigurationStatusSchema, always: true },
    check: checkKubeControllersConfiguration,
    defaultOnWrite: defaultKubeControllersConfiguration,
  },
  NetworkPolicy: {
    spec: networkPolicySpecSchema,
    nameProblem: networkPolicyNameProblem,
    check: checkNetworkPolicy,
    defaultOnWrite: defaultPolicyOnWrite,
    defaultOnRead: defaultPolicy,
  },
  NetworkSet: { spec: networkSetSpecSchema, check: checkNetworkSet },
  Node: { spec: nodeSpecSchema, status: { schema: nodeStatusSchema, always: true }, check: checkNode },
  Profile: { spec: profileSpecSchema, check: checkProfile },
  StagedGlobalNetworkPolicy: {
    spec: stagedGlobalNetworkPolicySpecSchema,
    nameProblem: globalNetworkPolicyNameProblem,
    check: checkStagedGlobalNetworkPolicy,
    defaultOnWrite: defaultStagedPolicyOnWrite,
    defaultOnRead: defaultStagedPolicy,
  },
  StagedKubernetesNetworkPolicy: {
    spec: stagedKubernetesNetworkPolicySpecSchema,
    check: checkStagedKubernetesNetworkPolicy,
  },
  StagedNetworkPolicy: {
    spec: stagedNetworkPolicySpecSchema,
    nameProblem: networkPolicyNameProblem,
    check: checkStagedNetworkPolicy,
    defaultOnWrite: defaultStagedPolicyOnWrite,
    defaultOnRead: defaultStagedPolicy,
  },
  Tier: {
    spec: tierSpecSchema,
    nameProblem: tierNameProblem,
    check: checkTier,
    defaultOnWrite: defaultTier,
    defaultOnRead: defaultTier,
  },
  WorkloadEndpoint: {
    spec: workloadEndpointSpecSchema,
    check: checkWorkloadEndpoint,
    defaultOnWrite: defaultWorkloadEndpoint,
  },
};

/** Kind → zod schema of its `spec` (input for CRD generation via `z.toJSONSchema`). */
export const resourceSchemas: { readonly [K in Kind]: z.ZodType } = Object.fromEntries(
  Object.entries(KIND_DEFINITIONS).map(([k, d]) => [k, d.spec]),
) as { [K in Kind]: z.ZodType };

export type AnyResource = ResourceObject<Kind, unknown>;
