/**
 * Go's text/tabwriter as calicoctl configures it (`NewWriter(out, 5, 1, 3, ' ', 0)`): every
 * tab-terminated cell is padded with spaces to its column's width, which is the widest cell in
 * the column plus 3, and at least 5. Text after a line's last tab is written as is.
 */
const MIN_WIDTH = 5;
const PADDING = 3;

function width(s: string): number {
  return [...s].length;
}

/** Lay out rows of tab-terminated cells; each row ends with a newline. */
export function tabulate(rows: readonly (readonly string[])[]): string {
  const columns = Math.max(0, ...rows.map((r) => r.length));
  const widths: number[] = [];
  for (let c = 0; c < columns; c++) {
    let w = MIN_WIDTH;
    for (const r of rows) {
      const cell = r[c];
      if (cell !== undefined) w = Math.max(w, width(cell) + PADDING);
    }
    widths.push(w);
  }
  return rows
    .map((r) => `${r.map((cell, c) => cell + ' '.repeat(widths[c]! - width(cell))).join('')}\n`)
    .join('');
}
