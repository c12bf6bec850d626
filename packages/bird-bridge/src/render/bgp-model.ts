/**
 * From a `BgpInput` snapshot to the facts one BIRD configuration needs, for one address family:
 * which sessions exist and how each is set up, which routes this node originates, and how each
 * IP pool's routes are exported and programmed. Pure; `bird-config-renderer.ts` turns it into text.
 *
 *   nodes ──► this node (IP, AS, RR cluster id) ─┐
 *   bgpConfigs (default, node.<name>) ───────────┼─► mesh peers ──┐
 *   peers ──► global pass ─► node pass ─► reverse pass ───────────┼─► BirdModel.peers (by name)
 *   pools, affineBlocks, service CIDRs ─────────────► pool rules, static routes, reject CIDRs
 *
 * Peering rules follow upstream confd (`client.go` updatePeersV1, `bgp_processor.go`):
 * - Global peers: BGPPeers with neither `node` nor `nodeSelector`; the first one for an IP:port wins.
 * - Node peers: BGPPeers whose `node`/`nodeSelector` picks this node, unless a global peering to the
 *   same IP:port exists; then reverse peerings — when this node is the one a BGPPeer's
 *   `peerIP`(+AS)/`peerSelector` designates, it peers back with the nodes on the other side.
 * - `peerSelector` peers take each matching node's IP, AS (or the global AS), listen port and RR
 *   cluster id; `peerIP` peers take the BGPPeer's `asNumber`.
 * - Mesh: only with `nodeToNodeMeshEnabled` (default true) and no RR cluster id on this node; every
 *   other node with an address of the family and no RR cluster id; `passive on` toward a peer whose
 *   address text compares greater than ours (a byte-wise string comparison, as upstream).
 * - A route reflector (this node has a cluster id) makes iBGP peers without that id its clients.
 *
 * BGPFilters (bgp-filters.ts): each BGPPeer's `filters` are called, in order, first in its
 * session's import and export filters; a peer naming a BGPFilter that does not exist imports and
 * exports nothing until it does (fail closed).
 *
 * Kernel route priority: the routes BIRD programs carry the default BGPConfiguration's
 * `ipv4NormalRoutePriority`/`ipv6NormalRoutePriority` as their metric (default 1024). Upstream
 * also exports a more specific route of a local block whose kernel metric is below that (a
 * workload in live migration, which its Felix programs at an elevated priority); here workload
 * routes are programmed at metric 0, so that rule would export every pod's /32, and it is left
 * out until Felix programs route priorities.
 *
 * Not rendered (reported in `warnings` where the input asks for it): `localWorkloadSelector` peers.
 */
import { createHash } from 'node:crypto';
import { type BGPConfiguration, type BGPPeer, type IPPool, type Node, parseSelector } from '@calico-ts/api';
import { parsePeerIP } from '@calico-ts/api/internal';
import { formatCidr, parseCidr, parseCidrOrIP, parseIP } from '@calico-ts/api/net';
import { type BirdFilterFunction, deriveFilterFunctions } from './bgp-filters.js';
import type { AffineBlock, BgpInput, IPFamily } from './bgp-input.js';
import { roundedSeconds } from './go-duration.js';

export const DEFAULT_AS_NUMBER = 64512;

/** Upstream's default kernel route metric for the routes BIRD programs (`*NormalRoutePriority`). */
export const DEFAULT_ROUTE_PRIORITY = 1024;

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
  mesh: 'enabled' | 'disabled' | 'route-reflector';
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

interface NodeFacts {
  name: string;
  labels: Record<string, string>;
  ip?: string;
  network?: string;
  asNumber?: number;
  rrClusterId?: string;
}

/** A peering before it becomes a session: upstream's v1 `bgpPeer` value. */
interface Peering {
  ip: string;
  port?: number;
  asNumber: number;
  rrClusterId?: string;
  calicoNode: boolean;
  source: BGPPeer;
}

/** `64512`, `"64512"` or the dotted `"high.low"` form, as one 32-bit number. */
export function asNumberValue(v: number | string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'number') return v;
  const m = /^(\d+)(?:\.(\d+))?$/.exec(v);
  if (!m) return undefined;
  return m[2] === undefined ? Number(m[1]) : Number(m[1]) * 65536 + Number(m[2]);
}

/** Upstream's `hashToIPv4`: the first four bytes of SHA-256(node name), first octet kept below 224. */
export function hashRouterId(nodeName: string): string {
  const b = createHash('sha256').update(nodeName).digest();
  const first = b[0]! > 223 ? b[0]! - 32 : b[0]!;
  return `${first}.${b[1]}.${b[2]}.${b[3]}`;
}

/** Peer protocol names: family separators become `_`, and a port is appended. */
export function peerName(prefix: 'Mesh' | 'Global' | 'Node', ip: string, port?: number): string {
  const base = `${prefix}_${ip.replace(/[.:]/g, '_')}`;
  return port ? `${base}_port_${port}` : base;
}

function nodeFacts(n: Node, family: IPFamily): NodeFacts {
  const bgp = n.spec?.bgp;
  const addr = family === 4 ? bgp?.ipv4Address : bgp?.ipv6Address;
  const c = addr ? parseCidrOrIP(addr) : undefined;
  const ok = c !== undefined && c.family === family;
  return {
    name: n.metadata.name,
    labels: n.metadata.labels ?? {},
    ip: ok ? addr!.split('/')[0] : undefined,
    network: ok ? formatCidr(c) : undefined,
    asNumber: asNumberValue(bgp?.asNumber),
    rrClusterId: bgp?.routeReflectorClusterID || undefined,
  };
}

function logDebug(level: string | undefined): BirdModel['debug'] {
  switch ((level ?? 'info').toLowerCase()) {
    case 'debug':
      return 'all';
    case 'info':
      return 'states';
    default:
      return 'none';
  }
}

function familyOf(text: string): IPFamily | undefined {
  return parseCidrOrIP(text)?.family;
}

/** Derive the model of one family's BIRD configuration for `input.nodeName`. */
export function deriveBirdModel(input: BgpInput, family: IPFamily): BirdModel {
  const warnings: string[] = [];
  const filterFunctions = deriveFilterFunctions(input.filters ?? [], family, warnings);
  const filterNames = new Set((input.filters ?? []).map((f) => f.metadata.name));
  const byName = new Map<string, BGPConfiguration>();
  for (const c of input.bgpConfigs) byName.set(c.metadata.name, c);
  const global = byName.get('default')?.spec ?? {};
  const mine = byName.get(`node.${input.nodeName}`)?.spec ?? {};
  const nodeSpecificPort = (name: string) => byName.get(`node.${name}`)?.spec.listenPort;
  const globalAs = asNumberValue(global.asNumber) ?? DEFAULT_AS_NUMBER;

  const nodes = [...input.nodes]
    .sort((a, b) => cmp(a.metadata.name, b.metadata.name))
    .map((n) => nodeFacts(n, family));
  const me = nodes.find((n) => n.name === input.nodeName);
  const myIP = me?.ip;
  const myAs = me?.asNumber ?? globalAs;
  const myCluster = me?.rrClusterId;
  const listenPortOf = (name: string) => nodeSpecificPort(name) ?? global.listenPort;

  const selectorCache = new Map<string, ((l: Record<string, string>) => boolean) | undefined>();
  const matching = (text: string, owner: string): NodeFacts[] => {
    if (!selectorCache.has(text)) {
      try {
        const s = parseSelector(text);
        selectorCache.set(text, (l) => s.matches(l));
      } catch (e) {
        warnings.push(`BGPPeer ${owner}: selector ${JSON.stringify(text)} skipped: ${(e as Error).message}`);
        selectorCache.set(text, undefined);
      }
    }
    const m = selectorCache.get(text);
    return m ? nodes.filter((n) => m(n.labels)) : [];
  };
  /**
   * The password a session references: its value, or why it cannot be had. A session whose
   * password is missing is kept down, never brought up without one (upstream renders it without).
   */
  const secret = (
    ref: { name?: string; key?: string } | undefined,
    owner: string,
  ): Pick<BirdPeer, 'password' | 'passwordMissing'> => {
    if (!ref?.name || !ref.key) return {};
    const v = input.secrets?.[`${ref.name}/${ref.key}`];
    let why: string | undefined;
    if (v === undefined) why = 'not available';
    // BIRD strings have no escapes: a double quote or line break cannot be written.
    else if (/["\n\r\0]/.test(v)) why = 'holds a quote or line break';
    if (why === undefined) return { password: v };
    const missing = `secret ${ref.name}/${ref.key} ${why}`;
    warnings.push(`${owner}: password ${missing}; its BGP sessions are kept down until it is usable`);
    return { passwordMissing: missing };
  };

  // ---- peerings (global pass, node pass, reverse pass) --------------------------------------
  const peerResources = [...input.peers].sort((a, b) => cmp(a.metadata.name, b.metadata.name));
  const nodeAsPeering = (n: NodeFacts, source: BGPPeer): Peering | undefined =>
    n.ip === undefined
      ? undefined
      : {
          ip: n.ip,
          port: listenPortOf(n.name),
          asNumber: n.asNumber ?? globalAs,
          rrClusterId: n.rrClusterId,
          calicoNode: false,
          source,
        };
  const allNodeIPs = new Set(
    input.nodes.flatMap((n) => [nodeFacts(n, 4).ip, nodeFacts(n, 6).ip]).filter((x) => x !== undefined),
  );
  const nodesWithIPPortAndAS = (ip: string, asn: number | undefined, port: number | undefined) => {
    const want = asn ?? globalAs;
    return input.nodes
      .map((n) => ({ v4: nodeFacts(n, 4), v6: nodeFacts(n, 6) }))
      .filter(({ v4, v6 }) => {
        if (v4.ip !== ip && v6.ip !== ip) return false;
        if ((v4.asNumber ?? globalAs) !== want) return false;
        if (port) {
          const np = nodeSpecificPort(v4.name);
          if (np !== undefined && np !== port) return false;
          if (np === undefined && global.listenPort !== undefined && global.listenPort !== port) return false;
        }
        return true;
      })
      .map(({ v4 }) => v4.name);
  };
  const forwardPeerings = (p: BGPPeer): Peering[] => {
    if (p.spec.peerSelector) {
      return matching(p.spec.peerSelector, p.metadata.name)
        .map((n) => nodeAsPeering(n, p))
        .filter((x) => x !== undefined);
    }
    if (!p.spec.peerIP) {
      if (!p.spec.localWorkloadSelector) warnings.push(`BGPPeer ${p.metadata.name}: no peerIP; skipped`);
      else
        warnings.push(`BGPPeer ${p.metadata.name}: localWorkloadSelector peers are not supported; skipped`);
      return [];
    }
    const parsed = parsePeerIP(p.spec.peerIP);
    const ip = parsed ? parseIP(parsed.ip) : undefined;
    if (!parsed || !ip) {
      warnings.push(
        `BGPPeer ${p.metadata.name}: peerIP ${JSON.stringify(p.spec.peerIP)} is malformed; skipped`,
      );
      return [];
    }
    if (ip.family !== family) return [];
    const asn = asNumberValue(p.spec.asNumber) ?? 0;
    let port = parsed.port;
    if (!port) {
      const owners = nodesWithIPPortAndAS(parsed.ip, asNumberValue(p.spec.asNumber) || undefined, undefined);
      if (owners.length > 0) port = nodeSpecificPort(owners[0]!) ?? global.listenPort;
    }
    return [{ ip: parsed.ip, port, asNumber: asn, calicoNode: allNodeIPs.has(parsed.ip), source: p }];
  };
  const key = (x: Peering) => `${x.ip}|${x.port ?? 0}`;
  const globalPeerings = new Map<string, Peering>();
  const nodePeerings = new Map<string, Peering>();
  const emitNode = (x: Peering) => {
    if (!globalPeerings.has(key(x)) && !nodePeerings.has(key(x))) nodePeerings.set(key(x), x);
  };
  const isGlobal = (p: BGPPeer) => !p.spec.node && !p.spec.nodeSelector;
  const localNodes = (p: BGPPeer): string[] =>
    p.spec.nodeSelector
      ? matching(p.spec.nodeSelector, p.metadata.name).map((n) => n.name)
      : p.spec.node
        ? [p.spec.node]
        : [];
  for (const p of peerResources) {
    if (!isGlobal(p)) continue;
    for (const x of forwardPeerings(p)) if (!globalPeerings.has(key(x))) globalPeerings.set(key(x), x);
  }
  for (const p of peerResources) {
    if (isGlobal(p) || !localNodes(p).includes(input.nodeName)) continue;
    for (const x of forwardPeerings(p)) emitNode(x);
  }
  for (const p of peerResources) {
    // This node is on the "peer" side of the BGPPeer: peer back with its "node" side
    // (`reversePeering: Manual` asks for no automatic reverse sessions).
    if (p.spec.reversePeering === 'Manual') continue;
    let designated: string[];
    let reverseFamilies: IPFamily[];
    if (p.spec.peerSelector) {
      designated = matching(p.spec.peerSelector, p.metadata.name).map((n) => n.name);
      reverseFamilies = [4, 6];
    } else {
      const parsed = p.spec.peerIP ? parsePeerIP(p.spec.peerIP) : undefined;
      if (!parsed) continue;
      designated = nodesWithIPPortAndAS(parsed.ip, asNumberValue(p.spec.asNumber) || undefined, parsed.port);
      reverseFamilies = [familyOf(parsed.ip) ?? 4];
    }
    if (!designated.includes(input.nodeName) || !reverseFamilies.includes(family)) continue;
    const others = isGlobal(p) ? nodes : nodes.filter((n) => localNodes(p).includes(n.name));
    for (const n of others) {
      const x = nodeAsPeering(n, p);
      if (x) emitNode(x);
    }
  }

  // ---- sessions ------------------------------------------------------------------------------
  const peers: BirdPeer[] = [];
  const meshEnabled = global.nodeToNodeMeshEnabled ?? true;
  const mesh: BirdModel['mesh'] = myCluster ? 'route-reflector' : meshEnabled ? 'enabled' : 'disabled';
  if (myIP !== undefined && mesh === 'enabled') {
    const password = secret(global.nodeMeshPassword?.secretKeyRef, 'BGPConfiguration default');
    const restart = roundedSeconds(global.nodeMeshMaxRestartTime);
    for (const n of nodes) {
      if (n.ip === undefined || n.ip === myIP || n.rrClusterId) continue;
      const port = listenPortOf(n.name);
      peers.push({
        name: peerName('Mesh', n.ip, undefined),
        kind: 'mesh',
        ip: n.ip,
        port,
        asNumber: n.asNumber ?? globalAs,
        sourceAddress: myIP,
        passive: n.ip > myIP,
        gracefulRestartTime: restart,
        ...password,
        internalPeer: true,
        origin: n.name,
        importFilters: [],
        exportFilters: [],
        missingFilters: [],
      });
    }
  }
  const session = (x: Peering, kind: 'global' | 'node'): BirdPeer | undefined => {
    if (myIP !== undefined && x.ip === myIP) return undefined;
    const s = x.source.spec;
    const owner = `BGPPeer ${x.source.metadata.name}`;
    const named = s.filters ?? [];
    const calls = (direction: 'import' | 'export') =>
      named.flatMap((f) => {
        const fn = filterFunctions.find((x) => x.filter === f && x.direction === direction);
        return fn ? [fn.name] : [];
      });
    const missingFilters = named.filter((f) => !filterNames.has(f));
    if (missingFilters.length > 0) {
      warnings.push(
        `${owner}: BGPFilter ${missingFilters.join(', ')} does not exist; the session imports and exports nothing until it does`,
      );
    }
    const localAs = asNumberValue(s.localASNumber) || undefined;
    const effectiveAs = localAs ?? myAs;
    const sourceAddr = s.sourceAddress ?? 'UseNodeIP';
    let nextHop: BirdPeer['nextHop'];
    if (s.nextHopMode === 'Self') nextHop = 'self';
    else if (s.nextHopMode === 'Keep') nextHop = 'keep';
    if (s.keepOriginalNextHop && x.asNumber !== effectiveAs) nextHop = 'keep';
    const rr =
      x.asNumber === effectiveAs && myCluster !== undefined && x.rrClusterId !== myCluster
        ? myCluster
        : undefined;
    return {
      name: peerName(kind === 'global' ? 'Global' : 'Node', x.ip, x.port),
      kind,
      ip: x.ip,
      port: x.port,
      asNumber: x.asNumber,
      localAsNumber: localAs,
      sourceAddress: sourceAddr === 'UseNodeIP' ? myIP : undefined,
      passive: kind === 'global' && x.calicoNode && myIP !== undefined && x.ip > myIP,
      ttlSecurity: s.ttlSecurity ?? 0,
      gracefulRestartTime: roundedSeconds(s.maxRestartTime),
      keepaliveTime: roundedSeconds(s.keepaliveTime),
      ...secret(s.password?.secretKeyRef, owner),
      rrClusterId: rr,
      nextHop,
      allowLocalAs: s.numAllowedLocalASNumbers || undefined,
      internalPeer: x.asNumber === effectiveAs,
      origin: x.source.metadata.name,
      importFilters: calls('import'),
      exportFilters: calls('export'),
      missingFilters,
    };
  };
  if (myIP !== undefined) {
    for (const x of globalPeerings.values()) {
      const s = session(x, 'global');
      if (s) peers.push(s);
    }
    for (const x of nodePeerings.values()) {
      const s = session(x, 'node');
      if (s) peers.push(s);
    }
  }
  peers.sort((a, b) => cmp(a.name, b.name));
  for (const p of peers) {
    if (p.asNumber === 0)
      warnings.push(`${p.name}: peer AS number is 0 (BGPPeer ${p.origin} sets no asNumber)`);
  }

  // ---- routes this node originates, and pools ----------------------------------------------
  const blocks = input.affineBlocks
    .map((b): AffineBlock => (typeof b === 'string' ? { cidr: b } : b))
    .map((b) => ({ c: parseCidr(b.cidr), state: b.state ?? 'confirmed', text: b.cidr }))
    .filter((b) => {
      if (!b.c) warnings.push(`affine block ${JSON.stringify(b.text)} is not a CIDR; skipped`);
      return b.c !== undefined && b.c.family === family && b.state !== 'pending';
    })
    .map((b) => ({ cidr: formatCidr(b.c!), state: b.state }))
    .sort((a, b) => cmp(a.cidr, b.cidr));
  const ofFamily = (cidrs: readonly { cidr: string }[] | undefined) =>
    (cidrs ?? [])
      .map((x) => parseCidrOrIP(x.cidr))
      .filter((c) => c !== undefined && c.family === family)
      .map((c) => formatCidr(c!));
  const staticRoutes = uniqueSorted(ofFamily(global.serviceClusterIPs));
  const rejectCidrs = uniqueSorted([
    ...staticRoutes,
    ...ofFamily(global.serviceExternalIPs),
    ...ofFamily(global.serviceLoadBalancerIPs),
  ]);
  const peerRoutes: BirdModel['peerRoutes'] = [];
  for (const x of [...globalPeerings.values(), ...nodePeerings.values()]) {
    const via = x.source.spec.reachableBy;
    if (via && familyOf(via) === family && !peerRoutes.some((r) => r.ip === x.ip)) {
      peerRoutes.push({ ip: x.ip, via });
    }
  }

  const felixProgramsClusterRoutes = global.programClusterRoutes === 'Disabled';
  const pools: PoolRule[] = input.pools
    .map((p) => ({ p, c: parseCidr(p.spec.cidr) }))
    .filter(({ c }) => c !== undefined && c.family === family)
    .map(({ p, c }) => ({
      cidr: formatCidr(c!),
      exportDisabled: p.spec.disableBGPExport === true,
      kernel: kernelRule(p, family, felixProgramsClusterRoutes),
    }))
    .sort((a, b) => cmp(a.cidr, b.cidr));

  // ---- communities ----------------------------------------------------------------------------
  const communitySource = mine.prefixAdvertisements !== undefined ? mine : global;
  const communities: CommunityRule[] = [];
  for (const pa of communitySource.prefixAdvertisements ?? []) {
    if (!pa.cidr || familyOf(pa.cidr) !== family) continue;
    const values = (pa.communities ?? [])
      .map((c) =>
        /^\d+:\d+(:\d+)?$/.test(c) ? c : communitySource.communities?.find((d) => d.name === c)?.value,
      )
      .filter((v) => v !== undefined);
    const set = uniqueSorted(values);
    if (set.length > 0) communities.push({ cidr: pa.cidr, communities: set });
  }

  const ignored = mine.ignoredInterfaces ?? global.ignoredInterfaces ?? [];
  let routerId: string | undefined;
  if (input.routerId === 'hash') routerId = hashRouterId(input.nodeName);
  else if (input.routerId) routerId = input.routerId;
  else routerId = me ? nodeFacts(input.nodes.find((n) => n.metadata.name === me.name)!, 4).ip : undefined;

  return {
    family,
    nodeName: input.nodeName,
    nodeIP: myIP,
    nodeNetwork: me?.network,
    routerId,
    asNumber: myAs,
    debug: logDebug(input.logLevel ?? mine.logSeverityScreen ?? global.logSeverityScreen),
    listenPort: listenPortOf(input.nodeName),
    bindToNodeIP: global.bindMode === 'NodeIP',
    routePriority:
      (family === 4 ? global.ipv4NormalRoutePriority : global.ipv6NormalRoutePriority) ??
      DEFAULT_ROUTE_PRIORITY,
    directInterfaces: [...ignored.map((i) => `-${i}`), '-cali*', '-kube-ipvs*', '*'],
    communities,
    mesh,
    rrClusterId: myCluster,
    peers,
    blocks,
    staticRoutes,
    peerRoutes,
    rejectCidrs,
    pools,
    filterFunctions,
    warnings,
  };
}

function kernelRule(p: IPPool, family: IPFamily, felixPrograms: boolean): PoolKernelRule {
  const vx = p.spec.vxlanMode;
  if (vx === 'Always' || vx === 'CrossSubnet') return { kind: 'reject', reason: 'vxlan' };
  if (felixPrograms) return { kind: 'reject', reason: 'felix' };
  const ipip = p.spec.ipipMode;
  if (family === 4 && (ipip === 'Always' || ipip === 'CrossSubnet')) return { kind: 'ipip', mode: ipip };
  return { kind: 'accept' };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function uniqueSorted(xs: readonly string[]): string[] {
  return [...new Set(xs)].sort(cmp);
}
