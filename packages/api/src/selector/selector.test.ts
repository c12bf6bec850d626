import { describe, expect, it } from 'vitest';
import { SelectorError } from '../errors.js';
import {
  andSelectors,
  canonicalSelector,
  parseSelector,
  prefixSelectorLabels,
  printSelector,
  type SelectorNode,
  selectorMatches,
  validateSelector,
} from './index.js';

type Labels = Record<string, string>;

interface ValidCase {
  input: string;
  canonical: string;
  matches?: Labels[];
  nonMatches?: Labels[];
}

const LONG_LABEL = 'l'.repeat(512);

const VALID: ValidCase[] = [
  // Empty and blank selectors are all().
  { input: '', canonical: 'all()', matches: [{}, { a: 'b' }] },
  { input: ' \t  ', canonical: 'all()', matches: [{}] },
  { input: ' all() ', canonical: 'all()', matches: [{}, { a: 'b' }] },
  { input: ' (all( ) )', canonical: 'all()', matches: [{}] },
  { input: 'global()', canonical: 'global()', matches: [{}, { a: 'b' }] },
  { input: 'global( )', canonical: 'global()', matches: [{}] },
  { input: '!all()', canonical: '!all()', nonMatches: [{}, { a: 'b' }] },
  // Equality and inequality; != is true when the label is absent.
  {
    input: 'a == "b"',
    canonical: 'a == "b"',
    matches: [{ a: 'b' }, { a: 'b', c: 'd' }],
    nonMatches: [{}, { a: 'c' }, { c: 'd' }],
  },
  { input: "a == 'a'", canonical: 'a == "a"', matches: [{ a: 'a' }], nonMatches: [{ a: 'b' }, {}] },
  { input: 'a!="b"', canonical: 'a != "b"', matches: [{ a: 'a' }, {}], nonMatches: [{ a: 'b' }] },
  { input: `a!='"'`, canonical: `a != '"'`, matches: [{ a: "'" }, {}], nonMatches: [{ a: '"' }] },
  { input: `a == "'"`, canonical: `a == "'"`, matches: [{ a: "'" }] },
  { input: `a == '"'`, canonical: `a == '"'`, matches: [{ a: '"' }] },
  { input: 'a == ""', canonical: 'a == ""', matches: [{ a: '' }], nonMatches: [{}, { a: 'x' }] },
  { input: 'a == "x\ny"', canonical: 'a == "x\ny"', matches: [{ a: 'x\ny' }] },
  { input: 'a == "h é 😀"', canonical: 'a == "h é 😀"', matches: [{ a: 'h é 😀' }] },
  // Set membership: sorted, de-duplicated, trailing comma allowed, `notin` accepted.
  {
    input: `a in {"'", '"', "c"}`,
    canonical: `a in {'"', "'", "c"}`,
    matches: [{ a: 'c' }, { a: '"' }, { a: "'" }],
    nonMatches: [{}, { a: 'e' }],
  },
  {
    input: `a not in {"'", '"', "c"}`,
    canonical: `a not in {'"', "'", "c"}`,
    matches: [{}, { a: 'e' }],
    nonMatches: [{ a: 'c' }, { a: '"' }, { a: "'" }],
  },
  {
    input: 'a in {"z", "z", "x", "y", "x", "a"}',
    canonical: 'a in {"a", "x", "y", "z"}',
    matches: [{ a: 'x' }],
    nonMatches: [{ a: 'b' }],
  },
  {
    input: "a notin {'b','a'}",
    canonical: 'a not in {"a", "b"}',
    matches: [{ a: 'c' }, {}],
    nonMatches: [{ a: 'a' }],
  },
  { input: 'a not\tin {}', canonical: 'a not in {}', matches: [{}, { a: 'x' }] },
  { input: 'a in {}', canonical: 'a in {}', nonMatches: [{}, { a: '' }] },
  { input: 'a in {"x",}', canonical: 'a in {"x"}', matches: [{ a: 'x' }] },
  { input: 'a in{"x"}', canonical: 'a in {"x"}', matches: [{ a: 'x' }] },
  { input: '!a in {"a"}', canonical: '!a in {"a"}', matches: [{ a: 'b' }, {}], nonMatches: [{ a: 'a' }] },
  {
    // Sorted by code point (UTF-8 byte order), as upstream does: U+FF01 before U+1F600.
    input: 'a in {"😀", "！", "b", "B"}',
    canonical: 'a in {"B", "b", "！", "😀"}',
    matches: [{ a: '😀' }, { a: '！' }],
  },
  {
    input: 'a in {"a1","a2","a3","a4","a5","a6","a7","a8","a9","a10"}',
    canonical: 'a in {"a1", "a10", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}',
    matches: [{ a: 'a10' }, { a: 'a9' }],
    nonMatches: [{ a: 'a11' }, {}],
  },
  // contains / starts with / ends with; false when absent.
  {
    input: 'a contains "a"',
    canonical: 'a contains "a"',
    matches: [{ a: 'a' }, { a: 'bab' }],
    nonMatches: [{}, { a: 'b' }, { b: 'aaa' }],
  },
  { input: `a contains '"'`, canonical: `a contains '"'`, matches: [{ a: 'x"y' }] },
  { input: 'a contains""', canonical: 'a contains ""', matches: [{ a: '' }, { a: 'x' }], nonMatches: [{}] },
  {
    input: 'a starts with "a"',
    canonical: 'a starts with "a"',
    matches: [{ a: 'abb' }],
    nonMatches: [{}, { a: 'baa' }],
  },
  { input: `a startswith '"'`, canonical: `a starts with '"'`, matches: [{ a: '"x' }] },
  { input: 'a starts \t with"x"', canonical: 'a starts with "x"', matches: [{ a: 'xy' }] },
  {
    input: 'a ends with "a"',
    canonical: 'a ends with "a"',
    matches: [{ a: 'bba' }],
    nonMatches: [{}, { a: 'aab' }],
  },
  { input: `a endswith "'"`, canonical: `a ends with "'"`, matches: [{ a: "x'" }] },
  // has and negation: repeated ! toggles.
  { input: 'has(a)', canonical: 'has(a)', matches: [{ a: 'b' }, { a: '' }], nonMatches: [{ b: 'a' }] },
  { input: 'has( a )', canonical: 'has(a)', matches: [{ a: 'b' }] },
  { input: '!has(a)', canonical: '!has(a)', matches: [{ b: 'b' }], nonMatches: [{ a: 'b' }] },
  { input: '! has(a)', canonical: '!has(a)', nonMatches: [{ a: 'b' }] },
  { input: '!!has(b)', canonical: 'has(b)', nonMatches: [{ a: 'b' }] },
  { input: '!! ! has(a)', canonical: '!has(a)', nonMatches: [{ a: 'b' }] },
  { input: '!(k == "v")', canonical: '!k == "v"', matches: [{}, { k: 'w' }], nonMatches: [{ k: 'v' }] },
  // Upstream prints this as `!!has(a)`, which re-parses as `has(a)`: we print the fixed point.
  { input: '!(!has(a))', canonical: 'has(a)', matches: [{ a: '' }], nonMatches: [{}] },
  { input: '!(!(!has(a)))', canonical: '!has(a)', matches: [{}], nonMatches: [{ a: '' }] },
  { input: '!!(a == "1" && b == "2")', canonical: '(a == "1" && b == "2")' },
  {
    input: '! (has( b)||! has(a ))',
    canonical: '!(has(b) || !has(a))',
    matches: [{ a: 'a' }],
    nonMatches: [{}, { b: '' }],
  },
  { input: '! (a == "b"&&! c != "d")', canonical: '!(a == "b" && !c != "d")' },
  // Chains and grouping.
  {
    input: 'a == "1" && b == "2" && c == "3"',
    canonical: '(a == "1" && b == "2" && c == "3")',
    matches: [{ a: '1', b: '2', c: '3' }],
    nonMatches: [{ a: '1', b: '2' }],
  },
  {
    input: '(a == "1" && b == "2") && c == "3"',
    canonical: '((a == "1" && b == "2") && c == "3")',
    matches: [{ a: '1', b: '2', c: '3' }],
  },
  {
    input: 'a == "1" || b == "2" || c == "3"',
    canonical: '(a == "1" || b == "2" || c == "3")',
    matches: [{ c: '3' }],
    nonMatches: [{}],
  },
  { input: '(((a == "1")))', canonical: 'a == "1"' },
  { input: 'all()&&all()', canonical: '(all() && all())', matches: [{}] },
  {
    input: 'has(global) && global()',
    canonical: '(has(global) && global())',
    matches: [{ global: '' }],
    nonMatches: [{}],
  },
  {
    input: 'has(a) && !has(b)',
    canonical: '(has(a) && !has(b))',
    matches: [{ a: 'a' }],
    nonMatches: [{ a: 'a', b: 'b' }],
  },
  { input: '!(has(b) || !has(a))', canonical: '!(has(b) || !has(a))', matches: [{ a: 'a' }] },
  {
    input: "! a == 'a1' || ! b == 'b1'",
    canonical: '(!a == "a1" || !b == "b1")',
    nonMatches: [{ a: 'a1', b: 'b1' }],
  },
  // Words that are operators after a label are label names elsewhere.
  { input: 'in in {"in"}', canonical: 'in in {"in"}', matches: [{ in: 'in' }] },
  { input: 'not not in {"x"}', canonical: 'not not in {"x"}', matches: [{}, { not: 'y' }] },
  { input: 'contains contains "contains"', canonical: 'contains contains "contains"' },
  { input: 'has == "x" && all != "y"', canonical: '(has == "x" && all != "y")', matches: [{ has: 'x' }] },
  { input: 'starts starts with "x"', canonical: 'starts starts with "x"' },
  // Label characters.
  {
    input: "projectcalico.org/namespace == 'ns1' && has(pcns.kubernetes.io/metadata-name_x)",
    canonical: '(projectcalico.org/namespace == "ns1" && has(pcns.kubernetes.io/metadata-name_x))',
  },
  { input: '-._/9 == "x"', canonical: '-._/9 == "x"', matches: [{ '-._/9': 'x' }] },
  { input: `${LONG_LABEL} == "x"`, canonical: `${LONG_LABEL} == "x"`, matches: [{ [LONG_LABEL]: 'x' }] },
  { input: `has(${LONG_LABEL})`, canonical: `has(${LONG_LABEL})` },
];

describe('parseSelector on valid selectors', () => {
  it.each(VALID)('$input', ({ input, canonical, matches = [], nonMatches = [] }) => {
    const sel = parseSelector(input);
    expect(sel.text).toBe(canonical);
    expect(canonicalSelector(input)).toBe(canonical);
    expect(validateSelector(input)).toBeUndefined();
    // The canonical text is a fixed point and means the same.
    const again = parseSelector(canonical);
    expect(again.text).toBe(canonical);
    expect(again.root).toEqual(sel.root);
    for (const labels of matches) {
      expect(sel.matches(labels), `${input} on ${JSON.stringify(labels)}`).toBe(true);
      expect(again.matches(labels)).toBe(true);
      expect(selectorMatches(input, labels)).toBe(true);
    }
    for (const labels of nonMatches) {
      expect(sel.matches(labels), `${input} on ${JSON.stringify(labels)}`).toBe(false);
      expect(again.matches(labels)).toBe(false);
      expect(selectorMatches(input, labels)).toBe(false);
    }
  });
});

interface InvalidCase {
  input: string;
  column: number;
  reason: string;
}

const INVALID: InvalidCase[] = [
  { input: 'b == b', column: 6, reason: 'expected a quoted string after "==" but found label "b"' },
  { input: 'b contains b', column: 12, reason: 'expected a quoted string after "contains"' },
  { input: 'b starts with b', column: 15, reason: 'expected a quoted string after "starts with"' },
  { input: 'b ends with b', column: 13, reason: 'expected a quoted string' },
  { input: "'b1' == b", column: 1, reason: 'unexpected string "b1", expected an expression' },
  { input: 'b', column: 2, reason: 'expected an operator after label "b" but found end of selector' },
  { input: 'a ', column: 3, reason: 'expected an operator after label "a"' },
  {
    input: 'a b',
    column: 3,
    reason: 'expected an operator (==, !=, in, not in, contains, starts with, ends with)',
  },
  { input: 'a inside {"x"}', column: 3, reason: 'expected an operator' },
  { input: 'a containsx "b"', column: 3, reason: 'expected an operator' },
  { input: 'a startswithx "b"', column: 3, reason: 'expected an operator' },
  { input: 'a starts "b"', column: 3, reason: 'expected an operator' },
  { input: 'a not "b"', column: 3, reason: 'expected an operator' },
  { input: 'a has(b)', column: 3, reason: 'expected an operator' },
  { input: 'a (', column: 3, reason: 'expected an operator after label "a" but found "("' },
  { input: 'a = "b"', column: 3, reason: 'expected "=="' },
  { input: 'a ! = "b"', column: 3, reason: 'expected an operator after label "a" but found "!"' },
  { input: '!', column: 2, reason: 'unexpected end of selector' },
  { input: '!=', column: 1, reason: 'unexpected "!=", expected an expression' },
  { input: 'foo == "bar" &', column: 14, reason: 'expected "&&"' },
  { input: 'foo == "bar" |', column: 14, reason: 'expected "||"' },
  { input: 'foo == "bar" &&', column: 16, reason: 'unexpected end of selector' },
  { input: 'has(foo) &&', column: 12, reason: 'unexpected end of selector' },
  { input: 'foo != ||', column: 8, reason: 'expected a quoted string after "!=" but found "||"' },
  {
    input: 'foo in {"", ||',
    column: 13,
    reason: 'expected a quoted string or "}" in set literal but found "||"',
  },
  { input: 'foo in ""', column: 8, reason: 'expected a set literal {…} after "in"' },
  { input: 'foo not in ("a")', column: 12, reason: 'expected a set literal {…} after "not in"' },
  { input: 'a in {"a" "b"}', column: 11, reason: 'expected "," or "}" in set literal but found string "b"' },
  { input: 'a in {,}', column: 7, reason: 'expected a quoted string or "}"' },
  { input: 'a in {"a",,}', column: 11, reason: 'expected a quoted string or "}"' },
  { input: 'a in {"a"', column: 10, reason: 'expected "," or "}" in set literal but found end of selector' },
  {
    input: 'a in {a}',
    column: 7,
    reason: 'expected a quoted string or "}" in set literal but found label "a"',
  },
  { input: '"FOO', column: 1, reason: 'unterminated string literal' },
  { input: `"FOO'`, column: 1, reason: 'unterminated string literal' },
  { input: "'FOO", column: 1, reason: 'unterminated string literal' },
  { input: 'a == "b" && c == \'d', column: 18, reason: 'unterminated string literal' },
  { input: '(', column: 2, reason: 'unexpected end of selector' },
  { input: '(a == "foo"', column: 12, reason: 'expected ")" but found end of selector' },
  { input: '(a == "foo" b', column: 13, reason: 'expected ")" but found label "b"' },
  { input: ')', column: 1, reason: 'unexpected ")", expected an expression' },
  { input: '()', column: 2, reason: 'unexpected ")"' },
  { input: 'a == "b")', column: 9, reason: 'unexpected ")" after a complete expression' },
  { input: 'a == "b" c == "d"', column: 10, reason: 'unexpected label "c" after a complete expression' },
  { input: 'a == "b" "c"', column: 10, reason: 'unexpected string "c" after a complete expression' },
  { input: 'has(a) in {"x"}', column: 8, reason: 'unexpected label "in" after a complete expression' },
  { input: '%', column: 1, reason: 'unexpected character "%"' },
  { input: 'a == "b" && %', column: 13, reason: 'unexpected character "%"' },
  { input: 'a == "b" || %', column: 13, reason: 'unexpected character "%"' },
  { input: 'a == "b"\n', column: 9, reason: 'unexpected character "\\n"' },
  { input: '\na == "b"', column: 1, reason: 'unexpected character "\\n"' },
  { input: 'é == "x"', column: 1, reason: 'unexpected character "é"' },
  // Columns count code points: the emoji inside the literal is one column.
  { input: 'a == "😀" && 😀', column: 13, reason: 'unexpected character "😀"' },
  { input: 'has()', column: 5, reason: 'expected a label name inside "has("' },
  { input: 'has( )', column: 6, reason: 'expected a label name inside "has("' },
  { input: 'has(a', column: 6, reason: 'expected ")" to close "has("' },
  { input: 'has(a b)', column: 7, reason: 'expected ")" to close "has("' },
  { input: 'has(%)', column: 5, reason: 'expected a label name inside "has("' },
  { input: 'all(x)', column: 5, reason: 'expected ")" to close "all("' },
  { input: 'global( ', column: 9, reason: 'expected ")" to close "global("' },
  { input: 'has (a)', column: 5, reason: 'expected an operator after label "has"' },
  {
    input: `${LONG_LABEL}x == "a"`,
    column: 1,
    reason: 'label name is 513 characters long, the limit is 512',
  },
  { input: `has(${LONG_LABEL}x)`, column: 5, reason: 'label name is 513 characters long' },
  { input: `a == "b" && ${LONG_LABEL}xyz != "c"`, column: 13, reason: 'label name is 515 characters long' },
  {
    input: `${'('.repeat(1001)}a == "b"${')'.repeat(1001)}`,
    column: 1001,
    reason: 'parentheses nested more than 1000 levels deep',
  },
];

describe('parseSelector on invalid selectors', () => {
  it.each(INVALID)('$input', ({ input, column, reason }) => {
    let caught: unknown;
    try {
      parseSelector(input);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(SelectorError);
    const err = caught as SelectorError;
    expect(err.code).toBe('invalid-selector');
    expect(err.column).toBe(column);
    expect(err.selector).toBe(input);
    expect(err.message).toContain(`invalid selector at column ${column}: ${reason}`);
    const message = validateSelector(input);
    expect(message).toMatch(new RegExp(`^invalid selector at column ${column}: `));
    expect(message).toContain(reason);
    expect(() => canonicalSelector(input)).toThrow(SelectorError);
    expect(() => selectorMatches(input, {})).toThrow(SelectorError);
  });

  it('accepts parentheses nested 1000 levels deep', () => {
    const text = `${'('.repeat(1000)}a == "b" && c == "d"${')'.repeat(1000)}`;
    expect(parseSelector(text).text).toBe('(a == "b" && c == "d")');
  });
});

describe('precedence', () => {
  const cases: [string, string][] = [
    // && binds tighter than ||.
    ['a == "1" || b == "2" && c == "3"', '(a == "1" || (b == "2" && c == "3"))'],
    ['a == "1" && b == "2" || c == "3"', '((a == "1" && b == "2") || c == "3")'],
    ['a == "1" && b == "2" || c == "3" && d == "4"', '((a == "1" && b == "2") || (c == "3" && d == "4"))'],
    // ! binds tighter than &&.
    ['!has(a) && has(b)', '(!has(a) && has(b))'],
    ['!has(a) || has(b)', '(!has(a) || has(b))'],
    ['!(has(a) || has(b))', '!(has(a) || has(b))'],
    ['(a == "1" || b == "2") && c == "3"', '((a == "1" || b == "2") && c == "3")'],
  ];
  it.each(cases)('%s', (input, canonical) => {
    expect(canonicalSelector(input)).toBe(canonical);
  });

  it('evaluates && before ||', () => {
    const sel = parseSelector('has(a) || has(b) && has(c)');
    expect(sel.matches({ a: '' })).toBe(true); // a || (b && c)
    expect(sel.matches({ b: '' })).toBe(false);
    expect(sel.matches({ b: '', c: '' })).toBe(true);
    const neg = parseSelector('!has(a) && has(b)');
    expect(neg.matches({ b: '' })).toBe(true); // (!a) && b, not !(a && b)
    expect(neg.matches({})).toBe(false);
  });
});

describe('evaluation', () => {
  it('does not treat Object.prototype members as labels', () => {
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      expect(selectorMatches(`has(${name})`, {}), name).toBe(false);
      expect(selectorMatches(`${name} != "x"`, {}), name).toBe(true);
      expect(selectorMatches(`${name} not in {"x"}`, {}), name).toBe(true);
      expect(selectorMatches(`${name} contains ""`, {}), name).toBe(false);
      expect(selectorMatches(`${name} starts with ""`, {}), name).toBe(false);
      expect(selectorMatches(`${name} ends with ""`, {}), name).toBe(false);
      expect(selectorMatches(`${name} in {"a","b","c","d","e","f","g","h","i","j"}`, {}), name).toBe(false);
    }
  });

  it('sees labels named like Object.prototype members when they are set', () => {
    const labels = JSON.parse('{"__proto__":"p","constructor":"c"}') as Labels;
    expect(selectorMatches('__proto__ == "p" && constructor == "c"', labels)).toBe(true);
    expect(selectorMatches('has(__proto__)', labels)).toBe(true);
    expect(selectorMatches('__proto__ in {"p", "q"}', labels)).toBe(true);
  });

  it('works on null-prototype label maps', () => {
    const labels = Object.assign(Object.create(null) as Labels, { a: 'b' });
    expect(selectorMatches('a == "b" && !has(c)', labels)).toBe(true);
  });

  it('exposes matches as a free function', () => {
    const { matches } = parseSelector('a == "b"');
    expect([{ a: 'b' }, { a: 'c' }].filter(matches)).toEqual([{ a: 'b' }]);
  });
});

describe('printSelector', () => {
  const cases: [string, SelectorNode, string][] = [
    ['all', { kind: 'all' }, 'all()'],
    ['global', { kind: 'global' }, 'global()'],
    ['eq with a double quote', { kind: 'eq', label: 'a', value: 'x"y' }, `a == 'x"y'`],
    [
      'in, unsorted with duplicates',
      { kind: 'in', label: 'a', values: ['c', 'a', 'c', 'b'] },
      'a in {"a", "b", "c"}',
    ],
    ['notIn', { kind: 'notIn', label: 'a', values: ['x', '"'] }, `a not in {'"', "x"}`],
    ['double not', { kind: 'not', operand: { kind: 'not', operand: { kind: 'has', label: 'a' } } }, 'has(a)'],
    [
      'not over a one-operand and over not',
      {
        kind: 'not',
        operand: { kind: 'and', operands: [{ kind: 'not', operand: { kind: 'has', label: 'a' } }] },
      },
      'has(a)',
    ],
    ['one-operand or', { kind: 'or', operands: [{ kind: 'has', label: 'a' }] }, 'has(a)'],
    ['empty and', { kind: 'and', operands: [] }, 'all()'],
    ['empty or', { kind: 'or', operands: [] }, '!all()'],
    [
      'nested chains keep their parentheses',
      {
        kind: 'and',
        operands: [
          {
            kind: 'or',
            operands: [
              { kind: 'has', label: 'a' },
              { kind: 'has', label: 'b' },
            ],
          },
          {
            kind: 'and',
            operands: [
              { kind: 'has', label: 'c' },
              { kind: 'has', label: 'd' },
            ],
          },
          { kind: 'not', operand: { kind: 'or', operands: [{ kind: 'global' }, { kind: 'all' }] } },
        ],
      },
      '((has(a) || has(b)) && (has(c) && has(d)) && !(global() || all()))',
    ],
  ];
  it.each(cases)('%s', (_name, node, text) => {
    expect(printSelector(node)).toBe(text);
    // parse∘print is a fixed point.
    expect(canonicalSelector(text)).toBe(text);
  });

  it('refuses what the language cannot express', () => {
    expect(() => printSelector({ kind: 'eq', label: 'a', value: `'"` })).toThrow(SelectorError);
    expect(() => printSelector({ kind: 'has', label: 'a b' })).toThrow(/invalid character " " in label name/);
    expect(() => printSelector({ kind: 'has', label: '' })).toThrow(SelectorError);
    expect(() => printSelector({ kind: 'has', label: 'x'.repeat(513) })).toThrow(/limit is 512/);
  });
});

describe('prefixSelectorLabels', () => {
  const cases: [string, string][] = [
    ["k == 'v'", 'pcns.k == "v"'],
    ["k != 'v'", 'pcns.k != "v"'],
    ["k contains 'v'", 'pcns.k contains "v"'],
    ["k starts with 'v'", 'pcns.k starts with "v"'],
    ["k ends with 'v'", 'pcns.k ends with "v"'],
    ["k in {'v'}", 'pcns.k in {"v"}'],
    ["k not in {'v'}", 'pcns.k not in {"v"}'],
    ["k == 'v' && x == 'y'", '(pcns.k == "v" && pcns.x == "y")'],
    ["k == 'v' || has(x)", '(pcns.k == "v" || has(pcns.x))'],
    ["!(k == 'v')", '!pcns.k == "v"'],
    ['all()', 'all()'],
    ['global()', 'global()'],
    [
      "!(!(k == 'v' && has(t) || all()) && (a in {'b', 'c'}))",
      '!(!((pcns.k == "v" && has(pcns.t)) || all()) && pcns.a in {"b", "c"})',
    ],
  ];
  it.each(cases)('%s', (input, expected) => {
    const sel = parseSelector(input);
    const before = sel.text;
    expect(printSelector(prefixSelectorLabels(sel.root, 'pcns.'))).toBe(expected);
    expect(sel.text).toBe(before); // the input tree is untouched
  });

  it('prefixed selectors match the prefixed labels', () => {
    const node = prefixSelectorLabels(parseSelector('team == "a" && has(env)').root, 'pcsa.');
    const sel = parseSelector(printSelector(node));
    expect(sel.matches({ 'pcsa.team': 'a', 'pcsa.env': '' })).toBe(true);
    expect(sel.matches({ team: 'a', env: '' })).toBe(false);
  });

  it('rejects a prefix a label cannot hold', () => {
    expect(() => prefixSelectorLabels({ kind: 'has', label: 'a' }, 'pc ns.')).toThrow(SelectorError);
  });
});

describe('andSelectors', () => {
  it('joins canonical parts in order', () => {
    expect(andSelectors("a == 'x'", 'has(b)')).toBe('(a == "x" && has(b))');
    expect(andSelectors('has(b)', "a == 'x'")).toBe('(has(b) && a == "x")');
  });
  it('keeps each part whole', () => {
    expect(andSelectors('a == "x" || b == "y"', 'c == "z"')).toBe('((a == "x" || b == "y") && c == "z")');
    expect(andSelectors('a == "x" && b == "y"', 'c == "z"')).toBe('((a == "x" && b == "y") && c == "z")');
  });
  it('leaves out blank parts', () => {
    expect(andSelectors()).toBe('all()');
    expect(andSelectors('', ' ')).toBe('all()');
    expect(andSelectors('', 'has(a)')).toBe('has(a)');
    expect(andSelectors('all()', 'has(a)')).toBe('(all() && has(a))');
  });
  it('throws SelectorError for an invalid part', () => {
    expect(() => andSelectors('has(a)', 'b ==')).toThrow(SelectorError);
  });
});
