#!/usr/bin/env node
/**
 * The API reference of the publishable packages, from their TSDoc comments (TypeDoc; typedoc.json,
 * typedoc.base.json and each package's typedoc.json, whose entry points are its public `exports`
 * except /internal and /testing).
 *
 *   node scripts/docs.mjs                     HTML into docs/api/
 *   node scripts/docs.mjs --check             no output; fails when a public symbol (an exported
 *                                             name, or a member of one) has no doc comment and is not
 *                                             in docs/api-undocumented.txt, or when that list names a
 *                                             symbol that is documented or gone (it only shrinks)
 *   node scripts/docs.mjs --update-baseline   rewrites docs/api-undocumented.txt from today's gaps
 *
 * Needs the packages built (`pnpm build`): cross-package types resolve through dist/.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const update = process.argv.includes('--update-baseline');
const baselineFile = join(root, 'docs', 'api-undocumented.txt');

const args = ['exec', 'typedoc', '--logLevel', 'Warn'];
if (check || update) args.push('--emit', 'none');
// TypeDoc's output goes to a file, not a pipe: a Node program writing more than a pipe holds queues
// the rest, and TypeDoc exits before the queue drains, so a pipe sometimes lost the last package's
// warnings and the check then called their baseline entries stale. Writes to a file are synchronous.
const outDir = mkdtempSync(join(tmpdir(), 'calico-ts-docs-'));
const outFile = join(outDir, 'typedoc.log');
const outFd = openSync(outFile, 'w');
const r = spawnSync('pnpm', args, {
  cwd: root,
  stdio: ['ignore', outFd, outFd],
  env: { ...process.env, NO_COLOR: '1' },
});
closeSync(outFd);
// biome-ignore lint/suspicious/noControlCharactersInRegex: TypeDoc colours its output.
const output = readFileSync(outFile, 'utf8').replace(/\x1b\[[0-9;]*m/g, '');
rmSync(outDir, { recursive: true, force: true });
if (r.status !== 0) {
  console.error(output);
  console.error(`docs: typedoc failed (exit ${r.status})`);
  process.exit(1);
}

// "[warning] index.K8sIPBlock.cidr (Property), defined in @calico-ts/api/src/convert/x.ts, does not
// have any documentation" → "@calico-ts/api/src/convert/x.ts K8sIPBlock.cidr (Property)": the
// entry module's name ("index") is dropped, the file says which package.
const undocumented = new Set();
for (const line of output.split('\n')) {
  const m = /\[warning\] (\S+) \((\w[\w ]*)\), defined in (\S+), does not have any documentation/.exec(line);
  if (!m) continue;
  const name = m[1].split('.').slice(1).join('.') || m[1];
  undocumented.add(`${m[3]} ${name} (${m[2]})`);
}
const otherWarnings = output
  .split('\n')
  .filter((l) => l.includes('[warning]') && !l.includes('does not have any'));

if (update) {
  const lines = [...undocumented].sort();
  writeFileSync(baselineFile, `${lines.join('\n')}\n`);
  console.log(`docs: ${lines.length} undocumented public symbols recorded in docs/api-undocumented.txt`);
  process.exit(0);
}
if (!check) {
  console.log(`docs: API reference in docs/api/ (${undocumented.size} public symbols without a doc comment)`);
  process.exit(0);
}

const baseline = new Set(
  existsSync(baselineFile)
    ? readFileSync(baselineFile, 'utf8')
        .split('\n')
        .filter((l) => l.trim())
    : [],
);
const added = [...undocumented].filter((s) => !baseline.has(s)).sort();
const stale = [...baseline].filter((s) => !undocumented.has(s)).sort();
for (const s of added) console.error(`no doc comment: ${s}`);
for (const s of stale) console.error(`documented or gone, remove from docs/api-undocumented.txt: ${s}`);
if (otherWarnings.length)
  console.log(`docs: ${otherWarnings.length} other TypeDoc warnings (links, references)`);
if (added.length || stale.length) {
  console.error(
    `docs: ${added.length} public symbols without a doc comment, ${stale.length} stale entries in the list`,
  );
  process.exit(1);
}
console.log(
  `docs: every public symbol documented, except the ${baseline.size} listed in docs/api-undocumented.txt`,
);
