import { describe, expect, it } from 'vitest';
import { goJson, parseJsonExact } from './go-json.js';

describe('Go-compatible JSON', () => {
  it('escapes like Go encoding/json and formats numbers alike', () => {
    expect(goJson({ s: 'a && b <c> \u2028' })).toBe('{"s":"a \\u0026\\u0026 b \\u003cc\\u003e \\u2028"}');
    expect(goJson({ n: 1e21, f: 0.5, i: 100 })).toBe('{"n":1e+21,"f":0.5,"i":100}');
  });

  it('keeps 64-bit integers exact both ways', () => {
    const text =
      '{"sequenceNumber":1763885570123456789,"small":7,"neg":-9007199254740993,"s":"1234567890123456789","f":1.5e+300}';
    const v = parseJsonExact(text) as Record<string, unknown>;
    expect(v.sequenceNumber).toBe(1763885570123456789n);
    expect(v.small).toBe(7);
    expect(v.neg).toBe(-9007199254740993n);
    expect(v.s).toBe('1234567890123456789');
    expect(v.f).toBe(1.5e300);
    expect(goJson(v)).toBe(text);
    expect(parseJsonExact('{"a":"x\\"1234567890123456789"}')).toEqual({ a: 'x"1234567890123456789' });
    expect(() => parseJsonExact('{"a":12345678901234567890')).toThrow(SyntaxError);
  });

  it('reads big integers wherever they are, and leaves everything else as JSON.parse does', () => {
    const cases: [string, unknown][] = [
      ['[1763885570123456789, -1763885570123456789]', [1763885570123456789n, -1763885570123456789n]],
      [
        '{"m":{"0":9007199254740993,"1":9007199254740991}}',
        { m: { '0': 9007199254740993n, '1': 9007199254740991 } },
      ],
      ['[[[12345678901234567890]]]', [[[12345678901234567890n]]]],
      [
        '{"f":0.12345678901234567890,"g":1.5,"e":1e12345678901234567}',
        { f: Number('0.12345678901234567890'), g: 1.5, e: Infinity },
      ],
      ['{"big":12345678901234567890.5}', { big: Number('12345678901234567890.5') }],
      ['{"x":12345678901234567e2}', { x: Number('12345678901234567e2') }],
      ['{"s":"a\\\\","n":18446744073709551615}', { s: 'a\\', n: 18446744073709551615n }],
      ['{"s":"\\"18446744073709551615\\"","t":"\\\\"}', { s: '"18446744073709551615"', t: '\\' }],
      [' { "k" : 18446744073709551615 , "l" : [ 1 ] } ', { k: 18446744073709551615n, l: [1] }],
      ['{"safe16":1234567890123456}', { safe16: 1234567890123456 }],
      ['[1e-12345678901234567, 1E+12345678901234567]', [0, Infinity]],
    ];
    for (const [text, want] of cases) expect(parseJsonExact(text), text).toEqual(want);
    expect(() => parseJsonExact('{"a":"12345678901234567890}')).toThrow(SyntaxError);
    expect(() => parseJsonExact('[12345678901234567890,]')).toThrow(SyntaxError);
  });
});

describe('goJson with bigints', () => {
  it('writes them as integers wherever they are, copying only what leads to them', () => {
    const seq = { '0': 1757000000123456789n, '1': 1757000000123456790n };
    const spec = { cidr: '10.0.0.0/26', sequenceNumber: 1757000000123456788n, seq, other: { a: [1, 'x'] } };
    const v = { kind: 'IPAMBlock', spec, list: [1n, { n: -2n }, 'y'], when: new Date(0) };
    expect(goJson(v)).toBe(
      '{"kind":"IPAMBlock","spec":{"cidr":"10.0.0.0/26","sequenceNumber":1757000000123456788,"seq":{"0":1757000000123456789,"1":1757000000123456790},"other":{"a":[1,"x"]}},"list":[1,{"n":-2},"y"],"when":"1970-01-01T00:00:00.000Z"}',
    );
    // The value itself is left as it was.
    expect(spec.sequenceNumber).toBe(1757000000123456788n);
    expect(v.list[0]).toBe(1n);
    expect(goJson(JSON.parse('{"__proto__":{"n":1}}'))).toBe('{"__proto__":{"n":1}}');
    const own = JSON.parse('{"__proto__":{"a":"b"}}') as Record<string, unknown>;
    (Object.getOwnPropertyDescriptor(own, '__proto__')!.value as Record<string, unknown>).n = 3n;
    expect(goJson(own)).toBe('{"__proto__":{"a":"b","n":3}}');
    expect(parseJsonExact(goJson(v))).toMatchObject({ spec: { sequenceNumber: 1757000000123456788n } });
  });

  it('sees what a toJSON returns, bigints included', () => {
    const v = { a: { toJSON: () => ({ n: 12345678901234567890n }) } };
    expect(goJson(v)).toBe('{"a":{"n":12345678901234567890}}');
  });
});
