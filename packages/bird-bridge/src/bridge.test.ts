/**
 * BirdBridge on the in-memory datastore with a fake BIRD target: what reaches BIRD after each
 * datastore change.
 */

import { loggerOf } from '@calico-ts/api/log';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { IpamStore } from '@calico-ts/ipam';
import { afterEach, describe, expect, test } from 'vitest';
import type { ApplyOutcome } from './bird/bird-supervisor.js';
import { BirdBridge, type BirdConfigTarget, nodeAffinitySource } from './bridge.js';
import { bgpConfig, node, peer, pool } from './render/testdata/golden-cases.js';
import { MemorySecretProvider, type SecretProvider } from './secret-provider.js';
import { until } from './testing-internal/netns.js';

class FakeTarget implements BirdConfigTarget {
  applied: { main: string; files: Readonly<Record<string, string>> }[] = [];
  stopped = false;
  private last = '';
  async apply(config: { main: string; files: Readonly<Record<string, string>> }): Promise<ApplyOutcome> {
    const text = JSON.stringify(config.files);
    if (text === this.last) return { kind: 'unchanged' };
    this.last = text;
    this.applied.push(config);
    return {
      kind: this.applied.length === 1 ? 'started' : 'reloaded',
      ...(this.applied.length === 1 ? { pid: 1 } : {}),
    } as ApplyOutcome;
  }
  async stop(): Promise<void> {
    this.stopped = true;
  }
  get current(): string {
    const c = this.applied.at(-1);
    return c ? Object.values(c.files).join('\n') : '';
  }
}

let bridge: BirdBridge | undefined;
afterEach(async () => {
  await bridge?.stop();
  bridge = undefined;
});

async function setup(extra: { secretProvider?: SecretProvider; secrets?: Record<string, string> } = {}) {
  const kv = new MemoryKVStore();
  const ds = new KVDatastore(kv, { backend: 'memory' });
  const ipam = new IpamStore(kv);
  await ds.create(node('node-a', { ipv4Address: '198.18.0.1/24' }));
  await ds.create(node('node-b', { ipv4Address: '198.18.0.2/24' }));
  await ds.create(pool('p', { cidr: '198.19.0.0/16' }));
  await ipam.createAffinity({ host: 'node-a', cidr: '198.19.0.0/26', state: 'confirmed', deleted: false });
  await ipam.createAffinity({ host: 'node-a', cidr: '198.19.0.192/26', state: 'pending', deleted: false });
  await ipam.createAffinity({ host: 'node-b', cidr: '198.19.0.64/26', state: 'confirmed', deleted: false });
  const target = new FakeTarget();
  const logs: string[] = [];
  bridge = new BirdBridge({
    datastore: ds,
    affinities: nodeAffinitySource(kv, 'node-a'),
    nodeName: 'node-a',
    targets: { 4: target },
    debounceMs: 10,
    log: loggerOf((level, msg) => logs.push(`${level} ${msg}`)),
    ...extra,
  });
  return { ds, ipam, target, logs, bridge };
}

describe('BirdBridge', () => {
  test('the first apply holds the mesh and only this node’s confirmed blocks', async () => {
    const { target, bridge } = await setup();
    await bridge.start();
    expect(target.applied).toHaveLength(1);
    expect(target.applied[0]!.main).toBe('bird.cfg');
    expect(target.current).toContain('protocol bgp Mesh_198_18_0_2 from bgp_template');
    expect(target.current).toContain('route 198.19.0.0/26 blackhole;');
    expect(target.current).not.toContain('198.19.0.64/26');
    expect(target.current).not.toContain('198.19.0.192/26');
  });

  test('resource and affinity changes reach BIRD; a deleted node drops its session', async () => {
    const { ds, ipam, target, bridge } = await setup();
    await bridge.start();
    await ds.create(peer('tor', { peerIP: '198.18.1.1', asNumber: 64600 }));
    await until('global peer', () => target.current.includes('protocol bgp Global_198_18_1_1'), 5000);
    await ipam.createAffinity({ host: 'node-a', cidr: '198.19.1.0/26', state: 'confirmed', deleted: false });
    await until('new block', () => target.current.includes('route 198.19.1.0/26 blackhole;'), 5000);
    await ds.delete('Node', 'node-b');
    await until('mesh gone', () => !target.current.includes('Mesh_198_18_0_2'), 5000);
    expect(bridge.snapshot()?.nodes.map((n) => n.metadata.name)).toEqual(['node-a']);
    expect(bridge.stats().outcomes[4]).toEqual({ kind: 'reloaded' });
  });

  test('a block reaches BIRD when its affinity is confirmed, not while pending; other hosts are no change', async () => {
    const { ipam, target, bridge } = await setup();
    await bridge.start();
    const t = Date.now();
    await ipam.createAffinity({ host: 'node-a', cidr: '198.19.2.0/26', state: 'pending', deleted: false });
    await new Promise((r) => setTimeout(r, 100));
    expect(target.current).not.toContain('198.19.2.0/26');
    const pending = (await ipam.getAffinity('node-a', '198.19.2.0/26'))!;
    await ipam.updateAffinity(
      { host: 'node-a', cidr: '198.19.2.0/26', state: 'confirmed', deleted: false },
      pending.revision,
    );
    await until('confirmed block', () => target.current.includes('route 198.19.2.0/26 blackhole;'), 2000);
    expect(Date.now() - t).toBeLessThan(5000);
    // Another host's affinity is no change for this node.
    const before = target.applied.length;
    await ipam.createAffinity({ host: 'node-b', cidr: '198.19.3.0/26', state: 'confirmed', deleted: false });
    await new Promise((r) => setTimeout(r, 150));
    expect(target.applied).toHaveLength(before);
  });

  test('an unchanged world renders nothing new; stop stops the target', async () => {
    const { target, bridge, ds } = await setup();
    await bridge.start();
    await ds.apply({ ...(await ds.get('IPPool', 'p')), kind: 'IPPool' });
    await new Promise((r) => setTimeout(r, 200));
    expect(target.applied).toHaveLength(1);
    await bridge.stop();
    expect(target.stopped).toBe(true);
  });

  test('warnings about skipped input are logged once', async () => {
    const { ds, logs, bridge } = await setup();
    await ds.create(
      peer('tor', {
        peerIP: '198.18.1.1',
        asNumber: 64600,
        password: { secretKeyRef: { name: 's', key: 'k' } },
      }),
    );
    await bridge.start();
    await bridge.resync();
    expect(
      logs.filter(
        (l) =>
          l ===
          'warn BGPPeer tor: password secret s/k not available; its BGP sessions are kept down until it is usable',
      ).length,
    ).toBe(1);
  });

  describe('passwords from a secret provider', () => {
    const torPeer = (key = 'tor') =>
      peer('tor', {
        peerIP: '198.18.1.1',
        asNumber: 64600,
        password: { secretKeyRef: { name: 'bgp-secrets', key } },
      });
    const passwordLines = (text: string) => text.split('\n').filter((l) => /^\s*password /.test(l));
    /** A protocol's first two lines. */
    const protocolBlock = (text: string, name: string) => {
      const lines = text.split('\n');
      const i = lines.indexOf(`protocol bgp ${name} from bgp_template {`);
      return lines.slice(i, i + 2);
    };

    test('the first apply already holds the password; the provider follows exactly the referenced secrets', async () => {
      const secrets = new MemorySecretProvider({ 'bgp-secrets': { tor: 'pw-1' }, other: { x: 'y' } });
      const { ds, target, bridge } = await setup({ secretProvider: secrets });
      await ds.create(torPeer());
      await bridge.start();
      expect(target.applied).toHaveLength(1);
      expect(passwordLines(target.current)).toEqual(['  password "pw-1";']);
      expect(secrets.followed()).toEqual(['bgp-secrets']);
    });

    test('a changed, removed and restored secret re-renders BIRD each time', async () => {
      const secrets = new MemorySecretProvider({ 'bgp-secrets': { tor: 'pw-1' } });
      const { ds, target, bridge, logs } = await setup({ secretProvider: secrets });
      await ds.create(torPeer());
      await bridge.start();
      secrets.set('bgp-secrets', { tor: 'pw-2' });
      await until('new password', () => passwordLines(target.current)[0] === '  password "pw-2";', 2000);
      secrets.set('bgp-secrets', { other: 'x' });
      await until('session kept down', () => target.current.includes('disabled on;'), 2000);
      // Never up without its password: the session is disabled, and the log names peer and secret.
      expect(protocolBlock(target.current, 'Global_198_18_1_1')).toEqual([
        'protocol bgp Global_198_18_1_1 from bgp_template {',
        '  disabled on;        # password secret bgp-secrets/tor not available: kept down rather than unauthenticated',
      ]);
      expect(logs).toContain(
        'warn BGPPeer tor: password secret bgp-secrets/tor not available; its BGP sessions are kept down until it is usable',
      );
      secrets.set('bgp-secrets', { tor: 'pw-3' });
      await until('restored', () => passwordLines(target.current)[0] === '  password "pw-3";', 2000);
      expect(target.current).not.toContain('disabled on;');
      // No value ever reaches a log line.
      expect(logs.filter((l) => /pw-\d/.test(l))).toEqual([]);
    });

    test('the mesh password, and a peer moved to another key or secret', async () => {
      const secrets = new MemorySecretProvider({
        mesh: { pw: 'mesh-pw' },
        'bgp-secrets': { tor: 'a', tor2: 'b' },
      });
      const { ds, target, bridge } = await setup({ secretProvider: secrets });
      await ds.create(
        bgpConfig('default', { nodeMeshPassword: { secretKeyRef: { name: 'mesh', key: 'pw' } } }),
      );
      await bridge.start();
      expect(passwordLines(target.current)).toEqual(['  password "mesh-pw";']);
      expect(secrets.followed()).toEqual(['mesh']);
      await ds.create(torPeer('tor2'));
      await until('peer password', () => passwordLines(target.current).includes('  password "b";'), 2000);
      expect(secrets.followed()).toEqual(['bgp-secrets', 'mesh']);
      await ds.delete('BGPConfiguration', 'default');
      await until('mesh password gone', () => !target.current.includes('mesh-pw'), 2000);
      expect(secrets.followed()).toEqual(['bgp-secrets']);
      // A secret no longer followed changes nothing.
      const before = target.applied.length;
      secrets.set('mesh', { pw: 'other' });
      await new Promise((r) => setTimeout(r, 100));
      expect(target.applied).toHaveLength(before);
    });

    test('a provider that is slow to read holds the render until it has the value', async () => {
      const inner = new MemorySecretProvider({ 'bgp-secrets': { tor: 'slow' } });
      const slow: SecretProvider = {
        follow: async (names) => {
          await new Promise((r) => setTimeout(r, 100));
          await inner.follow(names);
        },
        value: (n, k) => inner.value(n, k),
        subscribe: (l) => inner.subscribe(l),
        close: () => inner.close(),
      };
      const { ds, target, bridge } = await setup({ secretProvider: slow });
      await ds.create(torPeer());
      await bridge.start();
      expect(passwordLines(target.current)).toEqual(['  password "slow";']);
    });

    test('fixed values stay, a provider value for the same key wins; stop closes the provider', async () => {
      const secrets = new MemorySecretProvider({});
      const { ds, target, bridge } = await setup({
        secretProvider: secrets,
        secrets: { 'bgp-secrets/tor': 'fixed' },
      });
      await ds.create(torPeer());
      await bridge.start();
      expect(passwordLines(target.current)).toEqual(['  password "fixed";']);
      secrets.set('bgp-secrets', { tor: 'watched' });
      await until('provider value', () => passwordLines(target.current)[0] === '  password "watched";', 2000);
      await bridge.stop();
      expect(secrets.followed()).toEqual([]);
    });
  });
});
