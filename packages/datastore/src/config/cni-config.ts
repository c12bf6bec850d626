/**
 * Client configuration from a CNI network config (pure).
 *
 * Upstream's plugin does not read these fields directly: it exports each one that is set as the
 * matching environment variable (overwriting what the runtime passed) and then runs the ordinary
 * environment loader. So a `CALICO_`-prefixed variable in the plugin's environment still beats the
 * network config, and fields the network config has no key for (etcd username/password, k8s client
 * certificates) come from the environment. `configFromCniNetConf` reproduces exactly that.
 */
import { type ClientConfig, configError } from './client-config.js';
import { configFromEnv, type Env } from './env-config.js';

/** Network config key → the variable upstream exports it as. */
const EXPORTED_FIELDS: readonly (readonly [key: string, env: string])[] = [
  ['etcd_endpoints', 'ETCD_ENDPOINTS'],
  ['etcd_discovery_srv', 'ETCD_DISCOVERY_SRV'],
  ['etcd_key_file', 'ETCD_KEY_FILE'],
  ['etcd_cert_file', 'ETCD_CERT_FILE'],
  ['etcd_ca_cert_file', 'ETCD_CA_CERT_FILE'],
  ['datastore_type', 'DATASTORE_TYPE'],
];
const EXPORTED_K8S_FIELDS: readonly (readonly [key: string, env: string])[] = [
  ['kubeconfig', 'KUBECONFIG'],
  ['k8s_api_root', 'K8S_API_ENDPOINT'],
];
/** Exported upstream but not read by the v3 loader; reported, not used. */
const LEGACY_FIELDS = ['etcd_scheme', 'etcd_authority'];

/** The environment variables upstream's plugin sets from this network config, before loading. */
export function cniEnvFromNetConf(netconf: unknown): Record<string, string> {
  const cni = { kind: 'cni' } as const;
  if (typeof netconf !== 'object' || netconf === null || Array.isArray(netconf)) {
    throw configError(cni, 'the network config must be a JSON object');
  }
  const conf = netconf as Record<string, unknown>;
  const out: Record<string, string> = {};
  const take = (obj: Record<string, unknown>, key: string, envName: string, label: string) => {
    const value = obj[key];
    if (value === undefined || value === null) return;
    if (typeof value !== 'string') {
      throw configError(cni, `${label} must be a string, not ${typeof value} ${JSON.stringify(value)}`);
    }
    if (value !== '') out[envName] = value;
  };
  for (const [key, envName] of EXPORTED_FIELDS) take(conf, key, envName, key);
  const k8s = conf.kubernetes;
  if (k8s !== undefined && k8s !== null) {
    if (typeof k8s !== 'object' || Array.isArray(k8s)) {
      throw configError(
        cni,
        'kubernetes must be an object like {"kubeconfig": "/etc/cni/net.d/calico-kubeconfig"}',
      );
    }
    for (const [key, envName] of EXPORTED_K8S_FIELDS) {
      take(k8s as Record<string, unknown>, key, envName, `kubernetes.${key}`);
    }
  }
  return out;
}

/**
 * The client config fields a CNI plugin invocation ends up with: `env` (the plugin's own
 * environment) overlaid with what the network config exports, then read by the env loader.
 */
export function configFromCniNetConf(
  netconf: unknown,
  env: Env = {},
): { config: Partial<ClientConfig>; warnings: string[] } {
  const exported = cniEnvFromNetConf(netconf);
  const { config, warnings } = configFromEnv({ ...env, ...exported });
  const conf = netconf as Record<string, unknown>;
  for (const key of LEGACY_FIELDS) {
    if (typeof conf[key] === 'string' && conf[key] !== '') {
      warnings.push(`CNI network config: ${key} is not used; give the full URL in etcd_endpoints`);
    }
  }
  return { config, warnings };
}
