/**
 * BGP passwords from files (CALICO_BGP_SECRETS_DIR), laid out as Kubernetes mounts a Secret volume,
 * through a real BirdBridge into the BIRD configuration it renders; and what a node with neither
 * files nor a Kubernetes API does: the sessions needing a password are kept down, never up without.
 */

import { mkdir, mkdtemp, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BGPPeer, Node } from '@calico-ts/api';
import { loggerOf } from '@calico-ts/api/log';
import {
  type ApplyOutcome,
  BirdBridge,
  type BirdConfigTarget,
  nodeAffinitySource,
  type SecretProvider,
} from '@calico-ts/bird-bridge';
import { type ClientConfig, KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { NOOP_LOGGER } from '@calico-ts/felix';
import { afterEach, describe, expect, test } from 'vitest';
import { bgpPasswordEnvName, EnvSecretProvider, LayeredSecretProvider } from './env-secrets.js';
import { BGP_SECRETS_DIR_ENV, bgpSecretProviderFor, FileSecretProvider } from './file-secrets.js';

const V3 = 'projectcalico.org/v3';

class LastConfig implements BirdConfigTarget {
  text = '';
  async apply(config: { main: string; files: Readonly<Record<string, string>> }): Promise<ApplyOutcome> {
    const text = Object.values(config.files).join('\n');
    const changed = text !== this.text;
    this.text = text;
    return (changed ? { kind: 'reloaded' } : { kind: 'unchanged' }) as ApplyOutcome;
  }
  async stop(): Promise<void> {}
}

async function until(what: string, f: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Writes a Secret as a volume holds it: `<dir>/<name>/..data/<key>` with `<key>` linked to it. */
async function writeSecretVolume(dir: string, name: string, data: Record<string, string>): Promise<void> {
  const base = join(dir, name);
  await mkdir(join(base, '..data'), { recursive: true });
  for (const [k, v] of Object.entries(data)) {
    await writeFile(join(base, '..data', k), v);
    await unlink(join(base, k)).catch(() => {});
    await symlink(join('..data', k), join(base, k));
  }
}

const etcd: ClientConfig = { datastoreType: 'etcdv3', etcdEndpoints: ['http://198.18.0.9:2379'] };

describe('BGP passwords from files and from the environment', () => {
  let dir: string;
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function bridgeWith(provider: SecretProvider | undefined) {
    const kv = new MemoryKVStore();
    const ds = new KVDatastore(kv, { backend: 'memory' });
    const node = (name: string, ip: string) =>
      ({ apiVersion: V3, kind: 'Node', metadata: { name }, spec: { bgp: { ipv4Address: ip } } }) as Node;
    await ds.create(node('node-a', '198.18.0.1/24'));
    await ds.create({
      apiVersion: V3,
      kind: 'BGPPeer',
      metadata: { name: 'tor' },
      spec: {
        peerIP: '198.18.1.1',
        asNumber: 64600,
        password: { secretKeyRef: { name: 'bgp-secrets', key: 'tor' } },
      },
    } as BGPPeer);
    const target = new LastConfig();
    const logs: string[] = [];
    const bridge = new BirdBridge({
      datastore: ds,
      affinities: nodeAffinitySource(kv, 'node-a'),
      nodeName: 'node-a',
      targets: { 4: target },
      debounceMs: 10,
      log: loggerOf((level, msg) => logs.push(`${level} ${msg}`)),
      ...(provider ? { secretProvider: provider } : {}),
    });
    cleanup.push(async () => {
      await bridge.stop();
      await ds.close();
    });
    await bridge.start();
    return { target, logs };
  }

  const torLines = (text: string) => {
    const lines = text.split('\n');
    const i = lines.indexOf('protocol bgp Global_198_18_1_1 from bgp_template {');
    return lines.slice(i + 1, lines.indexOf('}', i)).filter((l) => /^\s*(password|disabled)/.test(l));
  };

  test('a Secret volume’s file is the password; a change is picked up; a removed key keeps the session down', async () => {
    dir = await mkdtemp(join(tmpdir(), 'bgp-secrets-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await writeSecretVolume(dir, 'bgp-secrets', { tor: 'pw-1', other: 'x' });
    const provider = new FileSecretProvider({ dir, log: NOOP_LOGGER, pollMs: 50 });
    cleanup.push(() => provider.close());
    const { target, logs } = await bridgeWith(provider);
    expect(torLines(target.text)).toEqual(['  password "pw-1";']);

    await writeSecretVolume(dir, 'bgp-secrets', { tor: 'pw-2' });
    await until('the new password', () => torLines(target.text)[0] === '  password "pw-2";');

    await unlink(join(dir, 'bgp-secrets', 'tor'));
    await until(
      'the session kept down',
      () => torLines(target.text).length === 1 && target.text.includes('disabled on;'),
    );
    expect(torLines(target.text)).toEqual([
      '  disabled on;        # password secret bgp-secrets/tor not available: kept down rather than unauthenticated',
    ]);
    expect(logs).toContain(
      'warn BGPPeer tor: password secret bgp-secrets/tor not available; its BGP sessions are kept down until it is usable',
    );
    expect(logs.filter((l) => /pw-\d/.test(l))).toEqual([]);
  });

  test('etcd with no Kubernetes API and no secrets directory: no provider, and the session is kept down', async () => {
    expect(await bgpSecretProviderFor(etcd, {}, NOOP_LOGGER)).toBeUndefined();
    const { target, logs } = await bridgeWith(undefined);
    expect(torLines(target.text)).toEqual([
      '  disabled on;        # password secret bgp-secrets/tor not available: kept down rather than unauthenticated',
    ]);
    expect(
      logs.some((l) => l.startsWith('warn BGPPeer tor: password secret bgp-secrets/tor not available')),
    ).toBe(true);
  });

  test(`${BGP_SECRETS_DIR_ENV} picks the files, whatever the datastore; names that would leave the directory are not read`, async () => {
    dir = await mkdtemp(join(tmpdir(), 'bgp-secrets-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await writeSecretVolume(dir, 'bgp-secrets', { tor: 'pw' });
    await writeFile(join(dir, 'outside'), 'x');
    const p = await bgpSecretProviderFor(
      etcd,
      { [BGP_SECRETS_DIR_ENV]: join(dir, 'bgp-secrets', '..') },
      NOOP_LOGGER,
    );
    expect(p).toBeInstanceOf(FileSecretProvider);
    cleanup.push(() => p!.close());
    await p!.follow(['bgp-secrets', '..', 'a/b']);
    expect(p!.value('bgp-secrets', 'tor')).toBe('pw');
    expect(p!.value('bgp-secrets', '..data')).toBeUndefined();
    expect(p!.value('..', 'outside')).toBeUndefined();
    expect(p!.value('a/b', 'x')).toBeUndefined();
    // Only followed secrets are answered.
    await p!.follow([]);
    expect(p!.value('bgp-secrets', 'tor')).toBeUndefined();
  });

  test('CALICO_BGP_PASSWORD_<SECRET>_<KEY> names the password; it is rendered and never logged', async () => {
    expect(bgpPasswordEnvName('bgp-secrets', 'tor')).toBe('CALICO_BGP_PASSWORD_BGP_SECRETS_TOR');
    const lines: string[] = [];
    const log = loggerOf((level, m) => {
      if (level === 'info' || level === 'warn') lines.push(m);
    });
    const p = await bgpSecretProviderFor(etcd, { CALICO_BGP_PASSWORD_BGP_SECRETS_TOR: 'env-pw' }, log);
    expect(p).toBeInstanceOf(LayeredSecretProvider);
    cleanup.push(() => p!.close());
    const { target, logs } = await bridgeWith(p!);
    expect(target.text).toContain('  password "env-pw";');
    expect([...lines, ...logs].filter((l) => l.includes('env-pw'))).toEqual([]);
  });

  test('the environment first, then the files; a key only in the files comes from the files', async () => {
    dir = await mkdtemp(join(tmpdir(), 'bgp-secrets-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await writeSecretVolume(dir, 'bgp-secrets', { tor: 'file-pw', spine: 'file-spine' });
    const p = await bgpSecretProviderFor(
      etcd,
      { [BGP_SECRETS_DIR_ENV]: dir, CALICO_BGP_PASSWORD_BGP_SECRETS_TOR: 'env-pw' },
      NOOP_LOGGER,
    );
    cleanup.push(() => p!.close());
    await p!.follow(['bgp-secrets']);
    expect(p!.value('bgp-secrets', 'tor')).toBe('env-pw');
    expect(p!.value('bgp-secrets', 'spine')).toBe('file-spine');
    expect(p!.value('bgp-secrets', 'leaf')).toBeUndefined();
  });

  test('a variable two followed references could both mean is used by neither, with a warning', async () => {
    const warnings: string[] = [];
    const log = loggerOf((level, m) => {
      if (level === 'warn') warnings.push(m);
    });
    const env = { CALICO_BGP_PASSWORD_A_B_C: 'pw', CALICO_BGP_PASSWORD_OTHER_K: 'ok' };
    const p = new EnvSecretProvider(env, log);
    await p.follow(['a-b', 'a', 'other']);
    expect(p.value('a-b', 'c')).toBeUndefined();
    expect(p.value('a', 'b-c')).toBeUndefined();
    expect(p.value('other', 'k')).toBe('ok');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('CALICO_BGP_PASSWORD_A_B_C could belong to secret a or a-b');
    expect(warnings.join('\n')).not.toMatch(/\bpw\b/);
    // Not followed: not answered.
    await p.follow(['other']);
    expect(p.value('a-b', 'c')).toBeUndefined();
  });
});
