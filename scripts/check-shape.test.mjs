// Tests of the architecture check (scripts/check-shape.mjs) on small fixture trees written to a
// temporary directory: each rule must fail on an offender and pass on its exemption, and the
// budget must fail when an offender is new, grew, shrank or is gone.
//
//   node --test scripts/check-shape.test.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { compare, LIMITS, measure } from './check-shape.mjs';

const script = join(dirname(fileURLToPath(import.meta.url)), 'check-shape.mjs');
const roots = [];

afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** A fixture tree: `files` maps a path under the root to its text. */
function tree(files) {
  const root = mkdtempSync(join(tmpdir(), 'check-shape-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const manifest = (name) => JSON.stringify({ name });

/** A function of exactly `lines` lines (its first line to its closing brace). */
function longFunction(name, lines) {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  total += ${i};`);
  return `export function ${name}(): number {\n${body.join('\n')}\n}\n`;
}

/** A function that only returns an object literal, `lines` lines long. */
function dataFunction(name, lines) {
  const props = Array.from({ length: lines - 4 }, (_, i) => `    p${i}: ${i},`);
  return `export function ${name}() {\n  return {\n${props.join('\n')}\n  };\n}\n`;
}

function fileOf(lines, header = '// A file.\n') {
  const body = Array.from(
    { length: lines - header.split('\n').length + 1 },
    (_, i) => `export const c${i} = ${i};`,
  );
  return `${header}${body.join('\n')}\n`;
}

const empty = { functions: [], files: [], circles: [] };

function check(files, budget = empty) {
  return compare(measure(tree(files)), budget).problems;
}

describe('check-shape: functions', () => {
  it('passes a function of exactly the limit and fails one line more', () => {
    const ok = check({
      'packages/a/package.json': manifest('@calico-ts/a'),
      'packages/a/src/f.ts': longFunction('atLimit', LIMITS.functionLines),
    });
    assert.deepEqual(ok, []);
    const bad = check({
      'packages/a/package.json': manifest('@calico-ts/a'),
      'packages/a/src/f.ts': longFunction('overLimit', LIMITS.functionLines + 1),
    });
    assert.equal(bad.length, 1);
    assert.match(bad[0], /function overLimit \(packages\/a\/src\/f\.ts:1\): 151 lines, .*not in the budget/);
  });

  it('names methods by class and arrows by their binding', () => {
    const body = Array.from({ length: 160 }, (_, i) => `    this.n += ${i};`).join('\n');
    const found = measure(
      tree({
        'apps/x/package.json': manifest('@calico-ts/x'),
        'apps/x/src/c.ts': `export class Counter {\n  n = 0;\n  bump(): void {\n${body}\n  }\n}\nexport const run = () => {\n${body}\n};\n`,
      }),
    );
    assert.deepEqual(
      found.functions.map((f) => f.name),
      ['Counter.bump', 'run'],
    );
  });

  it('exempts a function that is only a data literal, also after const helpers', () => {
    const helper = `export function examples() {\n  const v = (n: number) => ({ n });\n  const ns = NS;\n  return [\n${Array.from({ length: 200 }, (_, i) => `    v(${i}),`).join('\n')}\n  ];\n}\nconst NS = 'x';\n`;
    assert.deepEqual(
      check({
        'packages/a/package.json': manifest('@calico-ts/a'),
        'packages/a/src/data.ts': dataFunction('defaults', 300),
        'packages/a/src/examples.ts': helper,
      }),
      [],
    );
  });

  it('does not exempt a data literal returned after a computation', () => {
    const text = dataFunction('defaults', 300).replace(
      '  return {',
      '  console.log("side effect");\n  return {',
    );
    const problems = check({
      'packages/a/package.json': manifest('@calico-ts/a'),
      'packages/a/src/d.ts': text,
    });
    assert.equal(problems.length, 1);
    assert.match(problems[0], /function defaults/);
  });
});

describe('check-shape: files', () => {
  it('fails a file over the limit and passes one at it', () => {
    const files = {
      'packages/a/package.json': manifest('@calico-ts/a'),
      'packages/a/src/at.ts': fileOf(LIMITS.fileLines),
      'packages/a/src/over.ts': fileOf(LIMITS.fileLines + 1),
    };
    const problems = check(files);
    assert.deepEqual(problems, [
      'file packages/a/src/over.ts: 601 lines, over the limit of 600 and not in the budget',
    ]);
  });

  it('exempts generated files, test files and test kits', () => {
    assert.deepEqual(
      check({
        'packages/a/package.json': manifest('@calico-ts/a'),
        'packages/a/src/gen.ts': fileOf(900, '// Code generated by gen-crds.mjs. DO NOT EDIT.\n'),
        'packages/a/src/big.test.ts': fileOf(900),
        'packages/a/src/testing/fake.ts': fileOf(900),
        'packages/a/src/x/testing-internal/harness.ts': fileOf(900) + longFunction('harness', 200),
      }),
      [],
    );
  });

  it('still checks the functions and imports of a generated file', () => {
    const problems = check({
      'packages/a/package.json': manifest('@calico-ts/a'),
      'packages/a/src/gen.ts': `// @generated\nimport './other.js';\n${longFunction('generatedLong', 200)}`,
      'packages/a/src/other.ts': "import './gen.js';\n",
    });
    assert.deepEqual(problems, [
      'function generatedLong (packages/a/src/gen.ts:3): 200 lines, over the limit of 150 and not in the budget',
      'import circle packages/a/src/gen.ts -> packages/a/src/other.ts: not in the budget',
    ]);
  });

  it('does not take a mention of "generated" in prose for the marker', () => {
    const problems = check({
      'packages/a/package.json': manifest('@calico-ts/a'),
      'packages/a/src/crds.ts': fileOf(700, '// The CRDs, generated from the schemas at build time.\n'),
    });
    assert.equal(problems.length, 1);
  });
});

describe('check-shape: import circles', () => {
  it('fails a circle of relative imports, type-only and re-exports included', () => {
    const problems = check({
      'packages/a/package.json': manifest('@calico-ts/a'),
      'packages/a/src/one.ts': "import type { Two } from './two.js';\nexport type One = { two?: Two };\n",
      'packages/a/src/two.ts': "export { three } from './dir/index.js';\nexport type Two = number;\n",
      'packages/a/src/dir/index.ts':
        "import type { One } from '../one.js';\nexport const three = (o: One) => o;\n",
      'packages/a/src/leaf.ts': "import type { One } from './one.js';\nexport const leaf = (o: One) => o;\n",
    });
    assert.deepEqual(problems, [
      'import circle packages/a/src/dir/index.ts -> packages/a/src/one.ts -> packages/a/src/two.ts: not in the budget',
    ]);
  });

  it('fails a circle through a dynamic import', () => {
    const problems = check({
      'packages/a/package.json': manifest('@calico-ts/a'),
      'packages/a/src/one.ts': "export const one = async () => (await import('./two.js')).two;\n",
      'packages/a/src/two.ts': "import { one } from './one.js';\nexport const two = one;\n",
    });
    assert.equal(problems.length, 1);
  });

  it('fails a circle between workspace packages, and ignores imports from test kits', () => {
    const files = {
      'packages/a/package.json': manifest('@calico-ts/a'),
      'packages/a/src/index.ts': "import { b } from '@calico-ts/b';\nexport const a = b;\n",
      'packages/b/package.json': manifest('@calico-ts/b'),
      'packages/b/src/index.ts': 'export const b = 1;\n',
      'packages/b/src/testing/index.ts': "import { a } from '@calico-ts/a';\nexport const kit = a;\n",
      'packages/b/src/b.test.ts': "import { a } from '@calico-ts/a/testing';\n",
    };
    assert.deepEqual(check(files), []);
    files['apps/c/package.json'] = manifest('@calico-ts/c');
    files['apps/c/src/index.ts'] = "import '@calico-ts/a';\n";
    files['packages/b/src/use-c.ts'] = "import '@calico-ts/c/sub';\n";
    assert.deepEqual(check(files), [
      'import circle @calico-ts/a -> @calico-ts/b -> @calico-ts/c: not in the budget',
    ]);
  });
});

describe('check-shape: the budget', () => {
  const files = {
    'packages/a/package.json': manifest('@calico-ts/a'),
    'packages/a/src/f.ts': longFunction('big', 200),
    'packages/a/src/g.ts': fileOf(700),
    'packages/a/src/one.ts': "import './two.js';\n",
    'packages/a/src/two.ts': "import './one.js';\n",
  };
  const budget = (fnLines, fileLines, members = ['packages/a/src/one.ts', 'packages/a/src/two.ts']) => ({
    functions: [{ file: 'packages/a/src/f.ts', name: 'big', lines: fnLines, reason: 'r' }],
    files: [{ file: 'packages/a/src/g.ts', lines: fileLines, reason: 'r' }],
    circles: [{ members, reason: 'r' }],
  });

  it('passes offenders at their budgeted size', () => {
    assert.deepEqual(check(files, budget(200, 700)), []);
  });

  it('fails an offender that grew', () => {
    assert.deepEqual(check(files, budget(199, 699)), [
      'function big (packages/a/src/f.ts:1): 200 lines, grew from its budget of 199',
      'file packages/a/src/g.ts: 700 lines, grew from its budget of 699',
    ]);
  });

  it('fails an offender that shrank until the budget is lowered', () => {
    assert.deepEqual(check(files, budget(201, 701)), [
      'function big (packages/a/src/f.ts:1): 200 lines, shrank from 201; lower the budget to 200',
      'file packages/a/src/g.ts: 700 lines, shrank from 701; lower the budget to 700',
    ]);
  });

  it('fails a budget entry that no longer offends: remove from budget', () => {
    const fixed = {
      ...files,
      'packages/a/src/f.ts': longFunction('big', 100),
      'packages/a/src/g.ts': fileOf(100),
      'packages/a/src/two.ts': '',
    };
    assert.deepEqual(check(fixed, budget(200, 700)), [
      'function big (packages/a/src/f.ts): no longer over 150 lines; remove from budget',
      'file packages/a/src/g.ts: no longer over 600 lines; remove from budget',
      'import circle packages/a/src/one.ts -> packages/a/src/two.ts: gone; remove from budget',
    ]);
  });

  it('fails a circle that grew beyond its budget', () => {
    const grown = {
      ...files,
      'packages/a/src/two.ts': "import './three.js';\n",
      'packages/a/src/three.ts': "import './one.js';\n",
    };
    const problems = check(grown, budget(200, 700));
    assert.equal(problems.length, 1);
    assert.match(problems[0], /import circle .*three\.ts.*: grew from its budget/);
  });

  it('exits 1 from the command line, and --fix-budget only removes and lowers', () => {
    const root = tree({
      ...files,
      'packages/a/src/f.ts': longFunction('big', 180),
      'packages/a/src/g.ts': fileOf(100),
      'scripts/shape-budget.json': JSON.stringify({ about: 'kept', ...budget(200, 700) }),
    });
    const run = (...args) =>
      spawnSync(process.execPath, [script, '--root', root, ...args], { encoding: 'utf8' });
    const failed = run();
    assert.equal(failed.status, 1);
    assert.match(failed.stdout, /lower the budget to 180/);
    assert.match(failed.stdout, /file packages\/a\/src\/g\.ts: no longer over 600 lines; remove from budget/);

    assert.equal(run('--fix-budget').status, 0);
    const written = JSON.parse(readFileSync(join(root, 'scripts/shape-budget.json'), 'utf8'));
    assert.equal(written.about, 'kept');
    assert.deepEqual(written.functions, [
      { file: 'packages/a/src/f.ts', name: 'big', lines: 180, reason: 'r' },
    ]);
    assert.deepEqual(written.files, []);
    assert.equal(written.circles.length, 1);
    assert.equal(run().status, 0);
  });
});
