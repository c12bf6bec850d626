/**
 * The datastore client configuration: one shape for every way it is given (calicoctl.cfg, env, CNI
 * network config, code), the defaults upstream applies, and the checks that turn a bad value into a
 * `DatastoreError('config')` naming the field as the user wrote it.
 *
 * Pure: no file, env or clock access. Whether `$HOME/.kube/config` exists is passed in.
 *
 * Precedence (upstream `calicoctl/commands/clientmgr/client.go`, `apiconfig/load.go`): a config
 * file, when there is one, is the whole configuration; the environment is read only when there is
 * no file. Within the environment a `CALICO_`-prefixed variable wins over the plain one.
 */
import { DatastoreError } from '../errors.js';

export const DATASTORE_TYPES = ['etcdv3', 'kubernetes', 'memory'] as const;
export type DatastoreType = (typeof DATASTORE_TYPES)[number];

/** Where calicoctl looks when `--config` is not given. A missing file there means "use env". */
export const DEFAULT_CALICOCTL_CONFIG_PATH = '/etc/calico/calicoctl.cfg';

/** The two Calico API groups a Kubernetes datastore can be backed by. */
export const CALICO_API_GROUPS = ['crd.projectcalico.org/v1', 'projectcalico.org/v3'] as const;

export interface ClientConfig {
  datastoreType: DatastoreType;
  /** etcd v3 endpoints, e.g. `https://10.0.0.1:2379`. Empty when not set. */
  etcdEndpoints: string[];
  /** DNS domain whose `_etcd-client-ssl._tcp` / `_etcd-client._tcp` SRV records list the endpoints. */
  etcdDiscoverySrv?: string;
  etcdUsername?: string;
  etcdPassword?: string;
  etcdKeyFile?: string;
  etcdCertFile?: string;
  etcdCACertFile?: string;
  /** Inline PEM; config file only (no env form, to keep secrets out of the environment). */
  etcdKey?: string;
  etcdCert?: string;
  etcdCACert?: string;
  kubeconfig?: string;
  k8sAPIEndpoint?: string;
  k8sKeyFile?: string;
  k8sCertFile?: string;
  k8sCAFile?: string;
  k8sInsecureSkipTLSVerify?: boolean;
  /** Kept for the Kubernetes backend; accepted wherever upstream accepts them. */
  k8sAPIToken?: string;
  k8sDisableNodePoll?: boolean;
  k8sUsePodCIDR?: boolean;
  kubeconfigInline?: string;
  k8sClientQPS?: number;
  k8sCurrentContext?: string;
  calicoAPIGroup?: string;
}

export type ClientConfigField = keyof ClientConfig;

/**
 * How each field is spelled in each source. `file` is the calicoctl.cfg `spec` key, `env` the
 * environment variable (also accepted with a `CALICO_` prefix), `cni` the CNI network config key.
 * A field with no `env` has no environment form upstream.
 */
export const CLIENT_CONFIG_FIELDS: Record<ClientConfigField, { file: string; env?: string; cni?: string }> = {
  datastoreType: { file: 'datastoreType', env: 'DATASTORE_TYPE', cni: 'datastore_type' },
  etcdEndpoints: { file: 'etcdEndpoints', env: 'ETCD_ENDPOINTS', cni: 'etcd_endpoints' },
  etcdDiscoverySrv: { file: 'etcdDiscoverySrv', env: 'ETCD_DISCOVERY_SRV', cni: 'etcd_discovery_srv' },
  etcdUsername: { file: 'etcdUsername', env: 'ETCD_USERNAME' },
  etcdPassword: { file: 'etcdPassword', env: 'ETCD_PASSWORD' },
  etcdKeyFile: { file: 'etcdKeyFile', env: 'ETCD_KEY_FILE', cni: 'etcd_key_file' },
  etcdCertFile: { file: 'etcdCertFile', env: 'ETCD_CERT_FILE', cni: 'etcd_cert_file' },
  etcdCACertFile: { file: 'etcdCACertFile', env: 'ETCD_CA_CERT_FILE', cni: 'etcd_ca_cert_file' },
  etcdKey: { file: 'etcdKey' },
  etcdCert: { file: 'etcdCert' },
  etcdCACert: { file: 'etcdCACert' },
  kubeconfig: { file: 'kubeconfig', env: 'KUBECONFIG', cni: 'kubernetes.kubeconfig' },
  k8sAPIEndpoint: { file: 'k8sAPIEndpoint', env: 'K8S_API_ENDPOINT', cni: 'kubernetes.k8s_api_root' },
  k8sKeyFile: { file: 'k8sKeyFile', env: 'K8S_KEY_FILE' },
  k8sCertFile: { file: 'k8sCertFile', env: 'K8S_CERT_FILE' },
  k8sCAFile: { file: 'k8sCAFile', env: 'K8S_CA_FILE' },
  k8sInsecureSkipTLSVerify: { file: 'k8sInsecureSkipTLSVerify', env: 'K8S_INSECURE_SKIP_TLS_VERIFY' },
  k8sAPIToken: { file: 'k8sAPIToken' },
  k8sDisableNodePoll: { file: 'k8sDisableNodePoll', env: 'K8S_DISABLE_NODE_POLL' },
  k8sUsePodCIDR: { file: 'usePodCIDR', env: 'USE_POD_CIDR' },
  kubeconfigInline: { file: 'kubeconfigInline' },
  k8sClientQPS: { file: 'k8sClientQPS' },
  k8sCurrentContext: { file: 'k8sCurrentContext', env: 'K8S_CURRENT_CONTEXT' },
  calicoAPIGroup: { file: 'calicoAPIGroup', env: 'CALICO_API_GROUP' },
};

/** Where a configuration came from; decides how errors name fields. */
export type ConfigOrigin =
  | { kind: 'file'; path: string }
  | { kind: 'env' }
  | { kind: 'cni' }
  /** Built in code and passed straight to `createDatastore`. */
  | { kind: 'object' };

export function describeOrigin(origin: ConfigOrigin): string {
  switch (origin.kind) {
    case 'file':
      return origin.path;
    case 'env':
      return 'environment';
    case 'cni':
      return 'CNI network config';
    case 'object':
      return 'client config';
  }
}

/** The field as the user wrote it in that source, e.g. `spec.etcdKeyFile`, `ETCD_KEY_FILE`. */
export function fieldLabel(field: ClientConfigField, origin: ConfigOrigin): string {
  const names = CLIENT_CONFIG_FIELDS[field];
  switch (origin.kind) {
    case 'file':
      return `spec.${names.file}`;
    case 'env':
      return names.env ?? names.file;
    case 'cni':
      // The CNI plugin exports its fields as env and then loads from env: what it has no field
      // for can only have come from the environment.
      return names.cni ?? names.env ?? names.file;
    case 'object':
      return field;
  }
}

export function configError(origin: ConfigOrigin, message: string): DatastoreError {
  return new DatastoreError('config', `${describeOrigin(origin)}: ${message}`);
}

/** Split a comma-separated endpoint list; blanks around entries and empty entries are dropped. */
export function splitEndpoints(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * Map a datastore type as written to the one used now. `etcdv2` (Calico ≤ 2.x) is read as etcdv3,
 * with a warning, since only the v3 API exists. Unknown values pass through for validation.
 */
export function normalizeDatastoreType(value: string, label: string, warnings: string[]): string {
  if (value === 'etcdv2') {
    warnings.push(
      `${label}: datastore type "etcdv2" is no longer supported; using etcdv3 (the etcd v3 API of the same cluster)`,
    );
    return 'etcdv3';
  }
  return value;
}

export interface ResolveOptions {
  origin: ConfigOrigin;
  /**
   * `$HOME/.kube/config` when that file exists (the caller checks), else undefined. Used as the
   * kubeconfig of a Kubernetes datastore that has neither a kubeconfig nor an API endpoint.
   */
  defaultKubeconfig?: string;
}

/**
 * Apply upstream's defaults to one source's fields, then validate. Default datastore: etcdv3 iff
 * etcd endpoints are set, else kubernetes.
 */
export function resolveClientConfig(
  partial: Partial<ClientConfig>,
  options: ResolveOptions,
): { config: ClientConfig; warnings: string[] } {
  const warnings: string[] = [];
  const etcdEndpoints = partial.etcdEndpoints ?? [];
  const config: ClientConfig = {
    ...stripUndefined(partial),
    etcdEndpoints,
    datastoreType: partial.datastoreType ?? (etcdEndpoints.length > 0 ? 'etcdv3' : 'kubernetes'),
  };
  if (partial.datastoreType === undefined) {
    if (config.datastoreType === 'kubernetes' && config.etcdDiscoverySrv !== undefined) {
      warnings.push(
        `${describeOrigin(options.origin)}: ${fieldLabel('etcdDiscoverySrv', options.origin)} is set but ` +
          `${fieldLabel('datastoreType', options.origin)} is not; the default is kubernetes unless ` +
          `${fieldLabel('etcdEndpoints', options.origin)} is set, so set the datastore type to etcdv3`,
      );
    }
  }
  if (
    config.datastoreType === 'kubernetes' &&
    config.kubeconfig === undefined &&
    config.k8sAPIEndpoint === undefined &&
    options.defaultKubeconfig !== undefined
  ) {
    config.kubeconfig = options.defaultKubeconfig;
  }
  validateClientConfig(config, options.origin);
  return { config, warnings };
}

/**
 * Combine what the config file and the environment say, as calicoctl does: the file, when there is
 * one, is used whole and the environment is not consulted; without a file the environment is used.
 * Then defaults and validation (`resolveClientConfig`).
 */
export function mergeClientConfig(
  fileCfg: Partial<ClientConfig> | undefined,
  envCfg: Partial<ClientConfig>,
  options: { filePath?: string; defaultKubeconfig?: string } = {},
): { config: ClientConfig; warnings: string[] } {
  if (fileCfg !== undefined) {
    const origin: ConfigOrigin = { kind: 'file', path: options.filePath ?? DEFAULT_CALICOCTL_CONFIG_PATH };
    return resolveClientConfig(fileCfg, { origin, defaultKubeconfig: options.defaultKubeconfig });
  }
  return resolveClientConfig(envCfg, {
    origin: { kind: 'env' },
    defaultKubeconfig: options.defaultKubeconfig,
  });
}

/**
 * Check a complete configuration. Throws `DatastoreError('config')` naming the first bad field as
 * the given source spells it.
 */
export function validateClientConfig(cfg: ClientConfig, origin: ConfigOrigin = { kind: 'object' }): void {
  const label = (f: ClientConfigField) => fieldLabel(f, origin);
  const fail = (message: string) => configError(origin, message);
  const set = (v: string | undefined) => v !== undefined && v !== '';

  if (!(DATASTORE_TYPES as readonly string[]).includes(cfg.datastoreType)) {
    throw fail(
      `${label('datastoreType')} "${cfg.datastoreType}" is not supported; use one of ${DATASTORE_TYPES.join(', ')}`,
    );
  }

  if (cfg.datastoreType === 'etcdv3') {
    for (const endpoint of cfg.etcdEndpoints) {
      const problem = endpointProblem(endpoint, 'etcd');
      if (problem) throw fail(`${label('etcdEndpoints')} entry "${endpoint}" ${problem}`);
    }
    if (new Set(cfg.etcdEndpoints.map((e) => new URL(e).protocol)).size > 1) {
      throw fail(`${label('etcdEndpoints')} mixes http and https endpoints; use one scheme for all`);
    }
    const hasEndpoints = cfg.etcdEndpoints.length > 0;
    if (hasEndpoints && set(cfg.etcdDiscoverySrv)) {
      throw fail(`${label('etcdEndpoints')} and ${label('etcdDiscoverySrv')} are both set; use one of them`);
    }
    if (!hasEndpoints && !set(cfg.etcdDiscoverySrv)) {
      throw fail(`datastore type etcdv3 needs ${label('etcdEndpoints')} (or ${label('etcdDiscoverySrv')})`);
    }
    if (set(cfg.etcdDiscoverySrv) && !isDnsName(cfg.etcdDiscoverySrv!)) {
      throw fail(
        `${label('etcdDiscoverySrv')} "${cfg.etcdDiscoverySrv}" is not a DNS domain name (e.g. example.com)`,
      );
    }
    const inline = set(cfg.etcdKey) || set(cfg.etcdCert) || set(cfg.etcdCACert);
    const files = set(cfg.etcdKeyFile) || set(cfg.etcdCertFile) || set(cfg.etcdCACertFile);
    if (inline && files) {
      throw fail(
        `inline ${label('etcdKey')}/${label('etcdCert')}/${label('etcdCACert')} cannot be mixed with ` +
          `${label('etcdKeyFile')}/${label('etcdCertFile')}/${label('etcdCACertFile')}; use one kind`,
      );
    }
    requirePair(cfg.etcdKeyFile, cfg.etcdCertFile, 'etcdKeyFile', 'etcdCertFile');
    requirePair(cfg.etcdKey, cfg.etcdCert, 'etcdKey', 'etcdCert');
    if (set(cfg.etcdUsername) !== set(cfg.etcdPassword)) {
      const [has, lacks] = set(cfg.etcdUsername)
        ? (['etcdUsername', 'etcdPassword'] as const)
        : (['etcdPassword', 'etcdUsername'] as const);
      throw fail(`${label(has)} is set but ${label(lacks)} is not; etcd authentication needs both`);
    }
  }

  if (cfg.datastoreType === 'kubernetes') {
    if (set(cfg.k8sAPIEndpoint)) {
      const problem = endpointProblem(cfg.k8sAPIEndpoint!, 'k8s');
      if (problem) throw fail(`${label('k8sAPIEndpoint')} "${cfg.k8sAPIEndpoint}" ${problem}`);
    }
    requirePair(cfg.k8sKeyFile, cfg.k8sCertFile, 'k8sKeyFile', 'k8sCertFile');
    if (cfg.k8sClientQPS !== undefined && !(Number.isFinite(cfg.k8sClientQPS) && cfg.k8sClientQPS >= 0)) {
      throw fail(`${label('k8sClientQPS')} must be a non-negative number, not ${cfg.k8sClientQPS}`);
    }
    if (set(cfg.calicoAPIGroup) && !(CALICO_API_GROUPS as readonly string[]).includes(cfg.calicoAPIGroup!)) {
      throw fail(
        `${label('calicoAPIGroup')} "${cfg.calicoAPIGroup}" is not one of ${CALICO_API_GROUPS.join(', ')}`,
      );
    }
  }

  function requirePair(
    key: string | undefined,
    cert: string | undefined,
    keyField: ClientConfigField,
    certField: ClientConfigField,
  ): void {
    if (set(key) && !set(cert)) {
      throw fail(
        `${label(keyField)} is set but ${label(certField)} is not; a client key needs its certificate`,
      );
    }
    if (set(cert) && !set(key)) {
      throw fail(
        `${label(certField)} is set but ${label(keyField)} is not; a client certificate needs its key`,
      );
    }
  }
}

/** Why `value` is not a usable http(s) endpoint, or undefined if it is. */
function endpointProblem(value: string, what: 'etcd' | 'k8s'): string | undefined {
  const example = what === 'etcd' ? 'https://10.0.0.1:2379' : 'https://10.0.0.1:6443';
  if (!/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(value)) {
    return `is not a URL with a scheme; write it like ${example}`;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `is not a valid URL; write it like ${example}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return `has scheme "${url.protocol.slice(0, -1)}"; only http and https are supported`;
  }
  if (url.hostname === '') return `has no host; write it like ${example}`;
  if (url.username !== '' || url.password !== '') {
    return what === 'etcd'
      ? 'must not carry credentials; set the etcd username and password fields instead'
      : 'must not carry credentials; use a kubeconfig or client certificate instead';
  }
  if (
    what === 'etcd' &&
    ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '')
  ) {
    return 'must not have a path, query or fragment; give only scheme, host and port';
  }
  return undefined;
}

function isDnsName(value: string): boolean {
  return (
    value.length <= 253 &&
    /^(?=.{1,253}\.?$)([a-zA-Z0-9_]([a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9_]([a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?)*\.?$/.test(
      value,
    )
  );
}

function stripUndefined<T extends object>(obj: T): T {
  const out = {} as T;
  for (const [k, v] of Object.entries(obj)) {
    if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  }
  return out;
}
