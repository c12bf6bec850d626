/**
 * `get -o …` output, pure: results in, text out.
 *
 * A result is what one get step returned: a list object (`<Kind>List` with `items`) when no name
 * was given, or one resource. As upstream: YAML/JSON print the only result itself, or an array of
 * results; tables print one table per result followed by a blank line; templates see the array.
 * The tables and `-o` parsing live in tables.ts, so a table output loads neither the YAML writer
 * nor the template engine.
 */
import type { Obj } from './columns.js';
import { yamlText } from './fast-yaml.js';
import { renderGoTemplate } from './go-template.js';
import { isList } from './tables.js';

/** Go's json.MarshalIndent(v, "", "  ") of decoded JSON values, with its HTML-safe escapes. */
export function goJsonIndent(v: unknown): string {
  return JSON.stringify(v, null, 2).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const META_ORDER = [
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
];

/** A resource with Go's field order: kind, apiVersion, metadata (ObjectMeta order), spec, status. */
export function goOrdered(r: Obj): Obj {
  if (isList(r)) {
    return {
      kind: r.kind,
      apiVersion: r.apiVersion,
      metadata: r.metadata,
      items: (r.items as Obj[]).map(goOrdered),
    };
  }
  const out: Obj = { kind: r.kind, apiVersion: r.apiVersion };
  const meta = (r.metadata ?? {}) as Obj;
  const m: Obj = {};
  for (const k of META_ORDER) if (meta[k] !== undefined) m[k] = meta[k];
  for (const k of Object.keys(meta)) if (!(k in m) && meta[k] !== undefined) m[k] = meta[k];
  out.metadata = m;
  for (const k of Object.keys(r)) if (!(k in out)) out[k] = r[k];
  return out;
}

export function renderJson(results: readonly Obj[]): string {
  const v = results.length === 1 ? goOrdered(results[0]!) : results.map(goOrdered);
  return `${goJsonIndent(v)}\n`;
}

/** YAML as upstream's go-yaml-wrapper writes it: keys sorted, sequences not indented, no wrapping. */
export function toYaml(v: unknown): string {
  return yamlText(v);
}

export function renderYaml(results: readonly Obj[]): string {
  return toYaml(results.length === 1 ? results[0] : results);
}

export function renderTemplate(results: readonly Obj[], template: string): string {
  return renderGoTemplate(template, results);
}
