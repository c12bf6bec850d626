/**
 * Go's text/tabwriter as calicoctl configures it (`NewWriter(out, 5, 1, 3, ' ', 0)`): every
 * tab-terminated cell is padded with spaces to its column's width, which is the widest cell in
 * the column plus 3, and at least 5. Text after a line's last tab is written as is.
 */
const MIN_WIDTH = 5;
const PADDING = 3;

const SURROGATE_PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/;

/** Width in characters (code points, as Go counts runes); a string without pairs is its length. */
function width(s: string): number {
  return SURROGATE_PAIR.test(s) ? [...s].length : s.length;
}

/** Lay out rows of tab-terminated cells; each row ends with a newline. */
export function tabulate(rows: readonly (readonly string[])[]): string {
  // Plain loops and one padding string: a `get` table can have tens of thousands of rows.
  let columns = 0;
  for (const r of rows) if (r.length > columns) columns = r.length;
  const widths: number[] = new Array(columns).fill(MIN_WIDTH);
  let widest = MIN_WIDTH;
  for (const r of rows) {
    for (let c = 0; c < r.length; c++) {
      const w = width(r[c]!) + PADDING;
      if (w > widths[c]!) widths[c] = w;
      if (w > widest) widest = w;
    }
  }
  const spaces = ' '.repeat(widest);
  let out = '';
  for (const r of rows) {
    for (let c = 0; c < r.length; c++) {
      const cell = r[c]!;
      out += cell + spaces.slice(0, widths[c]! - width(cell));
    }
    out += '\n';
  }
  return out;
}
