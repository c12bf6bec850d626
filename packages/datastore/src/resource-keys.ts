/**
 * Where projectcalico.org/v3 resources live in etcd, exactly as upstream lays them out
 * (`libcalico-go/lib/backend/model/resource.go`):
 *
 *   /calico/resources/v3/projectcalico.org/<plural>/<name>               cluster-scoped kinds
 *   /calico/resources/v3/projectcalico.org/<plural>/<namespace>/<name>   namespaced kinds
 *
 * Pure calculation: no I/O.
 */
import { isKind, KINDS, type Kind } from '@calico-ts/api';
import { DatastoreError } from './errors.js';

export const RESOURCE_ROOT = '/calico/resources/v3/projectcalico.org/';

const KIND_BY_PLURAL: ReadonlyMap<string, Kind> = new Map(
  Object.values(KINDS).map((info) => [info.plural, info.kind as Kind]),
);

export interface ResourceKeyParts {
  kind: Kind;
  name: string;
  /** Set for namespaced kinds only. */
  namespace?: string;
}

/** The etcd key of one resource. Throws `invalid` for a missing or unusable name or namespace. */
export function resourceKey(kind: Kind, name: string, namespace?: string): string {
  const info = kindInfo(kind);
  checkSegment('name', name);
  if (info.namespaced) {
    if (namespace === undefined || namespace === '') {
      throw new DatastoreError('invalid', `${kind} is namespaced: a namespace is required`);
    }
    checkSegment('namespace', namespace);
    return `${RESOURCE_ROOT}${info.plural}/${namespace}/${name}`;
  }
  if (namespace !== undefined && namespace !== '') {
    throw new DatastoreError(
      'invalid',
      `${kind} is not namespaced: no namespace may be given (got ${namespace})`,
    );
  }
  return `${RESOURCE_ROOT}${info.plural}/${name}`;
}

/**
 * The prefix holding every resource of a kind (or of one namespace, for namespaced kinds). It ends
 * with `/`, so `ippools/` never matches a sibling like `ippoolsx/`.
 */
export function resourcePrefix(kind: Kind, namespace?: string): string {
  const info = kindInfo(kind);
  if (namespace !== undefined && namespace !== '') {
    if (!info.namespaced) {
      throw new DatastoreError(
        'invalid',
        `${kind} is not namespaced: no namespace may be given (got ${namespace})`,
      );
    }
    checkSegment('namespace', namespace);
    return `${RESOURCE_ROOT}${info.plural}/${namespace}/`;
  }
  return `${RESOURCE_ROOT}${info.plural}/`;
}

/**
 * Parse a key back into kind, namespace and name; undefined for anything that is not a well-formed
 * resource key of a known kind (other Calico data, deeper paths, unknown plurals).
 */
export function parseResourceKey(key: string): ResourceKeyParts | undefined {
  if (!key.startsWith(RESOURCE_ROOT)) return undefined;
  const parts = key.slice(RESOURCE_ROOT.length).split('/');
  const kind = KIND_BY_PLURAL.get(parts[0] ?? '');
  if (!kind) return undefined;
  if (parts.some((p) => p === '')) return undefined;
  if (KINDS[kind].namespaced) {
    if (parts.length !== 3) return undefined;
    return { kind, namespace: parts[1]!, name: parts[2]! };
  }
  if (parts.length !== 2) return undefined;
  return { kind, name: parts[1]! };
}

function kindInfo(kind: Kind) {
  if (!isKind(kind)) throw new DatastoreError('invalid', `unknown kind ${JSON.stringify(kind)}`);
  return KINDS[kind];
}

function checkSegment(what: string, value: string): void {
  if (typeof value !== 'string' || value === '') {
    throw new DatastoreError('invalid', `a ${what} is required`);
  }
  if (value.includes('/') || value === '.' || value === '..') {
    throw new DatastoreError('invalid', `${what} ${JSON.stringify(value)} cannot be used in a key`);
  }
}
