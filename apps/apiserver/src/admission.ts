/**
 * From a request body to the resource a write stores, with every problem found before anything is
 * written (pure):
 *
 *   body ──► envelope (apiVersion, kind default to the URL's; must match it) ──► name (URL, body,
 *   generateName) ──► namespace (the URL's; cluster-scoped kinds have none) ──► calicoctl's
 *   refusals (read-only kinds, Kubernetes policies) ──► calicoctl's checks and validation
 *   (`prepareDocuments`: field-name case, YAML 1.1 scalars, every rule of the kind)
 *
 * Broken rules come back as one `invalid` error listing calicoctl's own texts; what calicoctl
 * warns about on stderr (a field read under its canonical spelling, a rule field the dataplane
 * does not enforce) becomes response warnings, which kubectl prints.
 */
import { randomBytes } from 'node:crypto';
import { prepareDocuments, unenforcedWarnings, unsupportedOperation } from '@calico-ts/ctl';
import { invalidError } from './classify.js';
import { ApiServerError } from './errors.js';
import { GROUP, GROUP_VERSION, type ServedResource } from './resources.js';

type Obj = Record<string, unknown>;

export interface AdmitInput {
  readonly verb: 'create' | 'update' | 'patch';
  readonly resource: ServedResource;
  /** The namespace of the URL (namespaced kinds). */
  readonly namespace?: string;
  /** The name of the URL (update, patch). */
  readonly name?: string;
  readonly body: unknown;
  /** The random part of a generated name (tests pass a fixed one). */
  readonly nameSuffix?: () => string;
}

export interface Admitted {
  readonly resource: Obj;
  readonly name: string;
  /** Lines for `Warning` headers. */
  readonly warnings: string[];
}

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Five characters of Kubernetes' generated-name alphabet (no vowels, no look-alikes). */
function randomSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return [...randomBytes(5)].map((b) => alphabet[b % alphabet.length]).join('');
}

function envelope(input: AdmitInput, body: Obj): void {
  const { resource } = input;
  if (body.apiVersion === undefined) body.apiVersion = GROUP_VERSION;
  if (body.kind === undefined) body.kind = resource.kind;
  if (body.apiVersion !== GROUP_VERSION) {
    throw new ApiServerError(
      'bad-request',
      `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${GROUP_VERSION})`,
    );
  }
  if (body.kind !== resource.kind) {
    throw new ApiServerError(
      'bad-request',
      `the kind in the data (${String(body.kind)}) does not match the kind served at ${resource.plural} (${resource.kind})`,
    );
  }
}

function nameOf(input: AdmitInput, meta: Obj): string {
  const given = typeof meta.name === 'string' ? meta.name : '';
  if (input.verb === 'create') {
    if (given === '' && typeof meta.generateName === 'string' && meta.generateName !== '') {
      meta.name = `${meta.generateName}${(input.nameSuffix ?? randomSuffix)()}`;
    }
    return typeof meta.name === 'string' ? meta.name : '';
  }
  const url = input.name ?? '';
  if (given === '') meta.name = url;
  else if (given !== url) {
    throw new ApiServerError(
      'bad-request',
      `the name of the object (${given}) does not match the name on the URL (${url})`,
    );
  }
  return url;
}

function placeInNamespace(input: AdmitInput, meta: Obj): void {
  if (!input.resource.namespaced) {
    // As Kubernetes does for a cluster-scoped kind: a namespace in the object is dropped.
    delete meta.namespace;
    return;
  }
  const given = typeof meta.namespace === 'string' ? meta.namespace : '';
  if (given === '') meta.namespace = input.namespace;
  else if (given !== input.namespace) {
    throw new ApiServerError(
      'bad-request',
      `the namespace of the provided object (${given}) does not match the namespace sent on the request (${input.namespace})`,
    );
  }
}

/** The resource to write for a create, update or patch; throws what is wrong with it. */
export function admit(input: AdmitInput): Admitted {
  if (!isObj(input.body)) {
    throw new ApiServerError('bad-request', 'the request body must be an object (a JSON or YAML mapping)');
  }
  const body = structuredClone(input.body);
  envelope(input, body);
  if (body.metadata === undefined) body.metadata = {};
  if (!isObj(body.metadata)) throw new ApiServerError('bad-request', 'metadata must be an object');
  const meta = body.metadata;
  const name = nameOf(input, meta);
  placeInNamespace(input, meta);
  const action = input.verb === 'create' ? 'create' : 'replace';
  const refused = unsupportedOperation(action, input.resource.kind, name);
  if (refused) {
    throw new ApiServerError('method-not-allowed', refused, {
      details: { name, group: GROUP, kind: input.resource.plural },
    });
  }
  const prepared = prepareDocuments([{ source: 'request', index: 1, doc: body }], {
    action,
    ...(input.namespace !== undefined ? { namespace: input.namespace } : {}),
  });
  const problem = prepared.problems[0];
  if (problem) throw invalidError(input.resource, name, problem.errors);
  const ready = prepared.resources[0]!;
  const warnings = [
    ...prepared.notes.map((n) => n.replace(/^document 1 of request: (warning: )?/, '')),
    ...unenforcedWarnings(ready),
  ];
  return { resource: ready.resource, name, warnings };
}
