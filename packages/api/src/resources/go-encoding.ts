/**
 * How upstream's Go types write each field as JSON, recorded beside the zod schemas so a writer
 * can store the bytes upstream's clientv3 stores. The schemas declare fields in Go struct order;
 * this module adds what order alone cannot say:
 *
 * - when a field is left out (`omit`): Go's `omitempty` on a value type drops "", 0, false and
 *   empty lists and maps; on a pointer it drops only an unset field; `omitzero` on a struct drops
 *   it when every field is zero; a field without either is always written, as its zero value
 *   when unset (`"bpfLogLevel":""`, `"hostPort":0`, `"controllers":{}`);
 * - upstream types with their own JSON form (`value`): `metav1.Duration` writes Go's
 *   `Duration.String()` ("90s" is stored as "1m30s"), `numorstring.Port` writes a single port as a
 *   number ("80" and "80:80" are stored as 80), `Uint8OrString` (protocols, DSCP) writes digits as
 *   a number, `ASNumber` writes a number ("1.10" is stored as 65546).
 *
 * A field nobody annotated takes the mode its zod type implies for Calico's structs: strings,
 * lists and maps are Go value types with `omitempty`; booleans, numbers, unions and nested
 * objects are pointers with `omitempty`.
 *
 * Pure calculation: no I/O.
 */
import * as z from 'zod';

export type GoOmit =
  /** A Go value type with `omitempty`: "", 0, false, empty lists and maps are left out. */
  | 'empty'
  /** A Go pointer (also to a list or map) with `omitempty`: left out only when unset. */
  | 'nil'
  /** A Go struct with `omitzero`: left out when every one of its fields is unset or zero. */
  | 'zero'
  /** No `omitempty`: always written; an unset field is written as its Go zero value. */
  | 'never';

/** Upstream types whose JSON form differs from what a user may write. */
export type GoValue = 'duration' | 'port' | 'uint8OrString' | 'asNumber' | 'time';

export interface GoFieldInfo {
  readonly omit?: GoOmit;
  readonly value?: GoValue;
}

/** Go encoding facts keyed by schema; read through `goFieldInfo`. */
export const goFieldRegistry = z.registry<GoFieldInfo>();

/**
 * Record how upstream writes `schema`. The facts are recorded on a copy (which inherits what the
 * original has), so a schema shared by many fields, such as a protocol, is never changed.
 */
export function goField<T extends z.ZodType>(schema: T, info: GoFieldInfo): T {
  const own = schema.clone() as T;
  goFieldRegistry.add(own, info);
  return own;
}

/** An optional field of a Go pointer type: left out only when unset. */
export const goPtr = <T extends z.ZodType>(schema: T) => goField(schema.optional(), { omit: 'nil' });
/** An optional field of a Go value type with `omitempty`: false and 0 are left out too. */
export const goVal = <T extends z.ZodType>(schema: T) => goField(schema.optional(), { omit: 'empty' });
/** A field without `omitempty`: always written, as its zero value when unset. */
export const goAlways = <T extends z.ZodType>(schema: T) => goField(schema, { omit: 'never' });

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/**
 * What is recorded for a field's schema: the outermost `omit` and the innermost-first `value`
 * found while unwrapping optional/nullable/default wrappers.
 */
export function goFieldInfo(schema: unknown): GoFieldInfo {
  let omit: GoOmit | undefined;
  let value: GoValue | undefined;
  let s = schema as z.ZodType | undefined;
  for (let i = 0; s && i < 10; i++) {
    const def = (s as unknown as { _zod?: { def?: { type: string; innerType?: z.ZodType } } })._zod?.def;
    if (!def) break; // not a zod schema
    const info = goFieldRegistry.get(s);
    if (info) {
      omit ??= info.omit;
      value ??= info.value;
    }
    if (!WRAPPERS.has(def.type)) break;
    s = def.innerType;
  }
  return { ...(omit ? { omit } : {}), ...(value ? { value } : {}) };
}

// ---- upstream value forms ------------------------------------------------------------------------

const NS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const MAX_DURATION = (1n << 63n) - 1n;
const DURATION_PART = /^(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/;

/**
 * Go's `time.ParseDuration`: nanoseconds as a bigint, or undefined when Go would refuse the text
 * (the same grammar: an optional sign, then number-unit pairs like "1h30m" or "1.5s"; "0" alone).
 */
export function parseGoDuration(text: string): bigint | undefined {
  let s = text;
  let neg = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') return undefined;
  let total = 0n;
  while (s !== '') {
    const m = DURATION_PART.exec(s);
    if (!m) return undefined;
    const [all, whole = '', frac = '', unit = ''] = m;
    if (whole === '' && frac === '') return undefined; // "." or a unit alone
    const scale = NS[unit]!;
    let v = whole === '' ? 0n : BigInt(whole);
    if (v > MAX_DURATION / scale) return undefined;
    v *= scale;
    if (frac !== '') {
      // As Go: the fraction is scaled in floating point and truncated.
      const digits = frac.slice(0, 18);
      const f = Number(digits) * (Number(scale) / 10 ** digits.length);
      v += BigInt(Math.trunc(f));
    }
    total += v;
    if (total > MAX_DURATION) return undefined;
    s = s.slice(all.length);
  }
  return neg ? -total : total;
}

/** Go's `time.Duration.String()`: "1h2m3.5s", "1.5ms", "300ns", "0s". */
export function formatGoDuration(nanos: bigint): string {
  if (nanos === 0n) return '0s';
  const neg = nanos < 0n;
  let u = neg ? -nanos : nanos;
  let out: string;
  if (u < 1_000_000_000n) {
    const [unit, prec] = u < 1_000n ? ['ns', 0] : u < 1_000_000n ? ['µs', 3] : ['ms', 6];
    const div = 10n ** BigInt(prec);
    out = `${u / div}${fraction(u % div, prec)}${unit}`;
  } else {
    const secFrac = fraction(u % 1_000_000_000n, 9);
    u /= 1_000_000_000n;
    out = `${u % 60n}${secFrac}s`;
    u /= 60n;
    if (u > 0n) {
      out = `${u % 60n}m${out}`;
      u /= 60n;
      if (u > 0n) out = `${u}h${out}`;
    }
  }
  return neg ? `-${out}` : out;
}

/** ".5", ".125" or "" for a remainder of `prec` digits, trailing zeros dropped (Go's fmtFrac). */
function fraction(rem: bigint, prec: number): string {
  if (rem === 0n) return '';
  return `.${rem.toString().padStart(prec, '0').replace(/0+$/, '')}`;
}

/** A duration as `metav1.Duration` stores it; text Go would not parse is returned unchanged. */
export function goDurationValue(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const ns = parseGoDuration(v);
  return ns === undefined ? v : formatGoDuration(ns);
}

const DIGITS = /^\d+$/;
const PORT_RANGE = /^(\d+):(\d+)$/;

/** `numorstring.Port` as upstream writes it: a single port as a number, a range as "min:max". */
export function goPortValue(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  if (DIGITS.test(v)) {
    const n = Number(v);
    return n <= 65535 ? n : v;
  }
  const r = PORT_RANGE.exec(v);
  if (!r) return v;
  const lo = Number(r[1]);
  const hi = Number(r[2]);
  if (lo > 65535 || hi > 65535) return v;
  return lo === hi ? lo : `${lo}:${hi}`;
}

/** `numorstring.Uint8OrString` (protocols, DSCP): a string of digits that fits a byte is a number. */
export function goUint8OrStringValue(v: unknown): unknown {
  if (typeof v !== 'string' || !DIGITS.test(v)) return v;
  const n = Number(v);
  return n <= 255 ? n : v;
}

const DOTTED_ASN = /^(\d+)\.(\d+)$/;

/** `numorstring.ASNumber`: always a number; "high.low" is high·65536 + low. */
export function goASNumberValue(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  if (DIGITS.test(v)) {
    const n = Number(v);
    return n <= 0xffffffff ? n : v;
  }
  const d = DOTTED_ASN.exec(v);
  if (!d) return v;
  const hi = Number(d[1]);
  const lo = Number(d[2]);
  return hi <= 0xffff && lo <= 0xffff ? hi * 65536 + lo : v;
}

const CANONICAL_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

/** `metav1.Time`: RFC 3339 in UTC, whole seconds. Text that is not a time is returned unchanged. */
export function goTimeValue(v: unknown): unknown {
  if (typeof v !== 'string' || CANONICAL_TIME.test(v)) return v;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) return v;
  return new Date(ms - (((ms % 1000) + 1000) % 1000)).toISOString().replace('.000Z', 'Z');
}

/** The normaliser for each upstream value form. */
export const GO_VALUE_FORMS: { readonly [K in GoValue]: (v: unknown) => unknown } = {
  duration: goDurationValue,
  port: goPortValue,
  uint8OrString: goUint8OrStringValue,
  asNumber: goASNumberValue,
  time: goTimeValue,
};
