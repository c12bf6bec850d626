/**
 * Parsers for Felix's raw configuration values, as upstream's `felix/config/param_types.go` reads
 * them: every source (env, file, datastore) is reduced to strings first, then parsed here. Each
 * parser returns the typed value or throws a `RangeError` saying what is wrong. Pure.
 */
import { formatCidr, parseCidrOrIP } from '@calico-ts/api/net';

export interface ProtoPort {
  readonly protocol: 'tcp' | 'udp' | 'sctp';
  readonly port: number;
  readonly net?: string;
}

export function parseBool(raw: string): boolean {
  const v = raw.trim().toLowerCase();
  if (['true', 't', '1', 'yes', 'y', 'on'].includes(v)) return true;
  if (['false', 'f', '0', 'no', 'n', 'off'].includes(v)) return false;
  throw new RangeError(`"${raw}" is not a boolean`);
}

export function parseInt10(
  raw: string,
  min = Number.MIN_SAFE_INTEGER,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const v = raw.trim();
  if (!/^-?\d+$/.test(v)) throw new RangeError(`"${raw}" is not an integer`);
  const n = Number(v);
  if (n < min || n > max) throw new RangeError(`${n} is outside ${min}..${max}`);
  return n;
}

const GO_UNITS: Readonly<Record<string, number>> = {
  ns: 1e-9,
  us: 1e-6,
  µs: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
};

/** A Go duration (`90s`, `1m30s`, `500ms`, `0`) in seconds. */
export function parseGoDuration(raw: string): number {
  const s = raw.trim();
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  const sign = s.startsWith('-') ? -1 : 1;
  const body = s.replace(/^[-+]/, '');
  re.lastIndex = 0;
  for (let m = re.exec(body); m !== null; m = re.exec(body)) {
    total += Number(m[1]) * GO_UNITS[m[2]!]!;
    matched = re.lastIndex;
  }
  if (body === '' || matched !== body.length) throw new RangeError(`"${raw}" is not a duration`);
  return sign * total;
}

/** Seconds as a plain number (`90`, `2.5`), as env and files give them. */
export function parseSeconds(raw: string): number {
  const v = raw.trim();
  if (!/^\d+(\.\d+)?$/.test(v)) throw new RangeError(`"${raw}" is not a number of seconds`);
  return Number(v);
}

export function parseOneOf(raw: string, options: readonly string[]): string {
  const v = raw.trim();
  const hit = options.find((o) => o.toLowerCase() === v.toLowerCase());
  if (hit === undefined) throw new RangeError(`"${raw}" is not one of ${options.join(', ')}`);
  return hit;
}

/** `tcp:22,udp:68`, or with a net `tcp:10.0.0.0/8:22`; `none` (or empty) is no ports. */
export function parsePortList(raw: string): ProtoPort[] {
  const v = raw.trim();
  if (v === '' || v.toLowerCase() === 'none') return [];
  return v.split(',').map((part) => {
    const t = part.trim();
    const first = t.indexOf(':');
    const last = t.lastIndexOf(':');
    let protocol = 'tcp';
    let net: string | undefined;
    let port: string;
    if (first < 0) port = t;
    else if (first === last) {
      protocol = t.slice(0, first);
      port = t.slice(first + 1);
    } else {
      protocol = t.slice(0, first);
      net = t.slice(first + 1, last).replace(/^\[|\]$/g, '');
      port = t.slice(last + 1);
    }
    const p = protocol.toLowerCase();
    if (p !== 'tcp' && p !== 'udp' && p !== 'sctp')
      throw new RangeError(`"${t}": protocol must be tcp, udp or sctp`);
    const n = parseInt10(port, 0, 65535);
    return net === undefined ? { protocol: p, port: n } : { protocol: p, port: n, net };
  });
}

/** A comma-separated list of interface name prefixes (`cali`, `cali,tap`). */
export function parseIfaceList(raw: string): string[] {
  const parts = raw.split(',').map((s) => s.trim());
  for (const p of parts) {
    if (!/^[a-zA-Z0-9_-]{1,15}$/.test(p)) throw new RangeError(`"${p}" is not an interface name prefix`);
  }
  return parts;
}

/**
 * One interface name (`eth0`), or a prefix ending in `+` (`eth+`, iptables' wildcard); '' is
 * none.
 */
export function parseIfaceName(raw: string): string {
  const v = raw.trim();
  if (v === '') return '';
  if (!/^[a-zA-Z0-9:._+-]{1,15}$/.test(v)) throw new RangeError(`"${raw}" is not an interface name`);
  return v;
}

export interface PortRange {
  readonly min: number;
  readonly max: number;
}

/** A port `N` or a range `N:M` (upstream's numorstring.Port); '' is none. */
export function parsePortRange(raw: string): PortRange | undefined {
  const v = raw.trim();
  if (v === '') return undefined;
  const m = /^(\d{1,5})(?::(\d{1,5}))?$/.exec(v);
  const min = m ? Number(m[1]) : Number.NaN;
  const max = m ? Number(m[2] ?? m[1]) : Number.NaN;
  if (!m || min > 65535 || max > 65535) throw new RangeError(`"${raw}" is not a port or a port range N:M`);
  if (min > max) throw new RangeError(`"${raw}": the range's first port is greater than its last`);
  // Upstream: a range whose last port is 0 is no range.
  return max === 0 ? undefined : { min, max };
}

export function parseEndpointList(raw: string): string[] {
  const parts = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const p of parts) {
    if (!/^https?:\/\/[^/\s]+\/?$/.test(p))
      throw new RangeError(`"${p}" is not an http(s)://host:port endpoint`);
  }
  return parts;
}

/** A 32-bit mask, decimal or `0x…`. */
export function parseMarkMask(raw: string): number {
  const v = raw.trim();
  const n = /^0x[0-9a-f]+$/i.test(v)
    ? Number.parseInt(v.slice(2), 16)
    : /^\d+$/.test(v)
      ? Number(v)
      : Number.NaN;
  if (!Number.isFinite(n) || n < 0 || n > 0xffffffff)
    throw new RangeError(`"${raw}" is not a 32-bit mark mask`);
  return n >>> 0;
}

export function parseIPv4(raw: string): string {
  const v = raw.trim();
  if (v === '') return '';
  const parts = v.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) {
    throw new RangeError(`"${raw}" is not an IPv4 address`);
  }
  return v;
}

/**
 * A comma-separated list of IPv4 addresses and CIDRs, as canonical CIDRs: a bare address is its
 * /32 and host bits are cleared (`198.18.3.0/23` is `198.18.2.0/23`, as the kernel stores it).
 */
export function parseIPv4NetList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((p) => {
      const c = parseCidrOrIP(p);
      if (c?.family !== 4) throw new RangeError(`"${p}" is not an IPv4 address or CIDR`);
      return formatCidr(c);
    });
}

export function parseRegexp(raw: string): RegExp {
  try {
    return new RegExp(raw);
  } catch {
    throw new RangeError(`"${raw}" is not a regular expression`);
  }
}

/** `host:port`. */
export function parseAuthority(raw: string): string {
  const v = raw.trim();
  if (!/^[^:/\s]+:\d+$/.test(v)) throw new RangeError(`"${raw}" is not host:port`);
  return v;
}

export function parseHostname(raw: string): string {
  const v = raw.trim();
  if (!/^[a-zA-Z0-9_.-]+$/.test(v)) throw new RangeError(`"${raw}" is not a host name`);
  return v;
}

export function parseHostAddress(raw: string): string {
  const v = raw.trim();
  if (!/^[a-zA-Z0-9:._+-]{0,64}$/.test(v)) throw new RangeError(`"${raw}" is not a host address`);
  return v;
}
