/**
 * Long-running lab processes (etcd, calico-node, pod listeners): started detached with their
 * output in a log file, recorded by PID *and* kernel start time, and stopped only when both still
 * match — a recycled PID is never signalled.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { errorMessage, LabError } from './errors.js';

export interface ProcRecord {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot. */
  readonly startTime: string;
  /** What was started, for people reading the state file. */
  readonly cmd: string;
  readonly log?: string;
}

/** Start time and state of a process from /proc/<pid>/stat; undefined when there is none. */
export function procStat(pid: number): { startTime: string; state: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid …": comm may hold spaces or parentheses, so split after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, startTime: fields[19]! };
  } catch {
    return undefined;
  }
}

/** True while the recorded process runs (same PID, same start time, not a zombie). */
export function isAlive(rec: ProcRecord | undefined): boolean {
  if (!rec) return false;
  const s = procStat(rec.pid);
  return s !== undefined && s.startTime === rec.startTime && s.state !== 'Z';
}

export function spawnDetached(
  argv: readonly string[],
  opts: { env: Record<string, string>; log: string; cwd?: string },
): ProcRecord {
  const fd = openSync(opts.log, 'a');
  try {
    const child = spawn(argv[0]!, argv.slice(1), {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: opts.env,
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
    });
    child.on('error', () => {});
    child.unref();
    if (child.pid === undefined) throw new LabError('setup', `cannot start ${argv.join(' ')}`);
    const stat = procStat(child.pid);
    if (!stat) throw new LabError('setup', `${argv[0]} exited at once; see ${opts.log}`);
    return { pid: child.pid, startTime: stat.startTime, cmd: argv.join(' '), log: opts.log };
  } finally {
    closeSync(fd);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** SIGTERM, then SIGKILL after `graceMs`; only the recorded process. Resolves once it is gone. */
export async function stopRecorded(rec: ProcRecord, graceMs = 5000): Promise<'stopped' | 'not-running'> {
  if (!isAlive(rec)) return 'not-running';
  try {
    process.kill(rec.pid, 'SIGTERM');
  } catch {
    return 'not-running';
  }
  const end = Date.now() + graceMs;
  while (Date.now() < end) {
    if (!isAlive(rec)) return 'stopped';
    await sleep(50);
  }
  if (isAlive(rec)) {
    try {
      process.kill(rec.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  const hard = Date.now() + 3000;
  while (isAlive(rec) && Date.now() < hard) await sleep(20);
  return 'stopped';
}

/** A process some other program recorded in a pid file, accepted only if its command line holds `mustContain`. */
export function recordFromPidFile(path: string, mustContain: string): ProcRecord | undefined {
  if (!existsSync(path)) return undefined;
  const pid = Number(readFileSync(path, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 1) return undefined;
  const stat = procStat(pid);
  if (!stat) return undefined;
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return undefined;
  }
  if (!cmdline.includes(mustContain)) return undefined;
  return { pid, startTime: stat.startTime, cmd: cmdline.trim() };
}

/** Run a command to completion; output captured. */
export function run(
  argv: readonly string[],
  opts: { env?: Record<string, string | undefined>; input?: string; timeoutMs?: number } = {},
): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(argv[0]!, argv.slice(1), {
    encoding: 'utf8',
    env: opts.env ?? process.env,
    input: opts.input ?? '',
    timeout: opts.timeoutMs ?? 60_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) {
    return { status: 127, stdout: r.stdout ?? '', stderr: `${argv[0]}: ${errorMessage(r.error)}` };
  }
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

/** Like `run`, asynchronous, so several can run at once. */
export function runAsync(
  argv: readonly string[],
  opts: { env?: Record<string, string | undefined>; input?: string; timeoutMs?: number } = {},
): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      env: opts.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ status: 127, stdout: '', stderr: `${argv[0]}: ${errorMessage(e)}` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        status: code ?? 1,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    // A program that exits without reading its input (a probe that fails at once) makes this
    // write fail with EPIPE; its exit status is what counts, and an unhandled stream error would
    // end the lab mid-way (seen: `lab up` dying during its own clean-up).
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

/**
 * A child of `parent` whose command name (/proc/<pid>/comm) is `comm`: a process started in a
 * container, whose PID in its own pid file means nothing on the host. Read from each thread's
 * `children` list, so a child started from any thread is found.
 */
export function childNamed(parent: ProcRecord, comm: string): ProcRecord | undefined {
  if (!isAlive(parent)) return undefined;
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${parent.pid}/task`);
  } catch {
    return undefined;
  }
  for (const tid of tasks) {
    let children: string[] = [];
    try {
      children = readFileSync(`/proc/${parent.pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/);
    } catch {
      continue;
    }
    for (const c of children) {
      const pid = Number(c);
      if (!Number.isInteger(pid) || pid <= 1) continue;
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== comm) continue;
        const stat = procStat(pid);
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
        if (stat) return { pid, startTime: stat.startTime, cmd };
      } catch {
        // gone meanwhile
      }
    }
  }
  return undefined;
}
