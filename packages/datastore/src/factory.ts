/**
 * From a `ClientConfig` to a working client. The one place that chooses a backend: a switch on
 * `datastoreType`, so the Kubernetes backend, when it lands, is one more case here.
 *
 *   ClientConfig ──validate──► etcdv3 ──(SRV lookup, TLS files)──► transport 'grpc':  EtcdKVStore ──────┐
 *                             │                                  transport 'http2': EtcdHttp2KVStore ─┤
 *                             memory ──────────────────────────────────────────────► MemoryKVStore ─┤
 *                             kubernetes ──(kubeconfig / k8s fields / in-cluster)──► KubeKVStore ───┴─► KVDatastore
 *
 * The etcd3 store is imported only when chosen: a process on the http2 transport never loads etcd3,
 * grpc-js or protobufjs. The Kubernetes store reads its kubeconfig itself unless the user's
 * credentials need `@kubernetes/client-node` (exec or auth-provider plugins), which is then loaded.
 */
import { assertNever } from '@calico-ts/api/internal';
import { type ClientConfig, validateClientConfig } from './config/client-config.js';
import { discoverEtcdEndpoints, readTlsFiles } from './config/load-client-config.js';
import { DatastoreError } from './errors.js';
import { EtcdHttp2KVStore } from './kv/etcd-http2-kv-store.js';
import type { KVStore } from './kv/kv-store.js';
import { MemoryKVStore } from './kv/memory-kv-store.js';
import { KVDatastore } from './kv-datastore.js';
import type { Datastore } from './types.js';

export interface CreateKVStoreOptions {
  /**
   * How to talk to etcd; both speak etcd's gRPC protocol, with the same semantics and errors.
   * `grpc` (the default): through etcd3 and grpc-js, with their reconnect and fault handling, for
   * long-running daemons. `http2`: through Node's built-in HTTP/2 client and a small codec for the
   * messages used (`EtcdHttp2KVStore`), which loads in a fraction of the time, for short-lived
   * processes (calicoctl, the CNI plugin).
   */
  transport?: 'grpc' | 'http2';
  /**
   * Kubernetes datastore: the interface prefix list the process runs with (FELIX_INTERFACEPREFIX,
   * or Felix's resolved InterfacePrefix joined by commas). A Pod's WorkloadEndpoint is named on the
   * host by its first entry, as upstream names it; unset means `cali`. Ignored by etcd, where the
   * CNI plugin stores the interface name in the endpoint.
   */
  interfacePrefix?: string;
  /** Kubernetes datastore: read only what Kubernetes serves, never Calico's CRDs (KubeKVStoreOptions). */
  kubernetesOnly?: boolean;
}

/**
 * The key-value store for an etcdv3 or memory configuration. Reads TLS files and, with
 * `etcdDiscoverySrv`, DNS. Throws `DatastoreError('config')` for a bad configuration and
 * `'unsupported'` for the Kubernetes datastore, which has no key-value store.
 */
export async function createKVStore(cfg: ClientConfig, options: CreateKVStoreOptions = {}): Promise<KVStore> {
  validateClientConfig(cfg);
  switch (cfg.datastoreType) {
    case 'etcdv3': {
      const endpoints =
        cfg.etcdEndpoints.length > 0 ? cfg.etcdEndpoints : await discoverEtcdEndpoints(cfg.etcdDiscoverySrv!);
      const tls = await readTlsFiles(cfg);
      const etcd = { endpoints, tls, username: cfg.etcdUsername, password: cfg.etcdPassword };
      const transport = options.transport ?? 'grpc';
      switch (transport) {
        case 'http2':
          return new EtcdHttp2KVStore(etcd);
        case 'grpc': {
          const { EtcdKVStore } = await import('./kv/etcd-kv-store.js');
          return new EtcdKVStore(etcd);
        }
        default:
          throw new DatastoreError(
            'config',
            `etcd transport must be grpc or http2, got ${String(transport)}`,
          );
      }
    }
    case 'memory':
      return new MemoryKVStore();
    case 'kubernetes':
      return createKubeKVStore(cfg, options);
    default:
      return assertNever(cfg.datastoreType);
  }
}

async function createKubeKVStore(cfg: ClientConfig, options: CreateKVStoreOptions): Promise<KVStore> {
  if (cfg.calicoAPIGroup === 'projectcalico.org/v3') {
    throw new DatastoreError(
      'unsupported',
      'calicoAPIGroup projectcalico.org/v3 (v3 CRDs) is not supported; the Kubernetes datastore uses crd.projectcalico.org/v1',
    );
  }
  const [{ KubeKVStore }, { KubeHttp }, conn] = await Promise.all([
    import('./kube/kube-kv-store.js'),
    import('./kube/kube-http.js'),
    import('./kube/kube-connection.js'),
  ]);
  let connection: Awaited<ReturnType<typeof conn.loadKubeConnection>>;
  if (cfg.kubeconfig && (await kubeconfigNeedsPlugin(cfg.kubeconfig, cfg.k8sCurrentContext, conn))) {
    connection = await conn.loadKubeConnectionWithClientNode(cfg.kubeconfig, cfg.k8sCurrentContext);
  } else {
    connection = await conn.loadKubeConnection(cfg);
  }
  return new KubeKVStore(new KubeHttp(connection), {
    ...(options.interfacePrefix !== undefined ? { interfacePrefix: options.interfacePrefix } : {}),
    ...(options.kubernetesOnly ? { kubernetesOnly: true } : {}),
  });
}

async function kubeconfigNeedsPlugin(
  path: string,
  context: string | undefined,
  conn: typeof import('./kube/kube-connection.js'),
): Promise<boolean> {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile(path, 'utf8').catch(() => undefined);
  return text !== undefined && conn.kubeconfigNeedsClientNode(text, context);
}

/** The typed client for a configuration (see `loadClientConfig`). */
export async function createDatastore(
  cfg: ClientConfig,
  options: CreateKVStoreOptions = {},
): Promise<Datastore> {
  switch (cfg.datastoreType) {
    case 'etcdv3':
    case 'memory':
    case 'kubernetes':
      return new KVDatastore(await createKVStore(cfg, options), { backend: cfg.datastoreType });
    default:
      validateClientConfig(cfg);
      return assertNever(cfg.datastoreType);
  }
}
