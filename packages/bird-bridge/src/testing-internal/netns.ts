/**
 * Helpers for this package's privileged tests: throw-away network namespaces, `ip` in them, and
 * polling. Only namespaces a test created are deleted, by their exact names.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';

export const BIRD = '/usr/sbin/bird';

/** Root, `ip` and `bird` are here; under CI=true the test runs anyway and fails loudly if not. */
export function privilegedTestsCanRun(): boolean {
  return (
    process.env.CI === 'true' ||
    (process.getuid?.() === 0 &&
      existsSync(BIRD) &&
      existsSync('/usr/sbin/ip') &&
      existsSync('/usr/bin/nsenter'))
  );
}

export function uniqueTag(): string {
  return randomBytes(3).toString('hex');
}

export function ipSync(args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8' });
}

export function ip(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('ip', args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(new Error(`ip ${args.join(' ')}: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

/** Creates a namespace with `lo` up; returns its name. */
export function addNetns(name: string): string {
  ipSync(['netns', 'add', name]);
  ipSync(['-n', name, 'link', 'set', 'lo', 'up']);
  return name;
}

/** Deletes the namespaces this test made; ignores ones already gone. */
export function deleteNetns(names: readonly string[]): void {
  for (const n of names) {
    try {
      ipSync(['netns', 'del', n]);
    } catch {
      // never created, or already deleted
    }
  }
}

export function nsenterPrefix(ns: string): string[] {
  return ['nsenter', `--net=/run/netns/${ns}`];
}

export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  ms = 30_000,
): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) {
      throw new Error(
        `timed out after ${ms} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** True while a process with this PID exists. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
