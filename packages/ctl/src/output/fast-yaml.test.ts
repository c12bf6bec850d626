import { describe, expect, test } from 'vitest';
import { stringify } from 'yaml';
import { SAMPLE_RESOURCES } from '../testing-internal/samples.js';
import { yamlText } from './fast-yaml.js';

const lib = (v: unknown) =>
  stringify(v, { sortMapEntries: true, indentSeq: false, lineWidth: 0, version: '1.1' });

const TRICKY = [
  '',
  ' ',
  'a b',
  'yes',
  'No',
  'ON',
  'y',
  'null',
  '~',
  '0',
  '0777',
  '1_000',
  '0x1F',
  '1e3',
  '.5',
  '.inf',
  '1:20',
  '2001-12-14',
  '2025-01-02T03:04:05Z',
  'a: b',
  'a:b',
  '#x',
  'x #y',
  '- x',
  '-x',
  '? x',
  '@x',
  '`x',
  "it's",
  'say "hi"',
  "app == 'web' && env in {'prod', 'staging'}",
  'all()',
  '[a]',
  '{a}',
  '*x',
  '&x',
  '!x',
  '%x',
  '|',
  '>',
  'x,y',
  'a\tb',
  'é',
  'projectcalico.org/namespace',
  'k8s-pod-network.c1',
  '198.18.0.0/24',
  'fd00::/64',
  '::1',
  'tab\there',
  'x\u2028y',
  'trailing ',
];

describe('yamlText', () => {
  test('every sample resource, alone and as a list, matches the yaml library', () => {
    for (const r of SAMPLE_RESOURCES) {
      expect(yamlText(r)).toBe(lib(r));
    }
    expect(yamlText(SAMPLE_RESOURCES)).toBe(lib(SAMPLE_RESOURCES));
  });

  test('structure: nesting, empty collections, sequences of sequences and maps, nulls', () => {
    const values: unknown[] = [
      [],
      {},
      null,
      true,
      7,
      -1.5,
      'x',
      [[]],
      [{}],
      { a: [] },
      { a: {} },
      { a: [[1, 2], [], [{ b: 1, a: [3] }]] },
      [[[1]], { z: { y: { x: [] } } }],
      { b: 1, a: 2, B: 3, _: 4, '10': 5, '9': 6 },
      { a: undefined, b: null },
      [undefined, 1],
      { items: [{ metadata: { labels: {} }, spec: { ports: [80, '8000:8100'] } }] },
    ];
    for (const v of values) expect(yamlText(v), JSON.stringify(v)).toBe(lib(v));
  });

  test('string scalars are quoted exactly as the library quotes them, as values, keys and items', () => {
    for (const s of TRICKY) {
      for (const v of [s, { k: s }, { [s]: 1 }, [s], [{ a: s }]]) {
        expect(yamlText(v), JSON.stringify(v)).toBe(lib(v));
      }
    }
  });

  test('multi-line strings are left to the library', () => {
    for (const v of [{ a: 'x\ny' }, ['a\n'], { a: { b: 'line1\nline2\n' } }]) {
      expect(yamlText(v)).toBe(lib(v));
    }
  });
});

test('revisions, timestamps and UUIDs are written exactly as the library writes them', () => {
  let seed = 11;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const digits = (n: number) => Array.from({ length: n }, () => String(rand(10))).join('');
  const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[rand(16)]).join('');
  const samples = ['0', '00', '01', '089', '1', '10', '1_0', '-1', '+1', '123456789012345678901234567890'];
  for (let i = 0; i < 300; i++) {
    samples.push(digits(1 + rand(12)));
    samples.push(`${digits(4)}-${digits(2)}-${digits(2)}T${digits(2)}:${digits(2)}:${digits(2)}Z`);
    samples.push(`${digits(4)}-${digits(2)}-${digits(2)}T${digits(2)}:${digits(2)}:${digits(2)}+01:00`);
    samples.push(`${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}`);
    samples.push(`${digits(8)}-${digits(4)}-${digits(4)}-${digits(4)}-${digits(12)}`);
    samples.push(`${digits(4)}-${digits(4)}-${hex(4)}`);
  }
  for (const s of samples) {
    for (const v of [s, { k: s }, { [s]: 1 }, [s]]) expect(yamlText(v), JSON.stringify(v)).toBe(lib(v));
  }
});

test('words with a slash (CIDRs, paths) are plain exactly when the library says so', () => {
  const alphabet = 'aZ09.:_-/';
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const samples = [
    '198.18.0.1/32',
    'fd00::/64',
    '::/0',
    'a/b:',
    'a:/b',
    '0/0',
    '1/',
    'x/',
    '/x',
    'a//b',
    '10.0.0.0/8',
  ];
  for (let i = 0; i < 3000; i++) {
    let w = '';
    const len = 1 + rand(8);
    for (let j = 0; j < len; j++) w += alphabet[rand(alphabet.length)];
    samples.push(w);
  }
  for (const s of samples) expect(yamlText({ k: s }), JSON.stringify(s)).toBe(lib({ k: s }));
});
