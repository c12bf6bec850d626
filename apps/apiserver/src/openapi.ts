/**
 * The OpenAPI documents kube-apiserver's aggregator collects from this server and kubectl reads
 * (pure):
 *
 * - `/openapi/v3`: the index, one entry `apis/projectcalico.org/v3` with its content hash;
 * - `/openapi/v3/apis/projectcalico.org/v3`: every resource's paths, each operation tagged with
 *   its `x-kubernetes-group-version-kind` and the `dryRun`/`fieldValidation` parameters, and each
 *   kind's schema (the spec and status schemas of the crd.projectcalico.org CRDs, which are
 *   generated from the same `@calico-ts/api` schemas that validate), so `kubectl explain` works;
 * - `/openapi/v2`: an empty Swagger document (kubectl uses v3; the aggregator merges v2).
 *
 * Patch bodies are listed as JSON patch, merge patch and strategic merge patch (which the
 * Calico types, declaring no merge keys, treat as a merge patch); with `fieldValidation` declared,
 * kubectl's `--validate=strict` leaves validation to this server, which refuses unknown fields
 * as calicoctl does.
 */
import { createHash } from 'node:crypto';
import { crdManifests } from '@calico-ts/api/crds';
import { GROUP, GROUP_VERSION, type ServedResource, VERSION, type Verb } from './resources.js';

type Obj = Record<string, unknown>;

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const PREFIX = 'com.github.projectcalico.api.pkg.apis.projectcalico.v3';
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function gvk(kind: string): Obj {
  return { group: GROUP, version: VERSION, kind };
}

const query = (name: string, description: string, type = 'string') => ({
  name,
  in: 'query',
  description,
  schema: { type, uniqueItems: true },
});

const WRITE_PARAMS = [
  query('dryRun', 'When present (All), the request is checked and nothing is stored.'),
  query('fieldManager', 'The name of the actor making the change (accepted, not recorded).'),
  query(
    'fieldValidation',
    'Unknown fields are always refused, as calicoctl refuses them (Strict); Ignore and Warn are accepted and behave as Strict.',
  ),
];

const LIST_PARAMS = [
  query('labelSelector', 'Only objects whose labels match this Kubernetes label selector.'),
  query('fieldSelector', 'Only objects matching metadata.name / metadata.namespace.'),
  query('limit', 'At most this many items; the rest follow with the continue token.', 'integer'),
  query('continue', 'The token of the previous page.'),
  query('resourceVersion', 'With watch: changes after this revision.'),
  query('watch', 'Stream changes as WatchEvents.', 'boolean'),
  query('timeoutSeconds', 'End a watch after this many seconds.', 'integer'),
];

function json(schema: Obj): Obj {
  return { content: { 'application/json': { schema } } };
}

function operation(r: ServedResource, action: string, verb: Verb, schema: Obj, extra: Obj = {}): Obj {
  return {
    operationId: `${verb}ProjectcalicoV3${r.namespaced ? 'Namespaced' : ''}${r.kind}`,
    description: `${verb} ${r.kind}`,
    tags: ['projectcalicoOrg_v3'],
    responses: { '200': { description: 'OK', ...json(schema) }, '401': { description: 'Unauthorized' } },
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': gvk(r.kind),
    ...extra,
  };
}

function pathsOf(r: ServedResource): Record<string, Obj> {
  const base = `/apis/${GROUP_VERSION}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}`;
  const can = (v: Verb) => r.verbs.includes(v);
  const obj = ref(`${PREFIX}.${r.kind}`);
  const list = ref(`${PREFIX}.${r.kind}List`);
  const pathParams = [
    ...(r.namespaced ? [{ name: 'namespace', in: 'path', required: true, schema: { type: 'string' } }] : []),
  ];
  const collection: Obj = { parameters: pathParams };
  collection.get = operation(r, 'list', 'list', list, { parameters: LIST_PARAMS });
  if (can('create')) {
    collection.post = operation(r, 'post', 'create', obj, {
      parameters: WRITE_PARAMS,
      requestBody: json(obj),
    });
  }
  if (can('deletecollection')) {
    collection.delete = operation(r, 'deletecollection', 'deletecollection', ref(`${META}.Status`), {
      parameters: [...LIST_PARAMS.slice(0, 2), WRITE_PARAMS[0]],
    });
  }
  const item: Obj = {
    parameters: [...pathParams, { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
    get: operation(r, 'get', 'get', obj),
  };
  if (can('update'))
    item.put = operation(r, 'put', 'update', obj, { parameters: WRITE_PARAMS, requestBody: json(obj) });
  if (can('patch')) {
    item.patch = operation(r, 'patch', 'patch', obj, {
      parameters: WRITE_PARAMS,
      requestBody: {
        content: Object.fromEntries(
          [
            'application/json-patch+json',
            'application/merge-patch+json',
            'application/strategic-merge-patch+json',
          ].map((t) => [t, { schema: { type: 'object' } }]),
        ),
      },
    });
  }
  if (can('delete')) item.delete = operation(r, 'delete', 'delete', obj, { parameters: [WRITE_PARAMS[0]] });
  return { [base]: collection, [`${base}/{name}`]: item };
}

const OPEN_OBJECT = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

function kindSchemas(resources: readonly ServedResource[]): Record<string, Obj> {
  const crds = new Map(
    crdManifests().map((c) => [c.spec.names.kind, c.spec.versions[0].schema.openAPIV3Schema]),
  );
  const out: Record<string, Obj> = {};
  for (const r of resources) {
    const crd = crds.get(r.kind) as { properties?: Record<string, Obj> } | undefined;
    const props = crd?.properties ?? {};
    out[`${PREFIX}.${r.kind}`] = {
      type: 'object',
      description: `${r.kind} (projectcalico.org/v3).`,
      properties: {
        apiVersion: { type: 'string', description: 'projectcalico.org/v3' },
        kind: { type: 'string', description: r.kind },
        metadata: ref(`${META}.ObjectMeta`),
        spec: props.spec ?? OPEN_OBJECT,
        ...(props.status ? { status: props.status } : {}),
      },
      'x-kubernetes-group-version-kind': [gvk(r.kind)],
    };
    out[`${PREFIX}.${r.kind}List`] = {
      type: 'object',
      required: ['items'],
      properties: {
        apiVersion: { type: 'string' },
        kind: { type: 'string' },
        metadata: ref(`${META}.ListMeta`),
        items: { type: 'array', items: ref(`${PREFIX}.${r.kind}`) },
      },
      'x-kubernetes-group-version-kind': [gvk(`${r.kind}List`)],
    };
  }
  return out;
}

const str = { type: 'string' };
const strMap = { type: 'object', additionalProperties: str };

const META_SCHEMAS: Record<string, Obj> = {
  [`${META}.ObjectMeta`]: {
    type: 'object',
    description: 'Standard object metadata.',
    properties: {
      name: str,
      generateName: str,
      namespace: str,
      uid: str,
      resourceVersion: str,
      generation: { type: 'integer', format: 'int64' },
      creationTimestamp: { type: 'string', format: 'date-time' },
      deletionTimestamp: { type: 'string', format: 'date-time' },
      labels: strMap,
      annotations: strMap,
      finalizers: { type: 'array', items: str },
      ownerReferences: {
        type: 'array',
        items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      },
      managedFields: {
        type: 'array',
        items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      },
    },
  },
  [`${META}.ListMeta`]: {
    type: 'object',
    properties: {
      resourceVersion: str,
      continue: str,
      remainingItemCount: { type: 'integer', format: 'int64' },
    },
  },
  [`${META}.Status`]: {
    type: 'object',
    properties: {
      apiVersion: str,
      kind: str,
      status: str,
      message: str,
      reason: str,
      code: { type: 'integer', format: 'int32' },
      details: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
    },
    'x-kubernetes-group-version-kind': [{ group: '', version: 'v1', kind: 'Status' }],
  },
};

/** The OpenAPI v3 document of projectcalico.org/v3. */
export function openApiV3GroupVersion(resources: readonly ServedResource[]): Obj {
  return {
    openapi: '3.0.0',
    info: { title: 'calico-apiserver', version: VERSION },
    paths: Object.assign({}, ...resources.map(pathsOf)),
    components: { schemas: { ...META_SCHEMAS, ...kindSchemas(resources) } },
  };
}

/** A document's content hash, as the `hash` of its link in the v3 index. */
export function documentHash(doc: Obj): string {
  return createHash('sha512').update(JSON.stringify(doc)).digest('hex').toUpperCase();
}

/** The `/openapi/v3` index. */
export function openApiV3Index(hash: string): Obj {
  return {
    paths: {
      [`apis/${GROUP_VERSION}`]: { serverRelativeURL: `/openapi/v3/apis/${GROUP_VERSION}?hash=${hash}` },
    },
  };
}

/** The `/openapi/v2` document: valid and empty. */
export function openApiV2(): Obj {
  return {
    swagger: '2.0',
    info: { title: 'calico-apiserver', version: VERSION },
    paths: {},
    definitions: {},
  };
}
