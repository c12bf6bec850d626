/**
 * Reading `-f FILE|-|DIR` as calicoctl does: `-` is standard input; a directory is walked in
 * lexical order for `.yaml`, `.yml` and `.json` files (subdirectories only with `-R`); every
 * file is a YAML stream or JSON (objects, arrays, `…List` objects), flattened into documents.
 */
import { ApiError, decodeDocuments, emptyDocuments } from '@calico-ts/api';
import { CtlError } from '../errors.js';
import type { CommandIO } from '../io.js';

/** One decoded document and where it came from. */
export interface SourceDocument {
  /** Where it came from: a path, or `stdin`. */
  source: string;
  /** 1-based position among the documents of its source. */
  index: number;
  /** The decoded document. */
  doc: unknown;
}

export interface ReadOptions {
  recursive: boolean;
  skipEmpty: boolean;
}

const MANIFEST = /\.(ya?ml|json)$/i;

async function listManifests(dir: string, recursive: boolean, io: CommandIO): Promise<string[]> {
  const out: string[] = [];
  const names = (await io.readDir(dir)).sort();
  for (const name of names) {
    const path = dir.endsWith('/') ? `${dir}${name}` : `${dir}/${name}`;
    const kind = await io.statPath(path);
    if (kind === 'dir') {
      if (recursive) out.push(...(await listManifests(path, recursive, io)));
    } else if (MANIFEST.test(name)) out.push(path);
  }
  return out;
}

function readError(path: string, e: unknown): CtlError {
  const code = (e as { code?: string }).code;
  const why =
    code === 'ENOENT'
      ? 'no such file or directory'
      : code === 'EACCES'
        ? 'permission denied'
        : (e as Error).message;
  return new CtlError('invalid-input', `open ${path}: ${why}`, { cause: e });
}

/**
 * The refusal of a file with an empty document (only comments or blank lines between `---` lines,
 * such as a leading comment block closed by `---`), as upstream calicoctl refuses it.
 */
function emptyDocumentError(source: string, positions: number[]): CtlError {
  const which =
    positions.length === 1 ? `document ${positions[0]} is` : `documents ${positions.join(', ')} are`;
  return new CtlError(
    'invalid-input',
    `${source}: ${which} empty (only comments or blank lines between '---' lines): ` +
      'unknown resource type () and/or version (); remove the empty document or put its comments ' +
      'inside the next one (after its --- line)',
  );
}

function decode(text: string, source: string): SourceDocument[] {
  const empty = emptyDocuments(text);
  if (empty.length > 0) throw emptyDocumentError(source, empty);
  try {
    return decodeDocuments(text, source).map((doc, i) => ({ source, index: i + 1, doc }));
  } catch (e) {
    if (e instanceof ApiError) throw new CtlError('invalid-input', e.message, { cause: e });
    throw e;
  }
}

/**
 * Every document named by `-f`. Throws `CtlError('invalid-input')` for an unreadable or
 * undecodable file and `CtlError('usage')` for an empty one (unless `skipEmpty`).
 */
export async function readDocuments(
  filename: string,
  opts: ReadOptions,
  io: CommandIO,
): Promise<SourceDocument[]> {
  if (filename === '-') {
    const docs = decode(await io.stdin(), 'stdin');
    if (docs.length === 0 && !opts.skipEmpty) throw new CtlError('usage', 'No resources specified in file -');
    return docs;
  }
  const kind = await io.statPath(filename);
  if (kind !== 'dir') {
    let text: string;
    try {
      text = await io.readFile(filename);
    } catch (e) {
      throw readError(filename, e);
    }
    const docs = decode(text, filename);
    if (docs.length === 0 && !opts.skipEmpty) {
      throw new CtlError('usage', `No resources specified in file ${filename}`);
    }
    return docs;
  }
  const out: SourceDocument[] = [];
  for (const path of await listManifests(filename, opts.recursive, io)) {
    let text: string;
    try {
      text = await io.readFile(path);
    } catch (e) {
      throw readError(path, e);
    }
    const docs = decode(text, path);
    if (docs.length === 0 && !opts.skipEmpty)
      throw new CtlError('usage', `No resources specified in file ${path}`);
    out.push(...docs);
  }
  if (out.length === 0 && !opts.skipEmpty) {
    throw new CtlError('usage', `No resources specified in directory ${filename}`);
  }
  return out;
}
