/**
 * Client configuration from environment variables (pure: the environment is passed in as data).
 *
 * Each field's variable (`CLIENT_CONFIG_FIELDS[f].env`) is also read with a `CALICO_` prefix, and
 * the prefixed one wins when both are set — as upstream's envconfig lookup does, including a
 * prefixed variable set to the empty string hiding the plain one. Empty values mean "not set".
 */
import {
  CLIENT_CONFIG_FIELDS,
  type ClientConfig,
  type ClientConfigField,
  configError,
  normalizeDatastoreType,
  splitEndpoints,
} from './client-config.js';

export type Env = Record<string, string | undefined>;

/** Go's strconv.ParseBool spellings, which upstream accepts for boolean variables. */
const TRUE_VALUES = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_VALUES = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

const BOOLEAN_FIELDS = new Set<ClientConfigField>([
  'k8sInsecureSkipTLSVerify',
  'k8sDisableNodePoll',
  'k8sUsePodCIDR',
]);

/** Look a variable up with the `CALICO_` prefix first. Returns the name used and its value. */
export function lookupEnv(env: Env, name: string): { name: string; value: string } | undefined {
  const prefixed = `CALICO_${name}`;
  if (env[prefixed] !== undefined) return { name: prefixed, value: env[prefixed] };
  if (env[name] !== undefined) return { name, value: env[name] };
  return undefined;
}

export function configFromEnv(env: Env): { config: Partial<ClientConfig>; warnings: string[] } {
  const config: Partial<ClientConfig> = {};
  const c = config as Record<string, unknown>;
  const warnings: string[] = [];
  for (const field of Object.keys(CLIENT_CONFIG_FIELDS) as ClientConfigField[]) {
    const envName = CLIENT_CONFIG_FIELDS[field].env;
    if (envName === undefined) continue;
    const found = lookupEnv(env, envName);
    if (found === undefined || found.value === '') continue;
    const { name, value } = found;
    if (BOOLEAN_FIELDS.has(field)) {
      if (TRUE_VALUES.has(value)) c[field] = true;
      else if (FALSE_VALUES.has(value)) c[field] = false;
      else {
        throw configError({ kind: 'env' }, `${name}="${value}" is not a boolean; use true or false`);
      }
    } else if (field === 'etcdEndpoints') {
      c[field] = splitEndpoints(value);
    } else if (field === 'datastoreType') {
      c[field] = normalizeDatastoreType(value, `environment: ${name}`, warnings);
    } else {
      c[field] = value;
    }
  }
  // Calico 2.x built the endpoint from these; the v3 loader ignores them. Say so rather than
  // silently connecting elsewhere.
  for (const legacy of ['ETCD_SCHEME', 'ETCD_AUTHORITY']) {
    const found = lookupEnv(env, legacy);
    if (found !== undefined && found.value !== '') {
      warnings.push(`environment: ${found.name} is no longer read; give the full URL in ETCD_ENDPOINTS`);
    }
  }
  return { config, warnings };
}
