/**
 * Driving the lab from a test as a user would: `pnpm lab` (its launcher) with this test's own lab
 * name and state directory, plus what the test reads back (the state file, the namespaces, whether
 * a recorded process still runs).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

export const ROOT = join(import.meta.dirname, '..', '..');
export const LAB = join(ROOT, 'apps', 'lab', 'scripts', 'lab.mjs');

/** The datastores a lab runs on (`lab up --datastore`); the scenarios that are cheap to repeat run on both. */
export const DATASTORES = ['etcdv3', 'kubernetes'] as const;
export type LabDatastore = (typeof DATASTORES)[number];

/** Where scripts/setup.sh caches the kube-apiserver it builds (any version), or the override. */
function kubeApiServerBuilt(): boolean {
  const override = process.env.CALICO_LAB_KUBE_APISERVER_BIN || process.env.CALICO_TEST_KUBE_APISERVER_BIN;
  if (override) return existsSync(override);
  const dir = '/var/cache/calico-ts/bin';
  return existsSync(dir) && readdirSync(dir).some((f) => f.startsWith('kube-apiserver-'));
}

/**
 * What the lab needs; empty when everything is there. Every lab runs kube-apiserver (and so needs
 * kubectl and openssl), whichever datastore Calico uses.
 */
export function missingPrerequisites(_datastore?: LabDatastore): string[] {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root');
  const tools = ['ip', 'nsenter', 'etcd', 'etcdctl', 'bird'];
  tools.push(process.env.CALICO_LAB_KUBECTL_BIN || 'kubectl', 'openssl');
  for (const tool of tools) {
    if (spawnSync('sh', ['-c', `command -v ${tool} || test -x /usr/sbin/${tool}`]).status !== 0)
      missing.push(tool);
  }
  if (!kubeApiServerBuilt()) missing.push('kube-apiserver (scripts/setup.sh)');
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
  pods: { namespace: string; name: string; node: string; ip: string; ip6?: string; listener: ProcRecord }[];
  plan: {
    datastore: LabDatastore;
    fabricNetns: string;
    etcdNetns: string;
    etcdUrl: string;
    /** `--typha`. */
    typha?: { addr: string; metricsPort: number; log: string };
    nodes: { name: string; netns: string; ip: string; ip6?: string; runDir: string }[];
  };
}

export interface ConnectivityReport {
  /** The address families tried (labs before --ip-family: absent, IPv4). */
  families?: (4 | 6)[];
  cells: {
    family?: 4 | 6;
    from: string;
    to: string;
    toIP?: string;
    reachable: boolean;
    answeredBy?: string;
    error?: string;
  }[];
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

  /** `lab <tool> <verb> -f <file>` of a YAML text written to `dir` (a policy, a pool). */
  async applyYaml(
    tool: 'calicoctl' | 'kubectl',
    dir: string,
    name: string,
    yaml: string,
    verb: 'apply' | 'create' | 'delete' = 'apply',
  ): Promise<RunResult> {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, yaml);
    return this.ok(tool, verb, '-f', file);
  }

  /**
   * `lab connectivity -o json` (TCP) until exactly the pairs `allowed` says are reachable, or
   * `withinMs` passes (policy takes a moment to reach every node). Resolves to the pairs that still
   * differ, `from->to: expected …, got …`; empty when the matrix matches.
   */
  async reachabilityMatches(
    allowed: (from: string, to: string, family: 4 | 6) => boolean,
    withinMs = 30_000,
  ): Promise<string[]> {
    const end = Date.now() + withinMs;
    for (;;) {
      const r = await this.ok('connectivity', '-o', 'json', '--timeout-ms', '1500');
      const report = JSON.parse(r.stdout) as ConnectivityReport;
      const ok = (c: ConnectivityReport['cells'][number]) => allowed(c.from, c.to, c.family ?? 4);
      const wrong = report.cells
        .filter((c) => c.reachable !== ok(c))
        .map(
          (c) =>
            `${c.from}->${c.to}${c.family === 6 ? ' (IPv6)' : ''}: expected ${ok(c) ? 'reachable' : 'blocked'}, got ` +
            (c.reachable ? 'reachable' : (c.error ?? 'blocked')),
        );
      if (report.cells.length === 0) wrong.push('no pairs to test');
      if (wrong.length === 0 || Date.now() > end) return wrong;
      await new Promise((res) => setTimeout(res, 500));
    }
  }

  /**
   * `lab connectivity -o json`, repeated until every pair answers or `withinMs` passes (routes to a
   * new pod's block take a moment to reach every node). Resolves to the last report.
   */
  async connectivity(
    protocol: 'tcp' | 'udp',
    withinMs = 20_000,
    family?: 4 | 6,
  ): Promise<ConnectivityReport> {
    const end = Date.now() + withinMs;
    const only = family !== undefined ? ['--family', String(family)] : [];
    for (;;) {
      const r = await this.ok(
        'connectivity',
        '--protocol',
        protocol,
        ...only,
        '-o',
        'json',
        '--timeout-ms',
        '3000',
      );
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

/** The /122 IPv6 block (Calico's default IPv6 block size) holding `ip`, as the kernel prints it. */
export function blockOf6(ip: string): string {
  const [head, tail = ''] = ip.split('::');
  const h = head!.split(':').filter((g) => g !== '');
  const t = tail.split(':').filter((g) => g !== '');
  const groups = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t].map((g) => Number.parseInt(g, 16));
  groups[7] = groups[7]! & 0xffc0;
  // Compressed as the kernel prints it: the longest run of zero groups (two or more) becomes ::.
  let best = [-1, 0];
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best[1]! && j - i > 1) best = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  const text =
    best[0]! < 0
      ? hex.join(':')
      : `${hex.slice(0, best[0]).join(':')}::${hex.slice(best[0]! + best[1]!).join(':')}`;
  return `${text}/122`;
}

/** The kernel's IPv6 routes in `netns` (`ip -6 -j route`). */
export function kernelRoutes6(netns: string): KernelRoute[] {
  return JSON.parse(
    spawnSync('ip', ['-n', netns, '-6', '-j', 'route', 'show'], { encoding: 'utf8' }).stdout,
  ) as KernelRoute[];
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
