/**
 * BirdSupervisor with a real BIRD 2 in a private network namespace: start, no-op apply, a broken
 * configuration refused while BIRD keeps running, a reload that programs a new kernel route, a
 * restart after BIRD is killed, and a clean stop. Needs root, ip, nsenter and bird.
 */

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loggerOf } from '@calico-ts/api/log';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { renderBirdConfig } from '../render/bird-config-renderer.js';
import { node, pool } from '../render/testdata/golden-cases.js';
import {
  addNetns,
  deleteNetns,
  ip,
  nsenterPrefix,
  pidAlive,
  privilegedTestsCanRun,
  uniqueTag,
  until,
} from '../testing-internal/netns.js';
import { BirdSupervisor } from './bird-supervisor.js';

const input = (blocks: string[]) => ({
  nodeName: 'node-a',
  nodes: [node('node-a', { ipv4Address: '198.18.0.1/24' }), node('node-b', { ipv4Address: '198.18.0.2/24' })],
  bgpConfigs: [],
  peers: [],
  pools: [pool('p', { cidr: '198.19.0.0/16' })],
  affineBlocks: blocks,
});

describe.runIf(privilegedTestsCanRun())('BirdSupervisor with a real BIRD', () => {
  const ns = `bbtest-${uniqueTag()}-sup`;
  let dir: string;
  let sup: BirdSupervisor;
  const logs: { level: string; message: string; fields?: Readonly<Record<string, unknown>> }[] = [];
  const log = loggerOf((level, message, fields) =>
    logs.push({ level, message, ...(fields ? { fields } : {}) }),
  );
  const routes = () => ip(['-n', ns, 'route', 'show', 'proto', 'bird']);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bbtest-sup-'));
    addNetns(ns);
    await ip(['-n', ns, 'addr', 'add', '198.18.0.1/32', 'dev', 'lo']);
    sup = new BirdSupervisor({
      configDir: join(dir, 'config'),
      socketPath: join(dir, 'bird.ctl'),
      commandPrefix: nsenterPrefix(ns),
      backoff: { initialMs: 200, maxMs: 1000 },
      log,
    });
  });

  afterAll(async () => {
    await sup?.stop();
    deleteNetns([ns]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  let firstPid: number;
  test('starts BIRD on a checked configuration, which programs the blackhole of its block', async () => {
    const r = await sup.apply(renderBirdConfig(input(['198.19.0.0/26'])));
    expect(r.kind).toBe('started');
    firstPid = sup.pid!;
    expect(pidAlive(firstPid)).toBe(true);
    expect((await sup.client.showStatus()).routerId).toBe('198.18.0.1');
    await until('blackhole route', async () => (await routes()).includes('blackhole 198.19.0.0/26'));
  });

  test('the same text again changes nothing', async () => {
    expect(await sup.apply(renderBirdConfig(input(['198.19.0.0/26'])))).toEqual({ kind: 'unchanged' });
    expect(sup.pid).toBe(firstPid);
  });

  test('a configuration BIRD cannot parse never replaces the running one', async () => {
    const good = await readFile(join(dir, 'config', 'bird.cfg'), 'utf8');
    const bad = renderBirdConfig(input(['198.19.0.0/26', '198.19.2.0/26']));
    const files = {
      ...bad.files,
      'bird.cfg': bad.files['bird.cfg']!.replace('local as 64512;', 'local as;'),
    };
    const r = await sup.apply({ main: 'bird.cfg', files });
    expect(r.kind).toBe('rejected');
    expect(r.kind === 'rejected' && r.error).toMatch(/config\/bird\.cfg:\d+:\d+ syntax error/);
    expect(await readFile(join(dir, 'config', 'bird.cfg'), 'utf8')).toBe(good);
    expect(logs.some((l) => l.level === 'error' && /rejected/.test(l.message))).toBe(true);
    expect(sup.pid).toBe(firstPid);
    expect((await sup.client.showStatus()).message).toBe('Daemon is up and running');
    expect(await routes()).not.toContain('198.19.2.0/26');
  });

  test('a changed configuration is reloaded over the control socket, without a restart', async () => {
    const before = (await sup.client.showStatus()).lastReconfiguration;
    await new Promise((r) => setTimeout(r, 20));
    const r = await sup.apply(renderBirdConfig(input(['198.19.0.0/26', '198.19.1.0/26'])));
    expect(r).toEqual({ kind: 'reloaded' });
    expect(sup.pid).toBe(firstPid);
    expect((await sup.client.showStatus()).lastReconfiguration).not.toBe(before);
    await until('second blackhole route', async () => (await routes()).includes('blackhole 198.19.1.0/26'));
  });

  test('BIRD killed from outside is started again with the live configuration', async () => {
    process.kill(firstPid, 'SIGKILL');
    const pid = await until(
      'a new BIRD',
      () => sup.pid !== undefined && sup.pid !== firstPid && sup.pid,
      15_000,
    );
    expect(sup.status().restarts).toBe(1);
    await until('control socket', () => sup.client.ping());
    expect((await sup.client.showProtocols()).map((p) => p.name)).toContain('static1');
    expect(pidAlive(pid)).toBe(true);
  });

  test('stop ends the process it started and nothing restarts it', async () => {
    const pid = sup.pid!;
    await sup.stop();
    expect(pidAlive(pid)).toBe(false);
    expect(sup.pid).toBeUndefined();
    await new Promise((r) => setTimeout(r, 600));
    expect(sup.status()).toMatchObject({ running: false, stopped: true });
    await expect(sup.apply(renderBirdConfig(input([])))).rejects.toThrow(/stopped/);
  });
});
