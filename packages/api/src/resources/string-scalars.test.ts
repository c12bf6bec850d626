/**
 * YAML 1.1 scalars as upstream calicoctl stores them (go-yaml v2, then Go's string conversion for
 * string fields), and the documents upstream's splitter would find empty.
 */
import { describe, expect, test } from 'vitest';
import { decodeDocuments, emptyDocuments } from './decode.js';
import { goFloat32Text, storeStringScalars } from './string-scalars.js';

describe('goFloat32Text is strconv.FormatFloat(v, g, -1, 32)', () => {
  test.each([
    [1, '1'],
    [1.5, '1.5'],
    [0.1, '0.1'],
    [1.23456789, '1.2345679'],
    [1000, '1000'],
    [1e6, '1e+06'],
    [1234567, '1.234567e+06'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [-2.5, '-2.5'],
    [Number.POSITIVE_INFINITY, '+Inf'],
    [Number.NEGATIVE_INFINITY, '-Inf'],
    [Number.NaN, 'NaN'],
  ])('%s → %s', (v, text) => expect(goFloat32Text(v)).toBe(text));
});

describe('decodeDocuments reads YAML 1.1 as go-yaml v2 does', () => {
  test('booleans, octal, underscores; times and dates stay strings', () => {
    const [doc] = decodeDocuments(
      'a: y\nb: No\nc: on\nd: 010\ne: 0o17\nf: 1_000\ng: 12:30\nh: 2001-12-14\ni: "y"\n',
    );
    expect(doc).toEqual({
      a: true,
      b: false,
      c: true,
      d: 8,
      e: 15,
      f: 1000,
      g: '12:30',
      h: '2001-12-14',
      i: 'y',
    });
  });
});

describe('storeStringScalars', () => {
  test('writes booleans and numbers in string fields as upstream stores them, and says where', () => {
    const [doc] = decodeDocuments(`apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: p, labels: {x: y, count: 1.0}}
spec: {cidr: 198.19.0.0/16, natOutgoing: yes, nodeSelector: 'all()'}
`);
    const r = storeStringScalars(doc);
    expect(r.doc).toMatchObject({
      metadata: { labels: { x: 'true', count: '1' } },
      spec: { natOutgoing: true },
    });
    expect(r.scalars).toEqual([
      { path: 'metadata.labels.x', stored: 'true', read: 'boolean' },
      { path: 'metadata.labels.count', stored: '1', read: 'number' },
    ]);
  });
  test('leaves a document of an unknown kind alone', () => {
    const doc = { kind: 'Nope', metadata: { labels: { x: true } } };
    expect(storeStringScalars(doc)).toEqual({ doc, scalars: [] });
  });
});

describe('emptyDocuments finds what upstream decodes to a kindless resource', () => {
  test.each([
    ['# comment\n---\nkind: A\n', [1]],
    ['kind: A\n---\n# trailing comment\n', [2]],
    ['kind: A\n---\n\n---\nkind: B\n', [2]],
    ['---\n# comment in the first document\nkind: A\n', []],
    ['kind: A\n---\n', []],
    ['kind: A\n---\n---\nkind: B\n', []],
    ['# only a comment\n', []],
    ['', []],
  ])('%j → %j', (text, positions) => expect(emptyDocuments(text)).toEqual(positions));
});
