/**
 * Field names read without regard to case, as upstream's decoder reads them: Go's encoding/json
 * matches a JSON key to a struct field exactly first and then case-insensitively, so upstream's own
 * reference examples (the KubeControllersConfiguration page spells `loadbalancer`) are accepted.
 * Here the document is rewritten to the canonical spelling before validation, and each rewrite is
 * reported so the caller can tell the user which spelling is canonical.
 *
 * Only struct fields fold: keys of maps (labels, annotations, matchLabels) are data and are never
 * touched. A key whose canonical spelling is also present is left alone, and validation then
 * reports it as unknown.
 *
 * Pure calculation: no I/O.
 */
import type * as z from 'zod';
import { isKind, type Kind } from '../kinds.js';
import { objectMetaSchema } from './metadata.js';
import { KIND_DEFINITIONS } from './registry.js';
import { defOf, isPlainObject } from './schema-walk.js';
import { formatPath } from './validate.js';

/** One key read under its canonical spelling. */
export interface FoldedField {
  /** Where the key was, as the user spelled it (`spec.controllers.loadbalancer`). */
  readonly path: string;
  /** The same place with the canonical spelling (`spec.controllers.loadBalancer`). */
  readonly canonical: string;
}

function fold(
  value: unknown,
  schema: z.ZodType | undefined,
  path: PropertyKey[],
  out: FoldedField[],
): unknown {
  if (!schema) return value;
  const d = defOf(schema);
  if (!d) return value;
  if (d.type === 'array' && d.element && Array.isArray(value)) {
    return value.map((v, i) => fold(v, d.element, [...path, i], out));
  }
  if (d.type === 'union' && d.options && isPlainObject(value)) {
    // A union of objects folds only when exactly one of its branches is an object.
    const objects = d.options.filter((o) => defOf(o)?.type === 'object');
    return objects.length === 1 ? fold(value, objects[0], path, out) : value;
  }
  if (d.type !== 'object' || !d.shape || !isPlainObject(value)) return value;
  const shape = d.shape;
  const known = Object.keys(shape);
  const byLower = new Map<string, string>();
  for (const k of known) byLower.set(k.toLowerCase(), k);
  const result: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    let name = key;
    if (!Object.hasOwn(shape, key)) {
      const canonical = byLower.get(key.toLowerCase());
      if (canonical !== undefined && !Object.hasOwn(value, canonical)) {
        name = canonical;
        out.push({ path: formatPath([...path, key]), canonical: formatPath([...path, canonical]) });
      }
    }
    result[name] = Object.hasOwn(shape, name) ? fold(v, shape[name], [...path, name], out) : v;
  }
  return result;
}

/**
 * A copy of a resource document with every struct field under its canonical spelling, and the
 * fields that were renamed. A document of an unknown kind is returned unchanged.
 */
export function foldFieldCase(doc: unknown): { doc: unknown; folded: FoldedField[] } {
  if (!isPlainObject(doc) || typeof doc.kind !== 'string' || !isKind(doc.kind)) return { doc, folded: [] };
  const kind: Kind = doc.kind;
  const folded: FoldedField[] = [];
  const out: Record<string, unknown> = { ...doc };
  if (isPlainObject(doc.metadata)) out.metadata = fold(doc.metadata, objectMetaSchema, ['metadata'], folded);
  if (isPlainObject(doc.spec)) out.spec = fold(doc.spec, KIND_DEFINITIONS[kind].spec, ['spec'], folded);
  return { doc: out, folded };
}
