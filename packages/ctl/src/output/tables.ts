/**
 * `get -o …` parsing, list objects and the ps/wide/custom-columns tables: everything a table
 * output needs, and nothing more. The YAML, JSON and template printers are in printers.ts, which
 * `get` loads only for those formats.
 */
import { API_VERSION, isKind, type Kind } from '@calico-ts/api';
import { CtlError } from '../errors.js';
import { type CellContext, KIND_TABLES, type Obj } from './columns.js';
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

export function isList(result: Obj): boolean {
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
