/**
 * Boxed tables as upstream calicoctl draws them with olekukonko/tablewriter (`ipam show`,
 * `node status`): `+---+` rules, headings centred, cells padded by one space; a cell that reads as
 * a plain number is right-aligned, any other text left-aligned. Pure.
 */

const NUMBER = /^-?(?:\d{1,3}(?:,\d{3})*|\d+)(?:\.\d+)?$/;

const width = (s: string) => [...s].length;

function center(s: string, w: number): string {
  const gap = w - width(s);
  const left = Math.floor(gap / 2);
  return ' '.repeat(left) + s + ' '.repeat(gap - left);
}

export function renderBoxTable(headings: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headings.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ''))));
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+\n`;
  const line = (cells: readonly string[], pad: (s: string, w: number) => string) =>
    `|${widths.map((w, i) => ` ${pad(cells[i] ?? '', w)} `).join('|')}|\n`;
  const cell = (s: string, w: number) =>
    NUMBER.test(s.trim()) ? ' '.repeat(w - width(s)) + s : s + ' '.repeat(w - width(s));
  return rule + line(headings, center) + rule + rows.map((r) => line(r, cell)).join('') + rule;
}
