/**
 * JSON as Go's encoding/json reads and writes it, where JavaScript's JSON differs:
 *
 * - Go escapes `<`, `>`, `&`, U+2028 and U+2029 inside strings (HTML-safe output).
 * - Go keeps 64-bit integers exact; `JSON.parse` rounds anything beyond 2^53. IPAM sequence numbers
 *   are nanosecond timestamps (~1.7e18), so they are read and written as `bigint` here.
 *
 * Number formatting otherwise agrees: Go renders float64 the way ECMAScript does.
 * Pure calculation: no I/O.
 */

const BIG_MARK = '\u0000bigint:';

/** `JSON.stringify` with Go's escapes; `bigint` values are written as plain integer literals. */
export function goJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    if (!(e instanceof TypeError) || !/BigInt/i.test(e.message)) throw e;
    return goJsonWithBigInts(value);
  }
  if (text === undefined) throw new TypeError('value cannot be rendered as JSON');
  return hasHtmlUnsafe(text) ? text.replace(HTML_UNSAFE_ALL, escapeChar) : text;
}

/**
 * `goJson` for values that hold `bigint`s: each written as a marked string, then unquoted. The
 * marks go into a copy of only the objects on the way to a bigint (an IPAM block's spec and its
 * sequence map, say), and the copy is written by JSON.stringify without a replacer: a replacer
 * function called for every value costs several times the whole stringify.
 */
function goJsonWithBigInts(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(markBigInts(value));
  } catch (e) {
    // A bigint behind a toJSON: the slow way, which sees what toJSON returns.
    if (!(e instanceof TypeError)) throw e;
    text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${BIG_MARK}${v}` : v));
  }
  if (text === undefined) throw new TypeError('value cannot be rendered as JSON');
  const plain = text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
  return hasHtmlUnsafe(plain) ? plain.replace(HTML_UNSAFE_ALL, escapeChar) : plain;
}

/** `v` with every bigint a marked string: `v` itself when it holds none, else a partial copy. */
function markBigInts(v: unknown): unknown {
  if (typeof v === 'bigint') return `${BIG_MARK}${v}`;
  if (v === null || typeof v !== 'object') return v;
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return v;
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (x === null || (typeof x !== 'object' && typeof x !== 'bigint')) continue;
      const y = markBigInts(x);
      if (y !== x) {
        out ??= v.slice();
        out[i] = y;
      }
    }
    return out ?? v;
  }
  const o = v as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  for (const k in o) {
    if (!Object.hasOwn(o, k)) continue;
    const x = o[k];
    if (x === null || (typeof x !== 'object' && typeof x !== 'bigint')) continue;
    const y = markBigInts(x);
    if (y !== x) {
      out ??= { ...o };
      Object.defineProperty(out, k, { value: y, enumerable: true, writable: true, configurable: true });
    }
  }
  return out ?? o;
}

/** indexOf scans are several times faster than a character-class regex on typical values. */
function hasHtmlUnsafe(text: string): boolean {
  return (
    text.indexOf('&') !== -1 ||
    text.indexOf('<') !== -1 ||
    text.indexOf('>') !== -1 ||
    text.indexOf('\u2028') !== -1 ||
    text.indexOf('\u2029') !== -1
  );
}

const HTML_UNSAFE_ALL = /[<>&\u2028\u2029]/g;
const escapeChar = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

const LONG_DIGITS = /\d{16,}/g;

/**
 * `JSON.parse`, except that integers outside the safe range come back as `bigint` instead of being
 * rounded. Throws SyntaxError like `JSON.parse`.
 */
export function parseJsonExact(text: string): unknown {
  LONG_DIGITS.lastIndex = 0;
  let m = LONG_DIGITS.exec(text);
  if (!m) return JSON.parse(text);
  // Each run of 16+ digits outside a string literal that is a whole integer token is quoted with a
  // marker, then turned into a bigint. Whether a run is inside a string is told by the parity of
  // the unescaped quotes before it, found by indexOf (a string's own quotes are escaped).
  let marked = '';
  let copied = 0;
  let quotesTo = 0;
  let inString = false;
  for (; m; m = LONG_DIGITS.exec(text)) {
    const at = m.index;
    for (let q = text.indexOf('"', quotesTo); q !== -1 && q < at; q = text.indexOf('"', q + 1)) {
      if (!isEscaped(text, q)) inString = !inString;
      quotesTo = q + 1;
    }
    if (inString) continue;
    const end = at + m[0].length;
    const before = text.charCodeAt(at - 1);
    const after = text.charCodeAt(end);
    // A fraction or an exponent (".", "e", "E", or a sign after one) is not an integer token.
    if (before === 0x2e || before === 0x65 || before === 0x45 || before === 0x2b) continue;
    if (after === 0x2e || after === 0x65 || after === 0x45) continue;
    const negative = before === 0x2d;
    if (negative && (text.charCodeAt(at - 2) | 0x20) === 0x65) continue; // an exponent's sign
    const start = negative ? at - 1 : at;
    const token = text.slice(start, end);
    if (Number.isSafeInteger(Number(token))) continue;
    marked += `${text.slice(copied, start)}"${BIG_MARK_JSON}${token}"`;
    copied = end;
  }
  if (copied === 0) return JSON.parse(text);
  return toBigInts(JSON.parse(marked + text.slice(copied)));
}

/** The marker as it is written inside a JSON string literal. */
const BIG_MARK_JSON = '\\u0000bigint:';

/** A quote at `i` is escaped when an odd number of backslashes precede it. */
function isEscaped(text: string, i: number): boolean {
  let n = 0;
  while (i - n - 1 >= 0 && text.charCodeAt(i - n - 1) === 0x5c) n++;
  return n % 2 === 1;
}

/** Replaces marked strings by their bigint, in place (a walk is faster than a JSON.parse reviver). */
function toBigInts(v: unknown): unknown {
  if (typeof v === 'string') return v.startsWith(BIG_MARK) ? BigInt(v.slice(BIG_MARK.length)) : v;
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x !== null && (typeof x === 'object' || typeof x === 'string')) v[i] = toBigInts(x);
    }
    return v;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) {
    const x = o[k];
    if (x !== null && (typeof x === 'object' || typeof x === 'string')) o[k] = toBigInts(x);
  }
  return o;
}
