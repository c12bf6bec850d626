import { spawn } from 'node:child_process';
import { NetlinuxError } from '../errors.js';
import { type CommandResult, type CommandRunner, commandLine, type RunOptions } from './command-runner.js';

export interface ProcessRunnerOptions {
  /** Kill a command that runs longer than this (SIGKILL) and fail it. Default 30 s. */
  timeoutMs?: number;
}

/** The part of Bun's process API this runner uses (present when running under Bun). */
interface BunSpawn {
  spawn(
    argv: string[],
    options: {
      env: Record<string, string | undefined>;
      stdin: Uint8Array;
      stdout: 'pipe';
      stderr: 'pipe';
      timeout: number;
      killSignal: string;
    },
  ): {
    stdout: ReadableStream<Uint8Array>;
    stderr: ReadableStream<Uint8Array>;
    exited: Promise<number>;
    signalCode: string | null;
  };
}

/**
 * Runs programs as child processes (spawn, no shell) with `LC_ALL=C`, so the error texts that
 * {@link classifyStderr} matches are the English ones. A namespace is entered with `ip -n` when
 * iproute2 can do it by name, else with `nsenter --net=<path>`.
 *
 * Under Bun (the native executables) processes are started with `Bun.spawn`: node:child_process
 * there builds Node's stream machinery on first use, ~12 ms of a CNI ADD.
 */
export class ProcessCommandRunner implements CommandRunner {
  readonly #timeoutMs: number;

  constructor(options: ProcessRunnerOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<CommandResult> {
    const argv = commandLine(cmd, args, opts.netns);
    const bun = (globalThis as { Bun?: BunSpawn }).Bun;
    if (bun) return this.#runWithBun(bun, argv, opts);
    return new Promise((resolve, reject) => {
      const child = spawn(argv[0]!, argv.slice(1), {
        env: { ...process.env, LC_ALL: 'C' },
        stdio: ['pipe', 'pipe', 'pipe'],
        timeout: this.#timeoutMs,
        killSignal: 'SIGKILL',
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      // A program that exits without reading its stdin makes the write fail with EPIPE; the exit
      // code says what happened, so that write error is not the failure to report.
      child.stdin.on('error', () => {});
      child.stdin.end(opts.input ?? '');
      let spawnError: Error | undefined;
      child.on('error', (e) => {
        spawnError = e;
      });
      // After a failed spawn Node still emits 'close' (with a negative errno as the code).
      child.on('close', (code, signal) => {
        if (spawnError) {
          reject(
            new NetlinuxError('failed', `cannot run ${argv[0]}: ${spawnError.message}`, {
              command: argv,
              netns: opts.netns,
              cause: spawnError,
            }),
          );
          return;
        }
        const stderr = Buffer.concat(err).toString('utf8');
        resolve({
          exitCode: code ?? -1,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr:
            signal === null
              ? stderr
              : `${stderr}${stderr ? '\n' : ''}killed by ${signal} (time limit ${this.#timeoutMs} ms)`,
        });
      });
    });
  }

  async #runWithBun(bun: BunSpawn, argv: string[], opts: RunOptions): Promise<CommandResult> {
    let child: ReturnType<BunSpawn['spawn']>;
    try {
      child = bun.spawn(argv, {
        env: { ...process.env, LC_ALL: 'C' },
        stdin: Buffer.from(opts.input ?? '', 'utf8'),
        stdout: 'pipe',
        stderr: 'pipe',
        timeout: this.#timeoutMs,
        killSignal: 'SIGKILL',
      });
    } catch (e) {
      throw new NetlinuxError('failed', `cannot run ${argv[0]}: ${(e as Error).message}`, {
        command: argv,
        netns: opts.netns,
        cause: e,
      });
    }
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    const signal = child.signalCode;
    return {
      exitCode: signal ? -1 : code,
      stdout,
      stderr: signal
        ? `${stderr}${stderr ? '\n' : ''}killed by ${signal} (time limit ${this.#timeoutMs} ms)`
        : stderr,
    };
  }
}
