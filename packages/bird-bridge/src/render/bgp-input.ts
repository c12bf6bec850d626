/**
 * What the renderer is given: one consistent snapshot of the Calico model as seen by one node.
 * Plain data, no I/O; the bridge (src/bridge.ts) assembles it from the datastore.
 */
import type { BGPConfiguration, BGPFilter, BGPPeer, IPPool, Node } from '@calico-ts/api';

/** A block affine to this node; a bare CIDR string means a `confirmed` affinity. */
export interface AffineBlock {
  cidr: string;
  /** Affinity state as stored: `confirmed`, `pendingDeletion` (`pending` ones are left out by callers). */
  state?: string;
}

export interface BgpInput {
  /** This node's name (upstream `NODENAME`). */
  nodeName: string;
  /** Every Node resource (the mesh, peer selectors and reverse peerings need them all). */
  nodes: readonly Node[];
  /** BGPConfiguration `default` and `node.<name>` objects; others are ignored. */
  bgpConfigs: readonly BGPConfiguration[];
  peers: readonly BGPPeer[];
  /** Every BGPFilter (the peers' `filters` name them). */
  filters?: readonly BGPFilter[];
  pools: readonly IPPool[];
  /** Blocks affine to this node (IPAM affinities); `pending` affinities must be left out. */
  affineBlocks: readonly (string | AffineBlock)[];
  /**
   * Overrides the BIRD debug level taken from BGPConfiguration `logSeverityScreen`
   * (`debug` → `debug all`, `none` → nothing, anything else → `debug { states }`).
   */
  logLevel?: string;
  /** Upstream `CALICO_ROUTER_ID`: an explicit IPv4 router id, or `hash` (derived from the node name). */
  routerId?: string;
  /**
   * Secret values for `password.secretKeyRef` of BGPPeers and `nodeMeshPassword`, keyed
   * `<secret name>/<key>`. A reference with no value here keeps the sessions that need it down
   * (upstream renders them without a password when a secret cannot be read).
   */
  secrets?: Readonly<Record<string, string>>;
}

export type IPFamily = 4 | 6;
