import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { goField, goFieldInfo } from './go-encoding.js';
import { lazyArray, lazyObject, lazySchema } from './lazy-schema.js';
import { portSchema } from './rule.js';

describe('lazySchema', () => {
  it('builds nothing until first use, then once, and acts as the schema it builds', () => {
    let builds = 0;
    const s = lazySchema(() => {
      builds++;
      return z.strictObject({ a: z.number() });
    });
    const parent = z.array(s);
    expect(builds).toBe(0);
    expect(parent.parse([{ a: 1 }])).toEqual([{ a: 1 }]);
    expect(s.safeParse({ a: 'x' }).success).toBe(false);
    expect(s instanceof z.ZodObject).toBe(true);
    expect(Object.keys(s.shape)).toEqual(['a']);
    expect(builds).toBe(1);
  });

  it('keeps Go encoding facts for the stand-in, as goField recorded them for the schema', () => {
    const lazy = lazySchema(() => goField(z.string(), { value: 'duration' }));
    expect(goFieldInfo(lazy)).toEqual({ value: 'duration' });
    expect(goFieldInfo(z.array(portSchema).element)).toEqual({ value: 'port' });
  });

  it('lazy objects and arrays enumerate, index and iterate like the real thing', () => {
    const o = lazyObject(() => ({ x: 1, y: 2 }));
    expect(Object.entries(o)).toEqual([
      ['x', 1],
      ['y', 2],
    ]);
    const a = lazyArray(() => ['p', 'q']);
    expect(Array.isArray(a)).toBe(true);
    expect([...a]).toEqual(['p', 'q']);
    expect(a.length).toBe(2);
    expect(a.includes('q')).toBe(true);
    expect(a[1]).toBe('q');
  });
});
