/**
 * Finds nftables JSON built by hand in TypeScript source: object literals that are, by their shape,
 * a piece of the libnftables JSON schema (`{ match: { op, left, right } }`, `{ jump: { target } }`,
 * `{ accept: null }`, `{ add: { rule: … } }`, `{ nftables: [ … ] }`, …). Outside this package such
 * literals are a second nftables vocabulary; the builders of `json/builders.ts` and `Transaction`
 * are the one.
 *
 * Precision: nft JSON wraps every expression, statement and command in an object of exactly one
 * key, so only an object literal with one property is looked at, and only when the value has the
 * shape that key takes in the schema (a `meta` whose value is `{ key }`, a `table` whose value
 * names a `family`, a verdict whose value is `null`). Objects that merely reuse a word (`{ set:
 * value }`, `{ meta: metadata }`, `{ table: name }`) are not findings. Types, comments and strings
 * are not looked at. Pure: source text in, findings out.
 */
import ts from 'typescript';

export interface HandBuiltJson {
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  /** The key that made the object a finding, e.g. `match`, `add`, `nftables`. */
  readonly key: string;
}

type Check = (value: ts.Expression) => boolean;

const isNull = (v: ts.Expression) => v.kind === ts.SyntaxKind.NullKeyword;
const isArray = (v: ts.Expression) => ts.isArrayLiteralExpression(v);

/** The names of an object literal's properties, or undefined when `v` is not one. */
function keys(v: ts.Expression): Set<string> | undefined {
  if (!ts.isObjectLiteralExpression(v)) return undefined;
  const out = new Set<string>();
  for (const p of v.properties) {
    const name = p.name === undefined ? undefined : propertyName(p.name);
    if (name !== undefined) out.add(name);
  }
  return out;
}

const hasAll =
  (...names: string[]): Check =>
  (v) => {
    const k = keys(v);
    return k !== undefined && names.every((n) => k.has(n));
  };
const hasAny =
  (...names: string[]): Check =>
  (v) => {
    const k = keys(v);
    return k !== undefined && names.some((n) => k.has(n));
  };
const either =
  (...checks: Check[]): Check =>
  (v) =>
    checks.some((c) => c(v));

const OBJECT_KINDS = ['table', 'chain', 'rule', 'set', 'map', 'element', 'ruleset', 'tables'];
const isCommandObject: Check = (v) => {
  if (!ts.isObjectLiteralExpression(v) || v.properties.length !== 1) return false;
  const p = v.properties[0]!;
  const name = p.name === undefined ? undefined : propertyName(p.name);
  return name !== undefined && OBJECT_KINDS.includes(name);
};
const namesFamily = hasAll('family');

/** Each schema key and the shape of the value it takes. */
const SHAPES: Readonly<Record<string, Check>> = {
  // Expressions
  payload: either(hasAll('protocol', 'field'), hasAll('base', 'offset')),
  meta: hasAll('key'),
  ct: hasAll('key'),
  fib: hasAll('result'),
  prefix: hasAll('addr', 'len'),
  range: isArray,
  concat: isArray,
  elem: hasAll('val'),
  '&': isArray,
  '|': isArray,
  '^': isArray,
  // Statements
  match: hasAll('left', 'right'),
  mangle: hasAll('key', 'value'),
  vmap: hasAll('key', 'data'),
  jump: hasAll('target'),
  goto: hasAll('target'),
  accept: isNull,
  drop: isNull,
  continue: isNull,
  return: isNull,
  notrack: isNull,
  reject: either(isNull, hasAny('type', 'expr')),
  counter: either(isNull, hasAll('packets', 'bytes')),
  masquerade: either(isNull, hasAny('port', 'flags')),
  snat: hasAny('addr', 'port'),
  dnat: hasAny('addr', 'port'),
  log: either(isNull, hasAny('prefix', 'level', 'group')),
  // Objects and commands
  table: namesFamily,
  chain: namesFamily,
  rule: namesFamily,
  set: either(namesFamily, isArray),
  map: namesFamily,
  element: namesFamily,
  add: isCommandObject,
  create: isCommandObject,
  insert: isCommandObject,
  replace: isCommandObject,
  delete: isCommandObject,
  flush: isCommandObject,
  list: isCommandObject,
  nftables: isArray,
  metainfo: hasAny('json_schema_version', 'version'),
};

function propertyName(n: ts.PropertyName): string | undefined {
  if (ts.isIdentifier(n) || ts.isStringLiteral(n) || ts.isNumericLiteral(n)) return n.text;
  return undefined;
}

/** The single `key: value` of a one-property object literal, else undefined. */
function onlyProperty(o: ts.ObjectLiteralExpression): { key: string; value: ts.Expression } | undefined {
  if (o.properties.length !== 1) return undefined;
  const p = o.properties[0]!;
  if (ts.isPropertyAssignment(p)) {
    const key = propertyName(p.name);
    return key === undefined ? undefined : { key, value: p.initializer };
  }
  // `{ jump }` where a variable `jump` holds the value: its shape is unknown, so it is no finding.
  return undefined;
}

/** The hand-built nftables JSON objects in one source file. */
export function findHandBuiltJson(file: string, source: string): HandBuiltJson[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: HandBuiltJson[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isObjectLiteralExpression(node)) {
      const only = onlyProperty(node);
      const check = only === undefined ? undefined : SHAPES[only.key];
      let value = only?.value;
      while (value !== undefined && (ts.isAsExpression(value) || ts.isParenthesizedExpression(value))) {
        value = value.expression;
      }
      if (only !== undefined && check !== undefined && value !== undefined && check(value)) {
        const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
        out.push({ file, line, key: only.key });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}
