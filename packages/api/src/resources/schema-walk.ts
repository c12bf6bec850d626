/**
 * Reading a zod schema's structure, for the passes that walk a decoded document beside its
 * kind's schema before validation (`field-case.ts` folds field names, `string-scalars.ts` stores
 * YAML 1.1 scalars in string fields). Wrappers (optional, default, a pipe's input, ...) are looked
 * through to the schema that says what the value is. Pure calculation.
 */
import type * as z from 'zod';

/** The parts of a zod definition the walkers read. */
export type SchemaDef = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  in?: z.ZodType;
  options?: z.ZodType[];
  entries?: Record<string, unknown>;
  values?: unknown[];
};

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

/** The definition of what `schema` holds, through its wrappers; undefined for a non-zod value. */
export function defOf(schema: z.ZodType): SchemaDef | undefined {
  let cur: z.ZodType = schema;
  for (let i = 0; i < 10; i++) {
    const d = (cur as unknown as { _zod?: { def?: SchemaDef } })._zod?.def;
    if (!d) return undefined;
    if (WRAPPERS.has(d.type) && d.innerType) cur = d.innerType;
    else if (d.type === 'pipe' && d.in) cur = d.in;
    else return d;
  }
  return undefined;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
