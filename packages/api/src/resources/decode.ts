/**
 * Decoding of resource files as calicoctl reads them: a YAML stream (`---` separated), a JSON
 * object, a JSON array, and `kind: List` / `kind: <Kind>List` wrappers with `items` — all flattened
 * into one list of documents, empty documents skipped.
 */
import { parseAllDocuments } from 'yaml';
import { ApiError } from '../errors.js';

function flatten(doc: unknown, out: unknown[]): void {
  if (doc === null || doc === undefined) return;
  if (Array.isArray(doc)) {
    for (const d of doc) flatten(d, out);
    return;
  }
  if (typeof doc === 'object') {
    const o = doc as Record<string, unknown>;
    if (typeof o.kind === 'string' && o.kind.endsWith('List') && Array.isArray(o.items)) {
      for (const d of o.items) flatten(d, out);
      return;
    }
  }
  out.push(doc);
}

/** Decode every document in `text`; a syntax error throws `ApiError('decode-failed')` naming source and line. */
export function decodeDocuments(text: string, source = 'input'): unknown[] {
  const docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [docs];
  const out: unknown[] = [];
  for (const d of list) {
    const err = d.errors[0];
    if (err) {
      const pos = err.linePos?.[0];
      const where = pos ? `${source}:${pos.line}:${pos.col}` : source;
      const reason = err.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      throw new ApiError('decode-failed', `${where}: cannot decode: ${reason}`, { cause: err });
    }
    flatten(d.toJS({ maxAliasCount: 100 }), out);
  }
  return out;
}
