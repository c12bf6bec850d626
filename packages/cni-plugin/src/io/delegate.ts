/**
 * Running a delegated plugin (the IPAM plugin named by `ipam.type`), as the spec says: the
 * executable of that name in the first CNI_PATH directory that has it, with the same environment
 * (CNI_COMMAND set to the command) and the same network config on stdin.
 *
 * Like upstream, `IgnoreUnknown=1` is put in front of CNI_ARGS, so an IPAM plugin such as
 * host-local accepts the Kubernetes arguments it does not know.
 *
 * Errors: the delegate's own CNI error (its code passed on, as `delegate-failed`); `invalid-env`
 * when CNI_PATH is empty; `invalid-config` when no CNI_PATH directory has the plugin.
 */
import { spawn } from 'node:child_process';
// Synchronous lookups: a few microseconds each, against a thread-pool round trip on every ADD.
import { accessSync, constants, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { writeStderr } from '@calico-ts/api/stdio';
import { CniPluginError } from '../errors.js';
import type { Env } from '../spec/env.js';
import type { CniCommand } from '../spec/versions.js';

export interface DelegateRunner {
  /**
   * Runs plugin `type` with CNI_COMMAND=`command` and `stdin`; resolves its stdout. `extraArgs`
   * (`KEY=VALUE;…`) goes at the end of its CNI_ARGS, as upstream asks calico-ipam for one address
   * with `IP=<address>`.
   */
  run(type: string, command: CniCommand, stdin: string, extraArgs?: string): Promise<string>;
}

/** The CNI_ARGS a delegate gets: `IgnoreUnknown=1`, the invocation's, then `extraArgs`. */
export function delegateCniArgs(args: string | undefined, extraArgs?: string): string {
  return ['IgnoreUnknown=1', args, extraArgs].filter((a) => a !== undefined && a !== '').join(';');
}

export interface ExecDelegateOptions {
  /** Kill a delegate that runs longer than this. Default 5 minutes. */
  timeoutMs?: number;
  /**
   * This executable (its real path) and how to run it as `calico-ipam` in this process. When the
   * plugin CNI_PATH names is this very file, its code runs here instead of in a second process:
   * same input, same output, but one Node start-up and one datastore connection fewer per ADD.
   */
  self?: { realpath: string; run: DelegateHandler };
  /** Where a delegate's log lines (its stderr) go. Default: this process's stderr. */
  onStderr?: (chunk: Buffer) => void;
}

export class ExecDelegateRunner implements DelegateRunner {
  readonly #env: Env;
  readonly #path: string[];
  readonly #timeoutMs: number;
  readonly #self: ExecDelegateOptions['self'];
  readonly #onStderr: (chunk: Buffer) => void;

  constructor(env: Env, path: string[], options: ExecDelegateOptions = {}) {
    this.#env = env;
    this.#path = path;
    this.#timeoutMs = options.timeoutMs ?? 300_000;
    this.#self = options.self;
    this.#onStderr = options.onStderr ?? ((b) => writeStderr(b));
  }

  async find(type: string): Promise<string> {
    if (this.#path.length === 0) {
      throw new CniPluginError('invalid-env', `required env variables [CNI_PATH] missing`, {
        details: `CNI_PATH is needed to find the IPAM plugin "${type}"`,
      });
    }
    for (const dir of this.#path) {
      const file = join(dir, type);
      try {
        accessSync(file, constants.X_OK);
        return file;
      } catch {
        // next directory
      }
    }
    throw new CniPluginError('invalid-config', `ipam.type: plugin "${type}" not found in CNI_PATH`, {
      details: `searched ${this.#path.join(':')}`,
    });
  }

  async run(type: string, command: CniCommand, stdin: string, extraArgs?: string): Promise<string> {
    const file = await this.find(type);
    if (this.#self && realpathOr(file) === this.#self.realpath) {
      return this.#self.run(command, stdin, extraArgs);
    }
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.#env)) if (v !== undefined) env[k] = v;
    env.CNI_COMMAND = command;
    env.CNI_ARGS = delegateCniArgs(this.#env.CNI_ARGS, extraArgs);
    const r = await runProcess(file, env, stdin, this.#timeoutMs, this.#onStderr);
    if (r.error) {
      throw new CniPluginError('delegate-failed', `${type}: cannot run ${file}: ${r.error.message}`);
    }
    if (r.code === 0) return r.stdout;
    throw delegateError(type, command, r.code, r.stdout, r.stderr);
  }
}

/** The error for a delegate that exited non-zero: its CNI error object when it printed one. */
export function delegateError(
  type: string,
  command: CniCommand,
  code: number | null,
  stdout: string,
  stderr: string,
): CniPluginError {
  try {
    const e = JSON.parse(stdout) as { code?: unknown; msg?: unknown; details?: unknown };
    if (typeof e.code === 'number' && typeof e.msg === 'string') {
      const opts: { delegateCode: number; details?: string } = { delegateCode: e.code };
      if (typeof e.details === 'string' && e.details !== '') opts.details = e.details;
      return new CniPluginError('delegate-failed', `${type}: ${e.msg}`, opts);
    }
  } catch {
    // not a CNI error object
  }
  const lastLine = stderr.trim().split('\n').pop() ?? '';
  return new CniPluginError(
    'delegate-failed',
    `${type} ${command} failed (exit ${code ?? 'signal'})${lastLine ? `: ${lastLine}` : ''}`,
  );
}

interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
  error?: Error;
}

function runProcess(
  file: string,
  env: Record<string, string>,
  stdin: string,
  timeoutMs: number,
  onStderr: (chunk: Buffer) => void,
): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const child = spawn(file, [], {
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let spawnError: Error | undefined;
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => {
      err.push(b);
      // The delegate's log lines belong in our log too.
      onStderr(b);
    });
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
    child.on('error', (e) => {
      spawnError = e;
    });
    child.on('close', (code) => {
      const r: ProcessResult = {
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      };
      if (spawnError && code === null) r.error = spawnError;
      resolve(r);
    });
  });
}

/** In-process delegates for tests: plugin type → function answering like the executable would. */
export type DelegateHandler = (command: CniCommand, stdin: string, extraArgs?: string) => Promise<string>;

export class FakeDelegateRunner implements DelegateRunner {
  readonly calls: { type: string; command: CniCommand; extraArgs?: string }[] = [];
  readonly #plugins = new Map<string, DelegateHandler>();

  register(type: string, handler: DelegateHandler): void {
    this.#plugins.set(type, handler);
  }

  async run(type: string, command: CniCommand, stdin: string, extraArgs?: string): Promise<string> {
    this.calls.push({ type, command, ...(extraArgs ? { extraArgs } : {}) });
    const h = this.#plugins.get(type);
    if (!h) throw new CniPluginError('invalid-config', `ipam.type: plugin "${type}" not found in CNI_PATH`);
    return h(command, stdin, extraArgs);
  }
}

function realpathOr(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}
