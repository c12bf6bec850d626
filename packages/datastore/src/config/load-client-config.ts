/**
 * The I/O half of client configuration: reading calicoctl.cfg, the process environment, TLS files
 * and etcd SRV records. All decisions are made by the pure functions beside this file.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DatastoreError } from '../errors.js';
import { parseCalicoctlConfig } from './calicoctl-config.js';
import {
  type ClientConfig,
  DEFAULT_CALICOCTL_CONFIG_PATH,
  mergeClientConfig,
  resolveClientConfig,
} from './client-config.js';
import { configFromCniNetConf } from './cni-config.js';
import { configFromEnv, type Env } from './env-config.js';

export interface LoadClientConfigOptions {
  /** calicoctl.cfg path. Default `/etc/calico/calicoctl.cfg`, which may be absent. */
  configFile?: string;
  /** Default `process.env`. */
  env?: Env;
  /** Non-fatal notices (deprecated forms, ignored keys). Default: `process.emitWarning`. */
  onWarning?: (message: string) => void;
}

const defaultWarn = (message: string) => process.emitWarning(message, 'CalicoConfigWarning');

/**
 * Load the client configuration as calicoctl does: the config file if it exists (a missing
 * default file means "use the environment"; a missing file named explicitly is an error), else the
 * environment. Throws `DatastoreError('config')`.
 */
export async function loadClientConfig(options: LoadClientConfigOptions = {}): Promise<ClientConfig> {
  const env = options.env ?? process.env;
  const warn = options.onWarning ?? defaultWarn;
  const path = options.configFile ?? DEFAULT_CALICOCTL_CONFIG_PATH;

  let text: string | undefined;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    const code = errnoCode(e);
    if (code !== 'ENOENT' || path !== DEFAULT_CALICOCTL_CONFIG_PATH) {
      throw new DatastoreError(
        'config',
        code === 'ENOENT'
          ? `config file ${path} does not exist`
          : `cannot read config file ${path}: ${describeFsError(e)}`,
        { cause: e },
      );
    }
  }

  const defaultKubeconfig = await findDefaultKubeconfig(env);
  let result: { config: ClientConfig; warnings: string[] };
  if (text !== undefined) {
    const parsed = parseCalicoctlConfig(text, path);
    parsed.warnings.forEach(warn);
    result = mergeClientConfig(parsed.config, {}, { filePath: path, defaultKubeconfig });
  } else {
    const fromEnv = configFromEnv(env);
    fromEnv.warnings.forEach(warn);
    result = mergeClientConfig(undefined, fromEnv.config, { defaultKubeconfig });
  }
  result.warnings.forEach(warn);
  return result.config;
}

/**
 * The client configuration of a CNI plugin invocation: the network config's datastore fields over
 * the plugin's environment, loaded as the environment loader does. Throws `DatastoreError('config')`.
 */
export async function loadCniClientConfig(
  netconf: unknown,
  options: Omit<LoadClientConfigOptions, 'configFile'> = {},
): Promise<ClientConfig> {
  const env = options.env ?? process.env;
  const warn = options.onWarning ?? defaultWarn;
  const parsed = configFromCniNetConf(netconf, env);
  parsed.warnings.forEach(warn);
  const result = resolveClientConfig(parsed.config, {
    origin: { kind: 'cni' },
    defaultKubeconfig: await findDefaultKubeconfig(env),
  });
  result.warnings.forEach(warn);
  return result.config;
}

/** `$HOME/.kube/config` if HOME is set and the file is there. */
async function findDefaultKubeconfig(env: Env): Promise<string | undefined> {
  const home = env.HOME;
  if (!home) return undefined;
  const path = join(home, '.kube', 'config');
  try {
    await stat(path);
    return path;
  } catch {
    return undefined;
  }
}

export interface TlsMaterial {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/**
 * The etcd TLS material: the inline PEM fields, or the contents of the key/cert/CA files. Returns
 * undefined when none is configured. A file that cannot be read is a `DatastoreError('config')`
 * naming the field and the path.
 */
export async function readTlsFiles(cfg: ClientConfig): Promise<TlsMaterial | undefined> {
  const tls: TlsMaterial = {};
  const entries = [
    ['ca', 'etcdCACertFile', cfg.etcdCACertFile, cfg.etcdCACert],
    ['cert', 'etcdCertFile', cfg.etcdCertFile, cfg.etcdCert],
    ['key', 'etcdKeyFile', cfg.etcdKeyFile, cfg.etcdKey],
  ] as const;
  for (const [slot, field, file, inline] of entries) {
    if (inline) {
      tls[slot] = Buffer.from(inline);
    } else if (file) {
      try {
        tls[slot] = await readFile(file);
      } catch (e) {
        throw new DatastoreError('config', `cannot read ${field} ${file}: ${describeFsError(e)}`, {
          cause: e,
        });
      }
    }
  }
  return tls.ca || tls.cert || tls.key ? tls : undefined;
}

export type SrvResolver = (name: string) => Promise<{ name: string; port: number }[]>;

/**
 * etcd endpoints from DNS SRV records, as etcd clients discover them: `_etcd-client-ssl._tcp.<domain>`
 * gives https endpoints, `_etcd-client._tcp.<domain>` http ones; both are used when both exist.
 */
export async function discoverEtcdEndpoints(
  domain: string,
  // node:dns loaded only when SRV discovery is configured.
  resolveSrv: SrvResolver = (name) => process.getBuiltinModule('node:dns/promises').resolveSrv(name),
): Promise<string[]> {
  const endpoints: string[] = [];
  for (const [service, scheme] of [
    ['_etcd-client-ssl', 'https'],
    ['_etcd-client', 'http'],
  ] as const) {
    const name = `${service}._tcp.${domain}`;
    let records: { name: string; port: number }[];
    try {
      records = await resolveSrv(name);
    } catch (e) {
      const code = errnoCode(e);
      if (code === 'ENOTFOUND' || code === 'ENODATA') continue;
      throw new DatastoreError('unavailable', `SRV lookup of ${name} failed: ${describeFsError(e)}`, {
        cause: e,
      });
    }
    for (const r of records) {
      const host = r.name.replace(/\.$/, '');
      endpoints.push(`${scheme}://${host.includes(':') ? `[${host}]` : host}:${r.port}`);
    }
  }
  if (endpoints.length === 0) {
    throw new DatastoreError(
      'config',
      `etcdDiscoverySrv ${domain}: no SRV records at _etcd-client-ssl._tcp.${domain} or _etcd-client._tcp.${domain}`,
    );
  }
  return endpoints;
}

function errnoCode(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e
    ? String((e as { code: unknown }).code)
    : undefined;
}

const FS_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'a parent is not a directory',
};

function describeFsError(e: unknown): string {
  const code = errnoCode(e);
  if (code && FS_ERRORS[code]) return `${FS_ERRORS[code]} (${code})`;
  return e instanceof Error ? e.message : String(e);
}
