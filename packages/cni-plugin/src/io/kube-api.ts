/**
 * `KubeReader` on a real Kubernetes API server, through the Kubernetes datastore's own connection
 * code (`@calico-ts/datastore/kube`: kubeconfig parsing, TLS, bearer tokens, keep-alive HTTPS; no
 * `@kubernetes/client-node` unless the kubeconfig needs an exec or auth-provider plugin).
 *
 * Imported lazily: only a Kubernetes-mode ADD (and calico-ipam's namespace read) pays for it.
 *
 * Connection, as upstream's `NewK8sClient` builds it: the kubeconfig of `kubernetes.kubeconfig`
 * (else the KUBECONFIG variable, else the in-cluster service account), then the network config's
 * explicit settings on top (`kubernetes.k8s_api_root` or `policy.k8s_api_root` for the server,
 * `policy.k8s_auth_token`, `policy.k8s_client_certificate`/`_key`, `policy.k8s_certificate_authority`).
 */
import { readFile } from 'node:fs/promises';
import { isDatastoreError } from '@calico-ts/datastore';
import type { KubeConnection, KubeHttp } from '@calico-ts/datastore/kube';
import { CniPluginError, isCniPluginError, messageOf } from '../errors.js';
import type { KubeNamespace, KubePod } from '../pod.js';
import type { Env } from '../spec/env.js';
import type { KubeApiConf } from '../spec/netconf.js';
import { type KubeReader, namespaceNotFound, podNotFound } from './kube.js';

/** What picks the connection: equal settings connect the same way (the service keeps one per). */
export interface KubeApiSettings extends KubeApiConf {
  /** KUBECONFIG from the environment, used when the network config names no kubeconfig. */
  envKubeconfig?: string;
}

export function kubeApiSettings(conf: KubeApiConf, env: Env): KubeApiSettings {
  const out: KubeApiSettings = { ...conf };
  if (!conf.kubeconfig && env.KUBECONFIG) out.envKubeconfig = env.KUBECONFIG;
  return out;
}

async function fileText(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (e) {
    throw new CniPluginError('invalid-config', `cannot read the ${what} ${path}: ${messageOf(e)}`);
  }
}

/** The connection the settings describe. Errors: `invalid-config` naming the file or setting. */
export async function kubeConnection(s: KubeApiSettings, env: Env): Promise<KubeConnection> {
  const kube = await import('@calico-ts/datastore/kube');
  const kubeconfig = s.kubeconfig ?? s.envKubeconfig;
  let base: KubeConnection;
  try {
    if (kubeconfig) {
      const text = await readFile(kubeconfig, 'utf8').catch(() => undefined);
      base =
        text !== undefined && kube.kubeconfigNeedsClientNode(text)
          ? await kube.loadKubeConnectionWithClientNode(kubeconfig)
          : await kube.connectionFromKubeconfig(kubeconfig);
    } else if (s.apiRoot) {
      base = { server: s.apiRoot, tls: { rejectUnauthorized: true } };
    } else {
      base = await kube.inClusterConnection({ ...env });
    }
  } catch (e) {
    throw new CniPluginError(
      'invalid-config',
      `cannot connect to the Kubernetes API to read the pod: ${messageOf(e)} (set kubernetes.kubeconfig in the network config)`,
    );
  }
  const tls = { ...base.tls };
  if (s.certificateAuthority) tls.ca = await fileText(s.certificateAuthority, 'Kubernetes CA file');
  if (s.clientCertificate) tls.cert = await fileText(s.clientCertificate, 'Kubernetes client certificate');
  if (s.clientKey) tls.key = await fileText(s.clientKey, 'Kubernetes client key');
  const token = s.authToken;
  return {
    server: (s.apiRoot ?? base.server).replace(/\/+$/, ''),
    tls,
    ...(token
      ? { authorization: async () => `Bearer ${token}` }
      : base.authorization
        ? { authorization: base.authorization }
        : {}),
  };
}

export async function openKubeHttp(s: KubeApiSettings, env: Env): Promise<KubeHttp> {
  const [conn, { KubeHttp }] = await Promise.all([
    kubeConnection(s, env),
    import('@calico-ts/datastore/kube'),
  ]);
  return new KubeHttp(conn);
}

/** Reads through `http`; `closeHttp` when this reader owns the connection. */
export class KubeApiReader implements KubeReader {
  readonly #http: KubeHttp;
  readonly #owns: boolean;

  constructor(http: KubeHttp, owns: boolean) {
    this.#http = http;
    this.#owns = owns;
  }

  get server(): string {
    return this.#http.server;
  }

  async getPod(namespace: string, name: string): Promise<KubePod> {
    const what = `pod ${namespace}/${name}`;
    return this.#get(
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`,
      what,
      () => podNotFound(namespace, name, this.server),
    );
  }

  async getNamespace(name: string): Promise<KubeNamespace> {
    return this.#get(`/api/v1/namespaces/${encodeURIComponent(name)}`, `namespace ${name}`, () =>
      namespaceNotFound(name, this.server),
    );
  }

  async #get<T>(path: string, what: string, notFound: () => CniPluginError): Promise<T> {
    try {
      return await this.#http.request<T>('GET', path);
    } catch (e) {
      throw classify(e, what, this.server, notFound);
    }
  }

  async close(): Promise<void> {
    if (this.#owns) this.#http.close();
  }
}

/** The one place Kubernetes API errors become plugin errors. */
function classify(e: unknown, what: string, server: string, notFound: () => CniPluginError): CniPluginError {
  if (isCniPluginError(e)) return e;
  if (isDatastoreError(e, 'not-found')) return notFound();
  if (isDatastoreError(e, 'unavailable')) {
    return new CniPluginError(
      'try-again',
      `cannot read ${what}: the Kubernetes API server ${server} did not answer: ${messageOf(e)}`,
      { cause: e },
    );
  }
  if (isDatastoreError(e, 'unauthorized')) {
    return new CniPluginError(
      'kube-api-failed',
      `the Kubernetes API server ${server} refused to give ${what} to the plugin's credentials: ${messageOf(e)}`,
      { cause: e },
    );
  }
  return new CniPluginError(
    'kube-api-failed',
    `cannot read ${what} from the Kubernetes API server ${server}: ${messageOf(e)}`,
    {
      cause: e,
    },
  );
}
