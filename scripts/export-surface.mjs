#!/usr/bin/env node
/**
 * The public surface of each publishable package, as a user of the built package sees it: for every
 * entry in its `exports` map, the names its `.d.ts` exports, split into values (present at run time
 * in the built `.js`) and types.
 *
 *   node scripts/export-surface.mjs                 table: package, entry, names, values, types
 *   node scripts/export-surface.mjs --names         and the names themselves
 *   node scripts/export-surface.mjs --json          machine-readable
 *   node scripts/export-surface.mjs api datastore   only these packages
 *
 * Reads dist/: run `pnpm build` first. Exits 1 when an entry's built files are missing.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const showNames = args.includes('--names');
const asJson = args.includes('--json');
const only = args.filter((a) => !a.startsWith('--'));

/** Non-private packages under packages/, as `{ dir, name, pkg }`. */
function publishable() {
  return readdirSync(join(root, 'packages'))
    .map((d) => join(root, 'packages', d))
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .map((dir) => ({ dir, pkg: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) }))
    .filter(({ pkg }) => !pkg.private)
    .filter(({ dir }) => only.length === 0 || only.some((o) => dir.endsWith(`/${o}`)));
}

/** `exports` entries with their built `.d.ts` and `.js`. */
function entries(pkg) {
  const map = pkg.exports ?? { '.': { types: pkg.types, default: pkg.main } };
  return Object.entries(map)
    .filter(([key]) => !key.endsWith('package.json'))
    .map(([key, target]) => ({
      key,
      types: typeof target === 'string' ? undefined : (target.types ?? target.import?.types),
      js: typeof target === 'string' ? target : (target.default ?? target.import?.default ?? target.import),
    }));
}

/**
 * Every name each declaration file exports, in one program over all of them. A name counts as a
 * value when the built module has it at run time (an `export type` of a function is only a type).
 */
function declaredNames(files) {
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  return new Map(
    files.map((file) => {
      const source = program.getSourceFile(file);
      const moduleSymbol = source && checker.getSymbolAtLocation(source);
      const names = moduleSymbol ? checker.getExportsOfModule(moduleSymbol).map((s) => s.name) : [];
      return [file, names.sort()];
    }),
  );
}

const rows = [];
const found = [];
let missing = false;
for (const { dir, pkg } of publishable()) {
  for (const e of entries(pkg)) {
    const dts = e.types && join(dir, e.types);
    const js = e.js && join(dir, e.js);
    if (!dts || !existsSync(dts) || !js || !existsSync(js)) {
      console.error(
        `${pkg.name}${e.key.slice(1)}: built files missing (${e.types}, ${e.js}); run pnpm build`,
      );
      missing = true;
      continue;
    }
    found.push({ name: pkg.name, key: e.key, dts, js });
  }
}
const declared = declaredNames(found.map((f) => f.dts));
for (const f of found) {
  const names = declared.get(f.dts);
  const runtime = new Set(Object.keys(await import(pathToFileURL(f.js).href)));
  const values = names.filter((n) => runtime.has(n));
  const types = names.filter((n) => !runtime.has(n));
  const undeclared = [...runtime].filter((n) => !names.includes(n));
  if (undeclared.length)
    console.error(`${f.name}${f.key.slice(1)}: not in its .d.ts: ${undeclared.join(', ')}`);
  rows.push({ package: f.name, entry: f.key, names: names.length, values, types });
}

if (asJson) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  const header = ['package', 'entry', 'names', 'values', 'types'];
  const table = rows.map((r) => [
    r.package,
    r.entry,
    String(r.names),
    String(r.values.length),
    String(r.types.length),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
  const line = (cells) =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  for (const row of table) console.log(line(row));
  if (showNames) {
    for (const r of rows) {
      console.log(`\n${r.package}${r.entry === '.' ? '' : r.entry.slice(1)}`);
      console.log(`  values: ${r.values.join(', ')}`);
      console.log(`  types:  ${r.types.join(', ')}`);
    }
  }
}
if (missing) process.exitCode = 1;
