/**
 * `calicoctl node status` (the seed's command) with a real BIRD 2 in a private network namespace
 * and a process named calico-felix: the built executable reads BIRD's control socket and prints
 * the peer table. Needs root, `ip` and `bird`; under CI=true their absence fails the test.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type CalicoctlRun, calicoctlExecutable } from './testing-internal/executable.js';

const EXE = calicoctlExecutable();
const BIRD = '/usr/sbin/bird';
const canRun =
  process.env.CI === 'true' || (process.getuid?.() === 0 && existsSync(BIRD) && existsSync('/usr/sbin/ip'));

function runCtl(args: string[], env: Record<string, string>): Promise<CalicoctlRun> {
  return EXE.run(args, { env });
}

function until(check: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (check()) resolve();
      else if (Date.now() > end) reject(new Error('timed out'));
      else setTimeout(tick, 50);
    };
    tick();
  });
}

describe.runIf(canRun)(`${EXE.name} node status with a real BIRD`, () => {
  const ns = `ctl-bird-${process.pid}`;
  let dir: string;
  let bird: ChildProcess | undefined;
  let felix: ChildProcess | undefined;

  beforeAll(async () => {
    await EXE.ensureBuilt();
    dir = await mkdtemp(join(tmpdir(), 'ctl-bird-'));
    execFileSync('ip', ['netns', 'add', ns]);
    execFileSync('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    execFileSync('ip', ['-n', ns, 'addr', 'add', '198.18.0.1/32', 'dev', 'lo']);
    // Passive sessions only: BIRD never sends a packet, and everything stays in the namespace.
    await writeFile(
      join(dir, 'bird.conf'),
      `router id 198.18.0.1;
protocol device { scan time 2; }
protocol bgp Mesh_198_18_0_2 { local 198.18.0.1 as 64512; neighbor 198.18.0.2 as 64512; passive on; ipv4 { import all; export none; }; }
protocol bgp Global_198_18_0_9 { local 198.18.0.1 as 64512; neighbor 198.18.0.9 as 64600; passive on; ipv4 { import all; export none; }; }
`,
    );
    bird = spawn(
      'ip',
      ['netns', 'exec', ns, BIRD, '-f', '-c', join(dir, 'bird.conf'), '-s', join(dir, 'bird.ctl')],
      {
        stdio: 'ignore',
      },
    );
    felix = spawn('bash', ['-c', 'exec -a calico-felix sleep 120'], { stdio: 'ignore' });
    await until(() => existsSync(join(dir, 'bird.ctl')), 10_000);
  }, 120_000);

  afterAll(async () => {
    for (const p of [felix, bird]) if (p?.pid && p.exitCode === null) p.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    try {
      execFileSync('ip', ['netns', 'del', ns]);
    } catch {
      // not created
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('prints the peer table from BIRD', async () => {
    const r = await runCtl(['node', 'status'], { CALICO_BIRD_SOCKET_DIRS: dir });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.slice(0, 4)).toEqual(['Calico process is running.', '', 'IPv4 BGP status', lines[3]]);
    expect(lines[4]).toMatch(/^\| PEER ADDRESS \|\s+PEER TYPE\s+\| STATE \|\s+SINCE\s+\|\s+INFO\s+\|$/);
    expect(r.stdout).toMatch(/\| 198\.18\.0\.2 +\| node-to-node mesh \| start \| [\d:.]+ +\| Passive +\|/);
    expect(r.stdout).toMatch(/\| 198\.18\.0\.9 +\| global +\| start \| [\d:.]+ +\| (Passive|Idle) +\|/);
    expect(r.stdout).toContain("INFO: BIRDv6 process: 'bird6' is not running.");
  });
});
