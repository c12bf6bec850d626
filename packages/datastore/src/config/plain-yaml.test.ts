import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { parsePlainMapping } from './plain-yaml.js';

/** What the YAML library makes of `text` (as calicoctl-config.ts asks it), or its first error. */
function library(text: string): unknown {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  return doc.errors.length > 0 ? { error: doc.errors[0]!.message } : doc.toJS();
}

/** A deterministic generator, so a failure names a document that can be reproduced. */
function random(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

const KEYS = [
  'apiVersion',
  'kind',
  'metadata',
  'spec',
  'etcdEndpoints',
  'datastoreType',
  'k8s-api',
  'true',
  'x_1',
];
const VALUES = [
  'projectcalico.org/v3',
  'CalicoAPIConfig',
  'etcdv3',
  'http://198.18.0.1:2379,http://198.18.0.2:2379',
  '/etc/calico/key.pem',
  '"quoted value"',
  "'single # not a comment'",
  '"with \\"escape\\""',
  "'it''s'",
  '{}',
  '[]',
  '{a: 1}',
  '- item',
  '123',
  '0x1F',
  '1e3',
  '.inf',
  '-1',
  '~',
  'null',
  'Null',
  'TRUE',
  'false',
  'yes',
  'off',
  'NaN',
  'value # comment',
  'a: b',
  'ends:',
  'two words',
  '&anchor x',
  '*alias',
  '!tag x',
  '|',
  '>',
  '%x',
  '@x',
  '`x',
  'x,y',
  'a=b+c~d@e',
  '"',
  "'",
  '',
];
/** Values inside the subset, so generated documents reach the fast path often. */
const GOOD = VALUES.slice(0, 7);

function randomDocument(next: (n: number) => number): string {
  const pick = <T>(xs: readonly T[]) => xs[next(xs.length)]!;
  const value = () => (next(10) < 8 ? pick(GOOD) : pick(VALUES));
  // Mostly distinct keys within a mapping; sometimes a repeat, which the library refuses.
  const key = (used: Set<string>) => {
    let k = pick(KEYS);
    if (used.has(k) && next(5) > 0) k = `key${used.size}`;
    used.add(k);
    return k;
  };
  const entry = (indent: string, used: Set<string>) => {
    const v = value();
    const sep = v === '' ? ':' : pick([': ', ': ', ': ', ':  ', ': ', ':']);
    return `${indent}${key(used)}${sep}${v}${next(8) === 0 ? '  ' : ''}`;
  };
  const top = new Set<string>();
  const lines: string[] = [];
  for (let i = 1 + next(4); i > 0; i--) {
    if (next(6) === 0) lines.push(next(2) ? '' : `${pick(['', '  '])}# a comment: with colon`);
    if (next(2)) {
      lines.push(entry('', top));
      continue;
    }
    lines.push(`${key(top)}:`);
    const indent = pick(['  ', '  ', '    ', ' ']);
    const inner = new Set<string>();
    for (let j = 1 + next(3); j > 0; j--) lines.push(entry(next(12) === 0 ? `${indent} ` : indent, inner));
  }
  return lines.join('\n') + (next(2) ? '\n' : '');
}

describe('parsePlainMapping', () => {
  it('reads the calicoctl.cfg files people write, as the YAML library does', () => {
    const files = [
      'apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata:\nspec:\n  datastoreType: "etcdv3"\n  etcdEndpoints: "http://etcd1:2379,http://etcd2:2379"\n',
      'apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: http://198.18.0.1:2379\n',
      "# calicoctl\napiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\n\nspec:\n    # TLS\n    etcdKeyFile: /etc/calico/key.pem\n    etcdCertFile: '/etc/calico/cert.pem'\n",
      'apiVersion: v1\nkind: calicoApiConfig\nmetadata:\nspec:\n  datastoreType: "etcdv2"\n  etcdEndpoints: "http://etcd1:2379"\n',
    ];
    for (const text of files) {
      const fast = parsePlainMapping(text);
      expect(fast, text).toBeDefined();
      expect(fast, text).toEqual(library(text));
    }
  });

  it('leaves everything outside its subset to the library', () => {
    for (const text of [
      '',
      '# only a comment\n',
      '{"apiVersion": "projectcalico.org/v3"}',
      '---\napiVersion: projectcalico.org/v3\n',
      'spec:\n  k8sInsecureSkipTLSVerify: true\n',
      'spec:\n  k8sClientQPS: 10\n',
      'spec:\n  etcdEndpoints:\n    - http://a:2379\n',
      'spec:\n\tdatastoreType: etcdv3\n',
      'apiVersion: projectcalico.org/v3\r\nkind: CalicoAPIConfig\r\n',
      'kind: a\nkind: b\n',
      'spec:\n  a: x\n   b: y\n',
      'kind: CalicoAPIConfig # trailing comment\n',
      'spec:\n  etcdCACert: |\n    -----BEGIN-----\n',
      'kind: x\n  nested: y\n',
    ]) {
      expect(parsePlainMapping(text), JSON.stringify(text)).toBeUndefined();
    }
  });

  it('never disagrees with the library (5,000 generated documents)', () => {
    const next = random(20261123);
    let read = 0;
    for (let i = 0; i < 5000; i++) {
      const text = randomDocument(next);
      const fast = parsePlainMapping(text);
      if (fast === undefined) continue;
      read++;
      expect(fast, JSON.stringify(text)).toEqual(library(text));
    }
    // The generator must reach the fast path often enough for this to mean something.
    expect(read).toBeGreaterThan(400);
  });
});
