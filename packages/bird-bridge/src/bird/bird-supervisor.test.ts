/**
 * How BirdSupervisor ends the BIRD it started, with a stand-in BIRD (a small Node script that
 * answers the control socket's greeting and writes down the signals it catches): the default stop
 * kills it without a shutdown, so peers would keep its routes; `withdraw` asks it to shut down; and
 * BIRD is started so that it dies with its parent. No root needed.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { BirdSupervisor, type BirdSupervisorOptions } from './bird-supervisor.js';

// `-p -c FILE` checks and exits 0; otherwise serves `-s SOCKET` and records its argv and signals.
const FAKE_BIRD = `#!/usr/bin/env node
import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
const args = process.argv.slice(2);
if (args.includes('-p')) process.exit(0);
const sock = args[args.indexOf('-s') + 1];
writeFileSync(sock + '.argv', JSON.stringify(args));
process.on('SIGTERM', () => { appendFileSync(sock + '.signals', 'SIGTERM\\n'); process.exit(0); });
createServer((c) => {
  c.write('0001 BIRD 2.0.12 ready.\\n');
  c.on('data', () => c.write('0013 Daemon is up and running\\n'));
}).listen(sock);
`;

const config = { main: 'bird.cfg', files: { 'bird.cfg': 'router id 198.18.0.1;\n' } };

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('BirdSupervisor ending BIRD', () => {
  let dir: string;
  let sup: BirdSupervisor | undefined;
  const socket = () => join(dir, 'bird.ctl');
  const make = (o: Partial<BirdSupervisorOptions> = {}) => {
    sup = new BirdSupervisor({
      configDir: join(dir, 'config'),
      socketPath: socket(),
      birdPath: join(dir, 'fake-bird'),
      ...o,
    });
    return sup;
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bbtest-stop-'));
    writeFileSync(join(dir, 'fake-bird'), FAKE_BIRD);
    chmodSync(join(dir, 'fake-bird'), 0o755);
  });
  afterEach(async () => {
    await sup?.stop();
    sup = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  test('stop() kills BIRD outright by default: no shutdown, so no BGP Cease to its peers', async () => {
    const s = make();
    expect((await s.apply(config)).kind).toBe('started');
    const pid = s.pid!;
    expect(alive(pid)).toBe(true);
    await s.stop();
    expect(alive(pid)).toBe(false);
    expect(existsSync(`${socket()}.signals`)).toBe(false);
    expect(s.status()).toMatchObject({ running: false, stopped: true });
  });

  test("stopMode 'withdraw' asks BIRD to shut down (SIGTERM), so it closes its sessions", async () => {
    const s = make({ stopMode: 'withdraw' });
    expect((await s.apply(config)).kind).toBe('started');
    const pid = s.pid!;
    await s.stop();
    expect(alive(pid)).toBe(false);
    expect(readFileSync(`${socket()}.signals`, 'utf8')).toBe('SIGTERM\n');
  });

  test.runIf(existsSync('/usr/bin/setpriv'))(
    'BIRD is started through setpriv (parent-death signal KILL), which execs it with its own arguments',
    async () => {
      const s = make({ gracefulRestart: 'never' });
      expect((await s.apply(config)).kind).toBe('started');
      // The tracked PID is BIRD's own (setpriv exec'd it), and BIRD got its usual arguments.
      // That it then dies with calico-node is checked end to end (test-e2e lab-node-loss).
      expect(readFileSync(`/proc/${s.pid}/cmdline`, 'utf8')).toContain('fake-bird');
      expect(JSON.parse(readFileSync(`${socket()}.argv`, 'utf8'))).toEqual([
        '-f',
        '-c',
        join(dir, 'config', 'bird.cfg'),
        '-s',
        socket(),
      ]);
    },
  );

  test("gracefulRestart 'always' starts BIRD in graceful restart recovery (-R) from the first start", async () => {
    const s = make({ gracefulRestart: 'always' });
    expect((await s.apply(config)).kind).toBe('started');
    expect(JSON.parse(readFileSync(`${socket()}.argv`, 'utf8'))).toEqual([
      '-f',
      '-R',
      '-c',
      join(dir, 'config', 'bird.cfg'),
      '-s',
      socket(),
    ]);
  });

  test('a BIRD that died is started again in graceful restart recovery (-R)', async () => {
    const s = make({ gracefulRestart: 'auto', backoff: { initialMs: 50 } });
    expect((await s.apply(config)).kind).toBe('started');
    const first = s.pid!;
    writeFileSync(`${socket()}.argv`, '');
    process.kill(first, 'SIGKILL');
    const end = Date.now() + 10_000;
    // The new stand-in writes its arguments as it starts.
    while (readFileSync(`${socket()}.argv`, 'utf8') === '' && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(s.status().restarts).toBe(1);
    expect(s.pid).not.toBe(first);
    expect(JSON.parse(readFileSync(`${socket()}.argv`, 'utf8'))).toContain('-R');
  });

  test('dieWithParent: false starts BIRD directly', async () => {
    const s = make({ dieWithParent: false });
    expect((await s.apply(config)).kind).toBe('started');
    expect(JSON.parse(readFileSync(`${socket()}.argv`, 'utf8'))[0]).toBe('-f');
  });
});
