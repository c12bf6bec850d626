/**
 * bird-bridge through Typha, as calico-node runs it when Typha is configured: a BirdBridge whose
 * syncer is `agentSyncer` with the `bgp` type and this node's affinity filter renders exactly what
 * a BirdBridge on its own list and watch renders, at the start and after each change; another
 * node's blocks never reach it.
 */
import type { Resource } from '@calico-ts/api';
import { BirdBridge, type BirdConfigTarget, nodeAffinitySource } from '@calico-ts/bird-bridge';
import { KVDatastore, MemoryKVStore, type SyncerOptions } from '@calico-ts/datastore';
import { IpamStore } from '@calico-ts/ipam';
import { afterEach, describe, expect, it } from 'vitest';
import { agentSyncer } from './agent-syncer.js';
import { TyphaServer } from './server.js';
import { affinityFilter, typhaSources } from './syncer-sources.js';
import { agentConfig } from './testing-internal/agent-config.js';
import { until } from './testing-internal/consumer.js';

const V3 = 'projectcalico.org/v3';

/** Keeps the files of the last config BIRD was given. */
class RecordingTarget implements BirdConfigTarget {
  current = '';
  applies = 0;
  async apply(config: { main: string; files: Readonly<Record<string, string>> }) {
    this.current = Object.entries(config.files)
      .map(([name, text]) => `# ${name}\n${text}`)
      .join('\n');
    this.applies++;
    return { kind: 'reloaded' as const };
  }
  async stop(): Promise<void> {}
}

function node(name: string, ip: string): Resource {
  return {
    apiVersion: V3,
    kind: 'Node',
    metadata: { name },
    spec: { bgp: { ipv4Address: ip } },
  } as unknown as Resource;
}

const cfg = (port: number) => agentConfig({ FelixHostname: 'node-a', TyphaAddr: `127.0.0.1:${port}` });

describe('bird-bridge through Typha', () => {
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const s of stops.splice(0).reverse()) await s();
  });

  it('renders what its own syncer renders, at the start and after each change', async () => {
    const kv = new MemoryKVStore();
    const ds = new KVDatastore(kv, { backend: 'memory' });
    const ipam = new IpamStore(kv);
    await ds.create(node('node-a', '198.18.0.1/24'));
    await ds.create(node('node-b', '198.18.0.2/24'));
    await ds.create({
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: {
        cidr: '198.19.0.0/16',
        blockSize: 26,
        ipipMode: 'Never',
        vxlanMode: 'Never',
        natOutgoing: true,
      },
    } as unknown as Resource);
    await ipam.createAffinity({ host: 'node-a', cidr: '198.19.0.0/26', state: 'confirmed', deleted: false });
    await ipam.createAffinity({ host: 'node-b', cidr: '198.19.0.64/26', state: 'confirmed', deleted: false });

    const server = new TyphaServer({ sources: typhaSources(ds, kv), backend: 'memory' });
    await server.start();
    stops.push(() => server.stop());
    await until('Typha in sync', () => server.inSync);

    const bridge = (
      target: RecordingTarget,
      syncerFactory?: (o: SyncerOptions) => ReturnType<typeof agentSyncer>,
    ) => {
      const b = new BirdBridge({
        datastore: ds,
        affinities: nodeAffinitySource(kv, 'node-a'),
        nodeName: 'node-a',
        targets: { 4: target },
        debounceMs: 10,
        ...(syncerFactory ? { syncerFactory } : {}),
      });
      stops.push(() => b.stop());
      return b;
    };
    const direct = new RecordingTarget();
    const viaTypha = new RecordingTarget();
    await bridge(direct).start();
    await bridge(viaTypha, (o) =>
      agentSyncer(o, cfg(server.port), {
        client: 'bird',
        syncerType: 'bgp',
        filter: affinityFilter('node-a'),
      }),
    ).start();
    expect(server.stats().clients).toBe(1);
    expect(viaTypha.current).toContain('route 198.19.0.0/26 blackhole;');
    expect(viaTypha.current).toContain('Mesh_198_18_0_2');
    expect(viaTypha.current).not.toContain('198.19.0.64/26');
    expect(viaTypha.current).toBe(direct.current);

    // A peer, a block of this node, a block of another node, a node gone.
    await ds.create({
      apiVersion: V3,
      kind: 'BGPPeer',
      metadata: { name: 'tor' },
      spec: { peerIP: '198.18.1.1', asNumber: 64600 },
    } as unknown as Resource);
    await ipam.createAffinity({ host: 'node-a', cidr: '198.19.1.0/26', state: 'confirmed', deleted: false });
    await ipam.createAffinity({ host: 'node-b', cidr: '198.19.2.0/26', state: 'confirmed', deleted: false });
    await ds.delete('Node', 'node-b');
    const done = (t: RecordingTarget) =>
      t.current.includes('Global_198_18_1_1') &&
      t.current.includes('route 198.19.1.0/26 blackhole;') &&
      !t.current.includes('Mesh_198_18_0_2');
    await until('both bridges caught up', () => done(direct) && done(viaTypha));
    expect(viaTypha.current).not.toContain('198.19.2.0/26');
    expect(viaTypha.current).toBe(direct.current);
  });
});
