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
});
