/**
 * install-cni's configuration, read from the environment as upstream's install step reads it
 * (pure). Every variable, its default and where it goes:
 *
 * | variable | default | use |
 * | --- | --- | --- |
 * | `CNI_NETWORK_CONFIG` | — | the network config template |
 * | `CNI_NETWORK_CONFIG_FILE` | — | read when `CNI_NETWORK_CONFIG` is unset |
 * | `CNI_CONF_NAME` | `10-calico.conflist` (`10-calico.conf` for one plugin) | file written in the host's net.d |
 * | `CNI_OLD_CONF_NAME` | `10-calico.conflist` | removed when it differs from `CNI_CONF_NAME` |
 * | `CNI_NET_DIR` | `/etc/cni/net.d` | the host's path of net.d, used inside the rendered files |
 * | `UPDATE_CNI_BINARIES` | `true` | `false` keeps plugins already on the host |
 * | `SKIP_CNI_BINARIES` | — | comma list of plugin names not to copy |
 * | `TLS_ASSETS_DIR` | `/calico-secrets` | where the etcd TLS secret is mounted |
 * | `SLEEP` | `true` | stay running (sidecar) after installing; `false` exits (init container) |
 * | `KUBERNETES_SERVICE_HOST`/`_PORT`/`_PROTOCOL` | — / — / `https` | the API server the kubeconfig names |
 * | `SKIP_TLS_VERIFY` | `false` | kubeconfig without the CA |
 * | `CALICO_CNI_SERVICE_ACCOUNT` | `calico-cni-plugin` | whose token the kubeconfig carries |
 * | `CNI_TOKEN_VALIDITY_SECONDS` | `86400` | lifetime asked for that token (minimum 600) |
 *
 * and the template placeholders of `placeholderValues`.
 */
import { hostname } from 'node:os';
import { InstallError } from './errors.js';

type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_CONF_NAME = '10-calico.conflist';
/** The default name of a config that is one plugin, not a list (what the seeds' manifests install). */
export const DEFAULT_SINGLE_CONF_NAME = '10-calico.conf';
export const DEFAULT_CNI_NET_DIR = '/etc/cni/net.d';
export const DEFAULT_SERVICE_ACCOUNT = 'calico-cni-plugin';
export const DEFAULT_TOKEN_VALIDITY_SECONDS = 24 * 60 * 60;
/** The shortest token lifetime the API server grants. */
export const MIN_TOKEN_VALIDITY_SECONDS = 600;
/** The etcd TLS files, by their name in the mounted secret. */
export const TLS_FILES = ['etcd-ca', 'etcd-cert', 'etcd-key'] as const;

export interface InstallConfig {
  readonly networkConfig?: string;
  readonly networkConfigFile?: string;
  /** CNI_CONF_NAME; unset: `10-calico.conflist`, or `10-calico.conf` for a single-plugin config. */
  readonly confName?: string;
  readonly oldConfName: string;
  /** The host's own path of net.d (what the plugin, running on the host, reads). */
  readonly cniNetDir: string;
  readonly updateBinaries: boolean;
  readonly skipBinaries: ReadonlySet<string>;
  readonly tlsAssetsDir: string;
  readonly sleep: boolean;
  /** `https://host:port` of the API server when running in a pod, else undefined. */
  readonly apiServer?: string;
  readonly skipTlsVerify: boolean;
  readonly serviceAccount: string;
  readonly tokenValiditySeconds: number;
  readonly nodeName: string;
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const v = env[name]?.trim().toLowerCase();
  if (v === undefined || v === '') return dflt;
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw new InstallError('config', `${name} must be true or false, got "${env[name]}"`);
}

function nonEmpty(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
}

function checkConfName(name: string, variable: string): string {
  if (name.includes('/') || name === '.' || name === '..') {
    throw new InstallError('config', `${variable} must be a file name, not a path: "${name}"`);
  }
  return name;
}

export function configFromEnv(env: Env): InstallConfig {
  const host = nonEmpty(env, 'KUBERNETES_SERVICE_HOST');
  const port = nonEmpty(env, 'KUBERNETES_SERVICE_PORT') ?? '443';
  const protocol = nonEmpty(env, 'KUBERNETES_SERVICE_PROTOCOL') ?? 'https';
  const validityText = nonEmpty(env, 'CNI_TOKEN_VALIDITY_SECONDS');
  const validity = validityText === undefined ? DEFAULT_TOKEN_VALIDITY_SECONDS : Number(validityText);
  if (!Number.isInteger(validity) || validity < MIN_TOKEN_VALIDITY_SECONDS) {
    throw new InstallError(
      'config',
      `CNI_TOKEN_VALIDITY_SECONDS must be a whole number of at least ${MIN_TOKEN_VALIDITY_SECONDS}, got "${validityText}"`,
    );
  }
  const confNameText = nonEmpty(env, 'CNI_CONF_NAME');
  const confName = confNameText === undefined ? undefined : checkConfName(confNameText, 'CNI_CONF_NAME');
  const networkConfig = nonEmpty(env, 'CNI_NETWORK_CONFIG');
  const networkConfigFile = nonEmpty(env, 'CNI_NETWORK_CONFIG_FILE');
  return {
    ...(networkConfig !== undefined ? { networkConfig } : {}),
    ...(networkConfigFile !== undefined ? { networkConfigFile } : {}),
    ...(confName !== undefined ? { confName } : {}),
    oldConfName: checkConfName(nonEmpty(env, 'CNI_OLD_CONF_NAME') ?? DEFAULT_CONF_NAME, 'CNI_OLD_CONF_NAME'),
    cniNetDir: (nonEmpty(env, 'CNI_NET_DIR') ?? DEFAULT_CNI_NET_DIR).replace(/\/+$/, ''),
    updateBinaries: bool(env, 'UPDATE_CNI_BINARIES', true),
    skipBinaries: new Set(
      (env.SKIP_CNI_BINARIES ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
    tlsAssetsDir: nonEmpty(env, 'TLS_ASSETS_DIR') ?? '/calico-secrets',
    sleep: bool(env, 'SLEEP', true),
    ...(host !== undefined
      ? { apiServer: `${protocol}://${host.includes(':') ? `[${host}]` : host}:${port}` }
      : {}),
    skipTlsVerify: bool(env, 'SKIP_TLS_VERIFY', false),
    serviceAccount: nonEmpty(env, 'CALICO_CNI_SERVICE_ACCOUNT') ?? DEFAULT_SERVICE_ACCOUNT,
    tokenValiditySeconds: validity,
    nodeName: nonEmpty(env, 'KUBERNETES_NODE_NAME') ?? hostname(),
  };
}

/** What install-cni knows when it renders the template. */
export interface RenderFacts {
  /** The service account token written into the kubeconfig ('' when not in a pod). */
  readonly token: string;
  /** Which etcd TLS files were copied into `<net.d>/calico-tls`. */
  readonly tlsFiles: ReadonlySet<(typeof TLS_FILES)[number]>;
}

/** Every placeholder upstream's template may hold, with its value. */
export function placeholderValues(env: Env, cfg: InstallConfig, facts: RenderFacts): Record<string, string> {
  const get = (name: string, dflt: string) => nonEmpty(env, name) ?? dflt;
  const tls = (file: (typeof TLS_FILES)[number]) =>
    facts.tlsFiles.has(file) ? `${cfg.cniNetDir}/calico-tls/${file}` : '';
  return {
    __LOG_LEVEL__: get('LOG_LEVEL', 'info'),
    __LOG_FILE_PATH__: get('LOG_FILE_PATH', '/var/log/calico/cni/cni.log'),
    __LOG_FILE_MAX_SIZE__: get('LOG_FILE_MAX_SIZE', '100'),
    __LOG_FILE_MAX_AGE__: get('LOG_FILE_MAX_AGE', '30'),
    __LOG_FILE_MAX_COUNT__: get('LOG_FILE_MAX_COUNT', '10'),
    __DATASTORE_TYPE__: get('DATASTORE_TYPE', 'kubernetes'),
    __KUBERNETES_NODE_NAME__: cfg.nodeName,
    __KUBECONFIG_FILEPATH__: `${cfg.cniNetDir}/calico-kubeconfig`,
    __CNI_MTU__: get('CNI_MTU', '1500'),
    __KUBERNETES_SERVICE_HOST__: get('KUBERNETES_SERVICE_HOST', ''),
    __KUBERNETES_SERVICE_PORT__: get('KUBERNETES_SERVICE_PORT', ''),
    __SERVICEACCOUNT_TOKEN__: facts.token,
    __CALICO_API_GROUP__: get('CALICO_API_GROUP', 'crd.projectcalico.org/v1'),
    __ETCD_CERT_FILE__: tls('etcd-cert'),
    __ETCD_CA_CERT_FILE__: tls('etcd-ca'),
    __ETCD_KEY_FILE__: tls('etcd-key'),
    __ETCD_ENDPOINTS__: get('ETCD_ENDPOINTS', ''),
    __ETCD_DISCOVERY_SRV__: get('ETCD_DISCOVERY_SRV', ''),
    __REQUIRE_MTU_FILE__: get('REQUIRE_MTU_FILE', 'false'),
  };
}
