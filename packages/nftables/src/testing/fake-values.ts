/**
 * Checks of set element values against a set's datatype, and the few rewrites nft applies when it
 * prints what it stored, for FakeNft. Errors carry libnftables 1.0.6's own wording so that they
 * classify exactly as the real ones do.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { NftExpr, NftSetElem } from '../json/types.js';

/**
 * Where a failure arises decides what it costs: nft's parser and evaluation reject a batch before
 * anything reaches the kernel; the kernel processes the whole batch, numbering what it creates,
 * and then throws it all away, so its handles stay used.
 */
export type FailureStage = 'parse' | 'user' | 'kernel';

/** A failure with the text libnftables would put in its error buffer. */
export class FakeNftFailure extends Error {
  constructor(
    readonly text: string,
    readonly stage: FailureStage,
  ) {
    super(text);
  }
}

/** An error nft's evaluation step reports (no command index). */
export function userError(what: string): FakeNftFailure {
  return new FakeNftFailure(`internal:0:0-0: Error: ${what}\n\n`, 'user');
}
/** An error the kernel returns for the batch (nft prefixes "Could not process rule"). */
export function kernelError(what: string): FakeNftFailure {
  return new FakeNftFailure(`internal:0:0-0: Error: Could not process rule: ${what}\n\n`, 'kernel');
}
/** A JSON parse error, which nft reports with the index of the command. */
export function parseError(what: string, index: number): FakeNftFailure {
  return new FakeNftFailure(
    `internal:0:0-0: Error: ${what}\n\ninternal:0:0-0: Error: Parsing command array at index ${index} failed.\n\n`,
    'parse',
  );
}

export const ENOENT = 'No such file or directory';
export const EEXIST = 'File exists';
export const EBUSY = 'Device or resource busy';
export const ELOOP = 'Too many links';
export const EOPNOTSUPP = 'Operation not supported';

export const KNOWN_TYPES = new Set([
  'ipv4_addr',
  'ipv6_addr',
  'ether_addr',
  'inet_proto',
  'inet_service',
  'mark',
  'ifname',
  'iface_index',
  'verdict',
]);

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A stable text for a JSON value (object keys sorted), used as an element's identity. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isRecord(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

function checkAddress(family: 4 | 6, v: unknown, interval: boolean): void {
  const isFamily = family === 4 ? isIPv4 : isIPv6;
  const isOther = family === 4 ? isIPv6 : isIPv4;
  const checkPlain = (x: unknown) => {
    if (typeof x !== 'string') throw userError(`Could not resolve hostname: Name or service not known`);
    if (isFamily(x)) return;
    if (isOther(x)) throw userError('Could not resolve hostname: Address family for hostname not supported');
    throw userError('Could not resolve hostname: Name or service not known');
  };
  if (isRecord(v) && isRecord(v.prefix)) {
    if (!interval) {
      throw userError(
        "You must add 'flags interval' to your set declaration if you want to add prefix elements",
      );
    }
    checkPlain(v.prefix.addr);
    const len = v.prefix.len;
    if (typeof len !== 'number' || len < 0 || len > (family === 4 ? 32 : 128)) {
      throw userError(`Invalid prefix length ${String(len)}`);
    }
    return;
  }
  if (isRecord(v) && Array.isArray(v.range)) {
    if (!interval) {
      throw userError(
        "You must add 'flags interval' to your set declaration if you want to add range elements",
      );
    }
    v.range.forEach(checkPlain);
    return;
  }
  checkPlain(v);
}

function checkNumber(v: unknown, max: number, what: string, interval: boolean): void {
  if (isRecord(v) && Array.isArray(v.range)) {
    if (!interval) {
      throw userError(
        "You must add 'flags interval' to your set declaration if you want to add range elements",
      );
    }
    for (const x of v.range) checkNumber(x, max, what, false);
    return;
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) {
    throw userError(`Invalid ${what} value ${JSON.stringify(v)}: out of range`);
  }
}

const PROTOCOLS = new Set([
  'tcp',
  'udp',
  'icmp',
  'icmpv6',
  'sctp',
  'udplite',
  'dccp',
  'gre',
  'esp',
  'ah',
  'ipip',
]);

/** Throws a FakeNftFailure when `v` is not a value of datatype `type`. */
export function checkValue(type: string | string[], v: unknown, interval: boolean): void {
  if (isRecord(v) && isRecord(v.elem)) {
    checkValue(type, v.elem.val, interval);
    return;
  }
  if (Array.isArray(type)) {
    if (!isRecord(v) || !Array.isArray(v.concat) || v.concat.length !== type.length) {
      throw userError(`Datatype mismatch: expected a concatenation of ${type.join(' . ')}`);
    }
    const parts = v.concat as unknown[];
    type.forEach((t, i) => {
      checkValue(t, parts[i], interval);
    });
    return;
  }
  switch (type) {
    case 'ipv4_addr':
      checkAddress(4, v, interval);
      return;
    case 'ipv6_addr':
      checkAddress(6, v, interval);
      return;
    case 'inet_service':
      checkNumber(v, 65535, 'port', interval);
      return;
    case 'mark':
      checkNumber(v, 0xffffffff, 'mark', interval);
      return;
    case 'iface_index':
      checkNumber(v, 0xffffffff, 'interface index', interval);
      return;
    case 'inet_proto':
      if (typeof v === 'string' && PROTOCOLS.has(v)) return;
      checkNumber(v, 255, 'protocol', false);
      return;
    case 'ifname':
      if (typeof v !== 'string' || v.length === 0 || v.length > 15) {
        throw userError(`Invalid interface name ${JSON.stringify(v)}`);
      }
      return;
    case 'ether_addr':
      if (typeof v !== 'string' || !/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i.test(v)) {
        throw userError(`Invalid ethernet address ${JSON.stringify(v)}`);
      }
      return;
    case 'verdict':
      if (!isVerdict(v)) throw userError(`Invalid verdict ${JSON.stringify(v)}`);
      return;
    default:
      throw userError(`unknown datatype ${type}`);
  }
}

const VERDICTS = new Set(['accept', 'drop', 'continue', 'return', 'jump', 'goto']);

export function isVerdict(v: unknown): boolean {
  if (!isRecord(v)) return false;
  const keys = Object.keys(v);
  if (keys.length !== 1 || !VERDICTS.has(keys[0]!)) return false;
  const k = keys[0]!;
  if (k === 'jump' || k === 'goto') {
    const body = v[k];
    return isRecord(body) && typeof body.target === 'string';
  }
  return v[k] === null;
}

/** The value nft prints for a stored element: a full-length prefix is the bare address. */
export function normalizeValue(v: NftExpr): NftExpr {
  const o: unknown = v;
  if (isRecord(o) && isRecord(o.prefix)) {
    const { addr, len } = o.prefix as { addr: NftExpr; len: number };
    if (typeof addr === 'string' && ((len === 32 && isIPv4(addr)) || (len === 128 && isIPv6(addr))))
      return addr;
  }
  return v;
}

export function normalizeElem(e: NftSetElem, isMap: boolean): NftSetElem {
  if (isMap && Array.isArray(e) && e.length === 2) return [normalizeValue(e[0] as NftExpr), e[1] as NftExpr];
  return normalizeValue(e as NftExpr);
}

/** An element's key: the whole value for a set, the first of the pair for a map. */
export function elemKey(e: NftSetElem, isMap: boolean): string {
  const keyPart: unknown = isMap && Array.isArray(e) ? e[0] : e;
  const val = isRecord(keyPart) && isRecord(keyPart.elem) ? keyPart.elem.val : keyPart;
  return canonical(val);
}
