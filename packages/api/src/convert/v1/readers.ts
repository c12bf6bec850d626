/**
 * Readers of v1 field values the kind converters share: CIDRs, IP addresses, AS numbers, profile
 * lists (with the v1 namespace-profile prefix renamed) and endpoint ports. Each throws a
 * `conversion-failed` error naming the field and what it wanted.
 */
import { type Cidr, type IPAddress, parseCidr, parseIP } from '../../net/cidr.js';
import {
  type FieldPath,
  type Obj,
  optList,
  optNumber,
  optStringList,
  readObj,
  reqString,
} from '../fields.js';
import { convertName } from '../names.js';
import { convertV1Protocol } from '../v1-rules.js';

export function readCidr(o: Obj, key: string, at: FieldPath): Cidr {
  const text = reqString(o, key, at);
  const c = parseCidr(text);
  if (!c) throw at.child(key).error(`${JSON.stringify(text)} is not a CIDR such as 192.168.0.0/16`);
  return c;
}

export function readIP(v: unknown, at: FieldPath): IPAddress {
  if (typeof v !== 'string') throw at.error(`must be an IP address, got ${JSON.stringify(v)}`);
  const ip = parseIP(v);
  if (!ip) throw at.error(`${JSON.stringify(v)} is not an IP address`);
  return ip;
}

/** `numorstring.ASNumber`: a number, its decimal text, or AS-dot `high.low`. */
export function readASNumber(o: Obj, key: string, at: FieldPath): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  const bad = (): never => {
    throw at.child(key).error(`must be an AS number (0-4294967295 or AS-dot a.b), got ${JSON.stringify(v)}`);
  };
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= 4294967295 ? v : bad();
  if (typeof v !== 'string') return bad();
  if (/^[0-9]+$/.test(v)) {
    const n = Number(v);
    return n <= 4294967295 ? n : bad();
  }
  const dot = /^([0-9]+)\.([0-9]+)$/.exec(v);
  if (!dot) return bad();
  const hi = Number(dot[1]);
  const lo = Number(dot[2]);
  if (hi > 65535 || lo > 65535) return bad();
  return hi * 65536 + lo;
}

/** Profile names: the v1 k8s namespace profile prefix `k8s_ns.` became `kns.`. */
export function convertProfileName(name: string): string {
  if (name.startsWith('k8s_ns.')) return convertName(`kns.${name.slice('k8s_ns.'.length)}`);
  return convertName(name);
}

export function readProfiles(o: Obj, at: FieldPath): string[] | undefined {
  const list = optStringList(o, 'profiles', at);
  return list?.length ? list.map(convertProfileName) : undefined;
}

export interface EndpointPort {
  name: string;
  protocol: string | number;
  port: number;
}

export function readEndpointPorts(o: Obj, at: FieldPath): EndpointPort[] | undefined {
  const list = optList(o, 'ports', at);
  if (!list || list.length === 0) return undefined;
  return list.map((p, i) => {
    const pat = at.child('ports').child(i);
    const po = readObj(p, pat, ['name', 'protocol', 'port'], false);
    const name = reqString(po, 'name', pat);
    if (po.protocol === undefined || po.protocol === null) throw pat.child('protocol').error('is required');
    const protocol = convertV1Protocol(po.protocol, pat.child('protocol'));
    const port = optNumber(po, 'port', pat);
    if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw pat.child('port').error(`must be a port number 1-65535, got ${JSON.stringify(po.port)}`);
    }
    return { name, protocol, port };
  });
}
