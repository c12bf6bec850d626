/**
 * Deleting a Node the way upstream's client does (libcalico-go `clientv3` nodes.Delete), not just
 * its resource: what belongs to the node goes with it.
 *
 *   1. every WorkloadEndpoint of the node (name starts with the node's escaped name and `-`, and
 *      `spec.node` is the node), after its addresses are released;
 *   2. those addresses and the Node's IPv4 tunnel addresses (IPIP, VXLAN, WireGuard) released in
 *      IPAM, by address (handle records shrink and go with them);
 *   3. the node's block affinities released (`IpamClient.releaseHostAffinities`): blocks now empty
 *      are deleted, blocks still holding addresses stay without an owner (upstream's
 *      `RemoveIPAMHost`; its host key `/calico/ipam/v2/host/<node>` holds no value on etcd);
 *   4. BGPPeers with `spec.node` = the node, FelixConfiguration and BGPConfiguration
 *      `node.<node>`, HostEndpoints with `spec.node` = the node;
 *   5. the Node itself, last, so a failure on the way leaves it for the delete to be retried.
 *
 * Anything already gone is fine. A missing Node does not stop the clean-up (upstream: "carry on
 * and clean up as much as we can"); the Node's own delete then reports that it does not exist.
 * Unlike upstream, a given resourceVersion is checked before anything is cleaned up, so a
 * conflicting delete changes nothing.
 *
 * Why this module lives in ctl: the work spans resources (endpoints, peers, configuration) and IPAM,
 * the layer upstream's clientv3 is. `@calico-ts/datastore` sits below `@calico-ts/ipam` and cannot
 * use it, and `@calico-ts/ipam` should not delete BGPPeers or HostEndpoints; calicoctl is the only
 * caller. The IPAM work itself is `IpamClient`'s (the `NodeIpam` seam), not re-implemented here.
 * `planNodeCleanup` is pure; `deleteNode` does the reads, then the writes in order.
 */

import type { Kind } from '@calico-ts/api';
import { formatIP, parseCidrOrIP } from '@calico-ts/api/net';
import { type Datastore, isDatastoreError } from '@calico-ts/datastore';
import { CtlError } from '../errors.js';
import type { Obj } from '../output/columns.js';
import { describeError, identifier } from './operations.js';

/** The IPAM operations a node deletion needs (`IpamClient` has them). */
export interface NodeIpam {
  /** Release addresses; ones not assigned are not an error. */
  releaseIPs(ips: readonly string[]): Promise<unknown>;
  /** Release every block affinity of the host: empty blocks deleted, others left without owner. */
  releaseHostAffinities(host: string): Promise<unknown>;
}

export interface NamespacedName {
  namespace: string;
  name: string;
}

/** What deleting a node removes besides the Node (see `planNodeCleanup`). */
export interface NodeCleanupPlan {
  /** Addresses to release: the endpoints' and the Node's IPv4 tunnel addresses, in that order. */
  releaseIPs: string[];
  workloadEndpoints: NamespacedName[];
  bgpPeers: string[];
  /** `node.<name>`: the FelixConfiguration and BGPConfiguration of this node. */
  nodeConfigName: string;
  hostEndpoints: string[];
  /** Addresses that could not be parsed (upstream logs and skips them). */
  unparsable: string[];
}

/** What the plan is made from: the datastore's current objects. */
export interface NodeCleanupInput {
  /** The Node, or undefined when it is gone already. */
  node: Obj | undefined;
  workloadEndpoints: readonly Obj[];
  bgpPeers: readonly Obj[];
  hostEndpoints: readonly Obj[];
}

/** Every WorkloadEndpoint name of a node starts with this (`-` in the node name is doubled). */
export function workloadEndpointPrefix(node: string): string {
  return `${node.replaceAll('-', '--')}-`;
}

function obj(v: unknown): Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** The node's tunnel addresses upstream releases: IPv4 IPIP, IPv4 VXLAN, IPv4 WireGuard. */
export function tunnelAddresses(node: Obj | undefined): string[] {
  if (!node) return [];
  const spec = obj(node.spec);
  return [
    str(obj(spec.bgp).ipv4IPIPTunnelAddr),
    str(spec.ipv4VXLANTunnelAddr),
    str(obj(spec.wireguard).interfaceIPv4Address),
  ].filter((a) => a !== '');
}

/** Which objects belong to node `name`, and which addresses to release. Pure. */
export function planNodeCleanup(name: string, input: NodeCleanupInput): NodeCleanupPlan {
  const prefix = workloadEndpointPrefix(name);
  const onNode = (o: Obj) => str(obj(o.spec).node) === name;
  const weps = input.workloadEndpoints.filter(
    (w) => str(obj(w.metadata).name).startsWith(prefix) && onNode(w),
  );
  const releaseIPs: string[] = [];
  const unparsable: string[] = [];
  const addresses = [
    ...weps.flatMap((w) => {
      const nets = obj(w.spec).ipNetworks;
      return Array.isArray(nets) ? nets.map(str) : [];
    }),
    ...tunnelAddresses(input.node),
  ];
  for (const a of addresses) {
    const c = parseCidrOrIP(a);
    if (c) releaseIPs.push(formatIP({ family: c.family, value: c.address }));
    else unparsable.push(a);
  }
  return {
    releaseIPs,
    workloadEndpoints: weps.map((w) => ({
      namespace: str(obj(w.metadata).namespace),
      name: str(obj(w.metadata).name),
    })),
    bgpPeers: input.bgpPeers.filter(onNode).map((p) => str(obj(p.metadata).name)),
    nodeConfigName: `node.${name}`,
    hostEndpoints: input.hostEndpoints.filter(onNode).map((h) => str(obj(h.metadata).name)),
    unparsable,
  };
}

/** A failed step, worded so the user sees what failed and that the Node is still there. */
function stepFailed(
  node: string,
  step: string,
  e: unknown,
  kind?: Kind,
  name?: string,
  ns?: string,
): CtlError {
  const cause = kind
    ? describeError(e, kind, name ?? '', ns).message
    : e instanceof Error
      ? e.message
      : String(e);
  return new CtlError('failed', `${identifier('Node', node)} was not deleted: ${step} failed: ${cause}`, {
    cause: e,
  });
}

async function deleteIfPresent(
  ds: Datastore,
  node: string,
  kind: Kind,
  name: string,
  namespace?: string,
): Promise<void> {
  try {
    await ds.delete(kind, name, namespace ? { namespace } : {});
  } catch (e) {
    // Already gone, or a kind this backend does not store: nothing to clean up (upstream).
    if (isDatastoreError(e, 'not-found') || isDatastoreError(e, 'unsupported')) return;
    throw stepFailed(node, `deleting ${identifier(kind, name, namespace)}`, e, kind, name, namespace);
  }
}

async function listAll(ds: Datastore, node: string, kind: Kind): Promise<Obj[]> {
  try {
    return (await ds.list(kind)).items as unknown as Obj[];
  } catch (e) {
    throw stepFailed(node, `listing ${kind}s`, e, kind);
  }
}

/** How `deleteNode` deletes. */
export interface NodeDeletionOptions {
  /** Delete only if the Node is still at this revision (checked before any clean-up). */
  resourceVersion?: string;
  /** IPAM; without it (a datastore with no IPAM records) addresses and affinities are left alone. */
  ipam?: NodeIpam;
  /** Told about addresses that cannot be parsed and are skipped. */
  warn?: (message: string) => void;
}

/**
 * Delete Node `name` and what belongs to it (see the top of this file). Throws a `CtlError`
 * naming the failed step; the Node stays when any step before its own delete fails.
 */
export async function deleteNode(ds: Datastore, name: string, opts: NodeDeletionOptions = {}): Promise<Obj> {
  const rv = opts.resourceVersion;
  let node: Obj | undefined;
  try {
    node = (await ds.get('Node', name)) as unknown as Obj;
  } catch (e) {
    if (!isDatastoreError(e, 'not-found')) throw describeError(e, 'Node', name);
  }
  if (node && rv && str(obj(node.metadata).resourceVersion) !== rv) {
    throw new CtlError('conflict', `update conflict: ${identifier('Node', name)}`);
  }

  const [workloadEndpoints, bgpPeers, hostEndpoints] = [
    await listAll(ds, name, 'WorkloadEndpoint'),
    await listAll(ds, name, 'BGPPeer'),
    await listAll(ds, name, 'HostEndpoint'),
  ];
  const plan = planNodeCleanup(name, { node, workloadEndpoints, bgpPeers, hostEndpoints });
  for (const a of plan.unparsable) opts.warn?.(`Failed to parse CIDR: ${a}`);

  if (opts.ipam && plan.releaseIPs.length > 0) {
    try {
      await opts.ipam.releaseIPs(plan.releaseIPs);
    } catch (e) {
      throw stepFailed(name, `releasing the addresses ${plan.releaseIPs.join(', ')}`, e);
    }
  }
  for (const w of plan.workloadEndpoints) {
    await deleteIfPresent(ds, name, 'WorkloadEndpoint', w.name, w.namespace);
  }
  if (opts.ipam) {
    try {
      await opts.ipam.releaseHostAffinities(name);
    } catch (e) {
      throw stepFailed(name, 'releasing its IPAM block affinities', e);
    }
  }
  for (const p of plan.bgpPeers) await deleteIfPresent(ds, name, 'BGPPeer', p);
  await deleteIfPresent(ds, name, 'FelixConfiguration', plan.nodeConfigName);
  await deleteIfPresent(ds, name, 'BGPConfiguration', plan.nodeConfigName);
  for (const h of plan.hostEndpoints) await deleteIfPresent(ds, name, 'HostEndpoint', h);

  try {
    return (await ds.delete('Node', name, rv ? { resourceVersion: rv } : {})) as unknown as Obj;
  } catch (e) {
    throw describeError(e, 'Node', name);
  }
}
