#!/usr/bin/env node
// The architecture check: the shape rules of the workspace, measured on the source, with a budget
// for the offenders that are still being fixed.
//
//   node scripts/check-shape.mjs                 check; exit 1 on any problem
//   node scripts/check-shape.mjs --fix-budget    rewrite scripts/shape-budget.json after a fix:
//                                                drop entries that no longer offend, lower sizes
//                                                that shrank (never adds an entry or raises one)
//   node scripts/check-shape.mjs --root <dir>    check another tree (the tests use fixture trees)
//
// Rules, over the non-test source of packages/*/src and apps/*/src:
//
//   function  no function, method, accessor, constructor or arrow over 150 lines, unless its
//             whole body is one data literal (an object, array or string returned as is)
//   file      no file over 600 lines, unless it is generated (`@generated`, `Code generated` or
//             `DO NOT EDIT` in its header comment; its functions and imports are still checked)
//   circle    no import circle: between files of one package (relative imports, `import type`,
//             `export … from` and `import()` alike), and between workspace packages (a package's
//             source importing `@calico-ts/<other>`)
//
// Test files (`*.test.ts`) and test kits (`testing/`, `testing-internal/`, `testdata/`) are not
// checked. Sizes are lines from the first token to the last, both included.
//
//   source files ──► measure (functions, files) ──┐
//        │                                        ├──► compare with the budget ──► problems
//        └──► import graph ──► circles (SCCs) ────┘        (new, grown, shrunk, fixed)
//
// The budget (scripts/shape-budget.json) names each offender that is allowed for now, with its
// size and a one-line reason. The check fails on an offender not in the budget, on a budgeted one
// that grew, on one that shrank (lower the budget: the budget only ever goes down) and on a budget
// entry that no longer offends ("remove from budget"). Functions are named by file and by
// `Class.method` or the variable they are bound to, so the budget does not move with line numbers.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const LIMITS = Object.freeze({ functionLines: 150, fileLines: 600 });

const TEST_KIT_DIRS = new Set(['testing', 'testing-internal', 'testdata', 'node_modules', 'dist']);
const SOURCE_EXT = /\.(ts|tsx|mts|cts)$/;
const NOT_SOURCE = /(\.d\.ts|\.test\.ts|\.test\.tsx)$/;
const GENERATED = /@generated|Code generated|DO NOT EDIT/;
const WORKSPACE_SCOPE = '@calico-ts/';

/** The workspace packages under `<root>/packages/*` and `<root>/apps/*` that have a `src/`. */
export function findPackages(root) {
  const out = [];
  for (const top of ['packages', 'apps']) {
    const dir = join(root, top);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) {
      const pkgDir = join(dir, name);
      const src = join(pkgDir, 'src');
      if (!existsSync(src) || !statSync(src).isDirectory()) continue;
      const manifest = join(pkgDir, 'package.json');
      const pkgName = existsSync(manifest)
        ? JSON.parse(readFileSync(manifest, 'utf8')).name
        : `${WORKSPACE_SCOPE}${name}`;
      out.push({ name: pkgName, dir: pkgDir, files: sourceFiles(src) });
    }
  }
  return out;
}

function sourceFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!TEST_KIT_DIRS.has(entry.name)) out.push(...sourceFiles(path));
    } else if (SOURCE_EXT.test(entry.name) && !NOT_SOURCE.test(entry.name)) {
      out.push(path);
    }
  }
  return out;
}

/** Lines in a text, as `wc -l` counts them for a file that ends with a newline. */
function lineCount(text) {
  if (text === '') return 0;
  const n = text.split('\n').length;
  return text.endsWith('\n') ? n - 1 : n;
}

/** True when the comment block at the top of the file marks it generated. */
export function isGenerated(text) {
  const ranges = ts.getLeadingCommentRanges(text, 0) ?? [];
  return ranges.some((r) => GENERATED.test(text.slice(r.pos, r.end)));
}

function isFunctionLike(node) {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

function unwrap(expr) {
  let e = expr;
  while (
    ts.isParenthesizedExpression(e) ||
    ts.isAsExpression(e) ||
    ts.isSatisfiesExpression(e) ||
    ts.isNonNullExpression(e) ||
    ts.isTypeAssertionExpression(e)
  ) {
    e = e.expression;
  }
  return e;
}

function isDataLiteral(expr) {
  const e = unwrap(expr);
  return (
    ts.isObjectLiteralExpression(e) ||
    ts.isArrayLiteralExpression(e) ||
    ts.isStringLiteral(e) ||
    ts.isNoSubstitutionTemplateLiteral(e) ||
    ts.isTemplateExpression(e)
  );
}

/** A `const` that names a helper or a plain value: `const v1 = (…) => ({…})`, `const ns = NS`. */
function isPlainBinding(stmt) {
  if (!ts.isVariableStatement(stmt)) return false;
  if (!(stmt.declarationList.flags & ts.NodeFlags.Const)) return false;
  return stmt.declarationList.declarations.every((d) => {
    if (!d.initializer) return false;
    const e = unwrap(d.initializer);
    return (
      ts.isArrowFunction(e) ||
      ts.isFunctionExpression(e) ||
      ts.isIdentifier(e) ||
      ts.isPropertyAccessExpression(e) ||
      ts.isNumericLiteral(e) ||
      isDataLiteral(e)
    );
  });
}

/**
 * A function whose whole body is one data literal: `() => ({…})`, `{ return […]; }`, also after
 * `const` bindings of helpers and plain values (the helpers are functions, measured on their own).
 */
export function isOnlyDataLiteral(fn) {
  const body = fn.body;
  if (!body) return false;
  if (!ts.isBlock(body)) return isDataLiteral(body);
  const statements = body.statements;
  if (statements.length === 0) return false;
  const last = statements[statements.length - 1];
  return (
    ts.isReturnStatement(last) &&
    last.expression !== undefined &&
    isDataLiteral(last.expression) &&
    statements.slice(0, -1).every(isPlainBinding)
  );
}

function propertyName(name) {
  if (!name) return undefined;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name)) return name.text;
  if (ts.isNumericLiteral(name)) return name.text;
  return undefined;
}

/** The name a reader would look a function up by: `name`, `Class.method`, `outer/inner`. */
function functionName(fn, sf) {
  let own;
  if (ts.isConstructorDeclaration(fn)) own = 'constructor';
  else if (fn.name) own = propertyName(fn.name);
  if (!own) {
    const p = fn.parent;
    if (ts.isVariableDeclaration(p) || ts.isPropertyDeclaration(p) || ts.isPropertyAssignment(p)) {
      own = propertyName(p.name);
    } else if (ts.isBinaryExpression(p) && p.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
      own = p.left.getText(sf);
    } else if (ts.isExportAssignment(p)) {
      own = 'default';
    }
  }
  if (ts.isGetAccessorDeclaration(fn)) own = `get ${own}`;
  if (ts.isSetAccessorDeclaration(fn)) own = `set ${own}`;
  if (!own) {
    const { line } = sf.getLineAndCharacterOfPosition(fn.getStart(sf));
    own = `<anonymous:${line + 1}>`;
  }
  // Prefix with the enclosing class or function, so `a/inner` and `b/inner` stay apart.
  const outer = [];
  for (let n = fn.parent; n; n = n.parent) {
    if (ts.isClassDeclaration(n) || ts.isClassExpression(n)) {
      outer.unshift(n.name?.text ?? '<class>');
    } else if (isFunctionLike(n)) {
      outer.unshift(functionName(n, sf));
      break;
    }
  }
  if (outer.length === 0) return own;
  const last = outer[outer.length - 1];
  return ts.isClassDeclaration(fn.parent) || ts.isClassExpression(fn.parent)
    ? `${outer.join('.')}.${own}`
    : `${last}/${own}`;
}

function linesOf(node, sf) {
  const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
  const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
  return end - start + 1;
}

/**
 * Measures one file: its line count, whether it is generated, every function over the limit, and
 * the module specifiers it imports.
 */
export function measureFile(path, text = readFileSync(path, 'utf8')) {
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const longFunctions = [];
  const imports = [];
  const seen = new Map();
  const visit = (node) => {
    if (isFunctionLike(node) && node.body) {
      const lines = linesOf(node, sf);
      if (lines > LIMITS.functionLines && !isOnlyDataLiteral(node)) {
        let name = functionName(node, sf);
        const n = (seen.get(name) ?? 0) + 1;
        seen.set(name, n);
        if (n > 1) name = `${name}#${n}`;
        const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
        longFunctions.push({ name, lines, line });
      }
    }
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      imports.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length > 0 &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      imports.push(node.arguments[0].text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      imports.push(node.moduleReference.expression.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { lines: lineCount(text), generated: isGenerated(text), longFunctions, imports };
}

/** The file a relative specifier names: `./x.js` is `x.ts`, `./dir` is `dir/index.ts`. */
function resolveRelative(fromFile, spec, known) {
  const base = resolve(dirname(fromFile), spec);
  const stem = base.replace(/\.(m|c)?js$/, '');
  const candidates = [
    base,
    `${stem}.ts`,
    `${stem}.tsx`,
    `${stem}.mts`,
    `${stem}.cts`,
    join(base, 'index.ts'),
    join(stem, 'index.ts'),
  ];
  return candidates.find((c) => known.has(c));
}

/** The workspace package a specifier names (`@calico-ts/x/sub` is `@calico-ts/x`), if any. */
function workspacePackage(spec) {
  if (!spec.startsWith(WORKSPACE_SCOPE)) return undefined;
  const [scope, name] = spec.split('/');
  return `${scope}/${name}`;
}

/** Strongly connected components of more than one node, or of one node that imports itself. */
export function circles(graph) {
  let index = 0;
  const stack = [];
  const onStack = new Set();
  const idx = new Map();
  const low = new Map();
  const out = [];
  const strong = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), idx.get(w)));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? new Set()).has(v)) out.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) strong(v);
  return out.sort((a, b) => a[0].localeCompare(b[0]));
}

/** Every offender in the tree at `root`: long functions, long files, import circles. */
export function measure(root) {
  const rel = (p) => relative(root, p).split(sep).join('/');
  const packages = findPackages(root);
  const functions = [];
  const files = [];
  const fileGraph = new Map();
  const packageGraph = new Map();
  for (const pkg of packages) {
    const known = new Set(pkg.files);
    const deps = new Set();
    packageGraph.set(pkg.name, deps);
    for (const file of pkg.files) {
      const m = measureFile(file);
      // A generated file may be long; its functions and imports are held to the rules all the same.
      if (m.lines > LIMITS.fileLines && !m.generated) files.push({ file: rel(file), lines: m.lines });
      for (const f of m.longFunctions) functions.push({ file: rel(file), ...f });
      const edges = new Set();
      fileGraph.set(rel(file), edges);
      for (const spec of m.imports) {
        if (spec.startsWith('.')) {
          const target = resolveRelative(file, spec, known);
          if (target) edges.add(rel(target));
        } else {
          const other = workspacePackage(spec);
          if (other && other !== pkg.name) deps.add(other);
        }
      }
    }
  }
  // Only edges to packages that are in the tree (a dependency outside it cannot close a circle).
  for (const deps of packageGraph.values()) {
    for (const d of [...deps]) if (!packageGraph.has(d)) deps.delete(d);
  }
  return {
    functions,
    files,
    circles: [...circles(fileGraph), ...circles(packageGraph)].map((members) => ({ members })),
  };
}

const EMPTY_BUDGET = { functions: [], files: [], circles: [] };

export function readBudget(path) {
  if (!existsSync(path)) return structuredClone(EMPTY_BUDGET);
  const b = JSON.parse(readFileSync(path, 'utf8'));
  return { functions: b.functions ?? [], files: b.files ?? [], circles: b.circles ?? [] };
}

/**
 * Compares what was measured with the budget. Returns the problems (each a line to print) and the
 * budget as it should be after fixes (entries that no longer offend dropped, shrunk sizes lowered).
 */
export function compare(found, budget) {
  const problems = [];
  const next = { functions: [], files: [], circles: [] };
  const fnKey = (e) => `${e.file} ${e.name}`;

  const sized = (kind, entries, current, key, what, limit) => {
    const byKey = new Map(current.map((c) => [key(c), c]));
    const budgeted = new Set();
    for (const e of entries) {
      const k = key(e);
      budgeted.add(k);
      const c = byKey.get(k);
      if (!c) {
        problems.push(`${what(e)}: no longer over ${limit} lines; remove from budget`);
        continue;
      }
      if (c.lines > e.lines) {
        problems.push(`${what(c)}: ${c.lines} lines, grew from its budget of ${e.lines}`);
        next[kind].push(e);
      } else if (c.lines < e.lines) {
        problems.push(`${what(c)}: ${c.lines} lines, shrank from ${e.lines}; lower the budget to ${c.lines}`);
        next[kind].push({ ...e, lines: c.lines });
      } else {
        next[kind].push(e);
      }
    }
    for (const c of current) {
      if (!budgeted.has(key(c))) {
        problems.push(`${what(c)}: ${c.lines} lines, over the limit of ${limit} and not in the budget`);
      }
    }
  };

  sized(
    'functions',
    budget.functions,
    found.functions,
    fnKey,
    (e) => `function ${e.name} (${e.file}${e.line ? `:${e.line}` : ''})`,
    LIMITS.functionLines,
  );
  sized(
    'files',
    budget.files,
    found.files,
    (e) => e.file,
    (e) => `file ${e.file}`,
    LIMITS.fileLines,
  );

  const used = new Set();
  for (const c of found.circles) {
    const members = new Set(c.members);
    const i = budget.circles.findIndex((e) => e.members.some((m) => members.has(m)));
    const shown = c.members.join(' -> ');
    if (i < 0) {
      problems.push(`import circle ${shown}: not in the budget`);
      continue;
    }
    used.add(i);
    const e = budget.circles[i];
    const allowed = new Set(e.members);
    if (c.members.some((m) => !allowed.has(m))) {
      problems.push(`import circle ${shown}: grew from its budget of ${e.members.join(' -> ')}`);
      next.circles.push(e);
    } else if (c.members.length < e.members.length) {
      problems.push(`import circle ${shown}: shrank from ${e.members.join(' -> ')}; lower the budget`);
      next.circles.push({ ...e, members: c.members });
    } else {
      next.circles.push(e);
    }
  }
  budget.circles.forEach((e, i) => {
    if (!used.has(i)) problems.push(`import circle ${e.members.join(' -> ')}: gone; remove from budget`);
  });
  return { problems, next };
}

function main(argv) {
  const here = dirname(fileURLToPath(import.meta.url));
  const rootAt = argv.indexOf('--root');
  const root = rootAt >= 0 ? resolve(argv[rootAt + 1]) : resolve(here, '..');
  const budgetAt = argv.indexOf('--budget');
  const budgetPath = budgetAt >= 0 ? resolve(argv[budgetAt + 1]) : join(root, 'scripts', 'shape-budget.json');
  const budget = readBudget(budgetPath);
  const found = measure(root);
  const { problems, next } = compare(found, budget);
  if (argv.includes('--fix-budget')) {
    const raw = existsSync(budgetPath) ? JSON.parse(readFileSync(budgetPath, 'utf8')) : {};
    writeFileSync(budgetPath, `${JSON.stringify({ ...raw, ...next }, null, 2)}\n`);
    console.log(`shape: budget written to ${relative(process.cwd(), budgetPath)}`);
    return compare(found, next).problems.length === 0 ? 0 : 1;
  }
  const total = budget.functions.length + budget.files.length + budget.circles.length;
  if (problems.length === 0) {
    console.log(
      `shape: ok (functions <= ${LIMITS.functionLines} lines, files <= ${LIMITS.fileLines} lines, ` +
        `no import circle; ${total} budgeted offender(s) left)`,
    );
    return 0;
  }
  for (const p of problems) console.log(`shape: ${p}`);
  console.log(`shape: ${problems.length} problem(s); the rules and the budget: docs/redesign/shape.md`);
  return 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
