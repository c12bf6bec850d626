#!/usr/bin/env node
/**
 * `pnpm release`: everything publishable, built from clean, tested and packed in dependency order,
 * ready for a maintainer with the registry's credentials to publish.
 *
 *   pnpm release --dry-run        the packages and versions it would publish, in order; runs nothing
 *   pnpm release [--out DIR]      build (clean, no cache), typecheck, every test of each package,
 *                                 the packed-package test (test-packs), then `pnpm pack` of each
 *                                 into DIR (default: .release/ at the repository root)
 *
 * Publishable: every package under packages/ that is not private. Versions come from each
 * package.json as `pnpm version-packages` (changesets) left them; a release with changesets still
 * pending is refused, because it would publish the old versions under new code.
 *
 *   packages/*  ──topological order of their @calico-ts dependencies──►  api, netlinux, nftables,
 *                                                                        datastore, ipam, …
 *   clean dist ─► turbo build --force ─► typecheck ─► tests (one package at a time) ─► test-packs
 *   ─► pnpm pack, in order ─► DIR/*.tgz + the publish commands, in the same order
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const dryRun = args.includes('--dry-run');
const outIndex = args.indexOf('--out');
const outDir = resolve(outIndex >= 0 ? args[outIndex + 1] : join(root, '.release'));
const unknown = args.filter(
  (a, i) => a !== '--dry-run' && a !== '--out' && !(i > 0 && args[i - 1] === '--out'),
);
if (unknown.length) fail(`unknown argument ${unknown.join(' ')} (use --dry-run, --out DIR)`);

function fail(message) {
  console.error(`release: ${message}`);
  process.exit(1);
}

/** The publishable packages, each with its @calico-ts dependencies. */
function publishable() {
  const pkgs = readdirSync(join(root, 'packages'))
    .map((d) => join(root, 'packages', d))
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .map((dir) => ({ dir, json: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) }))
    .filter(({ json }) => !json.private);
  const names = new Set(pkgs.map((p) => p.json.name));
  return pkgs.map(({ dir, json }) => ({
    dir,
    name: json.name,
    version: json.version,
    deps: Object.keys({
      ...json.dependencies,
      ...json.optionalDependencies,
      ...json.peerDependencies,
    }).filter((d) => names.has(d)),
  }));
}

/** Dependencies before dependents; ties by name, so the order is stable. */
function dependencyOrder(pkgs) {
  const byName = new Map(pkgs.map((p) => [p.name, p]));
  const done = new Set();
  const visiting = new Set();
  const out = [];
  const visit = (p) => {
    if (done.has(p.name)) return;
    if (visiting.has(p.name)) fail(`dependency cycle through ${p.name}`);
    visiting.add(p.name);
    for (const d of [...p.deps].sort()) visit(byName.get(d));
    visiting.delete(p.name);
    done.add(p.name);
    out.push(p);
  };
  for (const p of [...pkgs].sort((a, b) => a.name.localeCompare(b.name))) visit(p);
  return out;
}

function pendingChangesets() {
  const dir = join(root, '.changeset');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith('.md') && f !== 'README.md');
}

/** The versions `pnpm version-packages` would set, from `changeset status`: name → new version. */
function nextVersions() {
  const dir = mkdtempSync(join(tmpdir(), 'calico-ts-release-'));
  try {
    const file = join(dir, 'status.json');
    const r = spawnSync('pnpm', ['exec', 'changeset', 'status', '--output', file], {
      cwd: root,
      encoding: 'utf8',
    });
    if (r.status !== 0 || !existsSync(file)) fail(`changeset status: ${r.stderr || r.stdout}`);
    const { releases } = JSON.parse(readFileSync(file, 'utf8'));
    return new Map(releases.map((rel) => [rel.name, rel.newVersion]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function step(title, cmd, cmdArgs) {
  console.log(`\n=== ${title}: ${cmd} ${cmdArgs.join(' ')}`);
  const r = spawnSync(cmd, cmdArgs, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) fail(`${title} failed (exit ${r.status ?? r.signal})`);
}

const order = dependencyOrder(publishable());
const pending = pendingChangesets();
const next = pending.length ? nextVersions() : new Map();
const width = Math.max(...order.map((p) => p.name.length));

console.log(`${dryRun ? 'would publish' : 'publishing'}, in dependency order:`);
for (const [i, p] of order.entries()) {
  const after = p.deps.length
    ? `  (after ${p.deps.map((d) => d.replace('@calico-ts/', '')).join(', ')})`
    : '';
  const version = next.has(p.name) ? `${p.version} -> ${next.get(p.name)}` : p.version;
  console.log(`  ${String(i + 1).padStart(2)}. ${p.name.padEnd(width)}  ${version.padEnd(14)}${after}`);
}
if (pending.length) {
  console.log(`\n${pending.length} changeset(s) pending: ${pending.join(', ')}`);
  console.log(
    'the versions after -> are what `pnpm version-packages` sets; run it and commit before releasing',
  );
}
if (dryRun) process.exit(0);
if (pending.length) fail('changesets pending; run `pnpm version-packages` and commit first');

// Clean: a dist/ keeps files of modules that no longer exist, and the cache would restore them.
for (const p of order) rmSync(join(p.dir, 'dist'), { recursive: true, force: true });
const filters = order.flatMap((p) => ['--filter', p.name]);
step('build', 'pnpm', ['exec', 'turbo', 'run', 'build', '--force', '--output-logs=errors-only', ...filters]);
step('typecheck', 'pnpm', ['exec', 'turbo', 'run', 'typecheck', '--output-logs=errors-only', ...filters]);
// One package at a time: the integration tests start etcd, namespaces and BIRD.
step('tests', 'pnpm', ['exec', 'turbo', 'run', 'test', '--concurrency=1', ...filters]);
step('packed packages', 'pnpm', ['--filter', '@calico-ts/test-packs', 'test']);

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const tarballs = [];
for (const p of order) {
  const r = spawnSync('pnpm', ['pack', '--pack-destination', outDir], { cwd: p.dir, encoding: 'utf8' });
  if (r.status !== 0) fail(`pnpm pack of ${p.name}: ${r.stderr}`);
  const file = r.stdout.trim().split('\n').at(-1).trim();
  if (!file.endsWith('.tgz') || !existsSync(file)) fail(`pnpm pack of ${p.name}: ${r.stdout}`);
  const sha = createHash('sha256').update(readFileSync(file)).digest('hex');
  tarballs.push({ p, file, sha, size: statSync(file).size });
}

console.log(`\npacked into ${relative(process.cwd(), outDir) || '.'}:`);
for (const t of tarballs) {
  console.log(`  ${basename(t.file)}  ${(t.size / 1024).toFixed(0)} kB  sha256 ${t.sha}`);
}
console.log('\nto publish, in this order (needs the registry credentials; provenance needs a CI with OIDC):');
for (const t of tarballs) console.log(`  npm publish ${relative(root, t.file)} --access public --provenance`);
