#!/usr/bin/env node
// Writes the Kubernetes datastore's CustomResourceDefinitions into deploy/crds/ from
// @calico-ts/api's schemas (renderCrdFiles in packages/api/src/crds).
//
//   pnpm crds            build @calico-ts/api if needed, then (re)write deploy/crds/
//   pnpm crds --check    write nothing; exit 1 if deploy/crds/ differs from what would be written
//
// Files in deploy/crds/ that the generator no longer makes are removed (only *.yaml there).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..');
const outDir = join(root, 'deploy', 'crds');
const check = process.argv.includes('--check');

const build = spawnSync(
  'pnpm',
  ['exec', 'turbo', 'run', 'build', '--filter=@calico-ts/api', '--output-logs=errors-only'],
  { cwd: root, stdio: 'inherit' },
);
if (build.status !== 0) {
  console.error('gen-crds: building @calico-ts/api failed');
  process.exit(1);
}

const { renderCrdFiles } = await import(pathToFileURL(join(root, 'packages/api/dist/crds/index.js')).href);
const files = renderCrdFiles();
const wanted = new Set(files.map((f) => f.path));
const present = existsSync(outDir) ? readdirSync(outDir).filter((f) => f.endsWith('.yaml')) : [];
const stale = present.filter((f) => !wanted.has(f));
const changed = files.filter((f) => {
  const p = join(outDir, f.path);
  return !existsSync(p) || readFileSync(p, 'utf8') !== f.text;
});

if (check) {
  for (const f of changed) console.error(`deploy/crds/${f.path} is out of date`);
  for (const f of stale) console.error(`deploy/crds/${f} is no longer generated`);
  if (changed.length + stale.length > 0) {
    console.error('run `pnpm crds` to regenerate');
    process.exit(1);
  }
  console.log(`deploy/crds/: ${files.length} files up to date`);
  process.exit(0);
}

mkdirSync(outDir, { recursive: true });
for (const f of changed) writeFileSync(join(outDir, f.path), f.text);
for (const f of stale) rmSync(join(outDir, f));
console.log(`deploy/crds/: ${files.length} files, ${changed.length} written, ${stale.length} removed`);
