/**
 * From a request's method and URL to what it asks for (pure), as Kubernetes' RequestInfoFactory
 * reads paths:
 *
 *   /healthz /livez /readyz                                        health (no authentication)
 *   /apis  /apis/projectcalico.org  /apis/projectcalico.org/v3     discovery
 *   /openapi/v2  /openapi/v3  /openapi/v3/apis/projectcalico.org/v3
 *   /version
 *   /apis/projectcalico.org/v3[/watch][/namespaces/NS]/PLURAL[/NAME]   (no subresources are served)
 *
 * The verb is Kubernetes': GET of a collection is `list` (`watch` with `?watch=true` or under
 * /watch/), of an object `get`; POST `create`; PUT `update`; PATCH `patch`; DELETE of an object
 * `delete`, of a collection `deletecollection`.
 */
import { ApiServerError } from './errors.js';
import { GROUP, GROUP_VERSION, type ServedResource, type Verb } from './resources.js';

export type Target =
  | { readonly kind: 'health'; readonly check: 'healthz' | 'livez' | 'readyz' }
  | { readonly kind: 'discovery'; readonly level: 'apis' | 'group' | 'version' }
  | { readonly kind: 'openapi'; readonly document: 'v2' | 'v3' | 'v3-group-version' }
  | { readonly kind: 'version' }
  | ResourceTarget;

export interface ResourceTarget {
  readonly kind: 'resource';
  readonly resource: ServedResource;
  readonly verb: Verb;
  /** The namespace in the path; absent for cluster-scoped kinds and lists across namespaces. */
  readonly namespace?: string;
  readonly name?: string;
}

const HEALTH = new Set(['healthz', 'livez', 'readyz']);

function notFound(path: string): ApiServerError {
  return new ApiServerError('not-found', `the server could not find the requested resource (${path})`);
}

function isWatchQuery(query: URLSearchParams): boolean {
  const w = query.get('watch');
  return w === 'true' || w === '1';
}

function verbOf(method: string, hasName: boolean, watch: boolean, path: string): Verb {
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (watch) return 'watch';
      return hasName ? 'get' : 'list';
    case 'POST':
      if (hasName) break;
      return 'create';
    case 'PUT':
      if (!hasName) break;
      return 'update';
    case 'PATCH':
      if (!hasName) break;
      return 'patch';
    case 'DELETE':
      return hasName ? 'delete' : 'deletecollection';
  }
  throw new ApiServerError(
    'method-not-allowed',
    `the server does not allow this method on the requested resource (${method} ${path})`,
  );
}

/**
 * What `method path?query` asks for; `resources` are the served ones by plural. Throws
 * `not-found` for a path nothing is served at, `method-not-allowed` for a verb that has no
 * meaning there.
 */
export function requestTarget(
  method: string,
  path: string,
  query: URLSearchParams,
  resources: ReadonlyMap<string, ServedResource>,
): Target {
  const parts = path.split('/').filter((p) => p !== '');
  const [head, ...rest] = parts;
  if (parts.length === 1 && HEALTH.has(head!)) return { kind: 'health', check: head as 'healthz' };
  // `/readyz/ping`-style sub-checks answer as the whole check does.
  if (parts.length > 1 && HEALTH.has(head!)) return { kind: 'health', check: head as 'healthz' };
  if (path === '/version' || path === '/version/') return { kind: 'version' };
  if (head === 'openapi') {
    if (rest.length === 1 && rest[0] === 'v2') return { kind: 'openapi', document: 'v2' };
    if (rest.length === 1 && rest[0] === 'v3') return { kind: 'openapi', document: 'v3' };
    if (rest.join('/') === `v3/apis/${GROUP_VERSION}`)
      return { kind: 'openapi', document: 'v3-group-version' };
    throw notFound(path);
  }
  if (head !== 'apis') throw notFound(path);
  if (rest.length === 0) return { kind: 'discovery', level: 'apis' };
  if (rest[0] !== GROUP) throw notFound(path);
  if (rest.length === 1) return { kind: 'discovery', level: 'group' };
  if (rest[1] !== 'v3') throw notFound(path);
  if (rest.length === 2) return { kind: 'discovery', level: 'version' };
  return resourceTarget(method, path, rest.slice(2), query, resources);
}

function resourceTarget(
  method: string,
  path: string,
  segments: string[],
  query: URLSearchParams,
  resources: ReadonlyMap<string, ServedResource>,
): ResourceTarget {
  let s = segments.map(decodeURIComponent);
  let watch = isWatchQuery(query);
  if (s[0] === 'watch') {
    watch = true;
    s = s.slice(1);
  }
  let namespace: string | undefined;
  if (s[0] === 'namespaces' && s.length >= 3) {
    namespace = s[1];
    s = s.slice(2);
  }
  const [plural, name, subresource, ...extra] = s;
  const resource = plural === undefined ? undefined : resources.get(plural);
  if (!resource || extra.length > 0) throw notFound(path);
  if (namespace !== undefined && !resource.namespaced) throw notFound(path);
  if (namespace === '') throw notFound(path);
  if (subresource !== undefined) throw notFound(path);
  // A watch of one object is a watch of its collection with a name selector (the /watch/ form).
  const verb = verbOf(method, name !== undefined && !watch, watch, path);
  if (resource.namespaced && namespace === undefined && !['list', 'watch'].includes(verb)) {
    throw new ApiServerError(
      'method-not-allowed',
      `${resource.plural} are namespaced: ${method} needs /apis/${GROUP_VERSION}/namespaces/NAMESPACE/${resource.plural}`,
    );
  }
  return {
    kind: 'resource',
    resource,
    verb,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(name !== undefined ? { name } : {}),
  };
}
