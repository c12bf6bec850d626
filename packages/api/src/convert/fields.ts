/**
 * Reading untyped decoded YAML/JSON strictly, with every complaint naming the field it is about.
 * Unknown fields are refused, as upstream's strict unmarshalling of v1 documents refused them, so a
 * typo such as `nat_outgoing` is reported instead of silently dropped.
 */
import { ApiError } from '../errors.js';

export type Obj = Record<string, unknown>;

/** Where in the input we are: the document's description and the dotted path inside it. */
export class FieldPath {
  constructor(
    readonly doc: string,
    readonly path: string,
  ) {}

  child(key: string | number): FieldPath {
    if (typeof key === 'number') return new FieldPath(this.doc, `${this.path}[${key}]`);
    return new FieldPath(this.doc, this.path ? `${this.path}.${key}` : key);
  }

  /** The error to throw for this field: `cannot convert <doc>: <path>: <reason>`. */
  error(reason: string): ApiError {
    const at = this.path ? `${this.path}: ` : '';
    return new ApiError('conversion-failed', `cannot convert ${this.doc}: ${at}${reason}`);
  }
}

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a map';
  return `${typeof v} ${JSON.stringify(v)}`;
}

/** The value as a map; `undefined`/`null` read as an empty map when `optional`. */
export function readObj(v: unknown, at: FieldPath, allowed: readonly string[], optional = true): Obj {
  if (v === undefined || v === null) {
    if (optional) return {};
    throw at.error('is required');
  }
  if (!isObj(v)) throw at.error(`must be a map, got ${describe(v)}`);
  for (const k of Object.keys(v)) {
    if (!allowed.includes(k))
      throw at.child(k).error(`unknown field (expected one of: ${allowed.join(', ')})`);
  }
  return v;
}

export function optString(o: Obj, key: string, at: FieldPath): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw at.child(key).error(`must be a string, got ${describe(v)}`);
  return v;
}

export function reqString(o: Obj, key: string, at: FieldPath): string {
  const v = optString(o, key, at);
  if (v === undefined || v === '') throw at.child(key).error('is required');
  return v;
}

export function optBool(o: Obj, key: string, at: FieldPath): boolean | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw at.child(key).error(`must be true or false, got ${describe(v)}`);
  return v;
}

export function optNumber(o: Obj, key: string, at: FieldPath): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw at.child(key).error(`must be a number, got ${describe(v)}`);
  return v;
}

export function optList(o: Obj, key: string, at: FieldPath): unknown[] | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw at.child(key).error(`must be a list, got ${describe(v)}`);
  return v;
}

export function optStringList(o: Obj, key: string, at: FieldPath): string[] | undefined {
  const list = optList(o, key, at);
  if (!list) return undefined;
  return list.map((item, i) => {
    if (typeof item !== 'string')
      throw at
        .child(key)
        .child(i)
        .error(`must be a string, got ${describe(item)}`);
    return item;
  });
}

export function optStringMap(o: Obj, key: string, at: FieldPath): Record<string, string> | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw at.child(key).error(`must be a map of strings, got ${describe(v)}`);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string')
      throw at
        .child(key)
        .child(k)
        .error(`must be a string, got ${describe(val)}`);
    out[k] = val;
  }
  return out;
}
