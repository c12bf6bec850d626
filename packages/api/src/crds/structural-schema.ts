/**
 * Kubernetes structural schemas (a CRD version's `openAPIV3Schema`), made from zod's JSON Schema or
 * written by hand, and a model of what the API server does with an object under one.
 *
 *   zod schema ──z.toJSONSchema──► JSON Schema ──toStructuralSchema──► structural schema ──► CRD
 *                                   (draft 2020-12)   types, shape, required,
 *                                                     int-or-string, nullable
 *
 * What is kept is what decides whether an upstream object survives the API server: the type of each
 * node, object properties (anything else is pruned), maps (`additionalProperties` with the value
 * type), list items, `required`, `nullable`, and `x-kubernetes-int-or-string` for a number-or-string.
 * Value rules (enums, patterns, bounds, lengths) are left out on purpose: upstream's clients
 * validate before they write and so does `@calico-ts/api`, and where our rules are stricter than
 * upstream's (exact case where upstream ignores it) a CRD carrying them would refuse objects
 * upstream wrote. Descriptions are left out too; the CRDs stay small.
 *
 * The API server refuses a schema with `$ref`, a list of types, `additionalProperties: false`,
 * `const`, `propertyNames` or a node without a type; none of them is ever emitted. A JSON Schema
 * construct with no structural equivalent (an object union, `unknown`) throws, naming its path,
 * so a new shape in a zod schema is noticed when the CRDs are generated.
 *
 * Pure calculation: no I/O.
 */

export type StructuralType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';

/** One node of a CRD's `openAPIV3Schema`, limited to what this project emits. */
export interface StructuralSchema {
  readonly type?: StructuralType;
  readonly format?: string;
  readonly nullable?: boolean;
  readonly properties?: Readonly<Record<string, StructuralSchema>>;
  readonly required?: readonly string[];
  /** A map: every value has this schema. Never together with `properties`. */
  readonly additionalProperties?: StructuralSchema;
  readonly items?: StructuralSchema;
  /** Only on an int-or-string node, as upstream's controller-gen writes it. */
  readonly anyOf?: readonly [{ readonly type: 'integer' }, { readonly type: 'string' }];
  readonly 'x-kubernetes-int-or-string'?: true;
}

// ---- building by hand ------------------------------------------------------------------------

export const str = (format?: 'date-time'): StructuralSchema =>
  format ? { type: 'string', format } : { type: 'string' };
export const bool = (): StructuralSchema => ({ type: 'boolean' });
export const int = (format?: 'int32' | 'int64'): StructuralSchema =>
  format ? { type: 'integer', format } : { type: 'integer' };
export const num = (): StructuralSchema => ({ type: 'number' });
export const intOrString = (): StructuralSchema => ({
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  'x-kubernetes-int-or-string': true,
});
export const arr = (items: StructuralSchema): StructuralSchema => ({ type: 'array', items });
export const map = (values: StructuralSchema): StructuralSchema => ({
  type: 'object',
  additionalProperties: values,
});
export const obj = (
  properties: Record<string, StructuralSchema>,
  required: readonly string[] = [],
): StructuralSchema => {
  for (const r of required) {
    if (!Object.hasOwn(properties, r)) throw new Error(`structural schema: required "${r}" is no property`);
  }
  return required.length > 0
    ? { type: 'object', properties, required: [...required].sort() }
    : { type: 'object', properties };
};
export const nullable = (s: StructuralSchema): StructuralSchema => ({ ...s, nullable: true });

/** `schema` (an object node) with more properties. */
export function withProperties(
  schema: StructuralSchema,
  extra: Record<string, StructuralSchema>,
): StructuralSchema {
  if (schema.type !== 'object' || schema.additionalProperties) {
    throw new Error('structural schema: properties can only be added to an object with properties');
  }
  return { ...schema, properties: { ...schema.properties, ...extra } };
}

// ---- from JSON Schema ------------------------------------------------------------------------

type JsonSchema = { readonly [key: string]: unknown };

const SCALARS = new Set(['string', 'integer', 'number', 'boolean']);
/** Formats the API server checks the way upstream means them; any other format is dropped. */
const KEPT_FORMATS = new Set(['date-time', 'int32', 'int64']);

function fail(path: string, what: string): never {
  throw new Error(`structural schema at ${path}: ${what}`);
}

function isInteger(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v);
}

/**
 * The structural schema of a JSON Schema as `z.toJSONSchema` writes it (draft 2020-12, reused
 * schemas inlined). `path` names the node in errors.
 */
export function toStructuralSchema(node: JsonSchema, path = '$'): StructuralSchema {
  if (node.$ref !== undefined) fail(path, '$ref is not allowed; generate with reused: "inline"');
  const union = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
  if (union !== undefined) return fromUnion(union, path);
  if (Array.isArray(node.type)) {
    const branches = (node.type as string[]).map((type) => ({ type }));
    return fromUnion(branches, path);
  }

  const type = node.type as string | undefined;
  switch (type) {
    case 'object':
      return fromObject(node, path);
    case 'array': {
      const items = node.items as JsonSchema | undefined;
      if (items === undefined || Array.isArray(items)) fail(path, 'a list needs one item schema');
      return arr(toStructuralSchema(items, `${path}[]`));
    }
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean': {
      const format = node.format as string | undefined;
      return format !== undefined && KEPT_FORMATS.has(format) ? { type, format } : { type };
    }
    default:
      return fail(path, `no type Kubernetes can store (${JSON.stringify(node).slice(0, 80)})`);
  }
}

function fromObject(node: JsonSchema, path: string): StructuralSchema {
  const props = node.properties as Record<string, JsonSchema> | undefined;
  const extra = node.additionalProperties;
  if (props !== undefined && Object.keys(props).length > 0) {
    const properties: Record<string, StructuralSchema> = {};
    for (const [k, v] of Object.entries(props)) properties[k] = toStructuralSchema(v, `${path}.${k}`);
    const required = ((node.required as string[] | undefined) ?? []).filter((r) => Object.hasOwn(props, r));
    return obj(properties, required);
  }
  if (extra !== undefined && typeof extra === 'object' && extra !== null) {
    return map(toStructuralSchema(extra as JsonSchema, `${path}{}`));
  }
  // An object with no known fields: Kubernetes keeps it, pruning whatever is inside.
  return { type: 'object' };
}

function fromUnion(branches: readonly JsonSchema[], path: string): StructuralSchema {
  const isNull = (b: JsonSchema) => b.type === 'null';
  const rest = branches.filter((b) => !isNull(b));
  const withNull = rest.length < branches.length;
  if (rest.length === 0) fail(path, 'null alone is no type');
  const wrap = (s: StructuralSchema) => (withNull ? nullable(s) : s);
  if (rest.length === 1) return wrap(toStructuralSchema(rest[0]!, path));

  const types = new Set(rest.map((b) => b.type));
  if (![...types].every((t) => typeof t === 'string' && SCALARS.has(t))) {
    fail(path, 'a union of anything but scalars has no structural form');
  }
  if (types.has('string') && (types.has('integer') || types.has('number')) && !types.has('boolean')) {
    return wrap(intOrString());
  }
  const isInt = (b: JsonSchema) => b.type === 'integer' || (b.type === 'number' && isInteger(b.const));
  if (rest.every(isInt)) return wrap({ type: 'integer' }); // literals such as ipVersion 4 | 6
  if ([...types].every((t) => t === 'integer' || t === 'number')) return wrap({ type: 'number' });
  if (types.size === 1) return wrap({ type: [...types][0] as StructuralType });
  return fail(path, `a union of ${[...types].join(', ')} has no structural form`);
}

// ---- what the API server does with an object -------------------------------------------------

/** One thing the API server would prune from an object or refuse in it. */
export interface SchemaProblem {
  readonly kind: 'pruned' | 'rejected';
  /** e.g. `spec.ingress[0].source.nets` */
  readonly path: string;
  readonly detail: string;
}

export interface Admission {
  /** What the API server would store: the object less what it prunes (moot if anything is rejected). */
  readonly stored: unknown;
  /** Every field pruned or rejected, in document order. */
  readonly problems: readonly SchemaProblem[];
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function join(path: string, key: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(key)) return `${path}[${JSON.stringify(key)}]`;
  return path ? `${path}.${key}` : key;
}

/**
 * A model of what the API server does with `object` under a CRD's `schema` (apiextensions'
 * pruning, then structural validation): unknown fields are pruned, and so is a null in a field
 * that is neither `nullable` nor required; a wrong type, a missing required field and any other
 * null without `nullable` are rejected. The root's `metadata` is an ObjectMeta, which the server
 * checks by its own rules, and is passed through. The integration test holds this model against a
 * real kube-apiserver; tests and writers use it to see what a CRD would do to an object.
 */
export function admitObject(schema: StructuralSchema, object: unknown): Admission {
  const problems: SchemaProblem[] = [];
  const stored = admit(schema, object, '', problems);
  return { stored, problems };
}

function admit(schema: StructuralSchema, value: unknown, path: string, out: SchemaProblem[]): unknown {
  const actual = typeOf(value);
  if (value === null) {
    if (!schema.nullable) out.push({ kind: 'rejected', path, detail: 'null where the schema allows none' });
    return value;
  }
  if (schema['x-kubernetes-int-or-string']) {
    if (actual !== 'integer' && actual !== 'string') {
      out.push({ kind: 'rejected', path, detail: `${actual} where an integer or a string belongs` });
    }
    return value;
  }
  const want = schema.type;
  if (!(want === actual || (want === 'number' && actual === 'integer'))) {
    out.push({ kind: 'rejected', path, detail: `${actual} where ${want ?? 'nothing'} belongs` });
    return value;
  }
  if (want === 'array') {
    return (value as unknown[]).map((v, i) => admit(schema.items ?? {}, v, `${path}[${i}]`, out));
  }
  if (want !== 'object') return value;
  const o = value as Record<string, unknown>;
  const required = new Set(schema.required ?? []);
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    const at = join(path, k);
    const sub = schema.additionalProperties ?? schema.properties?.[k];
    if (path === '' && k === 'metadata') kept[k] = v;
    else if (sub === undefined) out.push({ kind: 'pruned', path: at, detail: 'unknown field' });
    else if (v === null && !sub.nullable && !required.has(k)) {
      out.push({ kind: 'pruned', path: at, detail: 'null in an optional field that is not nullable' });
    } else kept[k] = admit(sub, v, at, out);
  }
  for (const r of required) {
    if (!Object.hasOwn(o, r)) out.push({ kind: 'rejected', path: join(path, r), detail: 'required' });
  }
  return kept;
}
