/**
 * The install steps (I/O), in upstream's order: etcd TLS files, plugin binaries, the plugin's
 * kubeconfig, the network config. Every file lands whole or not at all (written beside its target,
 * then renamed), so a kubelet reading net.d never sees half a config, and a template that does not
 * render leaves the previous config in place.
 *
 * Paths are given (`HostPaths`); the program uses the container's mounts (`/host/...`).
 */

import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import {
  access,
  chmod,
  copyFile,
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '@calico-ts/api/log';
import {
  DEFAULT_CONF_NAME,
  DEFAULT_SINGLE_CONF_NAME,
  type InstallConfig,
  placeholderValues,
  TLS_FILES,
} from './config.js';
import { InstallError } from './errors.js';
import { DEFAULT_NETWORK_CONFIG, renderKubeconfig, renderNetworkConfig } from './render.js';
import {
  type PluginToken,
  readServiceAccount,
  requestPluginToken,
  type ServiceAccountFiles,
} from './token.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface HostPaths {
  /** The plugins to install (the image's `/opt/cni/bin`). */
  readonly sourceBinDir: string;
  /** Where they go: every one of these that exists and is writeable. */
  readonly hostBinDirs: readonly string[];
  /** The host's net.d as mounted here. */
  readonly hostNetDir: string;
  /** The mounted service account (token, ca.crt, namespace). */
  readonly serviceAccountDir: string;
}

export const CONTAINER_PATHS: HostPaths = {
  sourceBinDir: '/opt/cni/bin',
  hostBinDirs: ['/host/opt/cni/bin', '/host/secondary-bin-dir'],
  hostNetDir: '/host/etc/cni/net.d',
  serviceAccountDir: '/var/run/secrets/kubernetes.io/serviceaccount',
};

/** Names in the source directory that are never installed: the installer itself. */
const NOT_PLUGINS = new Set(['install', 'calico-install-cni']);

async function writeAtomically(path: string, data: string | Buffer, mode: number): Promise<void> {
  const tmp = `${path}.tmp`;
  try {
    await writeFile(tmp, data, { mode });
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new InstallError('io', `cannot write ${path}: ${(e as Error).message}`, { cause: e });
  }
}

async function readIfExists(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new InstallError('io', `cannot read ${path}: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Replaces `<net.d>/calico-tls` with the etcd TLS files of the mounted secret (those present);
 * returns which were copied.
 */
export async function installTls(
  cfg: InstallConfig,
  paths: HostPaths,
  log: Logger,
): Promise<Set<(typeof TLS_FILES)[number]>> {
  const dest = join(paths.hostNetDir, 'calico-tls');
  await rm(dest, { recursive: true, force: true });
  const copied = new Set<(typeof TLS_FILES)[number]>();
  for (const name of TLS_FILES) {
    const data = await readIfExists(join(cfg.tlsAssetsDir, name));
    if (data === undefined || data.length === 0) continue;
    await mkdir(dest, { recursive: true, mode: 0o700 });
    await writeAtomically(join(dest, name), data, 0o600);
    copied.add(name);
  }
  if (copied.size > 0) log.info(`etcd TLS files copied to ${dest}: ${[...copied].join(', ')}`);
  return copied;
}

async function writeable(dir: string): Promise<boolean> {
  try {
    if (!(await stat(dir)).isDirectory()) return false;
    await access(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

async function sameFile(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([stat(a), stat(b)]);
  return sa.size === sb.size;
}

export interface BinaryReport {
  readonly dir: string;
  readonly installed: readonly string[];
  readonly kept: readonly string[];
}

/** Copies every plugin of the source dir into each writeable host bin dir. */
export async function installBinaries(
  cfg: InstallConfig,
  paths: HostPaths,
  log: Logger,
): Promise<BinaryReport[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(paths.sourceBinDir, { withFileTypes: true });
  } catch (e) {
    throw new InstallError(
      'io',
      `cannot list the plugins in ${paths.sourceBinDir}: ${(e as Error).message}`,
      { cause: e },
    );
  }
  const plugins = entries
    .filter((d) => (d.isFile() || d.isSymbolicLink()) && !NOT_PLUGINS.has(d.name) && !d.name.endsWith('.tmp'))
    .filter((d) => !cfg.skipBinaries.has(d.name))
    .map((d) => d.name)
    .sort();
  const reports: BinaryReport[] = [];
  for (const dir of paths.hostBinDirs) {
    if (!(await writeable(dir))) continue;
    const installed: string[] = [];
    const kept: string[] = [];
    for (const name of plugins) {
      const src = join(paths.sourceBinDir, name);
      const dst = join(dir, name);
      if (!cfg.updateBinaries && (await readIfExistsStat(dst))) {
        kept.push(name);
        continue;
      }
      await installOne(src, dst, name, paths.sourceBinDir);
      installed.push(name);
    }
    log.info(
      `plugins in ${dir}: installed ${installed.join(', ') || 'none'}` +
        (kept.length > 0 ? `; kept (UPDATE_CNI_BINARIES=false) ${kept.join(', ')}` : ''),
    );
    reports.push({ dir, installed, kept });
  }
  if (reports.length === 0) {
    throw new InstallError(
      'io',
      `no writeable CNI bin directory among ${paths.hostBinDirs.join(', ')}: mount the host's /opt/cni/bin`,
    );
  }
  return reports;
}

async function readIfExistsStat(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * One plugin: a link to a sibling in the source (`calico-ipam` → `calico`) stays a link to that
 * sibling; anything else is copied to `<name>.tmp`, made executable, checked, and renamed.
 */
async function installOne(src: string, dst: string, name: string, sourceDir: string): Promise<void> {
  const tmp = `${dst}.tmp`;
  try {
    await rm(tmp, { force: true });
    const target = await readlink(src).catch(() => undefined);
    if (target !== undefined && !target.includes('/') && (await readIfExistsStat(join(sourceDir, target)))) {
      await symlink(target, tmp);
    } else {
      await copyFile(src, tmp);
      await chmod(tmp, 0o755);
      if (!(await sameFile(src, tmp))) throw new Error('the copy differs in size from the source');
    }
    await rename(tmp, dst);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new InstallError('io', `cannot install the plugin ${name} as ${dst}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

/** The token the kubeconfig carries, and the service account it came from. */
export interface KubeconfigState {
  readonly sa: ServiceAccountFiles;
  readonly token: PluginToken;
  readonly fetchedAt: number;
}

/** Writes `<net.d>/calico-kubeconfig` (0600) with a fresh token; undefined when not in a pod. */
export async function installKubeconfig(
  cfg: InstallConfig,
  paths: HostPaths,
  log: Logger,
): Promise<KubeconfigState | undefined> {
  if (cfg.apiServer === undefined) {
    log.info('not in a pod (KUBERNETES_SERVICE_HOST unset): no calico-kubeconfig written');
    return undefined;
  }
  const sa = await readServiceAccount(paths.serviceAccountDir);
  const token = await requestPluginToken(
    {
      apiServer: cfg.apiServer,
      sa,
      serviceAccount: cfg.serviceAccount,
      validitySeconds: cfg.tokenValiditySeconds,
      skipTlsVerify: cfg.skipTlsVerify,
    },
    log.warn,
  );
  const path = join(paths.hostNetDir, 'calico-kubeconfig');
  const text = renderKubeconfig({
    server: cfg.apiServer,
    token: token.token,
    ...(sa.ca ? { ca: sa.ca } : {}),
    skipTlsVerify: cfg.skipTlsVerify,
  });
  await mkdir(paths.hostNetDir, { recursive: true });
  await writeAtomically(path, text, 0o600);
  log.info(
    `wrote ${path} for ${cfg.apiServer} (${token.source === 'token-request' ? `token of ${sa.namespace}/${cfg.serviceAccount}` : "this pod's token"}` +
      `${token.expiresAt ? `, valid until ${token.expiresAt.toISOString()}` : ''})`,
  );
  return { sa, token, fetchedAt: Date.now() };
}

/** The template: CNI_NETWORK_CONFIG, else CNI_NETWORK_CONFIG_FILE, else the built-in conflist. */
export async function readTemplate(cfg: InstallConfig): Promise<{ text: string; source: string }> {
  if (cfg.networkConfig !== undefined) return { text: cfg.networkConfig, source: 'CNI_NETWORK_CONFIG' };
  if (cfg.networkConfigFile !== undefined) {
    try {
      return {
        text: await readFile(cfg.networkConfigFile, 'utf8'),
        source: `CNI_NETWORK_CONFIG_FILE ${cfg.networkConfigFile}`,
      };
    } catch (e) {
      throw new InstallError(
        'config',
        `cannot read CNI_NETWORK_CONFIG_FILE ${cfg.networkConfigFile}: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
  }
  return { text: DEFAULT_NETWORK_CONFIG, source: 'the built-in network config' };
}

/** Renders the template and writes `<net.d>/<CNI_CONF_NAME>` (0600); removes the old name. */
export async function installNetworkConfig(
  env: Env,
  cfg: InstallConfig,
  paths: HostPaths,
  facts: { token: string; tlsFiles: ReadonlySet<(typeof TLS_FILES)[number]> },
  log: Logger,
): Promise<string> {
  const template = await readTemplate(cfg);
  const rendered = renderNetworkConfig(template.text, placeholderValues(env, cfg, facts), template.source);
  if (rendered.unknownPlaceholders.length > 0) {
    log.warn(
      `${template.source} holds placeholders nothing fills: ${rendered.unknownPlaceholders.join(', ')}`,
    );
  }
  const confName = cfg.confName ?? (rendered.isList ? DEFAULT_CONF_NAME : DEFAULT_SINGLE_CONF_NAME);
  const path = join(paths.hostNetDir, confName);
  await mkdir(paths.hostNetDir, { recursive: true });
  await writeAtomically(path, rendered.text, 0o600);
  if (cfg.oldConfName !== confName) {
    const old = join(paths.hostNetDir, cfg.oldConfName);
    if (await readIfExistsStat(old)) {
      await rm(old, { force: true });
      log.info(`removed the old network config ${old}`);
    }
  }
  log.info(`wrote the network config ${path} from ${template.source}`);
  return path;
}

/** A digest of the etcd TLS secret's files, to notice a rotation. */
export async function tlsDigest(cfg: InstallConfig): Promise<string> {
  const h = createHash('sha256');
  for (const name of TLS_FILES)
    h.update(name).update((await readIfExists(join(cfg.tlsAssetsDir, name))) ?? '-');
  return h.digest('hex');
}
