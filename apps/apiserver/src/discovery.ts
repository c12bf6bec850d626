/**
 * Discovery documents of projectcalico.org/v3 (pure): the legacy ones (`/apis` APIGroupList,
 * `/apis/projectcalico.org` APIGroup, `/apis/projectcalico.org/v3` APIResourceList) and
 * aggregated discovery (apidiscovery.k8s.io/v2, and v2beta1) for `/apis` when asked for it, which
 * kube-apiserver's aggregator merges into its own.
 */
import { createHash } from 'node:crypto';
import { GROUP, GROUP_VERSION, type ServedResource, VERSION } from './resources.js';

type Obj = Record<string, unknown>;

const GROUP_VERSION_ENTRY = { groupVersion: GROUP_VERSION, version: VERSION };

/** The APIGroup of projectcalico.org. */
export function apiGroup(): Obj {
  return {
    kind: 'APIGroup',
    apiVersion: 'v1',
    name: GROUP,
    versions: [GROUP_VERSION_ENTRY],
    preferredVersion: GROUP_VERSION_ENTRY,
  };
}

/** The APIGroupList of `/apis`: this server's one group. */
export function apiGroupList(): Obj {
  const { kind: _k, apiVersion: _a, ...group } = apiGroup();
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: [group] };
}

/** Kubernetes' storage version hash: 8 bytes of SHA-256 of `group/version/kind`, base64. */
function storageVersionHash(kind: string): string {
  return createHash('sha256')
    .update(`${GROUP}/${VERSION}/${kind}`)
    .digest()
    .subarray(0, 8)
    .toString('base64');
}

/** The APIResourceList of `/apis/projectcalico.org/v3`. */
export function apiResourceList(resources: readonly ServedResource[]): Obj {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: GROUP_VERSION,
    resources: resources.map((r) => ({
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.verbs,
      ...(r.shortNames.length > 0 ? { shortNames: r.shortNames } : {}),
      storageVersionHash: storageVersionHash(r.kind),
    })),
  };
}

/** The APIGroupDiscoveryList of `/apis` (aggregated discovery). */
export function aggregatedDiscovery(resources: readonly ServedResource[], version: 'v2' | 'v2beta1'): Obj {
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: `apidiscovery.k8s.io/${version}`,
    metadata: {},
    items: [
      {
        metadata: { name: GROUP },
        versions: [
          {
            version: VERSION,
            resources: resources.map((r) => ({
              resource: r.plural,
              responseKind: { group: GROUP, version: VERSION, kind: r.kind },
              scope: r.namespaced ? 'Namespaced' : 'Cluster',
              singularResource: r.singular,
              verbs: r.verbs,
              ...(r.shortNames.length > 0 ? { shortNames: r.shortNames } : {}),
            })),
            freshness: 'Current',
          },
        ],
      },
    ],
  };
}
