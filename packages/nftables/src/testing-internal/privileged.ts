/**
 * Helpers for the privileged integration tests (`*.int.test.ts`): a prerequisite check that fails
 * under CI=true instead of skipping, throw-away network namespaces named `nfttest-<random>-…` that
 * are removed after each test, and the `nft` CLI run inside a namespace as the independent witness
 * of what the kernel holds. Cleanup and checks use iproute2 and nft directly, never the code under
 * test.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type NftRuleset, parseRuleset } from '../json/ruleset.js';

export const inCI = process.env.CI === 'true';

/** Why the privileged tests cannot run here, or `undefined` when they can. */
export function missingPrerequisite(
  tools: readonly string[] = ['ip', 'nft', 'nsenter', 'ping'],
): string | undefined {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root';
  for (const tool of tools) {
    const r = spawnSync(tool, ['--version'], { stdio: 'ignore' });
    if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return `\`${tool}\` not installed`;
  }
  const ldconfig = spawnSync('ldconfig', ['-p'], { encoding: 'utf8' });
  if (!/\blibnftables\.so\.1\b/.test(ldconfig.stdout ?? ''))
    return 'libnftables.so.1 (Debian libnftables1) not installed';
  return undefined;
}

/**
 * Tracks the namespaces and files one test made; `cleanup()` removes them whatever state they are
 * in.
 */
export class Scratch {
  readonly prefix = `nfttest-${randomBytes(3).toString('hex')}`;
  readonly #netns: string[] = [];
  #dir: string | undefined;

  /** Writes `content` to a new file in the test's temporary directory and returns its path. */
  file(name: string, content: string): string {
    this.#dir ??= mkdtempSync(join(tmpdir(), `${this.prefix}-`));
    const path = join(this.#dir, name);
    writeFileSync(path, content);
    return path;
  }

  /** Creates a namespace with `ip netns add` and brings its loopback up. */
  makeNetns(suffix: string): string {
    const name = `${this.prefix}-${suffix}`;
    this.#netns.push(name);
    execFileSync('ip', ['netns', 'add', name]);
    execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
    return name;
  }

  cleanup(): void {
    if (this.#dir !== undefined) rmSync(this.#dir, { recursive: true, force: true });
    this.#dir = undefined;
    for (const name of this.#netns.splice(0)) {
      try {
        execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
      } catch {
        // Never created, or already removed by the test.
      }
    }
  }
}

/** Runs a program inside a namespace (a name under /run/netns, or absent for the host). */
export function runIn(
  netns: string | undefined,
  argv: string[],
  input?: string,
): { code: number; out: string; err: string } {
  const [cmd, args] =
    netns === undefined ? [argv[0]!, argv.slice(1)] : ['nsenter', [`--net=/run/netns/${netns}`, ...argv]];
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

/** `nft -j list ruleset` through the CLI inside `netns` (the host's when absent), raw text. */
export function cliRulesetText(netns: string | undefined): string {
  const r = runIn(netns, ['nft', '-j', 'list', 'ruleset']);
  if (r.code !== 0) throw new Error(`nft -j list ruleset failed (${r.code}): ${r.err}`);
  return r.out;
}

/** `nft -j list ruleset` through the CLI inside `netns`, parsed. */
export function cliRuleset(netns: string | undefined): NftRuleset {
  return parseRuleset(cliRulesetText(netns));
}
