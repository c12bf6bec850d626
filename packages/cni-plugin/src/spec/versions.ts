/**
 * CNI spec versions this plugin speaks, and which commands each allows (pure).
 *
 * - 0.1.0, 0.2.0: ADD, DEL (VERSION from 0.2.0); results in the `ip4`/`ip6` form.
 * - 0.3.0, 0.3.1: rich results (`interfaces`, `ips` with `version`, `routes`, `dns`), chaining.
 * - 0.4.0: CHECK, and `prevResult` on DEL.
 * - 1.0.0: `ips` lose `version`.
 * - 1.1.0: GC and STATUS; interfaces gain `mtu`, `socketPath`, `pciID`; routes gain
 *   `mtu`, `advmss`, `priority`, `table`, `scope`; configs may list `cniVersions`.
 */
import { CniPluginError } from '../errors.js';

export const SUPPORTED_VERSIONS = ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number];
export const LATEST_VERSION: CniVersion = '1.1.0';
/**
 * The version assumed when a config has no `cniVersion`. Upstream's plugin prints its result as
 * 0.2.0 in that case (the 0.1.0/0.2.0 result shapes are identical).
 */
export const DEFAULT_VERSION: CniVersion = '0.2.0';

export const CNI_COMMANDS = ['ADD', 'DEL', 'CHECK', 'VERSION', 'STATUS', 'GC'] as const;
export type CniCommand = (typeof CNI_COMMANDS)[number];

export function isSupportedVersion(v: unknown): v is CniVersion {
  return typeof v === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(v);
}

/** Numeric `major.minor.patch` comparison; undefined when either side is not of that form. */
export function compareVersions(a: string, b: string): number | undefined {
  const pa = parseSemver(a);
  const pb = parseSemver(b);
  if (!pa || !pb) return undefined;
  for (let i = 0; i < 3; i++) {
    const d = pa[i]! - pb[i]!;
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

function parseSemver(v: string): [number, number, number] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(v);
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** The first spec version in which each command exists. */
const COMMAND_SINCE: Record<CniCommand, CniVersion> = {
  ADD: '0.1.0',
  DEL: '0.1.0',
  VERSION: '0.1.0',
  CHECK: '0.4.0',
  GC: '1.1.0',
  STATUS: '1.1.0',
};

export function commandSince(command: CniCommand): CniVersion {
  return COMMAND_SINCE[command];
}

export function versionAllowsCommand(version: CniVersion, command: CniCommand): boolean {
  return (compareVersions(version, COMMAND_SINCE[command]) ?? -1) >= 0;
}

/** The result shape a version uses. */
export type ResultShape = 'legacy' | 'v03' | 'v1';
export function resultShape(version: CniVersion): ResultShape {
  switch (version) {
    case '0.1.0':
    case '0.2.0':
      return 'legacy';
    case '0.3.0':
    case '0.3.1':
    case '0.4.0':
      return 'v03';
    case '1.0.0':
    case '1.1.0':
      return 'v1';
  }
}

/**
 * The version a config asks for. `cniVersion` wins when we support it; otherwise, for 1.1-style
 * configs that also list `cniVersions`, the highest listed version we support. No usable version ⇒
 * error code 1 naming what was asked and what we support.
 */
export function negotiateVersion(cniVersion: unknown, cniVersions?: unknown): CniVersion {
  if (cniVersion === undefined || cniVersion === null || cniVersion === '') {
    if (cniVersions === undefined) return DEFAULT_VERSION;
  } else if (typeof cniVersion !== 'string') {
    throw new CniPluginError(
      'invalid-config',
      `cniVersion must be a string, not ${JSON.stringify(cniVersion)}`,
    );
  } else if (isSupportedVersion(cniVersion)) {
    return cniVersion;
  }
  if (Array.isArray(cniVersions)) {
    const ours = cniVersions.filter(isSupportedVersion).sort((a, b) => compareVersions(b, a) ?? 0);
    if (ours.length > 0) return ours[0]!;
  } else if (cniVersions !== undefined) {
    throw new CniPluginError('invalid-config', 'cniVersions must be a list of version strings');
  }
  const asked =
    typeof cniVersion === 'string' && cniVersion !== ''
      ? `"${cniVersion}"`
      : `cniVersions ${JSON.stringify(cniVersions)}`;
  throw new CniPluginError('incompatible-version', `incompatible CNI versions: config is ${asked}`, {
    details: `plugin supports ${JSON.stringify(SUPPORTED_VERSIONS)}`,
  });
}

/** Requires that `version` allows `command` (CHECK ≥ 0.4.0, GC and STATUS ≥ 1.1.0). */
export function requireCommandInVersion(version: CniVersion, command: CniCommand): void {
  if (!versionAllowsCommand(version, command)) {
    throw new CniPluginError(
      'incompatible-version',
      `config version ${version} does not allow ${command} (needs ${COMMAND_SINCE[command]} or later)`,
    );
  }
}
