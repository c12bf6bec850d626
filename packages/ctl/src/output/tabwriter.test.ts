import { describe, expect, test } from 'vitest';
import { tabulate } from './tabwriter.js';

describe('tabulate (Go tabwriter with minwidth 5, padding 3)', () => {
  test('pads every cell to the widest cell of its column plus 3', () => {
    expect(
      tabulate([
        ['NAME', 'CIDR'],
        ['192-168-0-0-16', '192.168.0.0/16'],
      ]),
    ).toBe('NAME             CIDR             \n192-168-0-0-16   192.168.0.0/16   \n');
  });
  test('columns are at least 5 wide', () => {
    expect(
      tabulate([
        ['A', 'BB'],
        ['', 'c'],
      ]),
    ).toBe('A    BB   \n     c    \n');
  });
  test('counts characters, not bytes', () => {
    expect(tabulate([['ünï', 'x']])).toBe('ünï   x    \n');
  });
});
