import { describe, expect, it } from 'vitest';
import { goJson, parseJsonExact } from '../go-json.js';
import { copyJson, kvJson, kvJsonExact, parsedKV } from './parsed-kv.js';

const big = 1_732_000_000_123_456_789n;

/** Values as the Kubernetes backend's mappings build them, odd corners included. */
const samples: unknown[] = [
  {
    kind: 'NetworkPolicy',
    metadata: { name: 'a', uid: undefined, labels: { x: 'y' } },
    spec: { order: 1.5 },
  },
  { seq: big, small: 7n, neg: -big, list: [1, undefined, null, 'a<b>&', { f: () => 1 }] },
  { zero: -0, inf: Number.POSITIVE_INFINITY, nan: Number.NaN, nested: [[[]]], empty: {} },
  JSON.parse('{"__proto__": {"polluted": true}, "ok": 1}'),
  { '10': 'a', b: 'b', '2': 'c', 'ü\u2028': 'line\u2029sep' },
  [1, 'two', true, null],
  'text',
  42,
  null,
];

describe('copyJson', () => {
  it.each(samples.map((s, i) => [i, s]))('sample %i: equals parsing the Go JSON text', (_i, s) => {
    const text = goJson(s);
    expect(copyJson(s, false)).toStrictEqual(JSON.parse(text));
    expect(copyJson(s, true)).toStrictEqual(parseJsonExact(text));
    // Same member order as the parse (what re-encoding the copy depends on).
    expect(goJson(copyJson(s, true))).toBe(text);
  });

  it('does not set a prototype from a "__proto__" member', () => {
    const c = copyJson(JSON.parse('{"__proto__": {"polluted": true}}'), false) as Record<string, unknown>;
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect((c as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.keys(c)).toEqual(['__proto__']);
  });

  it('renders a value with toJSON as JSON would', () => {
    const d = new Date('2026-01-02T03:04:05Z');
    expect(copyJson({ d }, false)).toEqual({ d: '2026-01-02T03:04:05.000Z' });
  });
});

describe('parsedKV', () => {
  const data = () => ({ kind: 'IPAMBlock', seq: big, spec: { cidr: '10.0.0.0/26', attrs: [{ a: 1 }] } });

  it('reads as the KV of its text: the same value, key and revisions', () => {
    const kv = parsedKV('/k', data(), '5', '3');
    expect(kv).toEqual({ key: '/k', value: goJson(data()), modRevision: '5', createRevision: '3' });
    expect(kvJson(kv)).toStrictEqual(JSON.parse(goJson(data())));
    expect(kvJsonExact(kv)).toStrictEqual(parseJsonExact(goJson(data())));
  });

  it("hands out copies: a reader's changes reach neither the text nor the next reader", () => {
    const kv = parsedKV('/k', data(), '5', '5');
    const a = kvJson(kv) as { spec: { cidr: string; attrs: { a: number }[] } };
    a.spec.cidr = 'changed';
    a.spec.attrs[0]!.a = 99;
    expect((kvJsonExact(kv) as typeof a).spec).toEqual({ cidr: '10.0.0.0/26', attrs: [{ a: 1 }] });
    expect(kv.value).toBe(goJson(data()));
  });

  it('makes its text once, on first read', () => {
    const d = data();
    const kv = parsedKV('/k', d, '1', '1');
    kvJson(kv);
    const first = kv.value;
    expect(kv.value).toBe(first);
    // Same string object: not re-made per read.
    expect(Object.is(kv.value, first)).toBe(true);
  });

  it('a spread copy is a plain KV with the text; an assigned value is what readers then parse', () => {
    const kv = parsedKV('/k', data(), '2', '2');
    const copy = { ...kv };
    expect(Object.getOwnPropertyDescriptor(copy, 'value')?.get).toBeUndefined();
    expect(copy.value).toBe(goJson(data()));
    kv.value = '{"replaced":true}';
    expect(kvJson(kv)).toEqual({ replaced: true });
    expect(kvJsonExact(kv)).toEqual({ replaced: true });
  });

  it('a plain KV is parsed from its text', () => {
    const kv = { key: '/k', value: `{"n":${big}}`, modRevision: '1', createRevision: '1' };
    expect(kvJson(kv)).toEqual({ n: Number(big) });
    expect(kvJsonExact(kv)).toEqual({ n: big });
    expect(() => kvJson({ ...kv, value: 'not json' })).toThrow(SyntaxError);
  });
});
