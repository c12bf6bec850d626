/**
 * YAML for decoded JSON values, written directly: the same text the `yaml` library's
 * `stringify(v, { sortMapEntries: true, indentSeq: false, lineWidth: 0, version: '1.1' })` gives
 * (upstream's go-yaml look: keys sorted, sequences not indented, no folding), about fifty times
 * faster on large lists (`get -o yaml` of thousands of policies).
 *
 * Structure is emitted here; how a string scalar is written (plain, quoted, which quotes) is the
 * library's decision: a string that is plainly safe (a letter, then letters, digits, `.`, `_`,
 * `/`, `-`, and not a YAML 1.1 boolean or null word) is written as is, revisions, timestamps and
 * UUIDs by the fixed rules below (a test holds them to the library), any other is asked of the
 * library once and remembered. A value this emitter does not handle the same way (a multi-line
 * string, a non-finite number, anything not JSON) makes it hand the whole value to the library.
 */
import { Document, stringify } from 'yaml';

const OPTIONS = { sortMapEntries: true, indentSeq: false, lineWidth: 0, version: '1.1' } as const;

const SAFE = /^[A-Za-z][A-Za-z0-9._/-]*$/;
/**
 * Also plain as is: a word with a `/` (a CIDR, a path, `fd00::/64`). No YAML 1.1 number, bool, null
 * or timestamp contains `/`; no space means no `: ` or ` #`; it neither starts with an indicator
 * nor ends with `:`.
 */
const SAFE_SLASHED =
  /^[A-Za-z0-9][A-Za-z0-9.:_-]*\/[A-Za-z0-9.:_/-]*[A-Za-z0-9._/-]$|^[A-Za-z0-9][A-Za-z0-9.:_-]*\/$/;
const YAML11_WORDS = /^(y|yes|n|no|true|false|on|off|null)$/i;
/**
 * Strings every resource has one of, distinct in each, that the library would otherwise be asked
 * about one by one: a decimal integer (a resourceVersion) and an RFC 3339 UTC timestamp read as an
 * int or a timestamp when plain, so they are double-quoted; a UUID is never read as anything but a
 * string, so it is plain.
 */
const QUOTED_AS_IS = /^(?:0|[1-9][0-9]*)$|^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

class Unsupported extends Error {}

function libraryYaml(v: unknown): string {
  return stringify(v, OPTIONS);
}

/**
 * `libraryYaml(s)` for one string, through a document kept for the purpose: `stringify` builds a
 * new document, schema and tag list on every call, which for 5,000 policies' distinct timestamps,
 * UIDs and revisions was most of `get -o yaml`. The text is the same: `stringify` is
 * `new Document(v, options).toString(options)`.
 */
let scalarDocument: Document | undefined;
function libraryScalar(s: string): string {
  scalarDocument ??= new Document(null, OPTIONS);
  scalarDocument.contents = scalarDocument.createNode(s);
  return scalarDocument.toString(OPTIONS);
}

export function yamlText(v: unknown): string {
  try {
    return new Emitter().document(v);
  } catch (e) {
    if (e instanceof Unsupported) return libraryYaml(v);
    throw e;
  }
}

const scalarCache = new Map<string, string>();

function stringScalar(s: string): string {
  if ((SAFE.test(s) && !YAML11_WORDS.test(s)) || SAFE_SLASHED.test(s) || UUID.test(s)) return s;
  if (QUOTED_AS_IS.test(s)) return `"${s}"`;
  const hit = scalarCache.get(s);
  if (hit !== undefined) return hit;
  if (s.includes('\n') || s.includes('\r')) throw new Unsupported();
  const text = libraryScalar(s);
  // One line (plus the final newline) is a scalar usable anywhere; anything else is not handled here.
  if (text.indexOf('\n') !== text.length - 1) throw new Unsupported();
  const out = text.slice(0, -1);
  if (scalarCache.size < 10_000) scalarCache.set(s, out);
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function scalar(v: unknown): string | undefined {
  switch (typeof v) {
    case 'string':
      return stringScalar(v);
    case 'number':
      if (!Number.isFinite(v) || Object.is(v, -0)) throw new Unsupported();
      return String(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'object':
      if (v === null) return 'null';
      if (Array.isArray(v)) return v.length === 0 ? '[]' : undefined;
      if (!isPlainObject(v)) throw new Unsupported();
      return undefined;
    default:
      throw new Unsupported();
  }
}

const compareKeys = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

class Emitter {
  private out = '';

  document(v: unknown): string {
    const s = scalar(v);
    if (s !== undefined) return `${s}\n`;
    if (Array.isArray(v)) this.seq(v, '');
    else if (!this.map(v as Record<string, unknown>, '', false)) return '{}\n';
    return this.out;
  }

  /** Entries of a map; the first line's indent is already written when `inline`. False if empty. */
  private map(m: Record<string, unknown>, indent: string, inline: boolean): boolean {
    const keys = Object.keys(m)
      .filter((k) => m[k] !== undefined)
      .sort(compareKeys);
    if (keys.length === 0) return false;
    let first = true;
    for (const k of keys) {
      if (!(first && inline)) this.out += indent;
      first = false;
      this.out += `${stringScalar(k)}:`;
      this.value(m[k], indent, true);
    }
    return true;
  }

  private seq(a: readonly unknown[], indent: string): void {
    for (const item of a) {
      this.out += `${indent}-`;
      this.value(item === undefined ? null : item, indent, false);
    }
  }

  /**
   * The value after `key:` (inMap) or `-`: a scalar or empty collection on the same line; a map
   * on the next lines indented by two (in a map) or inline after `- `; a sequence on the next lines
   * at the same indent (in a map, sequences are not indented) or inline after `- `.
   */
  private value(v: unknown, indent: string, inMap: boolean): void {
    const s = scalar(v);
    if (s !== undefined) {
      this.out += ` ${s}\n`;
      return;
    }
    if (Array.isArray(v)) {
      if (inMap) {
        this.out += '\n';
        this.seq(v, indent);
      } else {
        this.out += ' ';
        this.inlineSeq(v, `${indent}  `);
      }
      return;
    }
    const m = v as Record<string, unknown>;
    if (inMap) {
      const child = `${indent}  `;
      const mark = this.out.length;
      this.out += '\n';
      if (!this.map(m, child, false)) {
        this.out = this.out.slice(0, mark);
        this.out += ' {}\n';
      }
    } else {
      const mark = this.out.length;
      this.out += ' ';
      if (!this.map(m, `${indent}  `, true)) {
        this.out = this.out.slice(0, mark);
        this.out += ' {}\n';
      }
    }
  }

  /** A sequence that starts right after `- ` (its first `-` is on the current line). */
  private inlineSeq(a: readonly unknown[], indent: string): void {
    let first = true;
    for (const item of a) {
      if (!first) this.out += indent;
      first = false;
      this.out += '-';
      this.value(item === undefined ? null : item, indent, false);
    }
  }
}
