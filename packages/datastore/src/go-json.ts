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
  let text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${BIG_MARK}${v}` : v));
  if (text === undefined) throw new TypeError('value cannot be rendered as JSON');
  text = text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
  return hasHtmlUnsafe(text) ? text.replace(HTML_UNSAFE_ALL, escapeChar) : text;
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
 * `JSON.parse`, except that integers outside the safe range come back as `bigint` instead of being
 * rounded. Throws SyntaxError like `JSON.parse`.
 */
export function parseJsonExact(text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  // Quote long integer literals (outside strings) with a marker, then turn them into bigint.
  let out = '';
  let i = 0;
  let last = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // skip a string literal
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      i++;
      continue;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d)
          i++;
        else break;
      }
      const lit = text.slice(start, i);
      if (/^-?\d+$/.test(lit) && !Number.isSafeInteger(Number(lit))) {
        out += `${text.slice(last, start)}"\\u0000bigint:${lit}"`;
        last = i;
      }
      continue;
    }
    i++;
  }
  if (last === 0) return JSON.parse(text);
  out += text.slice(last);
  return JSON.parse(out, (_k, v: unknown) =>
    typeof v === 'string' && v.startsWith(BIG_MARK) ? BigInt(v.slice(BIG_MARK.length)) : v,
  );
}
