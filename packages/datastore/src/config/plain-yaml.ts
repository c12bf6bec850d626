/**
 * The plain subset of YAML that calicoctl.cfg files are written in, read without the YAML
 * library: for a short-lived calicoctl, the library's first parse costs more than everything
 * else about loading the configuration (~3 ms of a ~75 ms `calicoctl get`). Pure.
 *
 * The subset: `key: value` lines at the top level, and one level of `key: value` lines indented
 * under a top-level `key:`; blank lines and whole-line comments; values that are plain words
 * starting with a letter or `/` (URLs, paths, names), single- or double-quoted strings without
 * escapes, or `{}`. Within it the result is exactly what the library gives for the same text
 * (YAML 1.2 core schema: a plain value that could read as null, a boolean or a number is left to
 * the library). Anything else — flow collections, lists, block scalars, anchors, tags, trailing
 * comments, tabs, CRLF, duplicate keys, deeper nesting, JSON — returns undefined, and the caller
 * parses it with the library, which also reports its errors.
 */

const LINE = /^( *)([A-Za-z][A-Za-z0-9_-]*):(?: +(.*))?$/;
const PLAIN = /^[A-Za-z/][A-Za-z0-9/._~+=,:@-]*$/;
/** Plain words the core schema reads as null or a boolean. */
const NOT_A_STRING = /^(?:null|Null|NULL|true|True|TRUE|false|False|FALSE)$/;

/** The mapping `text` holds, or undefined when it is not in the subset. */
export function parsePlainMapping(text: string): Record<string, unknown> | undefined {
  if (text.includes('\r') || text.includes('\t')) return undefined;
  const root: Record<string, unknown> = {};
  /** The top-level key the indented lines below belong to, while they may follow. */
  let parentKey: string | undefined;
  let nested: Record<string, unknown> | undefined;
  let nestedIndent = 0;
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const m = LINE.exec(line.trimEnd());
    if (!m) return undefined;
    const indent = m[1]!.length;
    const key = m[2]!;
    if (NOT_A_STRING.test(key)) return undefined;
    const value = m[3] === undefined ? null : scalar(m[3]);
    if (value === undefined) return undefined;
    if (indent === 0) {
      if (Object.hasOwn(root, key)) return undefined;
      root[key] = value;
      parentKey = value === null ? key : undefined;
      nested = undefined;
      continue;
    }
    if (parentKey === undefined || value === null) return undefined; // deeper than one level, or stray indent
    if (nested === undefined) {
      nested = {};
      nestedIndent = indent;
      root[parentKey] = nested;
    } else if (indent !== nestedIndent || Object.hasOwn(nested, key)) {
      return undefined;
    }
    nested[key] = value;
  }
  // An empty document is null to the library: not a mapping.
  return Object.keys(root).length > 0 ? root : undefined;
}

/** A value in the subset, or undefined. An empty nested value is left to the library. */
function scalar(raw: string): string | Record<string, never> | undefined {
  const v = raw.trimEnd();
  if (v === '{}') return {};
  const q = v[0];
  if ((q === '"' || q === "'") && v.length >= 2 && v.endsWith(q)) {
    const inner = v.slice(1, -1);
    return inner.includes(q) || (q === '"' && inner.includes('\\')) ? undefined : inner;
  }
  if (PLAIN.test(v) && !v.endsWith(':') && !NOT_A_STRING.test(v)) return v;
  return undefined;
}
