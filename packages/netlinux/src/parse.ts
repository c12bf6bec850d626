/**
 * Parsers for `ip -json` / `bridge -json` output into netlinux's typed shapes. Pure; the unit
 * tests feed them output captured from iproute2 6.1.
 */
import { NetlinuxError } from './errors.js';
import { ipFamily, normalizeRouteDst } from './ip.js';
import type { Addr, FdbEntry, IpFamily, Link, Neighbour, Route, RouteType } from './types.js';

type Json = Record<string, unknown>;

/** Parses a JSON array printed by iproute2; empty output (older versions, no objects) is `[]`. */
export function parseJsonArray(stdout: string, what: string): Json[] {
  const text = stdout.trim();
  if (text === '') return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new NetlinuxError('failed', `cannot parse ${what} JSON from iproute2`, {
      detail: text.slice(0, 500),
      cause: e,
    });
  }
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'object' && v !== null)) {
    throw new NetlinuxError('failed', `unexpected ${what} JSON from iproute2: not an array of objects`, {
      detail: text.slice(0, 500),
    });
  }
  return value as Json[];
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const strs = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
const obj = (v: unknown): Json | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined;

function need<T>(value: T | undefined, what: string, field: string): T {
  if (value === undefined) throw new NetlinuxError('failed', `${what} JSON from iproute2 lacks "${field}"`);
  return value;
}

// ---- links ------------------------------------------------------------------------------------

export function parseLink(j: Json): Link {
  const flags = strs(j.flags);
  const linkinfo = obj(j.linkinfo);
  const kind = str(linkinfo?.info_kind) ?? '';
  const link: Link = {
    name: need(str(j.ifname), 'link', 'ifname'),
    index: need(num(j.ifindex), 'link', 'ifindex'),
    mtu: num(j.mtu) ?? 0,
    mac: str(j.address)?.toLowerCase() ?? '',
    operstate: str(j.operstate) ?? 'UNKNOWN',
    kind,
    flags,
    up: flags.includes('UP'),
  };
  const master = str(j.master);
  if (master !== undefined) link.master = master;
  // A peer in the same namespace is printed by name ("link": "v1"); one elsewhere by index.
  const peerIndex = num(j.link_index);
  if (peerIndex !== undefined) link.peerIndex = peerIndex;
  const peerNetnsId = num(j.link_netnsid);
  if (peerNetnsId !== undefined) link.peerNetnsId = peerNetnsId;
  if (kind === 'vxlan') {
    const d = obj(linkinfo?.info_data) ?? {};
    link.vxlan = {
      vni: num(d.id) ?? 0,
      port: num(d.port) ?? 0,
      learning: d.learning === true,
    };
    const local = str(d.local) ?? str(d.local6);
    if (local !== undefined) link.vxlan.local = local;
    const dev = str(d.link);
    if (dev !== undefined) link.vxlan.dev = dev;
  }
  return link;
}

export function parseLinks(stdout: string): Link[] {
  return parseJsonArray(stdout, 'link').map(parseLink);
}

// ---- addresses --------------------------------------------------------------------------------

const FAMILIES: Record<string, IpFamily> = { inet: 4, inet6: 6 };

export function parseAddrs(stdout: string): Addr[] {
  const out: Addr[] = [];
  for (const l of parseJsonArray(stdout, 'address')) {
    const dev = need(str(l.ifname), 'address', 'ifname');
    const index = need(num(l.ifindex), 'address', 'ifindex');
    for (const a of Array.isArray(l.addr_info) ? l.addr_info : []) {
      const ai = obj(a);
      const family = FAMILIES[str(ai?.family) ?? ''];
      const address = str(ai?.local);
      const prefixLen = num(ai?.prefixlen);
      if (!ai || !family || address === undefined || prefixLen === undefined) continue;
      out.push({
        dev,
        index,
        family,
        cidr: `${address}/${prefixLen}`,
        address,
        prefixLen,
        scope: str(ai.scope) ?? 'global',
        noDad: ai.nodad === true,
        tentative: ai.tentative === true,
      });
    }
  }
  return out;
}

// ---- routes -----------------------------------------------------------------------------------

/**
 * The family of a route printed without a family filter. iproute2 prints `dst: "default"` for both
 * families, so the gateway, source or next hops decide; failing those, the `pref` attribute that
 * the kernel reports on every IPv6 route.
 */
function routeFamilyOf(j: Json): IpFamily {
  const dst = str(j.dst);
  if (dst !== undefined && dst !== 'default') return ipFamily(dst);
  const via = obj(j.via);
  const nh0 = Array.isArray(j.nexthops) ? obj(j.nexthops[0]) : undefined;
  for (const a of [str(j.gateway), str(j.prefsrc), str(nh0?.gateway)]) {
    if (a !== undefined) return ipFamily(a);
  }
  if (via && str(via.family) === 'inet6') return 6;
  return j.pref !== undefined ? 6 : 4;
}

function gatewayOf(j: Json): string | undefined {
  return str(j.gateway) ?? str(obj(j.via)?.host);
}

/** One route object; `dev` stands in for the device iproute2 leaves out under a `dev` filter. */
export function parseRoute(j: Json, family?: IpFamily, filterDev?: string): Route {
  const fam = family ?? routeFamilyOf(j);
  const route: Route = { family: fam, dst: normalizeRouteDst(need(str(j.dst), 'route', 'dst'), fam) };
  const dev = str(j.dev) ?? (Array.isArray(j.nexthops) ? undefined : filterDev);
  if (dev !== undefined) route.dev = dev;
  const gateway = gatewayOf(j);
  if (gateway !== undefined) route.gateway = gateway;
  const scope = str(j.scope);
  if (scope !== undefined) route.scope = scope;
  const proto = str(j.protocol);
  // iproute2 leaves out `proto boot`, the protocol of routes added without one.
  route.proto = proto ?? 'boot';
  const metric = num(j.metric);
  if (metric !== undefined) route.metric = metric;
  const flags = strs(j.flags);
  if (flags.includes('onlink')) route.onlink = true;
  const table = str(j.table);
  if (table !== undefined && table !== 'main') route.table = table;
  const type = str(j.type);
  if (type !== undefined && type !== 'unicast') route.type = type as RouteType;
  const src = str(j.prefsrc);
  if (src !== undefined) route.src = src;
  if (Array.isArray(j.nexthops)) {
    route.nexthops = j.nexthops.map((n) => {
      const nj = obj(n) ?? {};
      const hop: NonNullable<Route['nexthops']>[number] = {};
      const g = gatewayOf(nj);
      if (g !== undefined) hop.gateway = g;
      const d = str(nj.dev);
      if (d !== undefined) hop.dev = d;
      const w = num(nj.weight);
      if (w !== undefined) hop.weight = w;
      if (strs(nj.flags).includes('onlink')) hop.onlink = true;
      return hop;
    });
  }
  return route;
}

/**
 * Routes from `ip -json [-4|-6] route show … [dev d]`; `family` and `dev` are the filters given,
 * which iproute2 then leaves out of each object.
 */
export function parseRoutes(stdout: string, family?: IpFamily, dev?: string): Route[] {
  return parseJsonArray(stdout, 'route').map((j) => parseRoute(j, family, dev));
}

// ---- neighbours -------------------------------------------------------------------------------

/** Entries from `ip -json neigh show [dev d]`; the device is `dev` when the output leaves it out. */
export function parseNeighbours(stdout: string, dev?: string): Neighbour[] {
  return parseJsonArray(stdout, 'neighbour').map((j) => {
    const dst = need(str(j.dst), 'neighbour', 'dst');
    const n: Neighbour = {
      family: ipFamily(dst),
      dst,
      dev: need(str(j.dev) ?? dev, 'neighbour', 'dev'),
      state: strs(j.state).map((s) => s.toLowerCase()),
      // Flags are printed as keys with a null value: "router": null.
      router: 'router' in j,
      proxy: 'proxy' in j,
    };
    const lladdr = str(j.lladdr);
    if (lladdr !== undefined) n.lladdr = lladdr.toLowerCase();
    return n;
  });
}

// ---- FDB --------------------------------------------------------------------------------------

/** Entries from `bridge -json fdb show [dev d]`; the device is `dev` when the output leaves it out. */
export function parseFdb(stdout: string, dev?: string): FdbEntry[] {
  return parseJsonArray(stdout, 'fdb').map((j) => {
    const e: FdbEntry = {
      mac: need(str(j.mac), 'fdb', 'mac').toLowerCase(),
      flags: strs(j.flags),
      state: str(j.state) ?? '',
    };
    const d = str(j.ifname) ?? dev;
    if (d !== undefined) e.dev = d;
    const dst = str(j.dst);
    if (dst !== undefined) e.dst = dst;
    const vni = num(j.vni);
    if (vni !== undefined) e.vni = vni;
    const port = num(j.port);
    if (port !== undefined) e.port = port;
    const master = str(j.master);
    if (master !== undefined) e.master = master;
    return e;
  });
}

// ---- namespaces -------------------------------------------------------------------------------

export function parseNetnsList(stdout: string): { name: string; id?: number }[] {
  return parseJsonArray(stdout, 'netns').map((j) => {
    const name = need(str(j.name), 'netns', 'name');
    const id = num(j.id);
    return id === undefined ? { name } : { name, id };
  });
}
