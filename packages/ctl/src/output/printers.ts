/**
 * `get -o …` output, pure: results in, text out.
 *
 * A result is what one get step returned: a list object (`<Kind>List` with `items`) when no name
 * was given, or one resource. As upstream: YAML/JSON print the only result itself, or an array of
 * results; tables print one table per result followed by a blank line; templates see the array.
 */
import { API_VERSION, isKind, type Kind } from '@calico-ts/api';
import { CtlError } from '../errors.js';
import { type CellContext, KIND_TABLES, type Obj } from './columns.js';
import { yamlText } from './fast-yaml.js';
import { renderGoTemplate } from './go-template.js';
import { tabulate } from './tabwriter.js';

export type OutputFormat =
  | { kind: 'ps' }
  | { kind: 'wide' }
  | { kind: 'yaml' }
  | { kind: 'json' }
  | { kind: 'custom-columns'; headings: string[] }
  | { kind: 'go-template'; template: string }
  | { kind: 'go-template-file'; path: string };

/** Parse `-o` as upstream does; errors use upstream's messages. */
export function parseOutputFormat(text: string): OutputFormat {
  switch (text) {
    case 'yaml':
    case 'yml':
      return { kind: 'yaml' };
    case 'json':
      return { kind: 'json' };
    case 'ps':
      return { kind: 'ps' };
    case 'wide':
      return { kind: 'wide' };
  }
  const eq = text.indexOf('=');
  const key = eq < 0 ? text : text.slice(0, eq);
  const value = eq < 0 ? '' : text.slice(eq + 1);
  switch (key) {
    case 'go-template':
      if (value === '') throw new CtlError('usage', 'need to specify a template');
      return { kind: 'go-template', template: value };
    case 'go-template-file':
      if (value === '') throw new CtlError('usage', 'need to specify a template file');
      return { kind: 'go-template-file', path: value };
    case 'custom-columns':
      if (value === '') throw new CtlError('usage', 'need to specify at least one column');
      return { kind: 'custom-columns', headings: value.split(',') };
  }
  throw new CtlError('usage', `unrecognized output format '${text}'`);
}

/** A list object as upstream's clients return it. */
export function listObject(kind: Kind, items: Obj[], revision: string): Obj {
  return { kind: `${kind}List`, apiVersion: API_VERSION, metadata: { resourceVersion: revision }, items };
}

/** The kind a result is of (a resource's kind, or a list's item kind). */
export function resultKind(result: Obj): Kind {
  const k = String(result.kind ?? '');
  const base = k.endsWith('List') ? k.slice(0, -4) : k;
  if (!isKind(base)) throw new CtlError('failed', `cannot print a result of kind ${JSON.stringify(k)}`);
  return base;
}

function isList(result: Obj): boolean {
  return String(result.kind ?? '').endsWith('List') && Array.isArray(result.items);
}

export interface TableOptions {
  wide: boolean;
  /** Explicit headings (custom-columns); default: the kind's ps or wide headings. */
  headings?: readonly string[];
  /** Prepend NAMESPACE for namespaced kinds (with -n or -A). */
  printNamespace: boolean;
  cells?: CellContext;
}

export function renderTables(results: readonly Obj[], opts: TableOptions): string {
  const ctx: CellContext = opts.cells ?? { globalASNumber: '64512' };
  let out = '';
  for (const result of results) {
    const kind = resultKind(result);
    const table = KIND_TABLES[kind];
    let headings = [...(opts.headings ?? (opts.wide ? table.wide : table.ps))];
    if (opts.printNamespace && table.cells.NAMESPACE) headings = ['NAMESPACE', ...headings];
    for (const h of headings) {
      if (!table.cells[h]) {
        throw new CtlError(
          'usage',
          `Unknown heading ${h}, valid values are: ${Object.keys(table.cells).sort().join(', ')}`,
        );
      }
    }
    const items = isList(result) ? (result.items as Obj[]) : [result];
    const rows = [headings, ...items.map((r) => headings.map((h) => table.cells[h]!(r, ctx)))];
    out += `${tabulate(rows)}\n`;
  }
  return out;
}

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
