/**
 * Runs one BIRD daemon as a child process and keeps its configuration current.
 *
 *   apply(files) ──same text as live?──► unchanged
 *        │ no
 *        ▼
 *   stage files in <configDir>/.check-*, `bird -p -c` ──fails──► rejected (live files untouched,
 *        │ ok                                                     parse error logged)
 *        ▼
 *   write live files (temp + rename) ──BIRD running?──► `configure` on the control socket: reloaded
 *        │ no
 *        ▼
 *   spawn `[prefix…] bird -f [-R] -c <configDir>/<main> -s <socket>`, wait for the socket: started
 *
 *   child exits unexpectedly ──► restart after a backoff (doubling, capped; reset after a stable run)
 *   stop() ──► `keep-routes` (default): SIGKILL to the child's PID; `withdraw`: SIGTERM, SIGKILL
 *              after a grace period; never restarted again
 *
 * Ending BIRD: upstream's BIRD is killed with its calico-node pod, never shut down, so it sends no
 * BGP Cease and peers (graceful restart) keep this node's routes, marked stale, for the restart
 * time (BGPConfiguration nodeMeshMaxRestartTime / BGPPeer maxRestartTime, default 120 s), while
 * the routes it programmed stay in this kernel. `stop()` does the same by default, and BIRD is
 * started under `setpriv --pdeathsig KILL` so it also goes, the same way, when the process that
 * started it dies without stopping it (a crash, SIGKILL): no BIRD is left behind unsupervised.
 *
 * Starting BIRD after one was killed: with `-R` (graceful restart recovery), as upstream's
 * calico-node always starts it. The new BIRD finds the old one's routes still in the kernel
 * (`persist`); with `-R` its kernel protocol leaves them alone until the BGP peers have sent their
 * routes again (End-of-RIB, or `graceful restart wait`, 240 s), and it tells peers it kept
 * forwarding, so they swap their kept routes for fresh ones instead of dropping them. Without it,
 * the first kernel scan after a restart removed the routes to every other node's block for the
 * second or two the sessions took to come back (measured: 25% of pings pod to pod lost across two
 * restarts, bird-restart.int.test.ts). Unlike upstream, a first start on a kernel without BIRD
 * routes goes without `-R`: there is nothing to keep, and recovery would hold every kernel route
 * (this node's own blackholes too) until each configured peer has answered, up to 240 s when one
 * is down. `gracefulRestart` overrides the choice.
 *
 * API: `apply`, `stop`, `pid`, `status()`, `client` (a `BirdControlClient` on the same socket).
 * Thread-safety: operations are serialized on one internal queue; `apply` calls made while one is
 * running wait their turn, and the last one wins.
 * `commandPrefix` runs BIRD inside something else, e.g. `['nsenter', '--net=/run/netns/n1']`
 * (nsenter execs BIRD, so the tracked PID is BIRD's own).
 */

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';
import { BirdBridgeError, isBirdBridgeError } from '../errors.js';
import { BirdControlClient } from './bird-control-client.js';
import { StaleMetricSweeper } from './stale-metric-routes.js';

/** What `apply` is given: file name → text, and which file is the main one. */
export interface BirdConfigSet {
  main: string;
  files: Readonly<Record<string, string>>;
}

export type ApplyOutcome =
  | { kind: 'unchanged' }
  | { kind: 'started'; pid: number }
  | { kind: 'reloaded' }
  /** `bird -p` refused the new text; BIRD keeps running on the previous configuration. */
  | { kind: 'rejected'; error: string }
  /** The files were written but BIRD is not up (it failed to start; a restart is scheduled). */
  | { kind: 'not-running'; error: string };

export interface BirdSupervisorOptions {
  /** Directory the live configuration files are written to (created if missing). */
  configDir: string;
  /** Control socket path given to BIRD with `-s`. */
  socketPath: string;
  /** Default `/usr/sbin/bird`. */
  birdPath?: string;
  /** Command words put before the bird executable when starting it (not for `bird -p`). */
  commandPrefix?: string[];
  log?: Logger;
  /** Restart delays after a crash: doubling from `initialMs` (500) up to `maxMs` (30000). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** How long a new BIRD may take to open its control socket. Default 10000 ms. */
  readyTimeoutMs?: number;
  /** A run at least this long resets the backoff. Default 30000 ms. */
  stableAfterMs?: number;
  /** Grace period between SIGTERM and SIGKILL on stop in `withdraw` mode. Default 5000 ms. */
  stopTimeoutMs?: number;
  /**
   * How `stop()` ends BIRD. `keep-routes` (default): SIGKILL, no BGP Cease — peers keep this
   * node's routes for their graceful restart time, and this kernel keeps what BIRD programmed.
   * `withdraw`: SIGTERM — BIRD closes every session and peers drop its routes at once.
   */
  stopMode?: 'keep-routes' | 'withdraw';
  /**
   * When BIRD is started with graceful restart recovery (`-R`). `auto` (default): every start after
   * the first (this supervisor restarting a BIRD that died), and the first when the kernel already
   * holds routes of protocol `bird` (left by a BIRD that was killed, e.g. with the previous
   * calico-node). `always` and `never` do what they say.
   */
  gracefulRestart?: 'auto' | 'always' | 'never';
  /**
   * Start BIRD under `setpriv --pdeathsig KILL`, so the kernel kills it when the process that
   * started it dies. Default true; ignored (with a warning) when `setpriv` is not installed.
   */
  dieWithParent?: boolean;
}

/** util-linux's setpriv, which sets the parent-death signal and execs the command. */
const SETPRIV = '/usr/bin/setpriv';

export interface BirdSupervisorStatus {
  running: boolean;
  pid?: number;
  /** Times BIRD was started after it had exited on its own. */
  restarts: number;
  /** The live (last accepted) configuration, main file text. */
  liveMain?: string;
  lastError?: string;
  stopped: boolean;
}

export class BirdSupervisor {
  readonly client: BirdControlClient;
  private readonly opts: Required<Omit<BirdSupervisorOptions, 'backoff' | 'log' | 'dieWithParent'>> & {
    backoff: { initialMs: number; maxMs: number };
  };
  private readonly log: Logger;
  private child: ChildProcess | undefined;
  private childStartedAt = 0;
  private live: BirdConfigSet | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private restarts = 0;
  /** A BIRD was started before: any later start is a restart. */
  private started = false;
  private failures = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private lastError: string | undefined;
  /** Words put before everything else when starting BIRD: the parent-death signal, if used. */
  private readonly deathPrefix: string[];
  /** Removes the routes a change of route priority (kernel metric) leaves behind. */
  private readonly sweeper: StaleMetricSweeper;

  constructor(opts: BirdSupervisorOptions) {
    this.opts = {
      configDir: opts.configDir,
      socketPath: opts.socketPath,
      birdPath: opts.birdPath ?? '/usr/sbin/bird',
      commandPrefix: opts.commandPrefix ?? [],
      readyTimeoutMs: opts.readyTimeoutMs ?? 10_000,
      stableAfterMs: opts.stableAfterMs ?? 30_000,
      stopTimeoutMs: opts.stopTimeoutMs ?? 5000,
      stopMode: opts.stopMode ?? 'keep-routes',
      gracefulRestart: opts.gracefulRestart ?? 'auto',
      backoff: { initialMs: opts.backoff?.initialMs ?? 500, maxMs: opts.backoff?.maxMs ?? 30_000 },
    };
    this.log = opts.log ?? NOOP_LOGGER;
    this.deathPrefix = [];
    if (opts.dieWithParent ?? true) {
      if (existsSync(SETPRIV)) this.deathPrefix = [SETPRIV, '--pdeathsig', 'KILL', '--'];
      else this.log.warn(`${SETPRIV} not found: BIRD will outlive this process if it dies unstopped`);
    }
    this.client = new BirdControlClient(opts.socketPath);
    this.sweeper = new StaleMetricSweeper(this.opts.commandPrefix, this.log);
  }

  /** PID of the running BIRD this supervisor started, if any. */
  get pid(): number | undefined {
    return this.isRunning() ? this.child!.pid : undefined;
  }

  status(): BirdSupervisorStatus {
    return {
      running: this.isRunning(),
      pid: this.pid,
      restarts: this.restarts,
      liveMain: this.live?.files[this.live.main],
      lastError: this.lastError,
      stopped: this.stopped,
    };
  }

  /** Make `config` the running configuration (see the diagram above). */
  apply(config: BirdConfigSet): Promise<ApplyOutcome> {
    return this.serial(() => this.applyNow(config));
  }

  /** Stop BIRD (by the PID it was started with) and never start it again. Idempotent. */
  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    this.sweeper.stop();
    return this.serial(() => this.killChild());
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private isRunning(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  private async applyNow(config: BirdConfigSet): Promise<ApplyOutcome> {
    if (this.stopped) throw new BirdBridgeError('closed', 'the BIRD supervisor was stopped');
    if (!(config.main in config.files)) {
      throw new BirdBridgeError('invalid-input', `main file ${config.main} is not among the files`);
    }
    if (this.live && sameFiles(this.live, config) && (this.isRunning() || this.restartTimer)) {
      return { kind: 'unchanged' };
    }
    await mkdir(this.opts.configDir, { recursive: true });
    const problem = await this.check(config);
    if (problem !== undefined) {
      this.lastError = problem;
      this.log.error({ error: problem }, 'new BIRD configuration rejected; keeping the running one');
      return { kind: 'rejected', error: problem };
    }
    for (const [name, text] of Object.entries(config.files)) {
      const path = join(this.opts.configDir, name);
      await writeFile(`${path}.tmp`, text);
      await rename(`${path}.tmp`, path);
    }
    this.live = { main: config.main, files: { ...config.files } };
    if (this.isRunning()) {
      try {
        const r = await this.client.configure();
        this.log.info({ reply: r.message }, 'BIRD reloaded its configuration');
        this.sweeper.kick(config.files[config.main]!);
        return { kind: 'reloaded' };
      } catch (e) {
        this.lastError = (e as Error).message;
        this.log.error({ error: this.lastError }, 'BIRD did not reload its configuration');
        if (!isBirdBridgeError(e, 'control-connect') && !isBirdBridgeError(e, 'control-timeout')) throw e;
        // BIRD is going away; the exit handler restarts it with the files just written.
        return { kind: 'not-running', error: this.lastError };
      }
    }
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    return this.startNow();
  }

  /** `bird -p -c` on a staged copy; undefined if BIRD accepts it, else its message. */
  private async check(config: BirdConfigSet): Promise<string | undefined> {
    const stage = await mkdtemp(join(this.opts.configDir, '.check-'));
    try {
      for (const [name, text] of Object.entries(config.files)) await writeFile(join(stage, name), text);
      const r = await run(this.opts.birdPath, ['-p', '-c', join(stage, config.main)]);
      if (r.code === 0) return undefined;
      const msg = (r.stderr || r.stdout || `bird -p exited with ${r.code}`).trim();
      return msg.split(stage).join(this.opts.configDir);
    } catch (e) {
      throw new BirdBridgeError(
        'bird-unavailable',
        `cannot run ${this.opts.birdPath}: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    } finally {
      await rm(stage, { recursive: true, force: true });
    }
  }

  private async startNow(): Promise<ApplyOutcome> {
    if (!this.live) return { kind: 'not-running', error: 'no configuration yet' };
    const [cmd, ...pre] = [...this.deathPrefix, ...this.opts.commandPrefix, this.opts.birdPath];
    const recover = await this.recoveryNeeded();
    const args = [
      ...pre,
      '-f',
      ...(recover ? ['-R'] : []),
      '-c',
      join(this.opts.configDir, this.live.main),
      '-s',
      this.opts.socketPath,
    ];
    const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.childStartedAt = Date.now();
    const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
    for (const stream of [child.stdout, child.stderr]) {
      let partial = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (d: string) => {
        const lines = (partial + d).split('\n');
        partial = lines.pop() ?? '';
        for (const l of lines) if (l.trim()) this.log.info({ pid: child.pid }, `bird: ${l}`);
      });
    }
    child.once('exit', (code, signal) => this.onExit(child, code, signal));
    const ready = await Promise.race([
      this.waitReady(child),
      spawnError.then((e) => `cannot start ${cmd}: ${e.message}`),
    ]);
    if (ready === true) {
      this.log.info(
        {
          pid: child.pid,
          config: join(this.opts.configDir, this.live.main),
          gracefulRestartRecovery: recover,
        },
        'BIRD started',
      );
      this.sweeper.kick(this.live.files[this.live.main]!);
      return { kind: 'started', pid: child.pid! };
    }
    this.lastError = ready;
    this.log.error({ error: ready }, 'BIRD did not come up');
    if (this.isRunning() && child === this.child) child.kill('SIGKILL');
    return { kind: 'not-running', error: ready };
  }

  /** Whether this start is a restart that BIRD must recover from (`-R`); see the header. */
  private async recoveryNeeded(): Promise<boolean> {
    const mode = this.opts.gracefulRestart;
    if (mode !== 'auto') return mode === 'always';
    if (this.started) return true;
    this.started = true;
    const [cmd, ...pre] = [...this.opts.commandPrefix, 'ip'];
    try {
      for (const family of ['-4', '-6']) {
        const r = await run(cmd!, [...pre, family, 'route', 'show', 'table', 'all', 'proto', 'bird']);
        if (r.code !== 0) throw new Error(r.stderr.trim() || `exit ${r.code}`);
        if (r.stdout.trim() !== '') return true;
      }
      return false;
    } catch (e) {
      this.log.warn(
        {
          error: (e as Error).message,
        },
        'cannot read the kernel routes; starting BIRD without graceful restart recovery',
      );
      return false;
    }
  }

  private async waitReady(child: ChildProcess): Promise<true | string> {
    const end = Date.now() + this.opts.readyTimeoutMs;
    while (Date.now() < end) {
      if (child.exitCode !== null || child.signalCode !== null) {
        return `BIRD exited during start (code ${child.exitCode}, signal ${child.signalCode})`;
      }
      if (await this.client.ping()) return true;
      await sleep(100);
    }
    return `BIRD did not open ${this.opts.socketPath} within ${this.opts.readyTimeoutMs} ms`;
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child || this.stopped) return;
    const ranFor = Date.now() - this.childStartedAt;
    this.failures = ranFor >= this.opts.stableAfterMs ? 1 : this.failures + 1;
    const delay = Math.min(this.opts.backoff.initialMs * 2 ** (this.failures - 1), this.opts.backoff.maxMs);
    this.lastError = `BIRD (pid ${child.pid}) exited: code ${code}, signal ${signal}`;
    this.log.error(`${this.lastError}; restarting in ${delay} ms`);
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.serial(async () => {
        if (this.stopped || this.isRunning()) return;
        this.restarts++;
        const r = await this.startNow();
        if (r.kind === 'not-running') this.log.warn({ error: r.error }, 'BIRD restart failed');
      }).catch((e) => this.log.error({ error: (e as Error).message }, 'BIRD restart failed'));
    }, delay);
  }

  private async killChild(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    if (this.opts.stopMode === 'keep-routes') {
      child.kill('SIGKILL');
      await exited;
      this.log.info(
        {
          pid: child.pid,
        },
        'BIRD killed; peers keep its routes for their graceful restart time',
      );
      return;
    }
    child.kill('SIGTERM');
    const gone = await Promise.race([
      exited.then(() => true),
      sleep(this.opts.stopTimeoutMs).then(() => false),
    ]);
    if (!gone) {
      child.kill('SIGKILL');
      await exited;
    }
    this.log.info({ pid: child.pid }, 'BIRD stopped');
  }
}

function sameFiles(a: BirdConfigSet, b: BirdConfigSet): boolean {
  const ka = Object.keys(a.files);
  return (
    a.main === b.main &&
    ka.length === Object.keys(b.files).length &&
    ka.every((k) => a.files[k] === b.files[k])
  );
}

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') reject(err);
      else resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
