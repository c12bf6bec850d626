/**
 * The shape of one family's BIRD configuration as facts, before it is text: `deriveBirdModel`
 * (../bgp-model.ts) fills it from a `BgpInput`, `bird-config-renderer.ts` writes it out. Types only.
 */
import type { BirdFilterFunction } from '../bgp-filters.js';
import type { IPFamily } from '../bgp-input.js';

export type BirdPeerKind = 'mesh' | 'global' | 'node';

/** One `protocol bgp` session. */
export interface BirdPeer {
  /** `Mesh_`/`Global_`/`Node_` + address with `.`/`:` → `_` (+ `_port_<n>`). */
  name: string;
  kind: BirdPeerKind;
  ip: string;
  port?: number;
  asNumber: number;
  /** `local as` for this session when the BGPPeer sets `localASNumber`. */
  localAsNumber?: number;
  /** Local address for the TCP connection (this node's address), when the peer uses it. */
  sourceAddress?: string;
  passive: boolean;
  /** Global and node peers: GTSM hop count (0 = off). Mesh sessions have no TTL setting. */
  ttlSecurity?: number;
  gracefulRestartTime?: number;
  keepaliveTime?: number;
  password?: string;
  /**
   * The password secret this session needs and cannot have (`<name>/<key>`, and why): the session
   * is kept down (`disabled on`) rather than connecting without it.
   */
  passwordMissing?: string;
  /** This node is a route reflector and the peer its client: the cluster id to announce. */
  rrClusterId?: string;
  nextHop?: 'self' | 'keep';
  allowLocalAs?: number;
  /** Argument of `calico_export_to_bgp_peers`: peer AS equals our (effective) AS. */
  internalPeer: boolean;
  /** Mesh peers: the node it is; global/node peers: the BGPPeer it came from. */
  origin: string;
  /** BGPFilter functions called first in the session's import and export filters, in order. */
  importFilters: string[];
  exportFilters: string[];
  /** BGPFilters the peer names that do not exist: the session then imports and exports nothing. */
  missingFilters: string[];
}

export type PoolKernelRule =
  | { kind: 'reject'; reason: 'vxlan' | 'felix' }
  | { kind: 'ipip'; mode: 'Always' | 'CrossSubnet' }
  | { kind: 'accept' };

export interface PoolRule {
  cidr: string;
  exportDisabled: boolean;
  kernel: PoolKernelRule;
}

export interface CommunityRule {
  cidr: string;
  /** `aa:nn` standard or `aa:nn:mm` large communities, sorted, no duplicates. */
  communities: string[];
}

/** Why no mesh sessions, or `enabled`. */
export type MeshState = 'enabled' | 'disabled' | 'route-reflector';

export interface BirdModel {
  family: IPFamily;
  nodeName: string;
  /** This node's address of the family; absent = the family is disabled on this node. */
  nodeIP?: string;
  /** The node's subnet (from `ipv4Address`/`ipv6Address`), for IPIP CrossSubnet. */
  nodeNetwork?: string;
  routerId?: string;
  asNumber: number;
  debug: 'all' | 'states' | 'none';
  listenPort?: number;
  /** BGPConfiguration `bindMode: NodeIP`: listen on the node address only. */
  bindToNodeIP: boolean;
  /** The kernel metric of the routes BIRD programs (the family's `*NormalRoutePriority`). */
  routePriority: number;
  /** Interface patterns for `protocol direct`, with `-` for exclusions, in order. */
  directInterfaces: string[];
  communities: CommunityRule[];
  /** Why no mesh sessions, or `enabled`. */
  mesh: MeshState;
  /** This node's route reflector cluster id, if it is one. */
  rrClusterId?: string;
  peers: BirdPeer[];
  blocks: { cidr: string; state: string }[];
  /** CIDRs originated as blackhole static routes and exported (service cluster IPs). */
  staticRoutes: string[];
  /** Host routes to peers that are reachable only through a given gateway (`reachableBy`). */
  peerRoutes: { ip: string; via: string }[];
  /** CIDRs never programmed into the kernel (service ranges: Felix/kube-proxy own them). */
  rejectCidrs: string[];
  pools: PoolRule[];
  /** The BGPFilters' functions for this family. */
  filterFunctions: BirdFilterFunction[];
  /** Things in the input that were skipped, one sentence each, for the caller to log. */
  warnings: string[];
}
