/**
 * The selector AST and the small helpers every other selector module shares.
 *
 * Nodes are plain immutable objects tagged by `kind`, so callers can walk them with an exhaustive
 * `switch`. Set values (`in` / `notIn`) are kept sorted in code-point order and de-duplicated when
 * they come from the parser; the printer re-normalises hand-built nodes, so either is accepted.
 */

/** Longest label name the language accepts. */
export const MAX_LABEL_LENGTH = 512;

/** Deepest nesting of parentheses the parser accepts (upstream has no limit; we keep the stack safe). */
export const MAX_NESTING_DEPTH = 1000;

export type SelectorNode =
  /** Matches everything; the empty selector. */
  | { readonly kind: 'all' }
  /** Evaluates true; as a whole namespaceSelector it means "non-namespaced endpoints only". */
  | { readonly kind: 'global' }
  | { readonly kind: 'has'; readonly label: string }
  | { readonly kind: 'eq'; readonly label: string; readonly value: string }
  /** True when the label is absent or holds another value. */
  | { readonly kind: 'neq'; readonly label: string; readonly value: string }
  | { readonly kind: 'in'; readonly label: string; readonly values: readonly string[] }
  /** True when the label is absent or holds a value outside the set. */
  | { readonly kind: 'notIn'; readonly label: string; readonly values: readonly string[] }
  | { readonly kind: 'contains'; readonly label: string; readonly value: string }
  | { readonly kind: 'startsWith'; readonly label: string; readonly value: string }
  | { readonly kind: 'endsWith'; readonly label: string; readonly value: string }
  | { readonly kind: 'not'; readonly operand: SelectorNode }
  | { readonly kind: 'and'; readonly operands: readonly SelectorNode[] }
  | { readonly kind: 'or'; readonly operands: readonly SelectorNode[] };

export type SelectorNodeKind = SelectorNode['kind'];

export const ALL_NODE: SelectorNode = Object.freeze({ kind: 'all' });
export const GLOBAL_NODE: SelectorNode = Object.freeze({ kind: 'global' });

/** `identChar[c]` is 1 for the ASCII characters allowed in a label name: `A–Z a–z 0–9 _ . / -`. */
const identChar = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (
    (ch >= 'a' && ch <= 'z') ||
    (ch >= 'A' && ch <= 'Z') ||
    (ch >= '0' && ch <= '9') ||
    ch === '_' ||
    ch === '.' ||
    ch === '/' ||
    ch === '-'
  ) {
    identChar[c] = 1;
  }
}

export function isLabelChar(code: number): boolean {
  return code < 128 && identChar[code] === 1;
}

/** Index just past the run of label characters starting at `from`. */
export function scanLabel(text: string, from: number): number {
  const n = text.length;
  let i = from;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c >= 128 || identChar[c] === 0) break;
    i++;
  }
  return i;
}

/**
 * Orders strings by Unicode code point, which is the byte order of their UTF-8 encoding: the order
 * upstream sorts set literals in. Plain `<` on JS strings compares UTF-16 units and would put
 * characters above U+FFFF before U+E000–U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        // Surrogates (D800–DFFF) stand for code points above FFFF: move them after E000–FFFF.
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

/** A sorted (code-point order), de-duplicated copy of `values`. */
export function sortUnique(values: readonly string[]): string[] {
  let sorted = true;
  for (let i = 1; i < values.length; i++) {
    if (compareCodePoints(values[i - 1]!, values[i]!) >= 0) {
      sorted = false;
      break;
    }
  }
  if (sorted) return values.slice();
  const copy = values.slice().sort(compareCodePoints);
  const out: string[] = [copy[0]!];
  for (let i = 1; i < copy.length; i++) {
    if (copy[i] !== out[out.length - 1]) out.push(copy[i]!);
  }
  return out;
}

/** The 1-based column of UTF-16 index `index` in `text`, counting code points (an emoji is one column). */
export function columnOf(text: string, index: number): number {
  let column = 1;
  const end = Math.min(index, text.length);
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    // Count a surrogate pair once: skip the high half when a low half follows.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < end) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    column++;
  }
  return column + (index > text.length ? index - text.length : 0);
}

/** Cuts long labels and values down for error messages. */
export function shortenForMessage(s: string): string {
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}
