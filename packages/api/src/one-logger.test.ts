/**
 * One logger: every package logs through `@calico-ts/api/log`'s `Logger`. The non-test source of
 * every package and app is scanned for other logger shapes (see testing-internal/logger-shapes.ts);
 * the scanner itself is shown to find planted shapes and to pass lookalikes.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findLoggerShapes } from './testing-internal/logger-shapes.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const HOME = join(ROOT, 'packages', 'api', 'src', 'log.ts');
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'testing', 'testing-internal', 'testdata']);

function sourceFiles(dir: string, into: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (!SKIPPED_DIRS.has(name)) sourceFiles(path, into);
    } else if (/\.(ts|mts|cts)$/.test(name) && !/\.d\.ts$/.test(name) && !/\.test\.ts$/.test(name)) {
      into.push(path);
    }
  }
  return into;
}

function workspaceSources(): string[] {
  const files: string[] = [];
  for (const top of ['packages', 'apps']) {
    for (const pkg of readdirSync(join(ROOT, top))) {
      const src = join(ROOT, top, pkg, 'src');
      try {
        if (statSync(src).isDirectory()) sourceFiles(src, files);
      } catch {
        // a package without src/
      }
    }
  }
  return files.filter((f) => f !== HOME);
}

const shapesIn = (source: string) => findLoggerShapes('planted.ts', source).map((s) => s.text);

describe('logger shapes', () => {
  it('are found when planted: interfaces, object types, level functions, function-typed logs', () => {
    expect(
      shapesIn(
        'export interface SyncerLogger {\n  info(f: object, m: string): void;\n  warn(f: object, m: string): void;\n}',
      ),
    ).toEqual(['SyncerLogger: info, warn']);
    expect(
      shapesIn('type L = {\n  readonly error: (m: string) => void;\n  debug?: (m: string) => void;\n};'),
    ).toEqual(['L: error, debug']);
    expect(shapesIn("export type BirdLogger = (level: 'info' | 'warn', message: string) => void;")).toEqual([
      'BirdLogger: (level, …) => …',
    ]);
    expect(shapesIn('interface Options {\n  log?: (msg: string) => void;\n}')).toEqual([
      'log typed as a function',
    ]);
    expect(shapesIn('function f(log: (m: string) => void) {}')).toEqual(['log typed as a function']);
  });

  it('are not found in lookalikes: a Logger extended, one level member, comments, calls', () => {
    expect(
      shapesIn(
        'export interface LineLogger extends Logger {\n  setLevel(l: string): void;\n  info(m: string): void;\n  warn(m: string): void;\n}',
      ),
    ).toEqual([]);
    expect(shapesIn('interface Counts {\n  error: number;\n  total: number;\n}')).toEqual([]);
    expect(shapesIn('/* interface Old {\n  info(m: string): void;\n  warn(m: string): void;\n} */')).toEqual(
      [],
    );
    expect(shapesIn("const log = loggerOf((level, m) => lines.push(m));\nlog.info('x');")).toEqual([]);
    expect(shapesIn('interface Opts {\n  log?: Logger;\n  onWarning?: (m: string) => void;\n}')).toEqual([]);
  });

  it('are declared nowhere in the workspace but @calico-ts/api/log', () => {
    const files = workspaceSources();
    expect(files.length).toBeGreaterThan(300);
    const shapes = files.flatMap((f) =>
      findLoggerShapes(relative(ROOT, f), readFileSync(f, 'utf8')).map(
        (s) => `${s.file}:${s.line} ${s.text}`,
      ),
    );
    expect(shapes).toEqual([]);
  });
});
