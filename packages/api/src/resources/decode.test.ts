import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.js';
import { decodeDocuments } from './decode.js';

describe('decodeDocuments', () => {
  it('splits a YAML stream and skips empty documents', () => {
    const text = `---
kind: IPPool
metadata: {name: a}
---
# only a comment
---
kind: Tier
metadata: {name: b}
...
`;
    expect(decodeDocuments(text)).toEqual([
      { kind: 'IPPool', metadata: { name: 'a' } },
      { kind: 'Tier', metadata: { name: 'b' } },
    ]);
  });

  it('reads a JSON object and a JSON array', () => {
    expect(decodeDocuments('{"kind": "Tier", "metadata": {"name": "t"}}')).toEqual([
      { kind: 'Tier', metadata: { name: 't' } },
    ]);
    expect(decodeDocuments('[{"kind": "A"}, {"kind": "B"}]')).toEqual([{ kind: 'A' }, { kind: 'B' }]);
  });

  it('unwraps List and <Kind>List wrappers, nested in a stream', () => {
    const text = `apiVersion: v1
kind: List
items:
- {kind: IPPool, metadata: {name: a}}
- {kind: IPPool, metadata: {name: b}}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicyList
metadata: {resourceVersion: "7"}
items:
- {kind: NetworkPolicy, metadata: {name: c, namespace: n}}
`;
    expect(decodeDocuments(text).map((d) => (d as { metadata: { name: string } }).metadata.name)).toEqual([
      'a',
      'b',
      'c',
    ]);
  });

  it('returns nothing for empty input', () => {
    expect(decodeDocuments('')).toEqual([]);
    expect(decodeDocuments('---\n---\n')).toEqual([]);
  });

  it('reads YAML 1.1 as upstream calicoctl does: no is a boolean, a quoted value and a date stay strings', () => {
    expect(decodeDocuments('a: "10"\nb: 10\nc: 1.5\nd: no\ne: 2024-01-01')).toEqual([
      { a: '10', b: 10, c: 1.5, d: false, e: '2024-01-01' },
    ]);
  });

  it('names the source and line of a syntax error', () => {
    const text = 'kind: IPPool\nmetadata:\n  name: a\n  labels: {a: b\n';
    let caught: unknown;
    try {
      decodeDocuments(text, 'pools.yaml');
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ApiError);
    const err = caught as ApiError;
    expect(err.code).toBe('decode-failed');
    expect(err.message).toMatch(/^pools\.yaml:\d+:\d+: cannot decode: /);
    expect(Number(/^pools\.yaml:(\d+)/.exec(err.message)?.[1])).toBeGreaterThanOrEqual(4);
  });

  it('reports a duplicate key with its line', () => {
    expect(() => decodeDocuments('kind: A\nkind: B\n', 'dup.yaml')).toThrow(
      /^dup\.yaml:2:1: cannot decode: .*unique/,
    );
  });

  it("reports a syntax error in the second document with that document's line", () => {
    expect(() => decodeDocuments('kind: A\n---\nkind: B\nkind: C\n', 'two.yaml')).toThrow(/^two\.yaml:4:1: /);
  });
});
