/**
 * Encoders that write a value the way Go's encoding/json writes upstream's struct for it, compiled
 * once per zod schema from the field order the schema declares and the Go facts recorded beside it
 * (`goFieldInfo` in @calico-ts/api: omitempty / pointer / omitzero / always, and upstream value
 * forms such as `metav1.Duration`):
 *
 *   schema ──compile (cached)──► encode(value) ──► a new object: Go field order, fields Go would
 *                                                  leave out left out, absent always-fields as their
 *                                                  Go zero value, maps sorted by key, values in
 *                                                  upstream's form
 *
 * What the walk does not understand is copied unchanged. Pure calculation: no I/O.
 */
import { GO_VALUE_FORMS, type GoOmit, goFieldInfo } from '@calico-ts/api/internal';

export type Encode = (value: unknown) => unknown;

const IDENTITY: Encode = (v) => v;
const COPY_LIST: Encode = (v) => (Array.isArray(v) ? v.slice() : v);
const encoders = new WeakMap<object, Encode>();

/** How a field's Go type behaves when it is empty. */
type Shape = 'scalar' | 'list' | 'map' | 'struct';

interface FieldPlan {
  readonly key: string;
  readonly encode: Encode;
  readonly omit: GoOmit;
  readonly shape: Shape;
  /** The Go zero value, written for an unset field that has no omitempty. */
  readonly zero: () => unknown;
  /** For `omitzero` structs: whether the (raw) value is Go's zero value of the struct. */
  readonly isZero: (value: unknown) => boolean;
}

/** The encoder for a schema (compiled once, then cached per schema object). */
export function goEncoderFor(schema: unknown): Encode {
  if (schema === null || typeof schema !== 'object') return IDENTITY;
  const cached = encoders.get(schema);
  if (cached) return cached;
  // Recursive schemas: a forwarding stub stands in while this one compiles.
  let compiled: Encode = IDENTITY;
  encoders.set(schema, (v) => compiled(v));
  compiled = compile(schema);
  encoders.set(schema, compiled);
  return compiled;
}

/** Encode `value` as upstream's Go struct described by `schema` would be written. */
export function goEncodeLikeSchema(value: unknown, schema: unknown): unknown {
  return goEncoderFor(schema)(value);
}

/**
 * The encoder of a struct schema with some fields never written (metadata's resourceVersion and
 * selfLink, which the store clears). Not cached: build it once and keep it.
 */
export function goStructEncoder(schema: unknown, leaveOut: readonly string[]): Encode {
  const def = schemaDef(leaf(schema));
  if (def?.type !== 'object') return goEncoderFor(schema);
  return structEncoder(def, new Set(leaveOut));
}

function compile(schema: unknown): Encode {
  const def = schemaDef(schema);
  if (!def) return IDENTITY;
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return valueForm(schema) ?? goEncoderFor(def.innerType);
    case 'pipe':
      return goEncoderFor(def.out ?? def.in);
    case 'lazy':
      return typeof def.getter === 'function' ? (v) => goEncoderFor(def.getter!())(v) : IDENTITY;
    case 'array': {
      const el = goEncoderFor(def.element);
      if (el === IDENTITY) return COPY_LIST;
      return (v) => (Array.isArray(v) ? v.map(el) : v);
    }
    case 'record': {
      const val = goEncoderFor(def.valueType);
      return (v) => {
        if (!isPlainObject(v)) return v;
        const out: Record<string, unknown> = {};
        for (const k of goSortedKeys(v)) out[k] = val(v[k]);
        return out;
      };
    }
    case 'object':
      return structEncoder(def, undefined);
    case 'intersection':
      return goEncoderFor(def.left);
    case 'unknown':
    case 'any':
      // Free-form JSON (an IPPool status, managedFields): copied, so what is returned and what
      // the caller passed in never share objects.
      return copyJson;
    default:
      return valueForm(schema) ?? IDENTITY;
  }
}

/** The upstream value form recorded for a (leaf) schema, if any. */
function valueForm(schema: unknown): Encode | undefined {
  const form = goFieldInfo(schema).value;
  return form ? GO_VALUE_FORMS[form] : undefined;
}

function structEncoder(def: SchemaDef, leaveOut: ReadonlySet<string> | undefined): Encode {
  const shape = (def.shape ?? {}) as Record<string, unknown>;
  const plans: FieldPlan[] = [];
  for (const key of Object.keys(shape)) {
    if (leaveOut?.has(key)) continue;
    plans.push(planField(key, shape[key]));
  }
  const known = new Set(Object.keys(shape));
  const n = plans.length;
  return (v) => {
    if (!isPlainObject(v)) return v;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const f = plans[i]!;
      const x = v[f.key];
      if (x === undefined || x === null) {
        // Go reads null as unset; a field without omitempty is still written, as its zero value.
        if (f.omit === 'never' || (f.omit === 'empty' && f.shape === 'struct')) out[f.key] = f.zero();
        continue;
      }
      if (f.omit === 'zero' && f.isZero(x)) continue;
      const y = f.encode(x);
      if (f.omit === 'empty' && isGoEmpty(y, f.shape)) continue;
      out[f.key] = y;
    }
    for (const k in v) {
      if (!known.has(k) && !leaveOut?.has(k) && v[k] !== undefined) out[k] = v[k];
    }
    return out;
  };
}

function planField(key: string, schema: unknown): FieldPlan {
  const info = goFieldInfo(schema);
  const leafDef = schemaDef(leaf(schema));
  const type = leafDef?.type ?? 'unknown';
  const shape: Shape =
    type === 'array' ? 'list' : type === 'record' ? 'map' : type === 'object' ? 'struct' : 'scalar';
  const stringy = type === 'string' || type === 'enum' || type === 'template_literal';
  const omit: GoOmit = info.omit ?? (stringy || shape === 'list' || shape === 'map' ? 'empty' : 'nil');
  const encode = goEncoderFor(schema);
  let zero: () => unknown;
  if (info.value === 'time') zero = () => null;
  else if (info.value) zero = () => 0;
  else if (stringy) zero = () => '';
  else if (type === 'number' || type === 'int' || type === 'bigint') zero = () => 0;
  else if (type === 'boolean') zero = () => false;
  else if (shape === 'struct') zero = () => encode({});
  else zero = () => null;
  const isZero = shape === 'struct' && leafDef ? structIsZero(leafDef) : () => false;
  return { key, encode, omit, shape, zero, isZero };
}

/**
 * Go's `IsZero` for a struct value as decoded from `v`: every field absent, or a value-type
 * scalar at its zero. A pointer, list or map that is present (even empty) is not zero.
 */
function structIsZero(def: SchemaDef): (v: unknown) => boolean {
  const shape = (def.shape ?? {}) as Record<string, unknown>;
  const scalarValue = new Set<string>();
  const nested = new Map<string, (v: unknown) => boolean>();
  for (const [k, s] of Object.entries(shape)) {
    const info = goFieldInfo(s);
    const d = schemaDef(leaf(s));
    const t = d?.type;
    if (t === 'object' && d && info.omit !== 'nil' && info.omit !== undefined) {
      nested.set(k, structIsZero(d));
    } else if (t === 'string' || t === 'enum' || t === 'number' || t === 'boolean') {
      const pointer = info.omit === 'nil' || (info.omit === undefined && (t === 'number' || t === 'boolean'));
      if (!pointer) scalarValue.add(k);
    }
  }
  return (v) => {
    if (!isPlainObject(v)) return false;
    for (const k in v) {
      const x = v[k];
      if (x === undefined || x === null) continue;
      if (scalarValue.has(k) && (x === '' || x === 0 || x === false)) continue;
      const z = nested.get(k);
      if (z?.(x)) continue;
      return false;
    }
    return true;
  };
}

function copyJson(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(copyJson);
  const out: Record<string, unknown> = {};
  for (const k in v as Record<string, unknown>) out[k] = copyJson((v as Record<string, unknown>)[k]);
  return out;
}

function isGoEmpty(y: unknown, shape: Shape): boolean {
  switch (shape) {
    case 'scalar':
      return y === '' || y === 0 || y === false;
    case 'list':
      return Array.isArray(y) && y.length === 0;
    case 'map':
      return isPlainObject(y) && isEmptyObject(y);
    default:
      return false; // a Go struct value is never empty
  }
}

function isEmptyObject(o: Record<string, unknown>): boolean {
  for (const _ in o) return false;
  return true;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Object keys in the order Go writes a map's: by their UTF-8 bytes. UTF-16 order agrees except
 * where a key holds a character beyond U+FFFF, so only then are code points compared.
 */
export function goSortedKeys(o: Record<string, unknown>): string[] {
  const keys = Object.keys(o);
  if (keys.length < 2) return keys;
  let astral = false;
  for (const k of keys) if (/[\uD800-\uDFFF]/.test(k)) astral = true;
  return astral ? keys.sort(compareCodePoints) : keys.sort();
}

function compareCodePoints(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

// ---- zod definitions, read structurally ---------------------------------------------------------

interface SchemaDef {
  type: string;
  innerType?: unknown;
  in?: unknown;
  out?: unknown;
  element?: unknown;
  valueType?: unknown;
  shape?: unknown;
  options?: unknown;
  left?: unknown;
  getter?: () => unknown;
}

function schemaDef(schema: unknown): SchemaDef | undefined {
  if (schema === null || typeof schema !== 'object') return undefined;
  const s = schema as { def?: SchemaDef; _zod?: { def?: SchemaDef } };
  const def = s._zod?.def ?? s.def;
  return def && typeof def.type === 'string' ? def : undefined;
}

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/** The schema inside optional/nullable/default wrappers. */
function leaf(schema: unknown): unknown {
  let s = schema;
  for (let i = 0; i < 10; i++) {
    const d = schemaDef(s);
    if (!d || !WRAPPERS.has(d.type)) return s;
    s = d.innerType;
  }
  return s;
}
