// Randomised checks of the selector language: every input either parses to a selector whose
// canonical text is a fixed point and means the same, or fails with a SelectorError that points
// inside the input. Seeded, so a failure reproduces.
import { describe, expect, it } from 'vitest';
import { SelectorError } from '../errors.js';
import { parseSelector, printSelector, type SelectorNode, validateSelector } from './index.js';

type Labels = Record<string, string>;

/** mulberry32: small, fast, good enough to drive a fuzzer. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = prng(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const LABELS = [
  'a',
  'b',
  'c',
  'app',
  'k8s-app',
  'projectcalico.org/namespace',
  'pcns.x/y_z',
  'in',
  'not',
  'has',
  'all',
  'M'.repeat(512),
];
const VALUES = ['', 'x', 'y', 'a b', "it's", 'say "hi"', 'é', '😀', '！', 'x\ny', '\uD800'];

function longLabel(g: Gen): string {
  return 'L'.repeat(508 + g.int(8)); // 508..515: either side of the 512 limit
}

function quoted(g: Gen, v: string): string {
  if (v.includes('"')) return `'${v}'`;
  if (v.includes("'")) return `"${v}"`;
  return g.chance(0.5) ? `"${v}"` : `'${v}'`;
}

function ws(g: Gen): string {
  return g.pick(['', ' ', ' ', '  ', '\t', ' \t ']);
}

/** A random tree. Labels and values are ones the language can express. */
function randomNode(g: Gen, depth: number): SelectorNode {
  const r = g.int(depth > 3 ? 10 : 14);
  const l = g.pick(LABELS);
  const v = g.pick(VALUES);
  switch (r) {
    case 0:
      return { kind: 'all' };
    case 1:
      return { kind: 'global' };
    case 2:
      return { kind: 'has', label: l };
    case 3:
      return { kind: 'eq', label: l, value: v };
    case 4:
      return { kind: 'neq', label: l, value: v };
    case 5:
      return {
        kind: g.chance(0.5) ? 'in' : 'notIn',
        label: l,
        values: Array.from({ length: g.int(4) }, () => g.pick(VALUES)),
      };
    case 6:
      return { kind: 'contains', label: l, value: v };
    case 7:
      return { kind: 'startsWith', label: l, value: v };
    case 8:
      return { kind: 'endsWith', label: l, value: v };
    case 9:
    case 10:
      return { kind: 'not', operand: randomNode(g, depth + 1) };
    default:
      return {
        kind: g.chance(0.5) ? 'and' : 'or',
        operands: Array.from({ length: 1 + g.int(3) }, () => randomNode(g, depth + 1)),
      };
  }
}

/** Writes a tree as a person might: optional parentheses, spacing, quote styles, `notin`, `startswith`. */
function writeLoosely(g: Gen, n: SelectorNode): string {
  const w = () => ws(g);
  switch (n.kind) {
    case 'all':
      return `all(${w()})`;
    case 'global':
      return `global(${w()})`;
    case 'has':
      return `has(${w()}${n.label}${w()})`;
    case 'eq':
      return `${n.label}${w()}==${w()}${quoted(g, n.value)}`;
    case 'neq':
      return `${n.label}${w()}!=${w()}${quoted(g, n.value)}`;
    case 'contains':
      return `${n.label} contains${w()}${quoted(g, n.value)}`;
    case 'startsWith':
      return `${n.label} starts${w()}with${w()}${quoted(g, n.value)}`;
    case 'endsWith':
      return `${n.label} ends${w()}with${w()}${quoted(g, n.value)}`;
    case 'in':
    case 'notIn': {
      const op = n.kind === 'in' ? 'in' : g.pick(['not in', 'notin', 'not\tin']);
      const items = n.values.map((v) => quoted(g, v)).join(`,${w()}`);
      return `${n.label} ${op}${w()}{${w()}${items}${n.values.length > 0 && g.chance(0.2) ? ',' : ''}${w()}}`;
    }
    case 'not':
      return `!${w()}(${w()}${writeLoosely(g, n.operand)}${w()})`;
    case 'and':
    case 'or': {
      const op = n.kind === 'and' ? '&&' : '||';
      return `(${n.operands.map((o) => writeLoosely(g, o)).join(`${w()}${op}${w()}`)})`;
    }
  }
}

const FRAGMENTS = [
  ...LABELS,
  '==',
  '!=',
  '=',
  '!',
  '!!',
  '&&',
  '||',
  '&',
  '|',
  ' in ',
  ' not in ',
  ' notin ',
  ' contains ',
  ' starts with ',
  ' startswith ',
  ' ends with ',
  ' endswith ',
  ' starts ',
  ' with ',
  '(',
  ')',
  '{',
  '}',
  ',',
  'has(',
  'all(',
  'global(',
  'all()',
  'global()',
  'has(a)',
  '"x"',
  "'y'",
  `'a"b'`,
  `"a'b"`,
  '""',
  '"',
  "'",
  '"unterminated',
  ' ',
  ' ',
  '\t',
  '\n',
  'é',
  '😀',
  '\uD800',
  '\u0000',
  '！',
  '\u00a0',
  '%',
  '-',
  '.',
  '/',
  '_',
  '0',
];

function soup(g: Gen): string {
  let s = '';
  const n = 1 + g.int(12);
  for (let i = 0; i < n; i++) {
    const r = g.next();
    if (r < 0.02) s += longLabel(g);
    else if (r < 0.12) s += ' ';
    else s += g.pick(FRAGMENTS);
  }
  return s;
}

function mutate(g: Gen, s: string): string {
  const edits = 1 + g.int(3);
  let out = s;
  for (let e = 0; e < edits; e++) {
    const i = g.int(out.length + 1);
    const r = g.int(3);
    if (r === 0)
      out = out.slice(0, i) + out.slice(i + 1); // delete
    else if (r === 1)
      out = out.slice(0, i) + g.pick(FRAGMENTS) + out.slice(i); // insert
    else out = out.slice(0, i) + g.pick(FRAGMENTS) + out.slice(i + 1); // replace
  }
  return out;
}

/** Independent evaluator used as an oracle: own properties only, upstream's semantics. */
function oracle(n: SelectorNode, labels: Labels): boolean {
  const get = (l: string) => (Object.hasOwn(labels, l) ? labels[l] : undefined);
  switch (n.kind) {
    case 'all':
    case 'global':
      return true;
    case 'has':
      return get(n.label) !== undefined;
    case 'eq':
      return get(n.label) === n.value;
    case 'neq':
      return get(n.label) !== n.value;
    case 'contains': {
      const v = get(n.label);
      return v !== undefined && v.indexOf(n.value) >= 0;
    }
    case 'startsWith': {
      const v = get(n.label);
      return v !== undefined && v.slice(0, n.value.length) === n.value;
    }
    case 'endsWith': {
      const v = get(n.label);
      return v !== undefined && v.length >= n.value.length && v.slice(v.length - n.value.length) === n.value;
    }
    case 'in': {
      const v = get(n.label);
      return v !== undefined && n.values.some((x) => x === v);
    }
    case 'notIn': {
      const v = get(n.label);
      return v === undefined || !n.values.some((x) => x === v);
    }
    case 'not':
      return !oracle(n.operand, labels);
    case 'and':
      return n.operands.every((o) => oracle(o, labels));
    case 'or':
      return n.operands.some((o) => oracle(o, labels));
  }
}

function randomLabels(g: Gen): Labels {
  const labels: Labels = {};
  const n = g.int(5);
  for (let i = 0; i < n; i++) labels[g.pick(LABELS)] = g.pick(VALUES);
  return labels;
}

function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

describe('selector fuzz', () => {
  it('10,000 random strings parse to a stable canonical form or fail with a SelectorError', () => {
    const g = new Gen(0x5e1ec7);
    const problems: string[] = [];
    let parsed = 0;
    let rejected = 0;
    for (let i = 0; i < 10_000; i++) {
      const mode = g.int(3);
      const text =
        mode === 0
          ? soup(g)
          : mode === 1
            ? writeLoosely(g, randomNode(g, 0))
            : mutate(g, writeLoosely(g, randomNode(g, 0)));
      try {
        const sel = parseSelector(text);
        parsed++;
        const canonical = sel.text;
        const again = parseSelector(canonical);
        if (again.text !== canonical)
          problems.push(`not a fixed point: ${JSON.stringify(text)} → ${canonical} → ${again.text}`);
        if (validateSelector(text) !== undefined)
          problems.push(`validateSelector disagrees on ${JSON.stringify(text)}`);
        for (let k = 0; k < 3; k++) {
          const labels = randomLabels(g);
          const want = oracle(sel.root, labels);
          if (sel.matches(labels) !== want || again.matches(labels) !== want) {
            problems.push(`wrong match of ${JSON.stringify(text)} on ${JSON.stringify(labels)}`);
          }
        }
      } catch (e) {
        if (!(e instanceof SelectorError)) {
          problems.push(`${JSON.stringify(text)} threw ${String(e)}`);
          continue;
        }
        rejected++;
        if (e.column < 1 || e.column > codePointLength(text) + 1) {
          problems.push(`column ${e.column} outside ${JSON.stringify(text)}`);
        }
        const message = validateSelector(text);
        if (message === undefined || !message.startsWith(`invalid selector at column ${e.column}: `)) {
          problems.push(`validateSelector disagrees on ${JSON.stringify(text)}: ${message}`);
        }
      }
    }
    expect(problems.slice(0, 20)).toEqual([]);
    console.log(`fuzz: ${parsed} parsed, ${rejected} rejected`);
    // The generator must exercise both outcomes, or the test proves little.
    expect(parsed).toBeGreaterThan(2_000);
    expect(rejected).toBeGreaterThan(2_000);
  });

  it('printing any expressible tree and parsing it back keeps its meaning and is a fixed point', () => {
    const g = new Gen(42);
    const problems: string[] = [];
    for (let i = 0; i < 3_000; i++) {
      const node = randomNode(g, 0);
      const text = printSelector(node);
      const sel = parseSelector(text);
      if (sel.text !== text) problems.push(`${text} re-prints as ${sel.text}`);
      for (let k = 0; k < 4; k++) {
        const labels = randomLabels(g);
        if (sel.matches(labels) !== oracle(node, labels)) {
          problems.push(`${text} on ${JSON.stringify(labels)}`);
        }
      }
    }
    expect(problems.slice(0, 20)).toEqual([]);
  });
});

describe('selector cost', () => {
  // Not a timing assertion: anything quadratic would blow the test timeout on these sizes.
  it('parses and evaluates 10,000 selectors', () => {
    const g = new Gen(7);
    const texts = Array.from({ length: 10_000 }, () => writeLoosely(g, randomNode(g, 0)));
    const labelSets = Array.from({ length: 20 }, () => randomLabels(g));
    const started = performance.now();
    let matched = 0;
    for (const text of texts) {
      const sel = parseSelector(text);
      for (const labels of labelSets) if (sel.matches(labels)) matched++;
    }
    const ms = performance.now() - started;
    console.log(
      `parsed 10000 selectors and ran 200000 evaluations in ${ms.toFixed(0)} ms (${matched} matched)`,
    );
    expect(matched).toBeGreaterThan(0);
  });

  it('handles very large selectors in linear time', () => {
    const chain = Array.from({ length: 50_000 }, (_, i) => `l${i} == "v${i}"`).join(' && ');
    const sel = parseSelector(chain);
    expect(sel.root.kind).toBe('and');
    expect(sel.text.length).toBeGreaterThan(chain.length);
    const set = `a in {${Array.from({ length: 50_000 }, (_, i) => `"v${49_999 - i}"`).join(', ')}}`;
    const inSel = parseSelector(set);
    expect(inSel.matches({ a: 'v123' })).toBe(true);
    expect(inSel.matches({ a: 'v50000' })).toBe(false);
    const negations = `${'!'.repeat(100_001)}has(a)`;
    expect(parseSelector(negations).text).toBe('!has(a)');
    const literal = `a == "${'x'.repeat(1_000_000)}"`;
    expect(parseSelector(literal).matches({ a: 'x'.repeat(1_000_000) })).toBe(true);
    // An unterminated literal is found with one scan, not one per character.
    expect(validateSelector(`a == "${'x'.repeat(1_000_000)}`)).toMatch(/column 6: unterminated/);
  });
});
