/**
 * Decoding of resource files as calicoctl reads them: a YAML stream (`---` separated), a JSON
 * object, a JSON array, and `kind: List` / `kind: <Kind>List` wrappers with `items` — all flattened
 * into one list of documents, empty documents skipped. `emptyDocuments` tells where upstream
 * calicoctl would find an empty document, for callers that refuse them as it does.
 */
import {
  type DocumentOptions,
  type ParseOptions,
  parseAllDocuments,
  type SchemaOptions,
  type Tags,
} from 'yaml';
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

/** Go's `strconv.ParseInt(s, 0, 64)` reads `0o17` as octal; YAML 1.1 itself spells it `017`. */
const GO_OCTAL_INT = {
  identify: (v: unknown) => typeof v === 'number',
  default: true,
  tag: 'tag:yaml.org,2002:int',
  format: 'OCT',
  test: /^[-+]?0o[0-7_]+$/,
  resolve: (s: string) => {
    const neg = s.startsWith('-');
    const n = Number.parseInt(s.replace(/^[-+]?0o/, '').replaceAll('_', ''), 8);
    return neg ? -n : n;
  },
};

/**
 * YAML 1.1, as upstream calicoctl's go-yaml v2 reads it: `y`/`yes`/`on`/`n`/`no`/`off` are
 * booleans, `010` is octal, `1_000` is 1000. Unlike the full 1.1 schema, `12:30` (sexagesimal)
 * and `2001-12-14` (timestamp) stay strings, as go-yaml v2 leaves them for an untyped value.
 */
const YAML_11: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.1',
  customTags: (tags: Tags) => [
    GO_OCTAL_INT,
    ...tags.filter(
      (t) => typeof t === 'string' || (t.format !== 'TIME' && t.tag !== 'tag:yaml.org,2002:timestamp'),
    ),
  ],
};

/** Decode every document in `text`; a syntax error throws `ApiError('decode-failed')` naming source and line. */
export function decodeDocuments(text: string, source = 'input'): unknown[] {
  const docs = parseAllDocuments(text, { ...YAML_11, prettyErrors: true, uniqueKeys: true });
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

/** Upstream calicoctl's document separator: a line that starts with `---`, after a newline. */
const SEPARATOR = '\n---';

/**
 * The documents of `text` as upstream calicoctl cuts them before decoding each one
 * (`calicoctl/util/yaml/separator.go`): at every `\n---` up to the end of that line. A `---` on
 * the first line is not a cut, and nothing follows a separator that ends the text.
 */
export function upstreamDocumentChunks(text: string): string[] {
  const chunks: string[] = [];
  let rest = text;
  while (rest.length > 0) {
    const at = rest.indexOf(SEPARATOR);
    if (at < 0) {
      chunks.push(rest);
      break;
    }
    chunks.push(rest.slice(0, at));
    const eol = rest.indexOf('\n', at + SEPARATOR.length);
    if (eol < 0) break;
    rest = rest.slice(eol + 1);
  }
  return chunks;
}

/** Blank, a comment, or a document marker (`---` / `...`, with an optional comment). */
const NOT_CONTENT = /^\s*(#.*)?$|^(---|\.\.\.)(\s+#.*)?\s*$/;

/**
 * 1-based positions of the documents of `text` that hold no YAML content at all (only blank lines,
 * comments and markers), cut as upstream calicoctl cuts them. Upstream decodes such a document to
 * a resource with no kind or version and refuses the whole file with `unknown resource type ()
 * and/or version ()`; a file that is entirely empty is a different case (no resources) and is not
 * reported here.
 */
export function emptyDocuments(text: string): number[] {
  if (text.split('\n').every((line) => NOT_CONTENT.test(line))) return [];
  const out: number[] = [];
  upstreamDocumentChunks(text).forEach((chunk, i) => {
    if (chunk.split('\n').every((line) => NOT_CONTENT.test(line))) out.push(i + 1);
  });
  return out;
}
