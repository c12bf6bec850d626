/**
 * YAML 1.1 scalars in string fields, as upstream calicoctl stores them. Upstream reads YAML with
 * go-yaml v2 (YAML 1.1: `y`, `yes`, `on`, `n`, `no`, `off` are booleans; `010` is octal) and then
 * converts the value to JSON for its Go types: where the Go field is a string (a label value, an
 * annotation, a name, a selector), a boolean becomes `"true"`/`"false"` and a number becomes its
 * Go text (`strconv.FormatInt`, or `strconv.FormatFloat(v, 'g', -1, 32)` for a float). So `x: y`
 * is stored as `"true"` and `x: 1.0` as `"1"`. `decodeDocuments` reads YAML 1.1; this module
 * writes those scalars back into string fields, guided by the kind's schema, and reports each one
 * so calicoctl can say that quoting keeps the value as written.
 *
 * A field that is not a string in the schema (numbers, booleans, ports that take a number or a
 * name) keeps the value as decoded. Pure calculation: no I/O.
 */
import type * as z from 'zod';
import { isKind, type Kind } from '../kinds.js';
import { objectMetaSchema } from './metadata.js';
import { KIND_DEFINITIONS } from './registry.js';
import { defOf, isPlainObject, type SchemaDef } from './schema-walk.js';
import { formatPath } from './validate.js';

/** One scalar stored as a string. */
export interface StringScalar {
  /** Where it is (`metadata.labels.x`). */
  readonly path: string;
  /** What is stored: `"true"`, `"8"`. */
  readonly stored: string;
  /** What YAML 1.1 read there. */
  readonly read: 'boolean' | 'number';
}

/** A Go string kind: a string, a string enum, or a union of those. */
function isStringField(d: SchemaDef): boolean {
  if (d.type === 'string' || d.type === 'template_literal') return true;
  if (d.type === 'enum') return Object.values(d.entries ?? {}).every((v) => typeof v === 'string');
  if (d.type === 'literal') return (d.values ?? []).every((v) => typeof v === 'string');
  if (d.type === 'union' && d.options) {
    return d.options.every((o) => {
      const od = defOf(o);
      return od !== undefined && isStringField(od);
    });
  }
  return false;
}

/** Go's `strconv.FormatFloat(v, 'g', -1, 32)`: the shortest float32 text, `%e` past 6 digits. */
export function goFloat32Text(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  const f = Math.fround(v);
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  let digits = '';
  let exp = 0;
  for (let p = 1; p <= 9; p++) {
    const s = Math.abs(f).toExponential(p - 1);
    if (Math.fround(Number(s)) === Math.abs(f)) {
      const [mant, e] = s.split('e') as [string, string];
      digits = mant.replace('.', '');
      exp = Number(e);
      break;
    }
  }
  const sign = f < 0 ? '-' : '';
  if (exp < -4 || exp >= 6) {
    const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp) < 10 ? `0${Math.abs(exp)}` : `${Math.abs(exp)}`;
    return `${sign}${mant}e${exp < 0 ? '-' : '+'}${e}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const int = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
  const frac = digits.slice(exp + 1);
  return `${sign}${int}${frac ? `.${frac}` : ''}`;
}

/** The Go text of a decoded scalar for a string field, or undefined to keep the value. */
function stringOf(v: unknown): string | undefined {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isInteger(v) ? v.toFixed(0) : goFloat32Text(v);
  return undefined;
}

function coerce(
  value: unknown,
  schema: z.ZodType | undefined,
  path: PropertyKey[],
  out: StringScalar[],
): unknown {
  if (!schema) return value;
  const d = defOf(schema);
  if (!d) return value;
  if (isStringField(d)) {
    const s = stringOf(value);
    if (s === undefined) return value;
    out.push({ path: formatPath(path), stored: s, read: typeof value === 'boolean' ? 'boolean' : 'number' });
    return s;
  }
  if (d.type === 'array' && d.element && Array.isArray(value)) {
    return value.map((v, i) => coerce(v, d.element, [...path, i], out));
  }
  if (d.type === 'record' && d.valueType && isPlainObject(value)) {
    const result: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) result[k] = coerce(v, d.valueType, [...path, k], out);
    return result;
  }
  if (d.type === 'union' && d.options && isPlainObject(value)) {
    const objects = d.options.filter((o) => defOf(o)?.type === 'object');
    return objects.length === 1 ? coerce(value, objects[0], path, out) : value;
  }
  if (d.type !== 'object' || !d.shape || !isPlainObject(value)) return value;
  const shape = d.shape;
  const result: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    result[k] = Object.hasOwn(shape, k) ? coerce(v, shape[k], [...path, k], out) : v;
  }
  return result;
}

/**
 * A copy of a resource document with every boolean or number that sits in a string field written
 * as the string upstream stores, and where each one was. Field names must already be canonical
 * (`foldFieldCase`). A document of an unknown kind is returned unchanged.
 */
export function storeStringScalars(doc: unknown): { doc: unknown; scalars: StringScalar[] } {
  if (!isPlainObject(doc) || typeof doc.kind !== 'string' || !isKind(doc.kind)) return { doc, scalars: [] };
  const kind: Kind = doc.kind;
  const scalars: StringScalar[] = [];
  const out: Record<string, unknown> = { ...doc };
  if (isPlainObject(doc.metadata))
    out.metadata = coerce(doc.metadata, objectMetaSchema, ['metadata'], scalars);
  if (isPlainObject(doc.spec)) out.spec = coerce(doc.spec, KIND_DEFINITIONS[kind].spec, ['spec'], scalars);
  return { doc: out, scalars };
}
