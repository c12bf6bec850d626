import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loggerOf } from '@calico-ts/api/log';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileLock, QueuedLock } from './host-lock.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cni-lock-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('FileLock', () => {
  it('lets one holder in at a time', async () => {
    const lock = new FileLock();
    const path = join(dir, 'sub', 'ipam.lock');
    const order: string[] = [];
    const holder = async (name: string) => {
      const release = await lock.acquire(path);
      order.push(`${name} in`);
      await new Promise((r) => setTimeout(r, 20));
      order.push(`${name} out`);
      await release();
    };
    await Promise.all([holder('a'), holder('b'), holder('c')]);
    for (let i = 0; i < order.length; i += 2) {
      expect(order[i]!.split(' ')[0]).toBe(order[i + 1]!.split(' ')[0]);
    }
    await expect(readFile(path)).rejects.toThrow(/ENOENT/);
  });

  it('replaces a lock whose holder died', async () => {
    const path = join(dir, 'ipam.lock');
    const dead = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    await writeFile(path, dead);
    const release = await new FileLock({ waitMs: 2000 }).acquire(path);
    expect(await readFile(path, 'utf8')).toBe(String(process.pid));
    await release();
  });

  it('goes ahead without the lock when it cannot be used or is not released in time', async () => {
    const logs: string[] = [];
    const blocked = join(dir, 'file');
    await writeFile(blocked, 'x');
    const release = await new FileLock({ log: loggerOf((_level, m) => logs.push(m)) }).acquire(
      join(blocked, 'ipam.lock'),
    );
    await release();
    expect(logs[0]).toContain('going ahead without it');
    const held = join(dir, 'held.lock');
    await writeFile(held, String(process.pid));
    const t0 = Date.now();
    await (await new FileLock({ waitMs: 100, log: loggerOf((_level, m) => logs.push(m)) }).acquire(held))();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
    expect(logs[1]).toContain('was not released in time');
    expect(await readFile(held, 'utf8')).toBe(String(process.pid));
  });
});

describe('QueuedLock', () => {
  it('lets holders in this process in one at a time, in the order they asked, and still takes the file', async () => {
    const lock = new QueuedLock(new FileLock());
    const path = join(dir, 'ipam.lock');
    const order: string[] = [];
    const holder = async (name: string) => {
      const release = await lock.acquire(path);
      order.push(`${name} in:${await readFile(path, 'utf8')}`);
      await new Promise((r) => setTimeout(r, 5));
      order.push(`${name} out`);
      await release();
    };
    await Promise.all(['a', 'b', 'c', 'd'].map(holder));
    const me = String(process.pid);
    expect(order).toEqual([
      `a in:${me}`,
      'a out',
      `b in:${me}`,
      'b out',
      `c in:${me}`,
      'c out',
      `d in:${me}`,
      'd out',
    ]);
    // Released: the next one gets it at once.
    const release = await lock.acquire(path);
    await release();
  });

  it('a holder whose inner lock fails does not block the queue', async () => {
    let calls = 0;
    const lock = new QueuedLock({
      acquire: async () => {
        if (++calls === 1) throw new Error('boom');
        return async () => {};
      },
    });
    await expect(lock.acquire('x')).rejects.toThrow('boom');
    const release = await lock.acquire('x');
    await release();
    expect(calls).toBe(2);
  });
});
