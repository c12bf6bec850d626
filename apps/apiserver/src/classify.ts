/**
 * The one place foreign errors become calico-apiserver's: calicoctl's `CtlError` (the operations
 * the verbs run) and the datastore's `DatastoreError`, by code, never by message text (pure).
 *
 * Kubernetes clients read the reason and code; kubectl prints the message. Where Kubernetes has
 * a wording for a condition (NotFound, AlreadyExists, Conflict) it is used, so `kubectl delete
 * --ignore-not-found` and scripts that grep behave as against any API server; an invalid object
 * is reported with calicoctl's own rule texts (`spec.selector: ...`), and calicoctl's refusals of
 * read-only kinds with its words.
 */
import { type FieldError, formatFieldError, ValidationError } from '@calico-ts/api';
import { CtlError, describeError } from '@calico-ts/ctl';
import { DatastoreError } from '@calico-ts/datastore';
import { ApiServerError, type StatusCause } from './errors.js';
import { GROUP, qualifiedKind, qualifiedResource, type ServedResource, type Verb } from './resources.js';

/** What a failed request was about. */
export interface ErrorTarget {
  readonly resource: ServedResource;
  readonly name?: string;
  readonly verb: Verb;
}

function causes(e: unknown): unknown[] {
  const out: unknown[] = [];
  for (let x = e; x !== undefined && x !== null && out.length < 8; x = (x as { cause?: unknown }).cause) {
    out.push(x);
  }
  return out;
}

function first<T>(e: unknown, type: abstract new (...a: never[]) => T): T | undefined {
  return causes(e).find((x): x is T => x instanceof type);
}

/**
 * `GlobalNetworkPolicy.projectcalico.org "x" is invalid: spec.selector: ...` (several rules: one per
 * line), with every rule as a cause.
 */
export function invalidError(r: ServedResource, name: string, errors: readonly FieldError[]): ApiServerError {
  // One rule on the line; several one per line below it, as calicoctl lists them.
  const texts = errors.map(formatFieldError);
  const list = texts.length === 1 ? texts[0]! : texts.map((t) => `\n  ${t}`).join('');
  const causeList: StatusCause[] = errors.map((e) => ({
    reason: 'FieldValueInvalid',
    message: e.rule,
    ...(e.path ? { field: e.path } : {}),
  }));
  return new ApiServerError('invalid', `${qualifiedKind(r)} "${name}" is invalid: ${list}`, {
    details: { name, group: GROUP, kind: r.kind, causes: causeList },
  });
}

/** `ippools.projectcalico.org "x" not found`. */
export function notFoundError(r: ServedResource, name: string, cause?: unknown): ApiServerError {
  return new ApiServerError('not-found', `${qualifiedResource(r)} "${name}" not found`, {
    details: { name, group: GROUP, kind: r.plural },
    cause,
  });
}

/** Kubernetes' wording for a stale resourceVersion. */
export function conflictError(r: ServedResource, name: string, cause?: unknown): ApiServerError {
  return new ApiServerError(
    'conflict',
    `Operation cannot be fulfilled on ${qualifiedResource(r)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { details: { name, group: GROUP, kind: r.plural }, cause },
  );
}

function fromCtl(e: CtlError, t: ErrorTarget): ApiServerError {
  const name = t.name ?? '';
  const details = { name, group: GROUP, kind: t.resource.plural };
  switch (e.code) {
    case 'not-found':
      return notFoundError(t.resource, name, e);
    case 'already-exists':
      return new ApiServerError(
        'already-exists',
        `${qualifiedResource(t.resource)} "${name}" already exists`,
        {
          details,
          cause: e,
        },
      );
    case 'conflict':
      return conflictError(t.resource, name, e);
    case 'invalid-input': {
      const v = first(e, ValidationError);
      return invalidError(t.resource, name, v ? v.errors : [{ path: '', rule: e.message }]);
    }
    case 'unsupported':
      return new ApiServerError('method-not-allowed', e.message, { details, cause: e });
    default:
      return fromStoreCause(e, t);
  }
}

/** A failure calicoctl reports as such: what the datastore said decides the status. */
function fromStoreCause(e: CtlError, t: ErrorTarget): ApiServerError {
  const details = { name: t.name ?? '', group: GROUP, kind: t.resource.plural };
  const store = first(e, DatastoreError);
  switch (store?.code) {
    case 'unavailable':
      return new ApiServerError('unavailable', `the datastore is unavailable: ${e.message}`, { cause: e });
    case 'not-found':
      // A create with nothing to create in (the Kubernetes datastore: no Pod, no CRD): calicoctl's words.
      return new ApiServerError('not-found', e.message, { details, cause: e });
    case 'compacted':
      return new ApiServerError('expired', e.message, { cause: e });
    case 'unauthorized':
      return new ApiServerError(
        'internal',
        `the datastore refused calico-apiserver's credentials: ${e.message}`,
        {
          cause: e,
        },
      );
    default:
      return new ApiServerError('internal', `Internal error occurred: ${e.message}`, { cause: e });
  }
}

/** Any error of a request about `t` as an `ApiServerError`. */
export function classify(e: unknown, t: ErrorTarget): ApiServerError {
  if (e instanceof ApiServerError) return e;
  if (e instanceof CtlError) return fromCtl(e, t);
  if (e instanceof DatastoreError) return fromCtl(describeError(e, t.resource.kind, t.name ?? ''), t);
  const message = e instanceof Error ? e.message : String(e);
  return new ApiServerError('internal', `Internal error occurred: ${message}`, { cause: e });
}
