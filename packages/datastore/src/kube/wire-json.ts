/**
 * The API server's JSON bodies decoded once, from the bytes, into the data the mappings read.
 *
 *   response bytes ──► withoutManagedFields (byte scan) ──► one utf-8 decode ──► JSON.parse
 *                                                                              (parseJsonExact
 *                                                                               when `exact`)
 *
 * Every object the API server returns carries `metadata.managedFields`, its server-side-apply
 * bookkeeping: about 60% of the bytes of a Calico CRD object (a GlobalNetworkSet of 780 bytes
 * carries 460 of them), more for a Pod. Nothing here reads them, and a write never sends them
 * back (the mappings build the objects they write). So they are cut out of the bytes before the
 * text is decoded and parsed, instead of being parsed into objects and thrown away: a list of 500
 * GlobalNetworkSets parses in about half the time.
 *
 * The cut is exact, not a guess: `"managedFields":[` preceded by `{` or `,` can only be a key (a
 * quote inside a JSON string is always escaped, so that byte pair never occurs there), and the
 * array's end is found by a scan that follows strings and their escapes. UTF-8 never puts a byte
 * below 0x80 inside a multi-byte character, so a byte scan cannot mistake part of a character for
 * a bracket. Should the cut text not parse all the same, the body is parsed whole.
 *
 * Exact integers (`parseJsonExact`: beyond 2^53 as bigint) cost a scan of the whole text; only
 * what needs them asks (IPAM blocks' sequence numbers; Pods and Nodes, which are written back
 * whole).
 *
 * Pure calculation: no I/O.
 */
import { parseJsonExact } from '../go-json.js';

const KEY = Buffer.from('"managedFields":[', 'latin1');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * The index just past the `]` that closes the array whose `[` is at `open - 1`, or -1 when the
 * body ends first (not JSON).
 */
function endOfArray(buf: Buffer, open: number): number {
  let depth = 1;
  const n = buf.length;
  for (let i = open; i < n; i++) {
    const c = buf[i]!;
    if (c === QUOTE) {
      // Skip the string: to the next quote that is not escaped.
      for (i++; i < n; i++) {
        const s = buf[i]!;
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) depth++;
    else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      if (--depth === 0) return i + 1;
    }
  }
  return -1;
}

/**
 * `buf` with every `"managedFields":[…]` member cut out (with the comma that separated it), or
 * `buf` itself when it has none. A body that ends inside one is returned unchanged.
 */
export function withoutManagedFields(buf: Buffer): Buffer {
  let at = buf.indexOf(KEY);
  if (at === -1) return buf;
  const kept: [number, number][] = [];
  let from = 0;
  for (; at !== -1; at = buf.indexOf(KEY, at + KEY.length)) {
    const before = at > 0 ? buf[at - 1] : undefined;
    if (before !== OPEN_BRACE && before !== COMMA) continue;
    const end = endOfArray(buf, at + KEY.length);
    if (end === -1) return buf;
    if (buf[end] === COMMA) {
      // `{"managedFields":[…],"name":…` or `,"managedFields":[…],"name":…`: drop the comma after.
      kept.push([from, at]);
      from = end + 1;
    } else if (before === COMMA) {
      // `…,"managedFields":[…]}`: the last member, drop the comma before.
      kept.push([from, at - 1]);
      from = end;
    } else {
      // `{"managedFields":[…]}`: the only member.
      kept.push([from, at]);
      from = end;
    }
    at = end - KEY.length;
  }
  if (kept.length === 0) return buf;
  kept.push([from, buf.length]);
  let size = 0;
  for (const [s, e] of kept) size += e - s;
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  for (const [s, e] of kept) o += buf.copy(out, o, s, e);
  return out;
}

/**
 * A response body as data: `undefined` for an empty one; managedFields left out; integers beyond
 * 2^53 as bigint when `exact`. Throws SyntaxError for a body that is not JSON.
 */
export function decodeWireJson(body: Buffer, exact: boolean): unknown {
  if (body.length === 0) return undefined;
  const parse = exact ? parseJsonExact : JSON.parse;
  const cut = withoutManagedFields(body);
  if (cut === body) return parse(body.toString('utf8'));
  try {
    return parse(cut.toString('utf8'));
  } catch {
    return parse(body.toString('utf8'));
  }
}
