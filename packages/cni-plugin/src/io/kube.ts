/**
 * The Kubernetes API seam of the CNI plugin: the two reads a Kubernetes-mode ADD makes, the Pod
 * (labels, annotations, service account, ports) and its Namespace (labels for IP pool
 * namespaceSelectors, pool annotations).
 *
 * Implementations: `KubeApiReader` (kube-api.ts, over `@calico-ts/datastore/kube`) and
 * `FakeKubeReader` (below: in memory, same errors, failure injection).
 *
 * Errors: only `CniPluginError` — `try-again` when the API server cannot be reached, `kube-api-failed`
 * when it answers but does not give the object (not found, forbidden), `invalid-config` when the
 * connection settings are unusable. Each message names the object and the API server.
 */
import { CniPluginError } from '../errors.js';
import type { KubeNamespace, KubePod } from '../pod.js';

export interface KubeReader {
  /** The API server's URL (or a description of it), for messages. */
  readonly server: string;
  getPod(namespace: string, name: string): Promise<KubePod>;
  getNamespace(name: string): Promise<KubeNamespace>;
  close(): Promise<void>;
}

export function podNotFound(namespace: string, name: string, server: string): CniPluginError {
  return new CniPluginError(
    'kube-api-failed',
    `pod ${namespace}/${name} does not exist in the Kubernetes API server ${server}`,
  );
}

export function namespaceNotFound(name: string, server: string): CniPluginError {
  return new CniPluginError(
    'kube-api-failed',
    `namespace ${name} does not exist in the Kubernetes API server ${server}`,
  );
}

/** Reads once per object and reader: the calico plugin and an in-process calico-ipam share them. */
export function memoizedReader(r: KubeReader): KubeReader {
  const seen = new Map<string, Promise<unknown>>();
  const once = <T>(key: string, read: () => Promise<T>): Promise<T> => {
    let p = seen.get(key) as Promise<T> | undefined;
    if (!p) {
      p = read();
      seen.set(key, p);
    }
    return p;
  };
  return {
    server: r.server,
    getPod: (ns, name) => once(`pod/${ns}/${name}`, () => r.getPod(ns, name)),
    getNamespace: (name) => once(`namespace/${name}`, () => r.getNamespace(name)),
    close: () => r.close(),
  };
}

/** `r` for a second user that must not close it. */
export function borrowReader(r: KubeReader): KubeReader {
  return { server: r.server, getPod: r.getPod, getNamespace: r.getNamespace, close: async () => {} };
}

type ReaderMethod = 'getPod' | 'getNamespace';

/** In memory: pods and namespaces by name; what is missing is not found, as from the API server. */
export class FakeKubeReader implements KubeReader {
  readonly server = 'https://fake-apiserver:6443';
  readonly pods = new Map<string, KubePod>();
  readonly namespaces = new Map<string, KubeNamespace>();
  /** Every read, in order (`pod/<ns>/<name>`, `namespace/<name>`). */
  readonly reads: string[] = [];
  closed = false;
  readonly #failures = new Map<ReaderMethod, CniPluginError>();

  addPod(pod: KubePod): this {
    this.pods.set(`${pod.metadata.namespace}/${pod.metadata.name}`, structuredClone(pod));
    const ns = pod.metadata.namespace!;
    if (!this.namespaces.has(ns)) this.namespaces.set(ns, { metadata: { name: ns } });
    return this;
  }

  addNamespace(ns: KubeNamespace): this {
    this.namespaces.set(ns.metadata.name, structuredClone(ns));
    return this;
  }

  /** Every later call of `method` throws `error`. */
  failAlways(method: ReaderMethod, error: CniPluginError): void {
    this.#failures.set(method, error);
  }

  async getPod(namespace: string, name: string): Promise<KubePod> {
    this.reads.push(`pod/${namespace}/${name}`);
    const f = this.#failures.get('getPod');
    if (f) throw f;
    const p = this.pods.get(`${namespace}/${name}`);
    if (!p) throw podNotFound(namespace, name, this.server);
    return structuredClone(p);
  }

  async getNamespace(name: string): Promise<KubeNamespace> {
    this.reads.push(`namespace/${name}`);
    const f = this.#failures.get('getNamespace');
    if (f) throw f;
    const n = this.namespaces.get(name);
    if (!n) throw namespaceNotFound(name, this.server);
    return structuredClone(n);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
