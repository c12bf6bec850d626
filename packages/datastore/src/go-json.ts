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

/** `goJson` for values known to hold `bigint`s (IPAM blocks): no failed first attempt. */
export function goJsonWithBigInts(value: unknown): string {
  // An IPAM block's bigints are its own fields and those of its sequenceNumberForAllocation map:
  // marked here, JSON.stringify needs no replacer (a replacer is a call per value, most of the cost
  // of encoding a block); bigints deeper down take the replacer path.
  let text: string | undefined;
  try {
    text = JSON.stringify(markBigInts(value));
  } catch (e) {
    if (!(e instanceof TypeError) || !/BigInt/i.test(e.message)) throw e;
    text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${BIG_MARK}${v}` : v));
  }
  if (text === undefined) throw new TypeError('value cannot be rendered as JSON');
  text = text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
  return hasHtmlUnsafe(text) ? text.replace(HTML_UNSAFE_ALL, escapeChar) : text;
}

/**
 * `value` with the bigints of its own fields, and of fields that are plain objects (an IPAM block's
 * `sequenceNumberForAllocation`), as marked strings: copies where there are any.
 */
function markBigInts(value: unknown, depth = 2): unknown {
  if (typeof value === 'bigint') return `${BIG_MARK}${value}`;
  if (depth === 0 || value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value)) {
    const m =
      typeof v === 'bigint' || (depth > 1 && v !== null && typeof v === 'object')
        ? markBigInts(v, depth - 1)
        : v;
    if (m !== v) {
      copy ??= { ...(value as Record<string, unknown>) };
      copy[k] = m;
    }
  }
  return copy ?? value;
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

/**
 * A string literal (skipped whole), or a run of 16+ digits that starts a number token (not inside
 * a fraction or an exponent). The regex engine skips everything else natively.
 */
const LONG_NUMBER_OR_STRING = /"[^"\\]*(?:\\.[^"\\]*)*"|(?<![\d.eE+-])-?\d{16,}(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
const INTEGER = /^-?\d+$/;

/**
 * `JSON.parse`, except that integers outside the safe range come back as `bigint` instead of being
 * rounded. Throws SyntaxError like `JSON.parse`.
 */
export function parseJsonExact(text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  // Quote long integer literals (outside strings) with a marker, then turn them into bigint.
  let found = false;
  const marked = text.replace(LONG_NUMBER_OR_STRING, (tok) => {
    if (tok.charCodeAt(0) === 0x22 || !INTEGER.test(tok) || Number.isSafeInteger(Number(tok))) return tok;
    found = true;
    return `"\\u0000bigint:${tok}"`;
  });
  if (!found) return JSON.parse(text);
  return toBigInts(JSON.parse(marked));
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
