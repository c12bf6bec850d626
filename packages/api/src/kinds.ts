/**
 * The projectcalico.org/v3 kinds this project knows, with the facts every layer needs about each:
 * its plural (the etcd key segment), whether it lives in a namespace, and whether it is a
 * singleton named `default`.
 */
export const API_GROUP = 'projectcalico.org';
export const API_VERSION = 'projectcalico.org/v3';

export interface KindInfo {
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

export const KINDS = {
  BGPConfiguration: { kind: 'BGPConfiguration', plural: 'bgpconfigurations', namespaced: false },
  BGPFilter: { kind: 'BGPFilter', plural: 'bgpfilters', namespaced: false },
  BGPPeer: { kind: 'BGPPeer', plural: 'bgppeers', namespaced: false },
  CalicoNodeStatus: { kind: 'CalicoNodeStatus', plural: 'caliconodestatuses', namespaced: false },
  ClusterInformation: { kind: 'ClusterInformation', plural: 'clusterinformations', namespaced: false },
  FelixConfiguration: { kind: 'FelixConfiguration', plural: 'felixconfigurations', namespaced: false },
  GlobalNetworkPolicy: { kind: 'GlobalNetworkPolicy', plural: 'globalnetworkpolicies', namespaced: false },
  GlobalNetworkSet: { kind: 'GlobalNetworkSet', plural: 'globalnetworksets', namespaced: false },
  HostEndpoint: { kind: 'HostEndpoint', plural: 'hostendpoints', namespaced: false },
  IPPool: { kind: 'IPPool', plural: 'ippools', namespaced: false },
  IPReservation: { kind: 'IPReservation', plural: 'ipreservations', namespaced: false },
  KubeControllersConfiguration: {
    kind: 'KubeControllersConfiguration',
    plural: 'kubecontrollersconfigurations',
    namespaced: false,
  },
  NetworkPolicy: { kind: 'NetworkPolicy', plural: 'networkpolicies', namespaced: true },
  NetworkSet: { kind: 'NetworkSet', plural: 'networksets', namespaced: true },
  Node: { kind: 'Node', plural: 'nodes', namespaced: false },
  Profile: { kind: 'Profile', plural: 'profiles', namespaced: false },
  StagedGlobalNetworkPolicy: {
    kind: 'StagedGlobalNetworkPolicy',
    plural: 'stagedglobalnetworkpolicies',
    namespaced: false,
  },
  StagedKubernetesNetworkPolicy: {
    kind: 'StagedKubernetesNetworkPolicy',
    plural: 'stagedkubernetesnetworkpolicies',
    namespaced: true,
  },
  StagedNetworkPolicy: { kind: 'StagedNetworkPolicy', plural: 'stagednetworkpolicies', namespaced: true },
  Tier: { kind: 'Tier', plural: 'tiers', namespaced: false },
  WorkloadEndpoint: { kind: 'WorkloadEndpoint', plural: 'workloadendpoints', namespaced: true },
} as const satisfies Record<string, KindInfo>;

export type Kind = keyof typeof KINDS;
export const KIND_NAMES = Object.keys(KINDS) as Kind[];

/** Kinds whose policy objects carry the `projectcalico.org/metadata` name annotation in etcd. */
export const POLICY_KINDS: readonly Kind[] = [
  'NetworkPolicy',
  'GlobalNetworkPolicy',
  'StagedNetworkPolicy',
  'StagedGlobalNetworkPolicy',
];

export function isKind(value: string): value is Kind {
  return Object.hasOwn(KINDS, value);
}

/**
 * Resolve what a user typed (`ippool`, `ipPools`, `IPPool`, `gnp`…) to a kind, case-insensitively,
 * singular or plural, as calicoctl accepts them. Returns undefined when nothing matches.
 */
export function resolveKind(text: string): Kind | undefined {
  const t = text.toLowerCase();
  for (const info of Object.values(KINDS)) {
    if (info.kind.toLowerCase() === t || info.plural === t) return info.kind as Kind;
  }
  return KIND_ALIASES[t];
}

const KIND_ALIASES: Record<string, Kind> = {
  gnp: 'GlobalNetworkPolicy',
  np: 'NetworkPolicy',
  pol: 'NetworkPolicy',
  policy: 'NetworkPolicy',
  policies: 'NetworkPolicy',
  hep: 'HostEndpoint',
  heps: 'HostEndpoint',
  wep: 'WorkloadEndpoint',
  weps: 'WorkloadEndpoint',
  ns: 'NetworkSet',
  gns: 'GlobalNetworkSet',
  bgpconfig: 'BGPConfiguration',
  bgpconfigs: 'BGPConfiguration',
  felixconfig: 'FelixConfiguration',
  felixconfigs: 'FelixConfiguration',
  clusterinfo: 'ClusterInformation',
  kcc: 'KubeControllersConfiguration',
  ipr: 'IPReservation',
};
