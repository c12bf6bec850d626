/**
 * Where the Kubernetes API server is and how to authenticate to it, from a `ClientConfig`: a
 * kubeconfig file (current context, or `k8sCurrentContext`), the explicit `k8sAPIEndpoint` /
 * `k8sCertFile` / `k8sKeyFile` / `k8sCAFile` / `k8sAPIToken` fields, or the in-cluster service
 * account (KUBERNETES_SERVICE_HOST, the mounted token and CA).
 *
 * Two loaders behind one result type (`KubeConnection`):
 *   - `loadKubeConnection`: reads the kubeconfig itself (YAML; certificate, key, CA and token as
 *     files or inline data). Imports nothing heavy, for one-shot executables (the CNI plugin,
 *     calicoctl): loading `@kubernetes/client-node` costs about 0.9 s and 70 MB here.
 *   - `loadKubeConnectionWithClientNode`: `@kubernetes/client-node`'s KubeConfig, for what only it
 *     supports (exec and auth-provider plugins). Chosen when the kubeconfig's user asks for them.
 * I/O: reads files and the environment given to it.
 */
import { readFile } from 'node:fs/promises';
import type { RequestOptions } from 'node:https';
import { parse as parseYaml } from 'yaml';
import type { ClientConfig } from '../config/client-config.js';
import { DatastoreError } from '../errors.js';

export interface KubeConnection {
  /** `https://host:port` (no trailing slash). */
  readonly server: string;
  /** TLS and auth for node:https (`ca`, `cert`, `key`, `rejectUnauthorized`, `headers`). */
  readonly tls: Pick<RequestOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized'>;
  /** `Bearer <token>` or absent. Re-read for every request when it comes from a file. */
  readonly authorization?: () => Promise<string | undefined>;
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

type Obj = Record<string, unknown>;

function str(o: Obj | undefined, k: string): string | undefined {
  const v = o?.[k];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

async function fileOrData(
  file: string | undefined,
  data: string | undefined,
  what: string,
): Promise<Buffer | undefined> {
  if (data) return Buffer.from(data, 'base64');
  if (!file) return undefined;
  try {
    return await readFile(file);
  } catch (e) {
    throw new DatastoreError('config', `cannot read the ${what} ${file}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

function tokenFromFile(path: string): () => Promise<string | undefined> {
  return async () => {
    try {
      const t = (await readFile(path, 'utf8')).trim();
      return t ? `Bearer ${t}` : undefined;
    } catch {
      return undefined;
    }
  };
}

/** Does this kubeconfig need `@kubernetes/client-node` (exec or auth-provider credentials)? */
export function kubeconfigNeedsClientNode(text: string, context?: string): boolean {
  const user = selectUser(parseKubeconfig(text, '(kubeconfig)'), context);
  return user !== undefined && (user.exec !== undefined || user['auth-provider'] !== undefined);
}

function parseKubeconfig(text: string, path: string): Obj {
  try {
    const doc = parseYaml(text) as unknown;
    if (typeof doc !== 'object' || doc === null) throw new Error('not a YAML mapping');
    return doc as Obj;
  } catch (e) {
    throw new DatastoreError('config', `kubeconfig ${path} is not valid YAML: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

function named(list: unknown, name: string | undefined, field: string): Obj | undefined {
  if (!Array.isArray(list) || name === undefined) return undefined;
  const entry = list.find((e) => (e as Obj)?.name === name) as Obj | undefined;
  return entry?.[field] as Obj | undefined;
}

function selectContext(doc: Obj, context: string | undefined): Obj | undefined {
  return named(doc.contexts, context ?? str(doc, 'current-context'), 'context');
}

function selectUser(doc: Obj, context: string | undefined): Obj | undefined {
  return named(doc.users, str(selectContext(doc, context), 'user'), 'user');
}

/** The connection a kubeconfig file describes (its current context unless `context` is given). */
export async function connectionFromKubeconfig(path: string, context?: string): Promise<KubeConnection> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new DatastoreError('config', `cannot read kubeconfig ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const doc = parseKubeconfig(text, path);
  const ctx = selectContext(doc, context);
  if (!ctx) {
    throw new DatastoreError(
      'config',
      `kubeconfig ${path} has no context ${context ?? str(doc, 'current-context') ?? '(no current-context set)'}`,
    );
  }
  const cluster = named(doc.clusters, str(ctx, 'cluster'), 'cluster');
  const server = str(cluster, 'server');
  if (!server)
    throw new DatastoreError('config', `kubeconfig ${path}: cluster ${str(ctx, 'cluster')} has no server`);
  const user = selectUser(doc, context) ?? {};
  if (user.exec !== undefined || user['auth-provider'] !== undefined) {
    throw new DatastoreError(
      'config',
      `kubeconfig ${path}: user ${str(ctx, 'user')} uses exec or auth-provider credentials; use loadKubeConnectionWithClientNode`,
    );
  }
  const ca = await fileOrData(
    str(cluster, 'certificate-authority'),
    str(cluster, 'certificate-authority-data'),
    'CA',
  );
  const cert = await fileOrData(
    str(user, 'client-certificate'),
    str(user, 'client-certificate-data'),
    'client certificate',
  );
  const key = await fileOrData(str(user, 'client-key'), str(user, 'client-key-data'), 'client key');
  const token = str(user, 'token');
  const tokenFile = str(user, 'tokenFile');
  const insecure = cluster?.['insecure-skip-tls-verify'] === true;
  return {
    server: server.replace(/\/+$/, ''),
    tls: {
      ...(ca ? { ca } : {}),
      ...(cert ? { cert } : {}),
      ...(key ? { key } : {}),
      rejectUnauthorized: !insecure,
    },
    ...(token
      ? { authorization: async () => `Bearer ${token}` }
      : tokenFile
        ? { authorization: tokenFromFile(tokenFile) }
        : {}),
  };
}

/** The in-cluster connection: the service account a pod runs as. */
export async function inClusterConnection(env: NodeJS.ProcessEnv, saDir = SA_DIR): Promise<KubeConnection> {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  if (!host) {
    throw new DatastoreError(
      'config',
      'no kubeconfig given and not running in a pod (KUBERNETES_SERVICE_HOST is not set): set KUBECONFIG or kubeconfig in the configuration',
    );
  }
  const ca = await fileOrData(`${saDir}/ca.crt`, undefined, 'service account CA');
  const h = host.includes(':') ? `[${host}]` : host;
  return {
    server: `https://${h}:${port}`,
    tls: { ...(ca ? { ca } : {}), rejectUnauthorized: true },
    authorization: tokenFromFile(`${saDir}/token`),
  };
}

/**
 * The connection for a Kubernetes-datastore `ClientConfig`, read without `@kubernetes/client-node`:
 * the kubeconfig when set, else the explicit k8s fields, else in-cluster.
 */
export async function loadKubeConnection(
  cfg: ClientConfig,
  env: NodeJS.ProcessEnv = process.env,
): Promise<KubeConnection> {
  if (cfg.kubeconfig) return connectionFromKubeconfig(cfg.kubeconfig, cfg.k8sCurrentContext);
  if (cfg.k8sAPIEndpoint) {
    const ca = await fileOrData(cfg.k8sCAFile, undefined, 'CA');
    const cert = await fileOrData(cfg.k8sCertFile, undefined, 'client certificate');
    const key = await fileOrData(cfg.k8sKeyFile, undefined, 'client key');
    const token = cfg.k8sAPIToken;
    return {
      server: cfg.k8sAPIEndpoint.replace(/\/+$/, ''),
      tls: {
        ...(ca ? { ca } : {}),
        ...(cert ? { cert } : {}),
        ...(key ? { key } : {}),
        rejectUnauthorized: cfg.k8sInsecureSkipTLSVerify !== true,
      },
      ...(token ? { authorization: async () => `Bearer ${token}` } : {}),
    };
  }
  return inClusterConnection(env);
}

/**
 * The same through `@kubernetes/client-node`'s KubeConfig (exec and auth-provider plugins
 * included), loaded only when called.
 */
export async function loadKubeConnectionWithClientNode(
  path: string,
  context?: string,
): Promise<KubeConnection> {
  // A specifier bundlers leave alone: executables that bundle the datastore do not carry
  // client-node (5 MB parsed on every start) for the few kubeconfigs that need it.
  const specifier = '@kubernetes/client-node';
  let KubeConfig: typeof import('@kubernetes/client-node').KubeConfig;
  try {
    ({ KubeConfig } = (await import(specifier)) as typeof import('@kubernetes/client-node'));
  } catch (e) {
    throw new DatastoreError(
      'config',
      `kubeconfig ${path} uses exec or auth-provider credentials, which need @kubernetes/client-node, and it cannot be loaded here: ${(e as Error).message}`,
      { cause: e },
    );
  }
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  if (context) kc.setCurrentContext(context);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new DatastoreError('config', `kubeconfig ${path} has no current cluster`);
  const probe: RequestOptions = {};
  const credentials = async (o: RequestOptions) => {
    try {
      await kc.applyToHTTPSOptions(o);
    } catch (e) {
      const why = (e as Error).message || 'the credential plugin failed without a message';
      throw new DatastoreError('unauthorized', `kubeconfig ${path}: getting credentials failed: ${why}`, {
        cause: e,
      });
    }
  };
  await credentials(probe);
  const headers = (probe.headers ?? {}) as Record<string, string>;
  return {
    server: cluster.server.replace(/\/+$/, ''),
    tls: {
      ...(probe.ca ? { ca: probe.ca } : {}),
      ...(probe.cert ? { cert: probe.cert } : {}),
      ...(probe.key ? { key: probe.key } : {}),
      rejectUnauthorized: probe.rejectUnauthorized !== false,
    },
    authorization: async () => {
      const o: RequestOptions = {};
      await credentials(o);
      const h = (o.headers ?? headers) as Record<string, string>;
      return h.Authorization ?? h.authorization;
    },
  };
}
