/**
 * Validation and defaulting of projectcalico.org/v3 resources.
 *
 *   input ──► envelope (apiVersion, kind) ──► zod: shape of metadata + spec ─┐
 *                                        └──► cross-field checks on raw input ─┴─► every FieldError
 *                                                                            or ─► defaulted resource
 *
 * Both layers always run, so one report lists every broken rule of a document. Errors are sorted
 * by path so the same document always yields the same report.
 */
import * as z from 'zod';
import { type FieldError, ValidationError } from '../errors.js';
import { API_VERSION, isKind, KIND_NAMES, KINDS, type Kind, resolveKind } from '../kinds.js';
import {
  asObj,
  asStr,
  type CheckContext,
  isDnsLabel,
  isDnsSubdomain,
  LABEL_RULE,
  SUBDOMAIN_RULE,
} from './common.js';
import { objectMetaSchema } from './metadata.js';
import { KIND_DEFINITIONS, type Resource, type ResourceOf } from './registry.js';

export type ValidationResult = { ok: true; value: Resource } | { ok: false; errors: FieldError[] };

export interface ValidateOptions {
  /** What to call the document in a thrown error, e.g. `document 2 of pools.yaml`. */
  subject?: string;
}

// ---- paths -------------------------------------------------------------------------------------

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `['spec', 'ingress', 0, 'action']` → `spec.ingress[0].action`; odd keys as `labels["a/b"]`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else {
      const s = String(seg);
      if (IDENT.test(s)) out += out === '' ? s : `.${s}`;
      else out += `[${JSON.stringify(s)}]`;
    }
  }
  return out;
}

function sortKey(path: string): string {
  return path.replace(/\[(\d+)\]/g, (_, n: string) => `[${n.padStart(8, '0')}]`);
}

function finish(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors) {
    const k = `${e.path}\u0000${e.rule}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(e);
  }
  return out.sort((a, b) => {
    const pa = sortKey(a.path);
    const pb = sortKey(b.path);
    return pa < pb ? -1 : pa > pb ? 1 : a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0;
  });
}

// ---- zod issues → FieldErrors --------------------------------------------------------------------

const TYPE_WORDS: Record<string, string> = {
  string: 'must be a string',
  number: 'must be a number',
  int: 'must be a whole number',
  boolean: 'must be true or false',
  array: 'must be a list',
  object: 'must be an object (a mapping of fields)',
  record: 'must be an object (a mapping of fields)',
  bigint: 'must be a number',
};

function isDefaultMessage(m: string): boolean {
  return /^(Invalid input|Invalid option|Too small|Too big|Unrecognized key|Invalid)/.test(m);
}

function plural(n: number | bigint, word: string): string {
  return `${n} ${word}${Number(n) === 1 ? '' : 's'}`;
}

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  in?: z.ZodType;
};

/** The field names a strict object expects at `path` inside `schema`, if it is an object there. */
function knownKeysAt(schema: z.ZodType, path: ReadonlyArray<PropertyKey>): string[] | undefined {
  let s: z.ZodType | undefined = schema;
  const step = (x: z.ZodType): z.ZodType => {
    let cur = x;
    for (let i = 0; i < 8; i++) {
      const d = (cur as unknown as { _zod: { def: Def } })._zod.def;
      if ((d.type === 'optional' || d.type === 'nullable' || d.type === 'default') && d.innerType)
        cur = d.innerType;
      else if (d.type === 'pipe' && d.in) cur = d.in;
      else break;
    }
    return cur;
  };
  for (const seg of path) {
    if (!s) return undefined;
    const d: Def = (step(s) as unknown as { _zod: { def: Def } })._zod.def;
    if (typeof seg === 'number' && d.type === 'array') s = d.element;
    else if (d.type === 'object' && d.shape && typeof seg === 'string') s = d.shape[seg];
    else if (d.type === 'record') s = d.valueType;
    else return undefined;
  }
  if (!s) return undefined;
  const d: Def = (step(s) as unknown as { _zod: { def: Def } })._zod.def;
  return d.type === 'object' && d.shape ? Object.keys(d.shape) : undefined;
}

function editDistance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0]!;
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j]!;
      dp[j] = Math.min(dp[j]! + 1, dp[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length]!;
}

function suggest(key: string, known: string[] | undefined): string | undefined {
  if (!known) return undefined;
  const lower = key.toLowerCase();
  const exact = known.find((k) => k.toLowerCase() === lower);
  if (exact) return exact;
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const d = editDistance(lower, k.toLowerCase());
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best;
}

function issueToErrors(issue: z.core.$ZodIssue, schema: z.ZodType): FieldError[] {
  const path = formatPath(issue.path);
  const missing = !('input' in issue) || issue.input === undefined;
  switch (issue.code) {
    case 'unrecognized_keys': {
      const known = knownKeysAt(schema, issue.path);
      return issue.keys.map((k) => {
        const hint = suggest(k, known);
        return {
          path: formatPath([...issue.path, k]),
          rule: hint ? `is not a known field; did you mean "${hint}"?` : 'is not a known field',
        };
      });
    }
    case 'invalid_type':
      if (missing) return [{ path, rule: 'is required' }];
      if (!isDefaultMessage(issue.message)) return [{ path, rule: issue.message }];
      return [{ path, rule: TYPE_WORDS[issue.expected] ?? `must be of type ${issue.expected}` }];
    case 'invalid_union':
    case 'invalid_value':
      if (missing) return [{ path, rule: 'is required' }];
      if (!isDefaultMessage(issue.message)) return [{ path, rule: issue.message }];
      if (issue.code === 'invalid_value') {
        return [{ path, rule: `must be one of: ${issue.values.map((v) => String(v)).join(', ')}` }];
      }
      return [{ path, rule: 'has an invalid value' }];
    case 'too_small':
    case 'too_big': {
      if (!isDefaultMessage(issue.message)) return [{ path, rule: issue.message }];
      const small = issue.code === 'too_small';
      const bound = small ? issue.minimum : issue.maximum;
      const word = small ? 'at least' : 'at most';
      if (issue.origin === 'array' || issue.origin === 'set')
        return [{ path, rule: `must have ${word} ${plural(bound, 'item')}` }];
      if (issue.origin === 'string')
        return [{ path, rule: `must be ${word} ${plural(bound, 'character')} long` }];
      return [{ path, rule: `must be ${word} ${bound}` }];
    }
    default:
      return [{ path, rule: isDefaultMessage(issue.message) ? 'has an invalid value' : issue.message }];
  }
}

// ---- the envelope --------------------------------------------------------------------------------

const envelopeCache = new Map<Kind, z.ZodType>();
function envelopeSchema(kind: Kind): z.ZodType {
  let s = envelopeCache.get(kind);
  if (!s) {
    s = z.strictObject({
      apiVersion: z.unknown(),
      kind: z.unknown(),
      metadata: objectMetaSchema,
      spec: KIND_DEFINITIONS[kind].spec.optional(),
      status: z.unknown().optional(),
    });
    envelopeCache.set(kind, s);
  }
  return s;
}

function checkEnvelope(doc: Record<string, unknown>, errors: FieldError[]): Kind | undefined {
  const add = (path: string, rule: string) => errors.push({ path, rule });
  if (doc.apiVersion === undefined) add('apiVersion', `is required (${API_VERSION})`);
  else if (doc.apiVersion !== API_VERSION) {
    add('apiVersion', `must be ${API_VERSION}, not ${JSON.stringify(doc.apiVersion)}`);
  }
  if (doc.kind === undefined) {
    add('kind', 'is required');
    return undefined;
  }
  if (typeof doc.kind !== 'string') {
    add('kind', 'must be a string');
    return undefined;
  }
  if (isKind(doc.kind)) return doc.kind;
  const guess = resolveKind(doc.kind);
  add(
    'kind',
    guess
      ? `is not a known ${API_VERSION} kind: "${doc.kind}"; did you mean "${guess}"?`
      : `is not a known ${API_VERSION} kind: "${doc.kind}" (known kinds: ${KIND_NAMES.join(', ')})`,
  );
  return undefined;
}

function checkNames(kind: Kind, meta: Record<string, unknown>, errors: FieldError[]): void {
  const add = (path: string, rule: string) => errors.push({ path, rule });
  const name = asStr(meta.name);
  if (name !== undefined) {
    if (name === '') add('metadata.name', 'is required');
    else {
      const custom = KIND_DEFINITIONS[kind].nameProblem;
      const problem = custom ? custom(name) : isDnsSubdomain(name) ? undefined : SUBDOMAIN_RULE;
      if (problem) add('metadata.name', problem);
    }
  }
  const namespace = meta.namespace;
  const namespaced = KINDS[kind].namespaced;
  if (namespaced && (namespace === undefined || namespace === '')) {
    add('metadata.namespace', `is required: ${kind} is a namespaced kind`);
  } else if (!namespaced && namespace !== undefined && namespace !== '') {
    add('metadata.namespace', `must not be set: ${kind} is not namespaced`);
  } else if (namespaced && typeof namespace === 'string' && !isDnsLabel(namespace)) {
    add('metadata.namespace', LABEL_RULE);
  }
}

/**
 * `x` without object fields whose value is null: Go's JSON decoding reads `field: null` (YAML
 * `field:` with nothing after it) as "unset", and so do we. A copy is made only when there is a
 * null to leave out (rare); otherwise `x` itself is returned, which is safe because nothing below
 * modifies its input.
 */
function withoutNulls(x: unknown): unknown {
  return hasNullField(x) ? copyWithoutNulls(x) : x;
}

function hasNullField(x: unknown): boolean {
  if (x === null || typeof x !== 'object') return false;
  if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) if (hasNullField(x[i])) return true;
    return false;
  }
  const o = x as Record<string, unknown>;
  for (const k in o) {
    const v = o[k];
    if (v === null || (typeof v === 'object' && hasNullField(v))) return true;
  }
  return false;
}

function copyWithoutNulls(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(copyWithoutNulls);
  const o = asObj(x);
  if (!o) return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== null) out[k] = copyWithoutNulls(v);
  return out;
}

/**
 * Validate one decoded document as a projectcalico.org/v3 resource. On success the resource comes
 * back with upstream's write-path defaults applied; on failure every broken rule is listed.
 */
export function validateResource(input: unknown, _opts: ValidateOptions = {}): ValidationResult {
  const doc = asObj(withoutNulls(input));
  if (!doc) {
    return {
      ok: false,
      errors: [{ path: '', rule: 'must be an object with apiVersion, kind, metadata and spec' }],
    };
  }
  const errors: FieldError[] = [];
  const kind = checkEnvelope(doc, errors);
  if (!kind) {
    const meta = asObj(doc.metadata);
    if (doc.metadata === undefined) errors.push({ path: 'metadata', rule: 'is required' });
    else if (!meta) errors.push({ path: 'metadata', rule: TYPE_WORDS.object! });
    return { ok: false, errors: finish(errors) };
  }
  const schema = envelopeSchema(kind);
  const parsed = schema.safeParse(doc, { reportInput: true });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) errors.push(...issueToErrors(issue, schema));
  }
  const meta = asObj(doc.metadata);
  if (meta) checkNames(kind, meta, errors);
  const spec = doc.spec === undefined ? {} : doc.spec;
  const ctx: CheckContext = {
    name: asStr(meta?.name),
    namespace: asStr(meta?.namespace),
    labels: asObj(meta?.labels),
    add: (path, rule) => errors.push({ path, rule }),
  };
  KIND_DEFINITIONS[kind].check?.(spec, ctx);
  if (errors.length > 0 || !parsed.success) return { ok: false, errors: finish(errors) };

  const data = parsed.data as Record<string, unknown>;
  const value = { ...data, apiVersion: API_VERSION, kind, spec: data.spec ?? {} } as Resource;
  const def = KIND_DEFINITIONS[kind] as { defaultOnWrite?: (r: Resource) => Resource };
  return { ok: true, value: def.defaultOnWrite ? def.defaultOnWrite(value) : value };
}

/** Like `validateResource`, but throws a `ValidationError` listing every broken rule. */
export function validateResourceOrThrow(input: unknown, opts: ValidateOptions = {}): Resource {
  const r = validateResource(input, opts);
  if (r.ok) return r.value;
  throw new ValidationError(opts.subject ?? describe(input), r.errors);
}

function describe(input: unknown): string {
  const doc = asObj(input);
  const kind = asStr(doc?.kind);
  const name = asStr(asObj(doc?.metadata)?.name);
  if (kind && name) return `${kind} "${name}"`;
  if (kind) return `${kind} resource`;
  return 'resource';
}

/**
 * The read-path defaulting: what upstream fills in when it reads a stored resource (IPPool
 * defaults; a policy's tier, types and tier label). Returns a new object.
 */
export function applyDefaults<K extends Kind>(r: ResourceOf<K>): ResourceOf<K> {
  const def = KIND_DEFINITIONS[r.kind as K] as
    | { defaultOnRead?: (x: ResourceOf<K>) => ResourceOf<K> }
    | undefined;
  return def?.defaultOnRead ? def.defaultOnRead(r) : r;
}
