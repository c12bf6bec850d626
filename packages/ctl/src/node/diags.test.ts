import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundleName, DIAG_COMMANDS, outcomeText } from './diags.js';
import { tarArchive } from './tar.js';

describe('node diags bundle', () => {
  it('writes a ustar archive GNU tar lists and extracts byte for byte, long paths included', async () => {
    const long = `logs/${'calico-felix/'.repeat(12)}current`;
    expect(long.length).toBeGreaterThan(100);
    const binary = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
    const archive = tarArchive([
      { name: 'diagnostics/hostname', data: Buffer.from('node-a\n'), mtime: 1_700_000_000 },
      { name: long, data: binary, mtime: 1_700_000_000 },
      { name: 'diagnostics/empty', data: Buffer.alloc(0), mtime: 1_700_000_000 },
      { name: 'x/512', data: Buffer.alloc(512, 'a'), mtime: 1_700_000_000 },
    ]);
    expect(archive.length % 512).toBe(0);
    const dir = await mkdtemp(join(tmpdir(), 'ctl-tar-'));
    try {
      const file = join(dir, 'a.tar');
      await writeFile(file, archive);
      const list = spawnSync('tar', ['-tf', file], { encoding: 'utf8' });
      expect(list.status, list.stderr).toBe(0);
      expect(list.stdout.trim().split('\n')).toEqual([
        'diagnostics/hostname',
        long,
        'diagnostics/empty',
        'x/512',
      ]);
      const read = (name: string) => spawnSync('tar', ['-xOf', file, name]).stdout as Buffer;
      expect(read('diagnostics/hostname').toString()).toBe('node-a\n');
      expect(read(long).equals(binary)).toBe(true);
      expect(read('x/512').length).toBe(512);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a path too long for ustar, naming it', () => {
    const name = `${'d'.repeat(160)}/${'f'.repeat(101)}`;
    expect(() => tarArchive([{ name, data: Buffer.alloc(1), mtime: 0 }])).toThrow(
      /too long for a ustar archive/,
    );
  });

  it('records what a command printed, or why it did not run', () => {
    const nft = DIAG_COMMANDS.find((c) => c.file === 'nftables')!;
    expect(outcomeText(nft, { code: 0, stdout: 'table ip calico {}\n', stderr: '' })).toBe(
      'table ip calico {}\n',
    );
    expect(outcomeText(nft, { code: 1, stdout: '', stderr: 'Operation not permitted\n' })).toBe(
      '\n--- nft -a list ruleset exited 1: Operation not permitted\n',
    );
    expect(outcomeText(nft, { code: null, stdout: '', stderr: '', error: 'not installed' })).toBe(
      'not collected: nft -a list ruleset: not installed\n',
    );
  });

  it('names the bundle after the time, in UTC; reads nothing that may hold credentials', () => {
    expect(bundleName(new Date(Date.UTC(2026, 10, 27, 8, 5, 9)))).toBe('diags-20261127_080509.tar.gz');
    // No command reads the calicoctl config, the environment or a kubeconfig.
    const all = DIAG_COMMANDS.map((c) => c.argv.join(' ')).join('\n');
    expect(all).not.toMatch(/\/etc\/calico|env|kubeconfig|printenv/);
  });
});
