#!/usr/bin/env node
// Runs the whole check of the workspace and ends with one line CI reads: `N passed, N failed`.
//
//   node scripts/run-tests.mjs          build, typecheck, lint, the shape rules (the tests of
//                                       scripts/check-shape.mjs, then the check itself), API doc
//                                       comments (scripts/docs.mjs --check), every test (unit +
//                                       integration)
//   node scripts/run-tests.mjs --unit   the fast loop: unit tests only (no root, etcd or netns)
//
// Each package's vitest writes a JSON report (see vitest.shared.ts); this script sums them. A
// package that produced no report, a failed build, typecheck, lint or shape check each count as
// one failure.
// Skipped tests never count as passed; under CI=true they count as failed, because there a missing
// prerequisite must fail the run rather than hide.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const unit = process.argv.includes('--unit');
const ci = process.env.CI === 'true';
const resultsDir = join(root, '.test-results');

let passed = 0;
let failed = 0;
let skipped = 0;
const problems = [];

function step(title, cmd, args, env = {}) {
  console.log(`\n=== ${title}: ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  return r.status === 0;
}

function check(title, ok) {
  if (ok) passed++;
  else {
    failed++;
    problems.push(title);
  }
}

check('build', step('build', 'pnpm', ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only']));
if (!unit) {
  check(
    'typecheck',
    step('typecheck', 'pnpm', ['exec', 'turbo', 'run', 'typecheck', '--output-logs=errors-only']),
  );
  check('lint', step('lint', 'pnpm', ['exec', 'biome', 'check', '.']));
  // The check's own tests, then the check: both run, and together they count once.
  const shapeTests = step('shape tests', 'node', [
    '--test',
    '--test-reporter=dot',
    'scripts/check-shape.test.mjs',
  ]);
  check('shape', step('shape', 'node', ['scripts/check-shape.mjs']) && shapeTests);
  check('api docs', step('api docs', 'node', ['scripts/docs.mjs', '--check']));
}

rmSync(resultsDir, { recursive: true, force: true });
mkdirSync(resultsDir, { recursive: true });
step('tests', 'pnpm', ['exec', 'turbo', 'run', 'test', '--concurrency=2', '--continue'], {
  CALICO_TEST_RESULTS: resultsDir,
  ...(unit ? { CALICO_TEST_UNIT: '1' } : {}),
});

// Every workspace package with a test script must have left a report.
const packageDirs = ['packages', 'apps', 'test-e2e', 'test-packs', 'bench', 'deploy', 'images'].flatMap(
  (top) => {
    const dir = join(root, top);
    if (!existsSync(dir)) return [];
    if (existsSync(join(dir, 'package.json'))) return [dir];
    return readdirSync(dir)
      .map((d) => join(dir, d))
      .filter((d) => existsSync(join(d, 'package.json')));
  },
);
console.log('\n=== results');
for (const dir of packageDirs) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  if (!pkg.scripts?.test) continue;
  const file = join(resultsDir, `${pkg.name.replace(/[@/]/g, '_')}.json`);
  if (!existsSync(file)) {
    check(`${pkg.name}: no test report (the test run crashed before reporting)`, false);
    console.log(`${pkg.name}: no report`);
    continue;
  }
  const report = JSON.parse(readFileSync(file, 'utf8'));
  let p = 0;
  let f = 0;
  let s = 0;
  for (const suite of report.testResults ?? []) {
    const tests = suite.assertionResults ?? [];
    if (suite.status === 'failed' && !tests.some((t) => t.status === 'failed')) {
      // The file failed outside any test (import error, hook failure).
      f++;
      problems.push(`${pkg.name}: ${suite.name}${excerpt([suite.message])}`);
    }
    for (const t of tests) {
      if (t.status === 'passed') p++;
      else if (t.status === 'failed') {
        f++;
        problems.push(`${pkg.name}: ${t.fullName}${excerpt(t.failureMessages)}`);
      } else s++;
    }
  }
  console.log(`${pkg.name}: ${p} passed, ${f} failed, ${s} skipped`);
  passed += p;
  failed += f;
  skipped += s;
}

/**
 * The first lines of a failure's message, indented under its name: CI keeps only this summary,
 * so it must say why a test failed, not only which.
 */
function excerpt(messages) {
  const text = (messages ?? []).filter(Boolean).join('\n');
  if (!text) return '';
  const lines = text.split('\n').filter((l) => l.trim() !== '' && !/^\s+at /.test(l));
  return `\n      ${lines
    .slice(0, 12)
    .map((l) => l.slice(0, 300))
    .join('\n      ')}`;
}

if (problems.length) {
  console.log('\nFailures:');
  for (const x of problems) console.log(`  - ${x}`);
}
if (skipped) {
  console.log(`\n${skipped} test(s) skipped${ci ? ' (counted as failed under CI=true)' : ''}`);
  if (ci) failed += skipped;
}
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
