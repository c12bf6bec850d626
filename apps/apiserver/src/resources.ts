/**
 * What calico-apiserver serves: every projectcalico.org/v3 kind of `@calico-ts/api`, each as a
 * Kubernetes resource (plural, singular, scope, short names, verbs). Pure.
 *
 * Short names are upstream calico-apiserver's (`apiserver/pkg/registry/projectcalico/rest/
 * storage_calico.go`); kinds it gives none have none. Verbs follow what the datastore lets be
 * written, as calicoctl refuses it: ClusterInformation is read-only everywhere; on the Kubernetes
 * datastore a Profile is derived from Namespaces and ServiceAccounts (read-only) and a Node is
 * Kubernetes' (its Calico fields are written, it is never created or deleted through Calico).
 */
import { API_GROUP, KIND_NAMES, KINDS, type Kind } from '@calico-ts/api';

export const GROUP = API_GROUP;
export const VERSION = 'v3';
export const GROUP_VERSION = `${GROUP}/${VERSION}`;

/** The request verbs as Kubernetes names them (authorization attributes, discovery). */
export const VERBS = [
  'create',
  'delete',
  'deletecollection',
  'get',
  'list',
  'patch',
  'update',
  'watch',
] as const;
export type Verb = (typeof VERBS)[number];

export type Backend = 'etcdv3' | 'memory' | 'kubernetes';

export interface ServedResource {
  readonly kind: Kind;
  /** `globalnetworkpolicies`: the path segment and the authorization resource. */
  readonly plural: string;
  /** `globalnetworkpolicy`. */
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  /** Sorted, as Kubernetes lists them. */
  readonly verbs: readonly Verb[];
}

const SHORT_NAMES: Partial<Record<Kind, readonly string[]>> = {
  NetworkPolicy: ['cnp', 'caliconetworkpolicy', 'caliconetworkpolicies'],
  NetworkSet: ['netsets'],
  GlobalNetworkPolicy: ['gnp', 'cgnp', 'calicoglobalnetworkpolicies'],
  HostEndpoint: ['hep', 'heps'],
  BGPConfiguration: ['bgpconfig', 'bgpconfigs'],
  FelixConfiguration: ['felixconfig', 'felixconfigs'],
  KubeControllersConfiguration: ['kcconfig'],
  ClusterInformation: ['clusterinfo'],
  CalicoNodeStatus: ['caliconodestatus'],
};

const READ: readonly Verb[] = ['get', 'list', 'watch'];

function verbsOf(kind: Kind, backend: Backend): readonly Verb[] {
  if (kind === 'ClusterInformation') return READ;
  if (backend === 'kubernetes') {
    if (kind === 'Profile') return READ;
    if (kind === 'Node') return ['get', 'list', 'patch', 'update', 'watch'];
  }
  return VERBS;
}

/** Every served resource, in kind order. */
export function servedResources(backend: Backend): ServedResource[] {
  return KIND_NAMES.map((kind) => ({
    kind,
    plural: KINDS[kind].plural,
    singular: kind.toLowerCase(),
    namespaced: KINDS[kind].namespaced,
    shortNames: SHORT_NAMES[kind] ?? [],
    verbs: verbsOf(kind, backend),
  }));
}

/** `ippools.projectcalico.org`: how Kubernetes names a resource in error messages. */
export function qualifiedResource(r: ServedResource): string {
  return `${r.plural}.${GROUP}`;
}

/** `IPPool.projectcalico.org`: how Kubernetes names a kind in Invalid errors. */
export function qualifiedKind(r: ServedResource): string {
  return `${r.kind}.${GROUP}`;
}
