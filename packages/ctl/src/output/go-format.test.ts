import { describe, expect, test } from 'vitest';
import { renderBoxTable } from './box-table.js';
import { goG5, goRound0 } from './go-format.js';

describe('Go number formats', () => {
  test('%.5g of counts, as Go prints them', () => {
    const cases: [number | bigint, string][] = [
      [0, '0'],
      [7, '7'],
      [65536, '65536'],
      [99999, '99999'],
      [100000, '1e+05'],
      [262144, '2.6214e+05'],
      [1048576, '1.0486e+06'],
      [16777216, '1.6777e+07'],
      [123455, '1.2346e+05'], // a tie: half to even on the exact digits → 1.2346 (5 odd → up)
      [123445, '1.2344e+05'], // a tie: 4 is even → stays
      [999995, '1e+06'],
      [2n ** 64n, '1.8447e+19'],
      [2n ** 128n, '3.4028e+38'],
    ];
    for (const [n, want] of cases) expect(goG5(n), String(n)).toBe(want);
  });
  test('%.f: nearest integer, exact halves to even', () => {
    expect([0.4, 0.5, 1.5, 2.5, 12.5, 1.5625, 99.99, 100].map(goRound0)).toEqual([
      '0',
      '0',
      '2',
      '2',
      '12',
      '2',
      '100',
      '100',
    ]);
  });
});

test('boxed table: centred headings, numbers right-aligned, text left-aligned', () => {
  expect(
    renderBoxTable(
      ['NAME', 'COUNT'],
      [
        ['a', '7'],
        ['longer', '1.5e+05'],
      ],
    ),
  ).toBe(
    `+--------+---------+
|  NAME  |  COUNT  |
+--------+---------+
| a      |       7 |
| longer | 1.5e+05 |
+--------+---------+
`,
  );
});
