/**
 * The host facts `node checksystem` reads (I/O only; the verdict is system-checks.ts): kernel
 * release, module lists, loaded modules, kernel configuration, and which programs and libraries
 * are installed.
 */
import { constants } from 'node:fs';
import { access, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SystemFacts } from './system-checks.js';

export interface SystemHost {
  isRoot(): boolean;
  /** `kernelConfig` overrides where the kernel configuration is read from. */
  facts(kernelConfig?: string): Promise<SystemFacts>;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    const buf = await readFile(path);
    // node:zlib and node:os are loaded when checksystem runs, not by every calicoctl command.
    return path.endsWith('.gz')
      ? process.getBuiltinModule('node:zlib').gunzipSync(buf).toString('utf8')
      : buf.toString('utf8');
  } catch {
    return undefined;
  }
}

async function exists(path: string, mode = constants.F_OK): Promise<boolean> {
  try {
    await access(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** Upstream's kernel config locations, then the running kernel's own (`/proc/config.gz`). */
export function kernelConfigPaths(rel: string): string[] {
  return [
    '/usr/src/linux/.config',
    `/boot/config-${rel}`,
    `/usr/src/linux-${rel}/.config`,
    `/usr/src/linux-headers-${rel}/.config`,
    `/lib/modules/${rel}/build/.config`,
    '/proc/config.gz',
  ];
}

const LIB_DIRS = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/lib/x86_64-linux-gnu',
  '/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/lib64',
  '/usr/lib',
  '/lib',
];

export function systemHost(env: Readonly<Record<string, string | undefined>>): SystemHost {
  const binDirs = [...(env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/sbin', '/usr/bin', '/bin'];
  const findProgram = async (name: string) => {
    for (const d of binDirs) if (await exists(join(d, name), constants.X_OK)) return true;
    return false;
  };
  const findLibrary = async (name: string) => {
    for (const d of LIB_DIRS) if (await exists(join(d, name))) return true;
    return false;
  };
  return {
    isRoot: () => process.getuid?.() === 0,
    async facts(kernelConfig) {
      const rel = process.getBuiltinModule('node:os').release();
      let config: string | undefined;
      for (const p of kernelConfig ? [kernelConfig] : kernelConfigPaths(rel)) {
        config = await readText(p);
        if (config !== undefined) break;
      }
      let sys: string[] = [];
      try {
        sys = await readdir('/sys/module');
      } catch {
        // no sysfs
      }
      const tools = new Set<string>();
      for (const t of ['ip', 'bird']) if (await findProgram(t)) tools.add(t);
      if (await findLibrary('libnftables.so.1')) tools.add('libnftables.so.1');
      return {
        kernelRelease: rel,
        modulesDep: await readText(`/lib/modules/${rel}/modules.dep`),
        modulesBuiltin: await readText(`/lib/modules/${rel}/modules.builtin`),
        procModules: await readText('/proc/modules'),
        sysModules: new Set(sys),
        kernelConfig: config,
        tools,
      };
    },
  };
}
