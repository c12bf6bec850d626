/**
 * Helpers for the privileged integration tests (`*.int.test.ts`): prerequisite checks that fail
 * under CI=true instead of skipping, and throw-away network namespaces named `nltest-<random>-…`
 * that are removed after each test. Cleanup uses plain `ip netns del`, not the code under test.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';

export const inCI = process.env.CI === 'true';

/** Why the privileged tests cannot run here, or `undefined` when they can. */
export function missingPrerequisite(
  tools: readonly string[] = ['ip', 'bridge', 'nsenter'],
): string | undefined {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root';
  for (const tool of tools) {
    try {
      execFileSync(tool, ['-V'], { stdio: 'ignore' });
    } catch (e) {
      // `nsenter -V` exits 0; a tool that is present but rejects -V still started, which is enough.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return `\`${tool}\` not installed`;
    }
  }
  return undefined;
}

/**
 * Tracks what one test made: namespaces (by name) and child processes (by PID). `cleanup()`
 * removes them all, whatever state the test left them in.
 */
export class Scratch {
  readonly prefix = `nltest-${randomBytes(3).toString('hex')}`;
  readonly #netns: string[] = [];
  readonly #children: ChildProcess[] = [];

  /** A fresh namespace name (created by the caller, removed by cleanup). */
  netnsName(suffix: string): string {
    const name = `${this.prefix}-${suffix}`;
    this.#netns.push(name);
    return name;
  }

  /** Creates a namespace with `ip netns add` and brings its loopback up. */
  makeNetns(suffix: string): string {
    const name = this.netnsName(suffix);
    execFileSync('ip', ['netns', 'add', name]);
    execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
    return name;
  }

  /**
   * Starts a long sleep inside `netns` and returns `/proc/<pid>/ns/net`: a namespace path of the
   * kind CNI passes in CNI_NETNS, which iproute2 cannot enter by name.
   */
  async procNetnsPath(netns: string): Promise<string> {
    const child = spawn('nsenter', [`--net=/run/netns/${netns}`, 'sleep', '600'], { stdio: 'ignore' });
    this.#children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', reject);
    });
    // nsenter execs sleep in place, so the PID becomes sleep's once setns has happened; wait for it.
    const path = `/proc/${child.pid}/ns/net`;
    const want = statSync(`/run/netns/${netns}`).ino;
    for (let i = 0; i < 200; i++) {
      try {
        if (statSync(path).ino === want) return path;
      } catch {
        // The process is still starting.
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`process ${child.pid} did not enter ${netns}`);
  }

  cleanup(): void {
    for (const child of this.#children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    for (const name of this.#netns.splice(0)) {
      try {
        execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
      } catch {
        // Never created, or already removed by the test.
      }
    }
  }
}

/** Runs a program inside a namespace (name or path) and returns its exit code and output. */
export function runIn(netnsPath: string, argv: string[]): { code: number; out: string } {
  try {
    const out = execFileSync('nsenter', [`--net=${netnsPath}`, ...argv], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { code: 0, out };
  } catch (e) {
    const err = e as { status?: number; stdout?: string; stderr?: string };
    return { code: err.status ?? -1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}
