/**
 * Typha's configuration from `TYPHA_<PARAM>` environment variables, with upstream's names and
 * defaults (`typha/pkg/config/config_params.go`); the datastore itself is configured as every
 * other component's is (DATASTORE_TYPE, ETCD_ENDPOINTS, KUBECONFIG …, or TYPHA_DATASTORETYPE,
 * TYPHA_ETCDENDPOINTS). Pure: env in, config or an error out.
 */

/** Typha's parameters this implementation reads. Durations in milliseconds. */
export interface TyphaConfig {
  readonly datastoreType: 'etcdv3' | 'kubernetes';
  readonly etcdEndpoints: readonly string[];
  readonly logSeverityScreen: string;
  readonly healthEnabled: boolean;
  readonly healthHost: string;
  readonly healthPort: number;
  readonly prometheusMetricsEnabled: boolean;
  readonly prometheusMetricsHost: string;
  readonly prometheusMetricsPort: number;
  readonly serverHost: string;
  /** Upstream's 0 means its default port, 5473. */
  readonly serverPort: number;
  readonly pingIntervalMs: number;
  readonly pongTimeoutMs: number;
  readonly maxConnections: number;
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCN: string;
  readonly clientURISAN: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Upstream's default port when TYPHA_SERVERPORT is 0 or unset. */
export const DEFAULT_TYPHA_PORT = 5473;

function get(env: Env, name: string): string | undefined {
  const v = env[`TYPHA_${name.toUpperCase()}`];
  return v === undefined || v === '' ? undefined : v;
}

function int(env: Env, name: string, dflt: number, min: number, max: number): number {
  const raw = get(env, name);
  if (raw === undefined) return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`TYPHA_${name.toUpperCase()}: ${JSON.stringify(raw)} is not an integer in ${min}–${max}`);
  }
  return n;
}

function seconds(env: Env, name: string, dflt: number): number {
  const raw = get(env, name);
  if (raw === undefined) return dflt * 1000;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0)
    throw new Error(`TYPHA_${name.toUpperCase()}: ${JSON.stringify(raw)} is not a number of seconds`);
  return Math.round(n * 1000);
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const raw = get(env, name)?.toLowerCase();
  if (raw === undefined) return dflt;
  if (['true', '1', 'yes', 'y', 't'].includes(raw)) return true;
  if (['false', '0', 'no', 'n', 'f'].includes(raw)) return false;
  throw new Error(`TYPHA_${name.toUpperCase()}: ${JSON.stringify(raw)} is not a boolean`);
}

/** The configuration the environment gives; throws with the variable's name for a bad value. */
export function typhaConfigFromEnv(env: Env): TyphaConfig {
  const type = (get(env, 'DatastoreType') ?? env.DATASTORE_TYPE ?? 'etcdv3').toLowerCase();
  if (type !== 'etcdv3' && type !== 'kubernetes') {
    throw new Error(`TYPHA_DATASTORETYPE: ${JSON.stringify(type)} is not etcdv3 or kubernetes`);
  }
  const endpoints = (get(env, 'EtcdEndpoints') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const cfg: TyphaConfig = {
    datastoreType: type,
    etcdEndpoints: endpoints,
    logSeverityScreen: (get(env, 'LogSeverityScreen') ?? 'INFO').toUpperCase(),
    healthEnabled: bool(env, 'HealthEnabled', false),
    healthHost: get(env, 'HealthHost') ?? 'localhost',
    healthPort: int(env, 'HealthPort', 9098, 0, 65535),
    prometheusMetricsEnabled: bool(env, 'PrometheusMetricsEnabled', false),
    prometheusMetricsHost: get(env, 'PrometheusMetricsHost') ?? '',
    prometheusMetricsPort: int(env, 'PrometheusMetricsPort', 9093, 0, 65535),
    serverHost: get(env, 'ServerHost') ?? '',
    serverPort: int(env, 'ServerPort', 0, 0, 65535),
    pingIntervalMs: seconds(env, 'ServerPingIntervalSecs', 10),
    pongTimeoutMs: seconds(env, 'ServerPongTimeoutSecs', 60),
    maxConnections: int(env, 'MaxConnectionsUpperLimit', 10000, 1, Number.MAX_SAFE_INTEGER),
    caFile: get(env, 'CAFile') ?? '',
    serverCertFile: get(env, 'ServerCertFile') ?? '',
    serverKeyFile: get(env, 'ServerKeyFile') ?? '',
    clientCN: get(env, 'ClientCN') ?? '',
    clientURISAN: get(env, 'ClientURISAN') ?? '',
  };
  const anyTls = cfg.caFile + cfg.serverCertFile + cfg.serverKeyFile + cfg.clientCN + cfg.clientURISAN !== '';
  if (
    anyTls &&
    (cfg.caFile === '' ||
      cfg.serverCertFile === '' ||
      cfg.serverKeyFile === '' ||
      (cfg.clientCN === '' && cfg.clientURISAN === ''))
  ) {
    throw new Error(
      'if any of TYPHA_CAFILE, TYPHA_SERVERCERTFILE, TYPHA_SERVERKEYFILE, TYPHA_CLIENTCN, TYPHA_CLIENTURISAN is set, all must be, except that one of TYPHA_CLIENTCN and TYPHA_CLIENTURISAN may be left unset',
    );
  }
  return cfg;
}
