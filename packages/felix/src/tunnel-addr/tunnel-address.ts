/**
 * The node's tunnel addresses, as calico-node's start-up gives them (upstream
 * `node/pkg/allocateip/allocateip.go`): one IPAM address per encapsulation from the pools that use
 * it, recorded in the Node resource, released when no pool needs it any more.
 *
 *   pools with vxlanMode (ipipMode) Always|CrossSubnet, enabled, IPv4, allowedUses ∋ Tunnel,
 *   nodeSelector matching the Node
 *     none ──► clear spec.ipv4VXLANTunnelAddr (spec.bgp.ipv4IPIPTunnelAddr), release the handle
 *     some ──► keep the address if IPAM still holds it for this node (type and node attributes)
 *              inside one of those pools; otherwise release the handle and assign a new one:
 *              handle `vxlan-tunnel-addr-<node>` (`ipip-tunnel-addr-<node>`), attributes
 *              {node, type: vxlanTunnelAddress (ipipTunnelAddress)}, use Tunnel
 *   Node updated (compare-and-swap, re-read on conflict) only when the address changed.
 *   IPv6 VXLAN (`vxlan-v6`): the same from the IPv6 pools, spec.ipv6VXLANTunnelAddr, handle
 *   `vxlan-v6-tunnel-addr-<node>`, type vxlanV6TunnelAddress.
 *
 * The VXLAN MAC is not written: as upstream on Linux, Felix derives it from the node name when
 * spec.vxlanTunnelMACAddr is empty (see `vtepMacFor`).
 *
 * API: `ensureVxlanTunnelAddress(ds, ipam, node)` / `ensureIpipTunnelAddress(…)`, idempotent;
 * resolve with what was done. Errors are `TunnelAddressError`s. Thread-safety: one caller per node
 * at a time (calico-node's start-up and its tunnel-address loop).
 */

import { type IPPool, type Node, selectorMatches } from '@calico-ts/api';
import { cidrContains, parseCidr } from '@calico-ts/api/net';
import { type Datastore, isDatastoreError } from '@calico-ts/datastore';
import { type IpamClient, isIpamError } from '@calico-ts/ipam';

export const TUNNEL_ADDRESS_ERROR_CODES = [
  'node-not-found', // the Node resource does not exist (calico-node registers it first)
  'datastore', // reading or writing the Node or pools failed (see `cause`)
  'ipam', // IPAM could not assign or release (see `cause`; e.g. pool exhausted)
] as const;
export type TunnelAddressErrorCode = (typeof TUNNEL_ADDRESS_ERROR_CODES)[number];

export class TunnelAddressError extends Error {
  readonly code: TunnelAddressErrorCode;
  constructor(code: TunnelAddressErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TunnelAddressError';
    this.code = code;
  }
}

export type TunnelKind = 'vxlan' | 'ipip' | 'vxlan-v6';

/** The IPAM operations used here (an `IpamClient`). */
export type TunnelIpam = Pick<
  IpamClient,
  'autoAssign' | 'assignIP' | 'releaseIPs' | 'releaseByHandle' | 'getAssignmentAttributes'
>;

export interface TunnelAddressResult {
  /** The node's tunnel address now, if any. */
  readonly address?: string;
  /** `kept`: unchanged; `assigned`: a new one (`previous` was replaced, if set); `removed`; `none`. */
  readonly action: 'kept' | 'assigned' | 'removed' | 'none';
  readonly previous?: string;
}

const TYPE_ATTR: Record<TunnelKind, string> = {
  vxlan: 'vxlanTunnelAddress',
  ipip: 'ipipTunnelAddress',
  'vxlan-v6': 'vxlanV6TunnelAddress',
};

const familyOf = (kind: TunnelKind): 4 | 6 => (kind === 'vxlan-v6' ? 6 : 4);

export function tunnelHandle(kind: TunnelKind, nodeName: string): string {
  return `${kind}-tunnel-addr-${nodeName}`;
}

/** The pools (IPv4; IPv6 for `vxlan-v6`) a tunnel address of this kind may come from for this node (pure). */
export function tunnelPoolCidrs(kind: TunnelKind, node: Node, pools: readonly IPPool[]): string[] {
  const labels = node.metadata.labels ?? {};
  const out: string[] = [];
  for (const p of [...pools].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
    const s = p.spec;
    const cidr = parseCidr(s.cidr);
    if (cidr?.family !== familyOf(kind) || s.disabled === true) continue;
    if (s.allowedUses && s.allowedUses.length > 0 && !s.allowedUses.includes('Tunnel')) continue;
    const mode = kind === 'ipip' ? s.ipipMode : s.vxlanMode;
    if (mode !== 'Always' && mode !== 'CrossSubnet') continue;
    let selected = true;
    if (s.nodeSelector !== undefined && s.nodeSelector.trim() !== '') {
      try {
        selected = selectorMatches(s.nodeSelector, labels);
      } catch {
        selected = false; // an invalid selector selects nothing, as upstream skips such a pool
      }
    }
    if (selected) out.push(s.cidr);
  }
  return out;
}

function addressOf(kind: TunnelKind, node: Node): string | undefined {
  const a =
    kind === 'vxlan'
      ? node.spec.ipv4VXLANTunnelAddr
      : kind === 'vxlan-v6'
        ? node.spec.ipv6VXLANTunnelAddr
        : node.spec.bgp?.ipv4IPIPTunnelAddr;
  return a === '' ? undefined : a;
}

function withAddress(kind: TunnelKind, node: Node, addr: string | undefined): Node {
  const spec = { ...node.spec };
  if (kind === 'vxlan') {
    if (addr === undefined) delete spec.ipv4VXLANTunnelAddr;
    else spec.ipv4VXLANTunnelAddr = addr;
  } else if (kind === 'vxlan-v6') {
    if (addr === undefined) delete spec.ipv6VXLANTunnelAddr;
    else spec.ipv6VXLANTunnelAddr = addr;
  } else {
    const bgp = { ...(spec.bgp ?? {}) };
    if (addr === undefined) delete bgp.ipv4IPIPTunnelAddr;
    else bgp.ipv4IPIPTunnelAddr = addr;
    // Upstream drops an empty BGP spec rather than storing `bgp: {}`.
    if (Object.keys(bgp).length === 0) delete spec.bgp;
    else spec.bgp = bgp;
  }
  return { ...node, spec };
}

function dsError(what: string, e: unknown): TunnelAddressError {
  if (e instanceof TunnelAddressError) return e;
  return new TunnelAddressError('datastore', `${what}: ${e instanceof Error ? e.message : String(e)}`, {
    cause: e,
  });
}

function ipamError(what: string, e: unknown): TunnelAddressError {
  return new TunnelAddressError('ipam', `${what}: ${e instanceof Error ? e.message : String(e)}`, {
    cause: e,
  });
}

async function getNode(ds: Datastore, name: string): Promise<Node> {
  try {
    return (await ds.get('Node', name)) as Node;
  } catch (e) {
    if (isDatastoreError(e, 'not-found')) {
      throw new TunnelAddressError('node-not-found', `Calico Node "${name}" does not exist`, { cause: e });
    }
    throw dsError(`reading Node ${name}`, e);
  }
}

/** Writes the node's tunnel address, re-reading the Node when someone else changed it meanwhile. */
async function storeAddress(
  ds: Datastore,
  kind: TunnelKind,
  start: Node,
  addr: string | undefined,
): Promise<void> {
  let node = start;
  for (let attempt = 0; ; attempt++) {
    if (addressOf(kind, node) === addr) return;
    try {
      await ds.update(withAddress(kind, node, addr) as Node & { kind: 'Node' });
      return;
    } catch (e) {
      if (!isDatastoreError(e, 'conflict') || attempt >= 10)
        throw dsError(`updating Node ${node.metadata.name}`, e);
      node = await getNode(ds, node.metadata.name);
    }
  }
}

async function releaseHandle(ipam: TunnelIpam, handle: string): Promise<void> {
  try {
    await ipam.releaseByHandle(handle);
  } catch (e) {
    throw ipamError(`releasing ${handle}`, e);
  }
}

/** Removes the tunnel address: from the Node, and from IPAM when it is still ours. */
async function removeAddress(
  ds: Datastore,
  ipam: TunnelIpam,
  kind: TunnelKind,
  node: Node,
): Promise<TunnelAddressResult> {
  const name = node.metadata.name;
  const handle = tunnelHandle(kind, name);
  const addr = addressOf(kind, node);
  await releaseHandle(ipam, handle);
  if (addr !== undefined) {
    // An address from before tunnel handles existed (no handle, no attributes), or one whose handle
    // record was lost, is still released; one that now belongs to someone else is left alone.
    try {
      const held = await ipam.getAssignmentAttributes(addr);
      const legacy = held.handleId === null && Object.keys(held.attrs).length === 0;
      if (legacy || held.handleId === handle) {
        await ipam.releaseIPs([legacy ? addr : { ip: addr, handleId: handle }]);
      }
    } catch (e) {
      if (!isIpamError(e, 'not-found') && !isIpamError(e, 'invalid')) throw ipamError(`releasing ${addr}`, e);
    }
  }
  await storeAddress(ds, kind, node, undefined);
  return addr === undefined ? { action: 'none' } : { action: 'removed', previous: addr };
}

async function assignAddress(
  ipam: TunnelIpam,
  kind: TunnelKind,
  name: string,
  cidrs: string[],
): Promise<string> {
  try {
    const six = familyOf(kind) === 6;
    const r = await ipam.autoAssign({
      num4: six ? 0 : 1,
      num6: six ? 1 : 0,
      handleId: tunnelHandle(kind, name),
      attrs: { node: name, type: TYPE_ATTR[kind] },
      hostname: name,
      ...(six ? { ipv6Pools: cidrs } : { ipv4Pools: cidrs }),
      use: 'Tunnel',
    });
    const ip = (six ? r.ipv6 : r.ipv4)[0]?.address;
    if (ip === undefined) throw new Error('IPAM returned no address');
    return ip;
  } catch (e) {
    throw ipamError(`assigning a ${kind} tunnel address to ${name}`, e);
  }
}

/** What `ensureTunnelAddress` may read from the caller's caches instead of the datastore. */
export interface TunnelAddressReads {
  /**
   * The IP pools as a cache holds them (a long-running caller's informer), or undefined when the
   * cache cannot answer now: the datastore is listed then.
   */
  readonly pools?: () => readonly IPPool[] | undefined;
}

export async function ensureTunnelAddress(
  ds: Datastore,
  ipam: TunnelIpam,
  nodeName: string,
  kind: TunnelKind,
  reads: TunnelAddressReads = {},
): Promise<TunnelAddressResult> {
  const node = await getNode(ds, nodeName);
  let pools: readonly IPPool[];
  try {
    pools = reads.pools?.() ?? ((await ds.list('IPPool')).items as IPPool[]);
  } catch (e) {
    throw dsError('listing IP pools', e);
  }
  const cidrs = tunnelPoolCidrs(kind, node, pools);
  if (cidrs.length === 0) return removeAddress(ds, ipam, kind, node);

  const handle = tunnelHandle(kind, nodeName);
  const current = addressOf(kind, node);
  let release = current === undefined;
  if (current !== undefined) {
    try {
      const held = await ipam.getAssignmentAttributes(current);
      if (held.attrs.type === TYPE_ATTR[kind] && held.attrs.node === nodeName) {
        if (cidrs.some((c) => cidrContains(c, current))) return { address: current, action: 'kept' };
        release = true; // ours, but no longer in a pool for this tunnel
      } else if (held.handleId === null && Object.keys(held.attrs).length === 0) {
        // From before tunnel handles: take it over with a handle and attributes if we still can.
        try {
          await ipam.releaseIPs([current]);
          await ipam.assignIP(current, {
            handleId: handle,
            attrs: { node: nodeName, type: TYPE_ATTR[kind] },
            hostname: nodeName,
          });
          return { address: current, action: 'kept' };
        } catch (e) {
          if (!isIpamError(e, 'already-assigned')) throw ipamError(`re-recording ${current}`, e);
        }
      }
      // Otherwise someone else holds it: leave it to them and assign a new one.
    } catch (e) {
      if (e instanceof TunnelAddressError) throw e;
      if (!isIpamError(e, 'not-found') && !isIpamError(e, 'invalid')) {
        throw ipamError(`reading the assignment of ${current}`, e);
      }
      release = true; // not assigned any more
    }
  }
  if (release) await releaseHandle(ipam, handle);
  const address = await assignAddress(ipam, kind, nodeName, cidrs);
  try {
    await storeAddress(ds, kind, node, address);
  } catch (e) {
    await ipam.releaseByHandle(handle).catch(() => undefined);
    throw e;
  }
  return { address, action: 'assigned', ...(current !== undefined ? { previous: current } : {}) };
}

/**
 * Gives the node a VXLAN tunnel address from its VXLAN pools, or takes it away when there are none.
 * Idempotent: a node whose address is still valid is left as it is.
 */
export function ensureVxlanTunnelAddress(
  ds: Datastore,
  ipam: TunnelIpam,
  nodeName: string,
  reads: TunnelAddressReads = {},
): Promise<TunnelAddressResult> {
  return ensureTunnelAddress(ds, ipam, nodeName, 'vxlan', reads);
}

/** The same for the IPv6 VXLAN tunnel address (spec.ipv6VXLANTunnelAddr), from the IPv6 VXLAN pools. */
export function ensureVxlanV6TunnelAddress(
  ds: Datastore,
  ipam: TunnelIpam,
  nodeName: string,
  reads: TunnelAddressReads = {},
): Promise<TunnelAddressResult> {
  return ensureTunnelAddress(ds, ipam, nodeName, 'vxlan-v6', reads);
}

/** The same for the IPIP tunnel address (spec.bgp.ipv4IPIPTunnelAddr). */
export function ensureIpipTunnelAddress(
  ds: Datastore,
  ipam: TunnelIpam,
  nodeName: string,
  reads: TunnelAddressReads = {},
): Promise<TunnelAddressResult> {
  return ensureTunnelAddress(ds, ipam, nodeName, 'ipip', reads);
}
