/**
 * The Kubernetes calls the operator makes, on the project's Kubernetes client (`KubeHttp` from
 * @calico-ts/datastore/kube: one keep-alive agent, errors classified once). I/O only.
 *
 *   get      GET, undefined for 404
 *   apply    server-side apply (field manager `tigera-operator`, forced): creates what is missing
 *            and changes only the fields the operator owns, so a no-op apply writes nothing
 *   list     GET of a collection with a label selector
 *   remove   DELETE (background propagation), 404 ignored
 *   status   server-side apply of the status subresource
 */
import { isDatastoreError } from '@calico-ts/datastore';
import type { KubeHttp } from '@calico-ts/datastore/kube';
import type { KubeObject } from './kube-object.js';

interface ResourceType {
  readonly prefix: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

const TYPES: Readonly<Record<string, ResourceType>> = {
  Namespace: { prefix: '/api/v1', plural: 'namespaces', namespaced: false },
  Node: { prefix: '/api/v1', plural: 'nodes', namespaced: false },
  Pod: { prefix: '/api/v1', plural: 'pods', namespaced: true },
  ServiceAccount: { prefix: '/api/v1', plural: 'serviceaccounts', namespaced: true },
  ConfigMap: { prefix: '/api/v1', plural: 'configmaps', namespaced: true },
  Secret: { prefix: '/api/v1', plural: 'secrets', namespaced: true },
  Service: { prefix: '/api/v1', plural: 'services', namespaced: true },
  DaemonSet: { prefix: '/apis/apps/v1', plural: 'daemonsets', namespaced: true },
  Deployment: { prefix: '/apis/apps/v1', plural: 'deployments', namespaced: true },
  PodDisruptionBudget: { prefix: '/apis/policy/v1', plural: 'poddisruptionbudgets', namespaced: true },
  ClusterRole: { prefix: '/apis/rbac.authorization.k8s.io/v1', plural: 'clusterroles', namespaced: false },
  ClusterRoleBinding: {
    prefix: '/apis/rbac.authorization.k8s.io/v1',
    plural: 'clusterrolebindings',
    namespaced: false,
  },
  RoleBinding: { prefix: '/apis/rbac.authorization.k8s.io/v1', plural: 'rolebindings', namespaced: true },
  APIService: { prefix: '/apis/apiregistration.k8s.io/v1', plural: 'apiservices', namespaced: false },
  Installation: { prefix: '/apis/operator.tigera.io/v1', plural: 'installations', namespaced: false },
  APIServer: { prefix: '/apis/operator.tigera.io/v1', plural: 'apiservers', namespaced: false },
  TigeraStatus: { prefix: '/apis/operator.tigera.io/v1', plural: 'tigerastatuses', namespaced: false },
};

/**
 * The kinds the operator makes in calico-system (and cluster-wide, and calico-apiserver's
 * RoleBinding in kube-system), in the order it applies them.
 */
export const MANAGED_KINDS = [
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'RoleBinding',
  'ConfigMap',
  'Secret',
  'Service',
  'Deployment',
  'DaemonSet',
  'PodDisruptionBudget',
  'APIService',
] as const;

/** Cluster-scoped managed kinds; the others are in `MANAGED_NAMESPACES`. */
export const CLUSTER_KINDS: ReadonlySet<string> = new Set(
  Object.entries(TYPES)
    .filter(([, t]) => !t.namespaced)
    .map(([k]) => k),
);
/** Where the operator's namespaced objects are: calico-system, and kube-system for one RoleBinding. */
export const MANAGED_NAMESPACES = ['calico-system', 'kube-system'] as const;

export function resourcePath(kind: string, name?: string, namespace?: string): string {
  const t = TYPES[kind];
  if (!t) throw new Error(`internal: no API path for kind ${kind}`);
  if (t.namespaced && !namespace && name) throw new Error(`internal: ${kind} ${name} needs a namespace`);
  const ns = t.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${t.prefix}${ns}/${t.plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
}

export type Obj = Record<string, unknown>;

export class KubeApi {
  constructor(readonly http: KubeHttp) {}

  async get(kind: string, name: string, namespace?: string): Promise<Obj | undefined> {
    try {
      return await this.http.request<Obj>('GET', resourcePath(kind, name, namespace));
    } catch (e) {
      if (isDatastoreError(e, 'not-found')) return undefined;
      throw e;
    }
  }

  async list(kind: string, opts: { namespace?: string; labelSelector?: string } = {}): Promise<Obj[]> {
    const q = opts.labelSelector ? `?labelSelector=${encodeURIComponent(opts.labelSelector)}` : '';
    try {
      const r = await this.http.request<{ items?: Obj[] }>(
        'GET',
        resourcePath(kind, undefined, opts.namespace) + q,
      );
      return r.items ?? [];
    } catch (e) {
      if (isDatastoreError(e, 'not-found')) return [];
      throw e;
    }
  }

  async apply(o: KubeObject, subresource = ''): Promise<Obj> {
    const path = `${resourcePath(o.kind, o.metadata.name, o.metadata.namespace)}${subresource}?fieldManager=tigera-operator&force=true`;
    return this.http.request<Obj>('PATCH', path, o, {
      contentType: 'application/apply-patch+yaml',
    });
  }

  /** Sets an object's finalizers (a merge patch guarded by the resourceVersion read with them). */
  async setFinalizers(
    kind: string,
    name: string,
    finalizers: readonly string[],
    resourceVersion: string,
  ): Promise<void> {
    await this.http.request(
      'PATCH',
      resourcePath(kind, name),
      { metadata: { finalizers, resourceVersion } },
      { contentType: 'application/merge-patch+json' },
    );
  }

  async remove(kind: string, name: string, namespace?: string): Promise<void> {
    try {
      await this.http.request('DELETE', resourcePath(kind, name, namespace), {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        propagationPolicy: 'Background',
      });
    } catch (e) {
      if (!isDatastoreError(e, 'not-found')) throw e;
    }
  }
}
