/**
 * CNI results and their conversion between spec versions (pure).
 *
 * Inside the plugin every result is held in one canonical form, the 1.1.0 shape (`CniResult`).
 * `decodeResult` reads any version's JSON (an IPAM plugin's answer, a `prevResult`) into it;
 * `encodeResult` writes it in the shape of the version the config asked for:
 *
 * | version       | shape                                                                      |
 * | ------------- | -------------------------------------------------------------------------- |
 * | 0.1.0, 0.2.0  | `ip4`/`ip6` `{ip, gateway?, routes?}` (first address of each family), `dns` |
 * | 0.3.x, 0.4.0  | `interfaces`, `ips` `{version, address, gateway?, interface?}`, `routes`, `dns` |
 * | 1.0.0         | as 0.4.0 but `ips` without `version`; interfaces may carry `mtu`           |
 * | 1.1.0         | as 1.0.0; interfaces `mtu`/`socketPath`/`pciID`, routes `mtu`/`advmss`/`priority`/`table`/`scope` |
 */
import { CniPluginError } from '../errors.js';
import { isIPv4, parseCidr } from './ip.js';
import { type CniVersion, resultShape } from './versions.js';

export interface CniInterface {
  name: string;
  mac?: string;
  mtu?: number;
  sandbox?: string;
  socketPath?: string;
  pciID?: string;
}

export interface CniIPConfig {
  /** CIDR notation: address with prefix length, e.g. `198.19.0.4/32`. */
  address: string;
  gateway?: string;
  /** Index into `interfaces`. */
  interface?: number;
}

export interface CniRoute {
  dst: string;
  gw?: string;
  mtu?: number;
  advmss?: number;
  priority?: number;
  table?: number;
  scope?: number;
}

export interface CniDns {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

export interface CniResult {
  interfaces: CniInterface[];
  ips: CniIPConfig[];
  routes: CniRoute[];
  dns: CniDns;
}

export function emptyResult(): CniResult {
  return { interfaces: [], ips: [], routes: [], dns: {} };
}

// ---------------------------------------------------------------------------------------------
// Encoding

/**
 * The JSON object for `result` in `version`'s shape. Throws `internal` when a result cannot be
 * expressed in a 0.1/0.2 shape (no IP address at all), as the spec's reference library does.
 */
export function encodeResult(result: CniResult, version: CniVersion): Record<string, unknown> {
  switch (resultShape(version)) {
    case 'legacy':
      return encodeLegacy(result, version);
    case 'v03':
      return encodeRich(result, version, true);
    case 'v1':
      return encodeRich(result, version, false);
  }
}

function encodeDns(dns: CniDns): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (dns.nameservers && dns.nameservers.length > 0) out.nameservers = [...dns.nameservers];
  if (dns.domain) out.domain = dns.domain;
  if (dns.search && dns.search.length > 0) out.search = [...dns.search];
  if (dns.options && dns.options.length > 0) out.options = [...dns.options];
  return out;
}

function encodeRoute(r: CniRoute, withExtras: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { dst: r.dst };
  if (r.gw) out.gw = r.gw;
  if (withExtras) {
    for (const k of ['mtu', 'advmss', 'priority', 'table', 'scope'] as const) {
      if (r[k] !== undefined) out[k] = r[k];
    }
  }
  return out;
}

function encodeRich(result: CniResult, version: CniVersion, withIpVersion: boolean): Record<string, unknown> {
  const v11 = version === '1.1.0';
  const out: Record<string, unknown> = { cniVersion: version };
  if (result.interfaces.length > 0) {
    out.interfaces = result.interfaces.map((i) => {
      const o: Record<string, unknown> = { name: i.name };
      if (i.mac) o.mac = i.mac;
      if (!withIpVersion && i.mtu) o.mtu = i.mtu;
      if (i.sandbox) o.sandbox = i.sandbox;
      if (v11 && i.socketPath) o.socketPath = i.socketPath;
      if (v11 && i.pciID) o.pciID = i.pciID;
      return o;
    });
  }
  if (result.ips.length > 0) {
    out.ips = result.ips.map((ip) => {
      const o: Record<string, unknown> = {};
      if (withIpVersion) o.version = ipVersionOf(ip.address);
      if (ip.interface !== undefined) o.interface = ip.interface;
      o.address = ip.address;
      if (ip.gateway) o.gateway = ip.gateway;
      return o;
    });
  }
  if (result.routes.length > 0) out.routes = result.routes.map((r) => encodeRoute(r, v11));
  out.dns = encodeDns(result.dns);
  return out;
}

function encodeLegacy(result: CniResult, version: CniVersion): Record<string, unknown> {
  let ip4: CniIPConfig | undefined;
  let ip6: CniIPConfig | undefined;
  for (const ip of result.ips) {
    const v = ipVersionOf(ip.address);
    if (v === '4' && !ip4) ip4 = ip;
    if (v === '6' && !ip6) ip6 = ip;
  }
  if (!ip4 && !ip6) {
    throw new CniPluginError('internal', `cannot express a result without IP addresses as CNI ${version}`);
  }
  const out: Record<string, unknown> = { cniVersion: version };
  const family = (ip: CniIPConfig, v4: boolean): Record<string, unknown> => {
    const o: Record<string, unknown> = { ip: ip.address };
    if (ip.gateway) o.gateway = ip.gateway;
    const routes = result.routes.filter((r) => isIPv4(parseCidr(r.dst)?.ip ?? '') === v4);
    if (routes.length > 0) o.routes = routes.map((r) => encodeRoute(r, false));
    return o;
  };
  if (ip4) out.ip4 = family(ip4, true);
  if (ip6) out.ip6 = family(ip6, false);
  out.dns = encodeDns(result.dns);
  return out;
}

function ipVersionOf(cidr: string): '4' | '6' {
  const p = parseCidr(cidr);
  return p && !isIPv4(p.ip) ? '6' : '4';
}

// ---------------------------------------------------------------------------------------------
// Decoding

/**
 * Reads a result JSON value of `version` (an IPAM plugin's output, a `prevResult`) into the
 * canonical form. `what` names the value in error messages (e.g. `prevResult`). Every problem is
 * reported as `invalid-config` naming the field, e.g. `prevResult.ips[0].address: ...`.
 */
export function decodeResult(value: unknown, version: CniVersion, what: string): CniResult {
  const obj = asObject(value, what);
  if (resultShape(version) === 'legacy' || 'ip4' in obj || 'ip6' in obj) {
    if (!('ips' in obj) && !('interfaces' in obj)) return decodeLegacy(obj, what);
  }
  const out = emptyResult();
  if (obj.interfaces !== undefined && obj.interfaces !== null) {
    out.interfaces = asArray(obj.interfaces, `${what}.interfaces`).map((v, i) =>
      decodeInterface(v, `${what}.interfaces[${i}]`),
    );
  }
  if (obj.ips !== undefined && obj.ips !== null) {
    out.ips = asArray(obj.ips, `${what}.ips`).map((v, i) =>
      decodeIp(v, `${what}.ips[${i}]`, out.interfaces.length),
    );
  }
  if (obj.routes !== undefined && obj.routes !== null) {
    out.routes = asArray(obj.routes, `${what}.routes`).map((v, i) => decodeRoute(v, `${what}.routes[${i}]`));
  }
  if (obj.dns !== undefined && obj.dns !== null) out.dns = decodeDns(obj.dns, `${what}.dns`);
  return out;
}

function decodeLegacy(obj: Record<string, unknown>, what: string): CniResult {
  const out = emptyResult();
  for (const fam of ['ip4', 'ip6'] as const) {
    const v = obj[fam];
    if (v === undefined || v === null) continue;
    const o = asObject(v, `${what}.${fam}`);
    const ip = asString(o.ip, `${what}.${fam}.ip`);
    const p = parseCidr(ip);
    if (!p || isIPv4(p.ip) !== (fam === 'ip4')) {
      throw invalid(
        `${what}.${fam}.ip`,
        `must be an IPv${fam === 'ip4' ? 4 : 6} address in CIDR notation, not "${ip}"`,
      );
    }
    const cfg: CniIPConfig = { address: ip };
    if (o.gateway !== undefined && o.gateway !== null && o.gateway !== '') {
      cfg.gateway = asString(o.gateway, `${what}.${fam}.gateway`);
    }
    out.ips.push(cfg);
    if (o.routes !== undefined && o.routes !== null) {
      asArray(o.routes, `${what}.${fam}.routes`).forEach((r, i) => {
        out.routes.push(decodeRoute(r, `${what}.${fam}.routes[${i}]`));
      });
    }
  }
  if (obj.dns !== undefined && obj.dns !== null) out.dns = decodeDns(obj.dns, `${what}.dns`);
  return out;
}

function decodeInterface(v: unknown, path: string): CniInterface {
  const o = asObject(v, path);
  const out: CniInterface = { name: asString(o.name, `${path}.name`) };
  if (o.mac !== undefined && o.mac !== '') out.mac = asString(o.mac, `${path}.mac`);
  if (o.mtu !== undefined && o.mtu !== 0) out.mtu = asUint(o.mtu, `${path}.mtu`);
  if (o.sandbox !== undefined && o.sandbox !== '') out.sandbox = asString(o.sandbox, `${path}.sandbox`);
  if (o.socketPath !== undefined && o.socketPath !== '')
    out.socketPath = asString(o.socketPath, `${path}.socketPath`);
  if (o.pciID !== undefined && o.pciID !== '') out.pciID = asString(o.pciID, `${path}.pciID`);
  return out;
}

function decodeIp(v: unknown, path: string, interfaceCount: number): CniIPConfig {
  const o = asObject(v, path);
  const address = asString(o.address, `${path}.address`);
  const p = parseCidr(address);
  if (!p) throw invalid(`${path}.address`, `must be an IP address in CIDR notation, not "${address}"`);
  if (o.version !== undefined) {
    const ver = asString(o.version, `${path}.version`);
    if (ver !== '4' && ver !== '6') throw invalid(`${path}.version`, `must be "4" or "6", not "${ver}"`);
    if ((ver === '4') !== isIPv4(p.ip))
      throw invalid(`${path}.version`, `is "${ver}" but address is "${address}"`);
  }
  const out: CniIPConfig = { address };
  if (o.gateway !== undefined && o.gateway !== null && o.gateway !== '') {
    out.gateway = asString(o.gateway, `${path}.gateway`);
  }
  if (o.interface !== undefined && o.interface !== null) {
    const idx = asUint(o.interface, `${path}.interface`);
    if (idx >= interfaceCount) {
      throw invalid(`${path}.interface`, `is ${idx} but there are only ${interfaceCount} interfaces`);
    }
    out.interface = idx;
  }
  return out;
}

function decodeRoute(v: unknown, path: string): CniRoute {
  const o = asObject(v, path);
  const dst = asString(o.dst, `${path}.dst`);
  if (!parseCidr(dst)) throw invalid(`${path}.dst`, `must be a CIDR, not "${dst}"`);
  const out: CniRoute = { dst };
  if (o.gw !== undefined && o.gw !== null && o.gw !== '') out.gw = asString(o.gw, `${path}.gw`);
  for (const k of ['mtu', 'advmss', 'priority', 'table', 'scope'] as const) {
    if (o[k] !== undefined && o[k] !== null) out[k] = asUint(o[k], `${path}.${k}`);
  }
  return out;
}

function decodeDns(v: unknown, path: string): CniDns {
  const o = asObject(v, path);
  const out: CniDns = {};
  if (o.nameservers != null) out.nameservers = asStringList(o.nameservers, `${path}.nameservers`);
  if (o.domain != null && o.domain !== '') out.domain = asString(o.domain, `${path}.domain`);
  if (o.search != null) out.search = asStringList(o.search, `${path}.search`);
  if (o.options != null) out.options = asStringList(o.options, `${path}.options`);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Small typed readers shared with the netconf parser.

export function invalid(path: string, rule: string): CniPluginError {
  return new CniPluginError('invalid-config', `${path}: ${rule}`);
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${JSON.stringify(v)}`;
}

export function asObject(v: unknown, path: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw invalid(path, `must be an object, not ${describe(v)}`);
  }
  return v as Record<string, unknown>;
}

export function asArray(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw invalid(path, `must be a list, not ${describe(v)}`);
  return v;
}

export function asString(v: unknown, path: string): string {
  if (typeof v !== 'string')
    throw invalid(path, `must be a string, not ${v === undefined ? 'missing' : describe(v)}`);
  return v;
}

export function asStringList(v: unknown, path: string): string[] {
  return asArray(v, path).map((x, i) => asString(x, `${path}[${i}]`));
}

export function asUint(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw invalid(path, `must be a non-negative integer, not ${describe(v)}`);
  }
  return v;
}

export function asBool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw invalid(path, `must be true or false, not ${describe(v)}`);
  return v;
}
