/**
 * calico-node killed and started again under traffic, on a 2-node BGP lab with a pod on each node:
 * n1's calico-node is SIGKILLed by the PID the lab recorded (its BIRD goes with it, no BGP Cease)
 * and started again as the lab started it (same command, environment and namespace), as a
 * DaemonSet restarts a crashed pod. Meanwhile the pod on n2 pings the pod on n1 every 20 ms and
 * a shell loop in each node's namespace reads its kernel's route to the other block every 100 ms. Observed: n2 keeps the route to n1's block (graceful restart)
 * and n1 keeps the route to n2's block (its new BIRD starts in recovery, finding the old one's
 * routes), at every sample; no ping is lost; the sessions come back Established.
 *
 * The restarted calico-node is written into the lab's state file in place of the old one, so
 * `lab down` stops it; afterAll also kills it by its PID and start time should the state not be
 * written.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { affineBlocks, bgpSessions, until } from './bgp-observe.js';
import { alive, kernelRoutes, LabDriver, missingPrerequisites } from './lab-driver.js';

const missing = missingPrerequisites('etcdv3');
if (missing.length > 0) {
  describe('lab calico-node restart', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

/** Field 22 of /proc/<pid>/stat, as the lab records it. */
function startTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

describe.skipIf(missing.length > 0)('lab: calico-node killed and restarted under traffic', () => {
  const name = `e2r${Math.random().toString(16).slice(2, 6)}`;
  let dir: string;
  let lab: LabDriver;
  let restarted: { pid: number; startTime: string } | undefined;
  const children = new Set<ChildProcess>();
  const node = (n: string) => lab.state().plan.nodes.find((x) => x.name === n)!;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-e2e-restart-'));
    lab = new LabDriver(name, join(dir, 'state'));
    const up = await lab.run('up', '--nodes', '2', '--mode', 'bgp', '--datastore', 'etcdv3');
    expect(up.code, up.stdout + up.stderr).toBe(0);
    await lab.ok('ns', 'create', 'rs');
    for (const n of ['n1', 'n2']) await lab.ok('pod', 'create', `rs/on-${n}`, '--node', n);
  }, 180_000);

  afterAll(async () => {
    // Only what is still running, each by its PID; nothing here may keep `lab down` from running.
    for (const c of [...children]) {
      if (c.pid === undefined || c.exitCode !== null || c.signalCode !== null) continue;
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    // The restarted calico-node, should its record not have reached the state file (same PID and
    // start time: never a recycled PID).
    if (restarted && alive(restarted)) {
      try {
        process.kill(restarted.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    if (dir && existsSync(join(dir, 'state', 'state.json'))) {
      const down = await lab.run('down');
      if (down.code !== 0) console.log(down.stdout + down.stderr);
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 90_000);

  it("n1's calico-node SIGKILLed and started again: no route missing at any sample, no ping lost", async () => {
    const s = lab.state();
    const n1 = node('n1');
    const n2 = node('n2');
    const blocks = affineBlocks(s.plan.etcdNetns, s.plan.etcdUrl);
    const b1 = blocks.get('n1')!;
    const b2 = blocks.get('n2')!;
    expect(b1.length).toBeGreaterThan(0);
    expect(b2.length).toBeGreaterThan(0);
    const podOn = (n: string) => s.pods.find((p) => p.node === n)! as { netns?: string; ip: string };
    const routeVia = (netns: string, cidrs: string[], gw: string) => {
      const routes = kernelRoutes(netns);
      return cidrs.every((c) => routes.some((r) => r.dst === c && r.gateway === gw && r.protocol === 'bird'));
    };
    await until(
      'both kernels route the other block',
      () => routeVia(n2.netns, b1, n1.ip) && routeVia(n1.netns, b2, n2.ip),
    );

    // Ping from the pod on n2 to the pod on n1, every 20 ms, until told to stop.
    const from = podOn('n2');
    const ping = spawn(
      'nsenter',
      [`--net=/run/netns/${from.netns}`, 'ping', '-i', '0.02', '-W', '1', '-q', podOn('n1').ip],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.add(ping);
    let pingOut = '';
    ping.stdout!.on('data', (b: Buffer) => {
      pingOut += b.toString();
    });

    // The kernels are read by a shell loop in each node's namespace, beside the test's own event
    // loop (which a CPU-hungry calico-node start can hold up): a line per read, `<ms> ok|MISSING`.
    const watch = (netns: string, cidrs: string[], gw: string) => {
      const checks = cidrs
        .map((c) => `ip route show ${c} | grep -q 'via ${gw} .*proto bird' || m=1`)
        .join('; ');
      const loop = spawn(
        'nsenter',
        [
          `--net=/run/netns/${netns}`,
          'sh',
          '-c',
          `while :; do m=0; ${checks}; if [ $m = 0 ]; then echo "$(date +%s%3N) ok"; else echo "$(date +%s%3N) MISSING"; fi; sleep 0.1; done`,
        ],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      );
      children.add(loop);
      const lines: string[] = [];
      let buf = '';
      loop.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        const parts = buf.split('\n');
        buf = parts.pop() ?? '';
        lines.push(...parts);
      });
      return { loop, lines };
    };
    const watches = { n2: watch(n2.netns, b1, n1.ip), n1: watch(n1.netns, b2, n2.ip) };
    await until('the route watches read', () => watches.n1.lines.length > 2 && watches.n2.lines.length > 2);

    const timing: Record<string, number> = {};
    try {
      await new Promise((r) => setTimeout(r, 1500));
      const rec = s.processes['node/n1']! as { pid: number; startTime: string; log?: string };
      const birdPid = Number(readFileSync(join(n1.runDir, 'bird.pid'), 'utf8').trim());
      // The same program, environment and namespace the lab started it with.
      const cmdline = readFileSync(`/proc/${rec.pid}/cmdline`, 'utf8')
        .split('\0')
        .filter((a) => a !== '');
      const env = Object.fromEntries(
        readFileSync(`/proc/${rec.pid}/environ`, 'utf8')
          .split('\0')
          .filter((e) => e.includes('='))
          .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
      );
      const logPath = rec.log ?? join(dir, 'state', 'nodes', 'n1', 'calico-node.log');
      const t0 = Date.now();
      process.kill(rec.pid, 'SIGKILL');
      await until('calico-node n1 gone', () => !alive(rec), 15_000, 50);
      await until("n1's BIRD gone with it", () => !existsSync(`/proc/${birdPid}`), 15_000, 50);
      timing.goneMs = Date.now() - t0;
      const fd = openSync(logPath, 'a');
      const child = spawn('nsenter', [`--net=/run/netns/${n1.netns}`, ...cmdline], {
        detached: true,
        stdio: ['ignore', fd, fd],
        env,
      });
      closeSync(fd);
      child.unref();
      restarted = { pid: child.pid!, startTime: startTime(child.pid!) };
      const state = JSON.parse(readFileSync(join(dir, 'state', 'state.json'), 'utf8'));
      state.processes['node/n1'] = { ...rec, ...restarted };
      writeFileSync(join(dir, 'state', 'state.json'), JSON.stringify(state, null, 2));
      await until(
        "n1's sessions Established again",
        async () => {
          const sessions = await bgpSessions(n1.runDir);
          return sessions.length > 0 && sessions.every((x) => x.bgp === 'Established');
        },
        60_000,
      );
      timing.establishedMs = Date.now() - t0;
      // Past the new BIRD's first kernel scans (scan time 2 s) and n2's end of the restart.
      await new Promise((r) => setTimeout(r, 5000));
    } finally {
      for (const w of Object.values(watches)) w.loop.kill('SIGKILL');
    }
    const reads = Object.entries(watches).map(([on, w]) => {
      const ts = w.lines.map((l) => Number(l.split(' ')[0]));
      return {
        on,
        samples: w.lines.length,
        missing: w.lines.filter((l) => l.endsWith('MISSING')),
        maxGapMs: Math.max(...ts.slice(1).map((t, i) => t - ts[i]!)),
      };
    });
    const pingDone = new Promise((r) => ping.once('exit', r));
    ping.kill('SIGINT');
    await pingDone;
    const summary = /(\d+) packets transmitted, (\d+) received[^\n]*/.exec(pingOut);
    const log = readFileSync(join(dir, 'state', 'nodes', 'n1', 'calico-node.log'), 'utf8');
    const starts = log.split('\n').filter((l) => l.includes('BIRD started'));
    console.log(
      JSON.stringify({
        timing,
        reads,
        ping: summary?.[0],
        birdStarts: starts.map((l) => l.slice(0, 300)),
      }),
    );

    for (const r of reads) {
      expect(r.samples, r.on).toBeGreaterThan(40);
      expect(r.missing, r.on).toEqual([]);
    }
    expect(Number(summary?.[1])).toBeGreaterThan(200);
    expect(Number(summary?.[2])).toBe(Number(summary?.[1]));
    // The first calico-node's BIRD started on a clean kernel; the restarted one found routes.
    expect(starts).toHaveLength(2);
    expect(starts[0]).toContain('"gracefulRestartRecovery":false');
    expect(starts[1]).toContain('"gracefulRestartRecovery":true');
    const report = await lab.connectivity('tcp');
    expect(report.cells.filter((c) => !c.reachable)).toEqual([]);
  }, 180_000);
});
