/**
 * `calicoctl node diags` on a host, played by a private network namespace with an address, a route
 * and an nftables table of its own, and a Calico log directory: the built executable writes a
 * .tar.gz that tar reads back, holding that namespace's state and the logs. Needs root, `ip`, `nft`
 * and `tar`; under CI=true their absence fails the test.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { calicoctlExecutable } from './testing-internal/executable.js';

const EXE = calicoctlExecutable();
const canRun =
  process.env.CI === 'true' ||
  (process.getuid?.() === 0 && ['/usr/sbin/ip', '/usr/sbin/nft', '/usr/bin/tar'].every((p) => existsSync(p)));

describe.runIf(canRun)(`${EXE.name} node diags`, () => {
  const ns = `ctl-diags-${process.pid}`;
  let dir: string;
  let bundle: string | undefined;
  let stdout = '';

  const member = (name: string) => spawnSync('tar', ['-xzOf', bundle!, name], { encoding: 'utf8' });

  beforeAll(async () => {
    await EXE.ensureBuilt();
    dir = await mkdtemp(join(tmpdir(), 'ctl-diags-'));
    execFileSync('ip', ['netns', 'add', ns]);
    execFileSync('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    execFileSync('ip', ['-n', ns, 'addr', 'add', '198.18.77.1/32', 'dev', 'lo']);
    execFileSync('ip', ['-n', ns, 'route', 'add', 'blackhole', '198.18.78.0/24']);
    execFileSync('ip', ['netns', 'exec', ns, 'nft', 'add table ip diagstest; add chain ip diagstest c']);
    await mkdir(join(dir, 'log', 'calico', 'felix'), { recursive: true });
    await writeFile(join(dir, 'log', 'calico', 'felix', 'current'), 'felix started\n');
    await writeFile(join(dir, 'log', 'calico', 'cni.log'), 'ADD ok\n');
    const r = spawnSync(
      'ip',
      [
        'netns',
        'exec',
        ns,
        EXE.command,
        ...EXE.prefix,
        'node',
        'diags',
        '--log-dir',
        join(dir, 'log', 'calico'),
      ],
      {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
        timeout: 120_000,
      },
    );
    stdout = r.stdout;
    expect(r.status, r.stdout + r.stderr).toBe(0);
    bundle = /Diags saved to (\S+\.tar\.gz)\n/.exec(r.stdout)?.[1];
  }, 180_000);

  afterAll(async () => {
    spawnSync('ip', ['netns', 'del', ns]);
    if (bundle) await rm(dirname(bundle), { recursive: true, force: true });
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('says what it collects and where the bundle is', () => {
    expect(stdout).toMatch(/^Collecting diagnostics\nDumping date\n/);
    expect(stdout).toContain('Dumping nftables\n');
    expect(bundle).toMatch(/\/calico-diags[^/]+\/diags-\d{8}_\d{6}\.tar\.gz$/);
  });

  test('the bundle holds the host’s addresses, routes and nftables ruleset', () => {
    const names = spawnSync('tar', ['-tzf', bundle!], { encoding: 'utf8' }).stdout.trim().split('\n');
    expect(names).toEqual(
      expect.arrayContaining(['diagnostics/ipv4_addr', 'diagnostics/ipv4_route', 'diagnostics/nftables']),
    );
    expect(member('diagnostics/ipv4_addr').stdout).toContain('inet 198.18.77.1/32');
    expect(member('diagnostics/ipv4_route').stdout).toContain('blackhole 198.18.78.0/24');
    expect(member('diagnostics/nftables').stdout).toMatch(/table ip diagstest \{ # handle \d+\n\s+chain c/);
  });

  test('and the Calico logs, under their own paths', () => {
    expect(member('logs/felix/current').stdout).toBe('felix started\n');
    expect(member('logs/cni.log').stdout).toBe('ADD ok\n');
  });

  test('a log directory that does not exist is said, not fatal', async () => {
    const r = spawnSync(
      'ip',
      ['netns', 'exec', ns, EXE.command, ...EXE.prefix, 'node', 'diags', '--log-dir', join(dir, 'nowhere')],
      {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
        timeout: 120_000,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`No Calico logs copied: ${join(dir, 'nowhere')}: no such directory`);
    const other = /Diags saved to (\S+\.tar\.gz)\n/.exec(r.stdout)?.[1];
    expect(other).toBeDefined();
    await rm(dirname(other!), { recursive: true, force: true });
  }, 120_000);
});
