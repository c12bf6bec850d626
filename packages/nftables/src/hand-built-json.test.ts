/**
 * One nftables vocabulary: no package or app but this one builds nftables JSON by hand. Every
 * non-test source file under `packages/*\/src` and `apps/*\/src` (this package, test files and test
 * kits left out) is scanned for object literals shaped like the libnftables JSON schema; the
 * scanner itself is shown to find planted examples and to pass lookalikes.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findHandBuiltJson } from './testing-internal/hand-built-json.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SELF = join(ROOT, 'packages', 'nftables');

function sourceFiles(dir: string, into: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name === 'node_modules' || name === 'testing' || name === 'testing-internal' || name === 'testdata')
        continue;
      sourceFiles(path, into);
    } else if (/\.(ts|mts|cts)$/.test(name) && !/\.d\.ts$/.test(name) && !/\.test\.ts$/.test(name)) {
      into.push(path);
    }
  }
  return into;
}

function scanned(): string[] {
  const files: string[] = [];
  for (const top of ['packages', 'apps']) {
    for (const pkg of readdirSync(join(ROOT, top))) {
      const src = join(ROOT, top, pkg, 'src');
      if (join(ROOT, top, pkg) === SELF) continue;
      try {
        if (!statSync(src).isDirectory()) continue;
      } catch {
        continue;
      }
      sourceFiles(src, files);
    }
  }
  return files;
}

const keysIn = (source: string) => findHandBuiltJson('planted.ts', source).map((f) => f.key);

describe('nftables JSON built by hand', () => {
  it('is found in planted examples: expressions, statements, objects, commands, documents', () => {
    expect(keysIn("const m = { match: { op: '==', left: { meta: { key: 'mark' } }, right: 1 } };")).toEqual([
      'match',
      'meta',
    ]);
    expect(
      keysIn("out.push({ add: { rule: { family: 'ip', table: 'calico', chain: 'a', expr } } });"),
    ).toEqual(['add', 'rule']);
    expect(keysIn('const v = [{ accept: null }, { jump: { target: t } }, { counter: null }];')).toEqual([
      'accept',
      'jump',
      'counter',
    ]);
    expect(
      keysIn('send(JSON.stringify({ nftables: [{ metainfo: { json_schema_version: 1 } }, ...c] }));'),
    ).toEqual(['nftables', 'metainfo']);
    expect(keysIn("const p = { payload: { protocol: 'tcp', field: 'dport' } } as const;")).toEqual([
      'payload',
    ]);
    expect(keysIn("f({ flush: { set: { family, table: 'calico', name } } });")).toEqual(['flush', 'set']);
    expect(keysIn("const x = { 'set': [80, 443] }, y = { '&': [a, 0x10] }, z = { range: [1, 2] };")).toEqual([
      'set',
      '&',
      'range',
    ]);
  });

  it('passes lookalikes: other objects that reuse the words, types, strings and comments', () => {
    const source = `
      // { match: { left, right } } in a comment
      type T = { accept: null; jump: { target: string } };
      const s = "{ drop: null }";
      const a = { meta: metadata, set: value, table: name, delete: true, counter: 0 };
      const b = { match: { left } };
      const c = { log: { message: 'x' } };
      const d = { add: { pod: 'x' } };
      const e = { metadata: { name, namespace } };
      const f = { jump };
      const g = { rule: { name: 'allow' } };
    `;
    expect(findHandBuiltJson('lookalikes.ts', source)).toEqual([]);
  });

  it('is found nowhere outside @calico-ts/nftables (use its builders and Transaction)', () => {
    const files = scanned();
    expect(files.length).toBeGreaterThan(100);
    expect(files.some((f) => f.includes(join('packages', 'felix', 'src', 'rules')))).toBe(true);
    const findings = files.flatMap((f) =>
      findHandBuiltJson(relative(ROOT, f), readFileSync(f, 'utf8')).map(
        (x) => `${x.file}:${x.line} ${x.key}`,
      ),
    );
    expect(findings).toEqual([]);
  });
});
