/**
 * What calicoctl knows about each kind on the command line: the names a user may type for it
 * (upstream's list per kind in `calicoctl/calicoctl/resourcemgr/*.go`, case-insensitive), and
 * whether calicoctl may write it.
 */
// Types only: the command tree's help text comes from here, and building the tree loads no api code.
import type { Kind } from '@calico-ts/api';

const KIND_NAMES: Record<Kind, readonly string[]> = {
  BGPConfiguration: ['bgpconfiguration', 'bgpconfigurations', 'bgpconfig', 'bgpconfigs'],
  BGPFilter: ['bgpfilter', 'bgpfilters', 'bgpf', 'bgpfs', 'bf', 'bfs'],
  BGPPeer: ['bgppeer', 'bgppeers', 'bgpp', 'bgpps', 'bp', 'bps'],
  CalicoNodeStatus: ['caliconodestatus', 'caliconodestatuses', 'nodestatus', 'nodestatuses'],
  ClusterInformation: ['clusterinformation', 'clusterinformations', 'clusterinfo', 'clusterinfos'],
  FelixConfiguration: ['felixconfiguration', 'felixconfigurations', 'felixconfig', 'felixconfigs'],
  GlobalNetworkPolicy: ['globalnetworkpolicy', 'globalnetworkpolicies', 'gnp', 'gnps'],
  GlobalNetworkSet: ['globalnetworkset', 'globalnetworksets', 'gnetsets'],
  HostEndpoint: ['hostendpoint', 'hostendpoints', 'hep', 'heps'],
  IPPool: ['ippool', 'ippools', 'ipp', 'ipps', 'pool', 'pools'],
  IPReservation: ['ipreservation', 'ipreservations', 'reservation', 'reservations'],
  KubeControllersConfiguration: [
    'kubecontrollersconfiguration',
    'kubecontrollersconfigurations',
    'kubecontrollersconfig',
    'kubecontrollersconfigs',
  ],
  NetworkPolicy: ['networkpolicy', 'networkpolicies', 'policy', 'np', 'policies', 'pol', 'pols'],
  NetworkSet: ['networkset', 'networksets', 'netsets'],
  Node: ['node', 'nodes', 'no', 'nos'],
  Profile: ['profile', 'profiles', 'pro', 'pros'],
  StagedGlobalNetworkPolicy: ['stagedglobalnetworkpolicy', 'stagedglobalnetworkpolicies', 'sgnp', 'sgnps'],
  StagedKubernetesNetworkPolicy: [
    'stagedkubernetesnetworkpolicy',
    'stagedkubernetesnetworkpolicies',
    'stagedkubernetespolicy',
    'sknp',
    'stagedkubernetespolicies',
    'skpol',
    'skpols',
  ],
  StagedNetworkPolicy: [
    'stagednetworkpolicy',
    'stagednetworkpolicies',
    'stagedpolicy',
    'snp',
    'stagedpolicies',
    'spol',
    'spols',
  ],
  Tier: ['tier', 'tiers'],
  WorkloadEndpoint: ['workloadendpoint', 'workloadendpoints', 'wep', 'weps'],
};

const BY_NAME = new Map<string, Kind>();
for (const [kind, names] of Object.entries(KIND_NAMES) as [Kind, readonly string[]][]) {
  for (const n of names) BY_NAME.set(n, kind);
}

/** The kind a user typed (`ipPool`, `IPPools`, `gnp`…), or undefined if calicoctl has no such type. */
export function resolveCtlKind(text: string): Kind | undefined {
  return BY_NAME.get(text.toLowerCase());
}

/** Every name accepted for a kind (for shell completion). */
export function kindNames(): string[] {
  return [...BY_NAME.keys()].sort();
}

/** The display list in help text, as upstream words it (lower camel case). */
export function kindHelpList(): string {
  return (Object.keys(KIND_NAMES) as Kind[])
    .sort()
    .map((k) => `    * ${lowerFirst(k)}`)
    .join('\n');
}

function lowerFirst(kind: string): string {
  const m = /^[A-Z]+(?=[A-Z][a-z])|^[A-Z]/.exec(kind);
  return m ? m[0].toLowerCase() + kind.slice(m[0].length) : kind;
}

/** Kubernetes network policies mirrored into etcd carry this prefix; calicoctl may not write them. */
export const K8S_NETWORK_POLICY_PREFIX = 'knp.default.';
