/**
 * Driving the lab from a test as a user would: `pnpm lab` (its launcher) with this test's own lab
 * name and state directory, plus what the test reads back (the state file, the namespaces, whether
 * a recorded process still runs).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

export const ROOT = join(import.meta.dirname, '..', '..');
export const LAB = join(ROOT, 'apps', 'lab', 'scripts', 'lab.mjs');

/** What the lab needs; empty when everything is there. */
export function missingPrerequisites(): string[] {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root');
  for (const tool of ['ip', 'nsenter', 'etcd', 'etcdctl', 'bird']) {
    if (spawnSync('sh', ['-c', `command -v ${tool} || test -x /usr/sbin/${tool}`]).status !== 0)
      missing.push(tool);
  }
  return missing;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface ProcRecord {
  pid: number;
  startTime: string;
}

export interface LabStateFile {
  namespaces: string[];
  processes: Record<string, ProcRecord>;
  pods: { namespace: string; name: string; node: string; ip: string; listener: ProcRecord }[];
  plan: {
    fabricNetns: string;
    etcdNetns: string;
    etcdUrl: string;
    nodes: { name: string; netns: string; ip: string; runDir: string }[];
  };
}

export interface ConnectivityReport {
  cells: { from: string; to: string; reachable: boolean; answeredBy?: string; error?: string }[];
  allReachable: boolean;
  reachable: number;
}

export class LabDriver {
  readonly log: string[] = [];
  constructor(
    readonly name: string,
    readonly stateDir: string,
  ) {}

  run(...args: string[]): Promise<RunResult> {
    const t0 = performance.now();
    return new Promise((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [LAB, '--name', this.name, '--state-dir', this.stateDir, ...args],
        {
          cwd: ROOT,
          env: { ...process.env, CALICO_LAB_NAME: '', CALICO_LAB_STATE_DIR: '' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('error', reject);
      child.on('close', (code) => {
        const r = { code, stdout, stderr, ms: performance.now() - t0 };
        this.log.push(`$ lab ${args.join(' ')} → ${code} (${Math.round(r.ms)} ms)\n${stdout}${stderr}`);
        resolve(r);
      });
    });
  }

  async ok(...args: string[]): Promise<RunResult> {
    const r = await this.run(...args);
    expect(r.code, `lab ${args.join(' ')}\n${r.stdout}${r.stderr}`).toBe(0);
    return r;
  }

  state(): LabStateFile {
    return JSON.parse(readFileSync(join(this.stateDir, 'state.json'), 'utf8')) as LabStateFile;
  }

  /**
   * `lab connectivity -o json`, repeated until every pair answers or `withinMs` passes (routes to a
   * new pod's block take a moment to reach every node). Resolves to the last report.
   */
  async connectivity(protocol: 'tcp' | 'udp', withinMs = 20_000): Promise<ConnectivityReport> {
    const end = Date.now() + withinMs;
    for (;;) {
      const r = await this.ok('connectivity', '--protocol', protocol, '-o', 'json', '--timeout-ms', '3000');
      const report = JSON.parse(r.stdout) as ConnectivityReport;
      if (report.allReachable || Date.now() > end) return report;
      await new Promise((res) => setTimeout(res, 500));
    }
  }
}

export function netnsList(): string[] {
  return spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter((l) => l !== '');
}

/** Same PID, same start time, not a zombie. */
export function alive(p: ProcRecord): boolean {
  try {
    const stat = readFileSync(`/proc/${p.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] === p.startTime && fields[0] !== 'Z';
  } catch {
    return false;
  }
}

export function blockOf(ip: string): string {
  const o = ip.split('.').map(Number);
  return `${o[0]}.${o[1]}.${o[2]}.${o[3]! & 0xc0}/26`;
}

export interface KernelRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  type?: string;
  flags?: string[];
}

export function kernelRoutes(netns: string): KernelRoute[] {
  return JSON.parse(
    spawnSync('ip', ['-n', netns, '-j', 'route', 'show'], { encoding: 'utf8' }).stdout,
  ) as KernelRoute[];
}
