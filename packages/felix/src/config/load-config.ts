/**
 * Reading Felix's local configuration sources: the environment and the config file
 * (`--config-file`, default /etc/calico/felix.cfg; a missing default file is fine, a missing given
 * one is an error). The datastore sources are added by the daemon once it can read them.
 */
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { FelixConfigurationSpec } from '@calico-ts/api';
import { type ConfigSources, type ResolvedConfig, resolveFelixConfig } from './felix-config.js';
import { parseIni } from './ini.js';

export const DEFAULT_CONFIG_FILE = '/etc/calico/felix.cfg';

export interface LocalConfigSources {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly file: Readonly<Record<string, string>>;
  readonly hostname: string;
}

export async function readLocalSources(
  opts: { configFile?: string; env?: Readonly<Record<string, string | undefined>> } = {},
): Promise<LocalConfigSources> {
  const env = opts.env ?? process.env;
  const path = opts.configFile ?? DEFAULT_CONFIG_FILE;
  let file: Record<string, string> = {};
  try {
    file = parseIni(await readFile(path, 'utf8'));
  } catch (e) {
    const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
    if (!missing || opts.configFile !== undefined) {
      throw new Error(`cannot read config file ${path}: ${(e as Error).message}`);
    }
  }
  return { env, file, hostname: hostname() };
}

export function resolveWith(
  local: LocalConfigSources,
  datastore: { perHost?: FelixConfigurationSpec; global?: FelixConfigurationSpec } = {},
): ResolvedConfig {
  const src: ConfigSources = { env: local.env, file: local.file, hostname: local.hostname, ...datastore };
  return resolveFelixConfig(src);
}
