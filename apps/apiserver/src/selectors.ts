/**
 * Kubernetes' `labelSelector` and `fieldSelector` query parameters as predicates (pure).
 *
 * Label selectors (`k8s.io/apimachinery/pkg/labels`): comma-separated requirements, all of which
 * must hold: `key`, `!key`, `key=v` / `key==v`, `key!=v` (also true when the label is absent),
 * `key in (a,b)`, `key notin (a,b)` (also true when absent), `key>N`, `key<N` (integers).
 * Field selectors: `metadata.name` and `metadata.namespace` with `=`, `==`, `!=`, as every
 * resource of this group supports them; any other field is refused, naming it.
 */
import { ApiServerError } from './errors.js';

export type Labels = Readonly<Record<string, string>>;
export type LabelPredicate = (labels: Labels) => boolean;

/** Split on commas outside parentheses. */
function splitTop(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const VALUE = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$/;

function bad(selector: string, why: string): ApiServerError {
  return new ApiServerError(
    'bad-request',
    `unable to parse requirement: ${why} (labelSelector ${JSON.stringify(selector)})`,
  );
}

function checkKey(key: string, selector: string): string {
  if (!KEY.test(key) || key.length > 317) throw bad(selector, `invalid label key "${key}"`);
  return key;
}

function checkValue(value: string, selector: string): string {
  if (!VALUE.test(value) || value.length > 63) throw bad(selector, `invalid label value "${value}"`);
  return value;
}

function valueSet(text: string, selector: string): Set<string> {
  const m = /^\((.*)\)$/.exec(text.trim());
  if (!m) throw bad(selector, `expected a parenthesised list of values, got "${text.trim()}"`);
  return new Set(m[1]!.split(',').map((v) => checkValue(v.trim(), selector)));
}

function requirement(raw: string, selector: string): LabelPredicate {
  const r = raw.trim();
  if (r === '') throw bad(selector, 'empty requirement');
  if (r.startsWith('!')) {
    const key = checkKey(r.slice(1).trim(), selector);
    return (l) => !Object.hasOwn(l, key);
  }
  const set = /^(\S+)\s+(in|notin)\s*(\(.*\))$/.exec(r);
  if (set) {
    const key = checkKey(set[1]!, selector);
    const values = valueSet(set[3]!, selector);
    return set[2] === 'in'
      ? (l) => Object.hasOwn(l, key) && values.has(l[key]!)
      : (l) => !Object.hasOwn(l, key) || !values.has(l[key]!);
  }
  const op = /^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*(.*)$/.exec(r);
  if (op) {
    const key = checkKey(op[1]!, selector);
    const value = op[3]!.trim();
    switch (op[2]) {
      case '=':
      case '==':
        checkValue(value, selector);
        return (l) => l[key] === value;
      case '!=':
        checkValue(value, selector);
        return (l) => l[key] !== value;
      default: {
        if (!/^-?\d+$/.test(value)) throw bad(selector, `for '${op[2]}', '${value}' is not an integer`);
        const n = Number(value);
        const gt = op[2] === '>';
        return (l) => {
          const v = l[key];
          if (v === undefined || !/^-?\d+$/.test(v)) return false;
          return gt ? Number(v) > n : Number(v) < n;
        };
      }
    }
  }
  const key = checkKey(r, selector);
  return (l) => Object.hasOwn(l, key);
}

/** A `labelSelector` as a predicate over labels; empty or absent selects everything. */
export function parseLabelSelector(selector: string | null | undefined): LabelPredicate {
  if (selector === null || selector === undefined || selector.trim() === '') return () => true;
  const reqs = splitTop(selector).map((r) => requirement(r, selector));
  return (labels) => reqs.every((p) => p(labels));
}

export type FieldPredicate = (name: string, namespace: string | undefined) => boolean;

const FIELDS = ['metadata.name', 'metadata.namespace'] as const;

/** A `fieldSelector` as a predicate over name and namespace; empty or absent selects everything. */
export function parseFieldSelector(selector: string | null | undefined): FieldPredicate {
  if (selector === null || selector === undefined || selector.trim() === '') return () => true;
  const reqs = selector.split(',').map((raw): FieldPredicate => {
    const m = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(raw);
    if (!m) {
      throw new ApiServerError(
        'bad-request',
        `invalid field selector ${JSON.stringify(raw)}: use FIELD=VALUE, FIELD==VALUE or FIELD!=VALUE`,
      );
    }
    const [, field, op, value] = m;
    if (!(FIELDS as readonly string[]).includes(field!)) {
      throw new ApiServerError(
        'bad-request',
        `field label not supported: ${field} (this server supports ${FIELDS.join(' and ')})`,
      );
    }
    const of = (name: string, ns: string | undefined) => (field === 'metadata.name' ? name : (ns ?? ''));
    return op === '!=' ? (n, ns) => of(n, ns) !== value : (n, ns) => of(n, ns) === value;
  });
  return (name, namespace) => reqs.every((p) => p(name, namespace));
}
