/**
 * From decoded documents to the resources a command will act on, with every problem found before
 * anything is written (pure):
 *
 *   document ──v1?──► convertV1ToV3 (+ a note) ──► namespace rules (-n, -A, default) ──►
 *   checks for the action (read-only kinds, kubernetes policies, create without resourceVersion)
 *   ──► validateResource (create/apply/replace/validate) ──► PreparedResource | Problem
 *
 * Upstream validates each resource only as it writes it, so a bad third document leaves the
 * first two written; here a command writes nothing unless every document is good.
 */
import {
  API_VERSION,
  ApiError,
  convertV1ToV3,
  type FieldError,
  formatFieldError,
  isKind,
  isV1Document,
  KINDS,
  type Kind,
  resolveKind,
  validateResource,
} from '@calico-ts/api';
import { foldFieldCase, storeStringScalars } from '@calico-ts/api/internal';
import { K8S_NETWORK_POLICY_PREFIX } from '../kinds.js';
import type { Obj } from '../output/columns.js';
import type { SourceDocument } from './read-documents.js';

/** What a command does with the resources it prepares; decides which checks apply. */
export type ResourceAction = 'create' | 'apply' | 'replace' | 'delete' | 'get' | 'validate';

/** A resource that passed every check, ready to be written. */
export interface PreparedResource {
  /** Its kind. */
  kind: Kind;
  /** The document, with field names in their canonical spelling. */
  resource: Obj;
  /** `document 2 of pools.yaml`. */
  origin: string;
}

/** What is wrong with one document. */
export interface Problem {
  /** `document 2 of pools.yaml`. */
  origin: string;
  /** `IPPool "pool-a"`, or the kind alone when the document has no name. */
  subject: string;
  /** Every broken rule. */
  errors: FieldError[];
}

/** What `prepareDocuments` prepares for. */
export interface PrepareOptions {
  /** The command's action. */
  action: ResourceAction;
  /** `-n`: the namespace for namespaced documents that name none. */
  namespace?: string;
  /** `-A`. */
  allNamespaces?: boolean;
}

/** The result of `prepareDocuments`: the good resources and every problem. */
export interface Prepared {
  /** The resources that passed, in document order. */
  resources: PreparedResource[];
  /** What is wrong, document by document; nothing is written when there is any. */
  problems: Problem[];
  /** Informational lines for stderr (v1 conversions). */
  notes: string[];
}

function asObj(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

function subjectOf(doc: unknown): string {
  const o = asObj(doc);
  const kind = typeof o?.kind === 'string' ? o.kind : 'resource';
  const meta = asObj(o?.metadata);
  const name = typeof meta?.name === 'string' && meta.name !== '' ? meta.name : undefined;
  const ns = typeof meta?.namespace === 'string' && meta.namespace !== '' ? `${meta.namespace}/` : '';
  return name ? `${kind} "${ns}${name}"` : kind;
}

/** The operation upstream refuses on a kind, as its error text words it, or undefined. */
export function unsupportedOperation(action: ResourceAction, kind: Kind, name: string): string | undefined {
  if (kind === 'ClusterInformation') {
    switch (action) {
      case 'apply':
        return 'operation apply is not supported on ClusterInformation: resource is readonly';
      case 'create':
        return 'operation create or apply is not supported on ClusterInformation';
      case 'replace':
        return 'operation apply or replace is not supported on ClusterInformation';
      case 'delete':
        return 'operation delete is not supported on ClusterInformation';
      default:
        return undefined;
    }
  }
  if (kind === 'NetworkPolicy' && name.startsWith(K8S_NETWORK_POLICY_PREFIX)) {
    const op =
      action === 'create' || action === 'apply'
        ? 'create or apply'
        : action === 'replace'
          ? 'apply or replace'
          : action === 'delete'
            ? 'delete'
            : undefined;
    if (op) {
      return `operation ${op} is not supported on NetworkPolicy(${name}): kubernetes network policies must be managed through the kubernetes API`;
    }
  }
  return undefined;
}

/** Apply upstream's namespace rules to one resource; returns an error text or undefined. */
function applyNamespace(kind: Kind, meta: Obj, opts: PrepareOptions): string | undefined {
  const cliNs = opts.namespace ?? '';
  const resNs = typeof meta.namespace === 'string' ? meta.namespace : '';
  if (KINDS[kind].namespaced) {
    if (opts.allNamespaces && cliNs !== '') {
      return 'cannot use both --namespace and --all-namespaces flags at the same time';
    }
    if (resNs === '' && cliNs !== '') meta.namespace = cliNs;
    else if (resNs !== '' && opts.allNamespaces) meta.namespace = '';
    else if (resNs === '' && opts.allNamespaces) {
      // list across all namespaces
    } else if (resNs === '' && cliNs === '') meta.namespace = 'default';
    else if (resNs !== '' && cliNs !== '' && resNs !== cliNs) {
      return `resource namespace does not match client namespace. ${resNs} != ${cliNs}`;
    }
    return undefined;
  }
  if (resNs !== '') {
    return `namespace should not be specified for a non-namespaced resource. ${kind} is not a namespaced resource`;
  }
  if (opts.allNamespaces || cliNs !== '') return `${kind} is not namespaced`;
  return undefined;
}

function expand(d: SourceDocument, notes: string[], problems: Problem[]): unknown[] {
  const origin = `document ${d.index} of ${d.source}`;
  if (!isV1Document(d.doc)) return [d.doc];
  try {
    const r = convertV1ToV3(d.doc);
    for (const n of r.notes) notes.push(`${origin}: ${n}`);
    return r.resources;
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    problems.push({ origin, subject: subjectOf(d.doc), errors: [{ path: '', rule: e.message }] });
    return [];
  }
}

/**
 * Every document's checks and validation for `opts.action` (see the top of this file), before
 * anything is written.
 */
export function prepareDocuments(docs: readonly SourceDocument[], opts: PrepareOptions): Prepared {
  const out: Prepared = { resources: [], problems: [], notes: [] };
  const full =
    opts.action === 'create' ||
    opts.action === 'apply' ||
    opts.action === 'replace' ||
    opts.action === 'validate';
  for (const d of docs) {
    const origin = `document ${d.index} of ${d.source}`;
    for (const raw of expand(d, out.notes, out.problems)) {
      let doc = structuredClone(raw);
      if (full) {
        // Upstream's decoder matches field names without regard to case; say which is canonical.
        const f = foldFieldCase(doc);
        doc = f.doc;
        for (const x of f.folded) {
          out.notes.push(
            `${origin}: warning: ${x.path} is read as ${x.canonical}, its canonical spelling in ${API_VERSION}`,
          );
        }
        // Upstream reads YAML 1.1 and stores a boolean or number in a string field as its text.
        const t = storeStringScalars(doc);
        doc = t.doc;
        for (const x of t.scalars) {
          out.notes.push(
            `${origin}: warning: ${x.path} is stored as "${x.stored}": the unquoted value is a YAML 1.1 ${x.read}` +
              ' (y, yes, on, n, no, off are booleans), as upstream calicoctl reads it; quote it to store it as written',
          );
        }
      }
      const o = asObj(doc);
      const errors: FieldError[] = [];
      const kindText = typeof o?.kind === 'string' ? o.kind : undefined;
      const kind = kindText !== undefined && isKind(kindText) ? kindText : undefined;
      const meta = asObj(o?.metadata);
      if (o && kind && meta && opts.action !== 'validate') {
        const nsProblem = applyNamespace(kind, meta, opts);
        if (nsProblem) errors.push({ path: 'metadata.namespace', rule: nsProblem });
        const name = typeof meta.name === 'string' ? meta.name : '';
        const refused = unsupportedOperation(opts.action, kind, name);
        if (refused) errors.push({ path: '', rule: refused });
        if (opts.action === 'create' && meta.resourceVersion) {
          errors.push({ path: 'metadata.resourceVersion', rule: 'must not be set when creating a resource' });
        }
      } else if (o && kind && meta && KINDS[kind].namespaced && !meta.namespace) {
        meta.namespace = opts.namespace || 'default';
      }
      if (full) {
        const v = validateResource(doc);
        const own = new Set(errors.map((e) => e.path));
        if (!v.ok)
          errors.push(...v.errors.filter((e) => !(e.path === 'metadata.namespace' && own.has(e.path))));
      } else {
        errors.push(...identityErrors(o, kindText, kind, meta));
      }
      if (errors.length > 0 || !kind || !o) {
        out.problems.push({ origin, subject: subjectOf(doc), errors: dedupe(errors) });
        continue;
      }
      out.resources.push({ kind, resource: o, origin });
    }
  }
  return out;
}

/** For get/delete by file only the identity matters: a known kind and a name. */
function identityErrors(
  o: Obj | undefined,
  kindText: string | undefined,
  kind: Kind | undefined,
  meta: Obj | undefined,
): FieldError[] {
  if (!o) return [{ path: '', rule: 'must be an object with apiVersion, kind, metadata and spec' }];
  const errors: FieldError[] = [];
  if (kindText === undefined) errors.push({ path: 'kind', rule: 'is required' });
  else if (!kind) {
    const guess = resolveKind(kindText);
    errors.push({
      path: 'kind',
      rule: guess
        ? `is not a known projectcalico.org/v3 kind: "${kindText}"; did you mean "${guess}"?`
        : `is not a known projectcalico.org/v3 kind: "${kindText}"`,
    });
  }
  if (!meta || typeof meta.name !== 'string' || meta.name === '') {
    errors.push({ path: 'metadata.name', rule: 'is required' });
  }
  return errors;
}

function dedupe(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    const k = `${e.path}\u0000${e.rule}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** The report for problems: one line per broken rule, each naming document, field and rule. */
export function formatProblems(problems: readonly Problem[], total: number): string {
  const bad = problems.length;
  const lines = [
    `${bad} of ${total} document${total === 1 ? '' : 's'} ${bad === 1 ? 'is' : 'are'} invalid; nothing was written:`,
  ];
  for (const p of problems) {
    for (const e of p.errors) lines.push(`  ${p.origin} (${p.subject}): ${formatFieldError(e)}`);
  }
  return lines.join('\n');
}
