import { describe, expect, it } from 'vitest';
import { decodeWireJson, withoutManagedFields } from './wire-json.js';

type Obj = Record<string, unknown>;

/** What the API server would send for `o` (compact JSON, as Go writes it). */
const wire = (o: unknown) => Buffer.from(JSON.stringify(o), 'utf8');

/** `o` with every metadata.managedFields removed, the way JSON.parse + delete would leave it. */
function dropped(o: unknown): unknown {
  const copy = JSON.parse(JSON.stringify(o)) as Obj;
  const walk = (x: unknown) => {
    if (Array.isArray(x)) x.forEach(walk);
    else if (x && typeof x === 'object') {
      delete (x as Obj).managedFields;
      Object.values(x as Obj).forEach(walk);
    }
  };
  walk(copy);
  return copy;
}

/** A managedFields entry as the API server writes them, with awkward bytes in its keys. */
const entry = (manager: string) => ({
  apiVersion: 'crd.projectcalico.org/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: {
    'f:metadata': { 'f:labels': { '.': {}, 'f:a]b}': {} } },
    'f:spec': { 'k:{"name":"x\\"]}"}': { '.': {} }, 'f:nets': {} },
  },
  manager,
  operation: 'Update',
  time: '2026-01-02T03:04:05Z',
});

describe('withoutManagedFields', () => {
  it('cuts the member wherever it stands among the keys, and nothing else', () => {
    const cases: Obj[] = [
      // Unstructured objects (CRDs): keys sorted, managedFields in the middle.
      { metadata: { labels: { a: 'b' }, managedFields: [entry('m')], name: 'n' }, spec: { x: 1 } },
      // Typed objects (Pods): managedFields last in metadata.
      { metadata: { name: 'p', uid: 'u', managedFields: [entry('kubelet'), entry('calico')] } },
      // First, and the only member.
      { metadata: { managedFields: [entry('m')], name: 'n' } },
      { metadata: { managedFields: [] } },
      // A list of objects.
      {
        kind: 'List',
        items: [1, 2, 3].map((i) => ({ metadata: { managedFields: [entry(`m${i}`)], name: `n${i}` } })),
        metadata: { resourceVersion: '7' },
      },
    ];
    for (const c of cases) {
      const cut = withoutManagedFields(wire(c));
      expect(JSON.parse(cut.toString('utf8')), JSON.stringify(c)).toEqual(dropped(c));
    }
  });

  it('leaves text that only looks like the member alone: inside strings, or not after { or ,', () => {
    const o = {
      metadata: {
        annotations: { note: '{"managedFields":[1,2]}', other: ',"managedFields":[' },
        name: 'ünïcødé ✓ "managedFields":[',
      },
      spec: { managedFields: 'a string, not the bookkeeping' },
    };
    const buf = wire(o);
    expect(withoutManagedFields(buf)).toBe(buf);
    expect(decodeWireJson(buf, false)).toEqual(o);
  });

  it('returns the body unchanged when it ends inside the member (not JSON)', () => {
    const buf = Buffer.from('{"metadata":{"managedFields":[{"manager":"x"', 'utf8');
    expect(withoutManagedFields(buf)).toBe(buf);
  });

  it('agrees with parse-then-delete on many generated objects', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const strings = ['', 'a', '"q"', '\\', '[{]}', ',"managedFields":[', 'é✓', '\n\t'];
    const value = (depth: number): unknown => {
      const k = rand(depth > 2 ? 3 : 6);
      if (k === 0) return strings[rand(strings.length)];
      if (k === 1) return rand(1000) - 500;
      if (k === 2) return rand(2) === 0 ? null : true;
      if (k === 3) return Array.from({ length: rand(4) }, () => value(depth + 1));
      const o: Obj = {};
      for (let i = rand(4); i > 0; i--) o[`${strings[rand(strings.length)]}${i}`] = value(depth + 1);
      if (rand(3) === 0) o.managedFields = Array.from({ length: rand(3) }, () => entry(`g${rand(9)}`));
      return o;
    };
    for (let i = 0; i < 500; i++) {
      const o = { metadata: value(0), items: [value(1), value(1)] };
      expect(JSON.parse(withoutManagedFields(wire(o)).toString('utf8'))).toEqual(dropped(o));
    }
  });
});

describe('decodeWireJson', () => {
  it('keeps integers beyond 2^53 exact only when asked', () => {
    const buf = Buffer.from(
      '{"metadata":{"managedFields":[{"manager":"m"}],"name":"b"},"spec":{"sequenceNumber":1757000000123456789}}',
    );
    expect(decodeWireJson(buf, true)).toEqual({
      metadata: { name: 'b' },
      spec: { sequenceNumber: 1757000000123456789n },
    });
    expect((decodeWireJson(buf, false) as { spec: { sequenceNumber: unknown } }).spec.sequenceNumber).toBe(
      1757000000123456800,
    );
  });

  it('reads an empty body as undefined and refuses one that is not JSON', () => {
    expect(decodeWireJson(Buffer.alloc(0), false)).toBeUndefined();
    expect(() => decodeWireJson(Buffer.from('{"metadata":'), false)).toThrow(SyntaxError);
  });
});
