/**
 * Which built calicoctl the integration tests run: the Node bundle (bin/calicoctl, run by this
 * Node) by default, or the native executable (bin/native/calicoctl) with
 * CALICO_TEST_EXECUTABLE=native. Each is built if missing; the native one is compiled from a fresh
 * split bundle in a temp dir (scripts/bundle.mjs), so test files building at the same time never
 * read a half-written file.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface CalicoctlExecutable {
  /** What the tests describe it as. */
  readonly name: string;
  /** The program to spawn and the arguments before calicoctl's own. */
  readonly command: string;
  readonly prefix: readonly string[];
  /** Build it if it is not there. */
  ensureBuilt(): Promise<void>;
  /**
   * Run it to completion with `args`, `stdin` and only PATH plus `env` in its environment (so no
   * CALICO_/ETCD_ variable of the test runner leaks in); killed after 30 s.
   */
  run(
    args: readonly string[],
    opts?: { stdin?: string; env?: Record<string, string> },
  ): Promise<CalicoctlRun>;
}

export interface CalicoctlRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runProgram(
  command: string,
  argv: readonly string[],
  opts: { stdin?: string; env?: Record<string, string> } = {},
): Promise<CalicoctlRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.on('error', () => {}); // exited without reading its input: the exit code tells
    child.stdin.end(opts.stdin ?? '');
  });
}

interface BundleScript {
  bundle(outDir?: string): Promise<string>;
  native(outDir?: string): Promise<string>;
}

const script = () => import(join(root, 'scripts', 'bundle.mjs')) as Promise<BundleScript>;

export function calicoctlExecutable(): CalicoctlExecutable {
  if (process.env.CALICO_TEST_EXECUTABLE === 'native') {
    const file = join(root, 'bin', 'native', 'calicoctl');
    return {
      name: 'bin/native/calicoctl',
      command: file,
      prefix: [],
      run: (args, opts) => runProgram(file, args, opts),
      async ensureBuilt() {
        if (existsSync(file)) return;
        await (await script()).native(dirname(file));
      },
    };
  }
  const file = join(root, 'bin', 'calicoctl');
  return {
    name: 'bin/calicoctl',
    command: process.execPath,
    prefix: [file],
    run: (args, opts) => runProgram(process.execPath, [file, ...args], opts),
    async ensureBuilt() {
      if (!existsSync(file)) await (await script()).bundle();
    },
  };
}
