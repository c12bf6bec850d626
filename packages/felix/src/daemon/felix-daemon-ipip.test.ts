/**
 * FelixDaemon's IPIP path on fakes: Nodes (with the tunnel address calico-node allocates into
 * `ipv4IPIPTunnelAddr`), IPPools and IPAM blocks from the in-memory datastore through the syncer,
 * and what FakeTunnelNet (a kernel whose `ipip` module makes tunl0) ends up with. By default BIRD
 * programs the IPIP routes and Felix only the device; FelixConfiguration `programClusterRoutes:
 * Enabled` hands the routes to Felix, in Always and CrossSubnet mode.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import { KVDatastore, kvSource, MemoryKVStore } from '@calico-ts/datastore';
import { blockKey, decodeBlock, encodeBlock } from '@calico-ts/datastore/internal';
import { FakeNft } from '@calico-ts/nftables/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeTunnelNet } from '../dataplane/testing-internal/fake-tunnel-net.js';
import { NOOP_LOGGER } from '../logging.js';
import { FelixDaemon } from './felix-daemon.js';

const V3 = 'projectcalico.org/v3';

async function until(what: string, f: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function writeAffineBlock(kv: MemoryKVStore, cidr: string, host: string): Promise<void> {
  await kv.create(
    blockKey(cidr),
    encodeBlock({
      cidr,
      affinity: `host:${host}`,
      allocations: Array(64).fill(null),
      unallocated: Array.from({ length: 64 }, (_, i) => i),
      attributes: [],
      sequenceNumber: 0n,
      sequenceNumberForAllocation: null,
      deleted: false,
    }),
  );
}

const nodeRes = (name: string, ip: string, tunnel?: string) =>
  ({
    apiVersion: V3,
    kind: 'Node',
    metadata: { name },
    spec: { bgp: { ipv4Address: ip, ...(tunnel ? { ipv4IPIPTunnelAddr: tunnel } : {}) } },
  }) as Resource & { kind: 'Node' };

describe('FelixDaemon IPIP', () => {
  let dir: string | undefined;
  let ds: KVDatastore | undefined;
  let daemon: FelixDaemon | undefined;

  afterEach(async () => {
    await daemon?.stop();
    await ds?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    daemon = undefined;
    ds = undefined;
    dir = undefined;
  });

  async function start(opts: {
    mode: 'Always' | 'CrossSubnet';
    felixPrograms: boolean;
    ipipMTU?: number;
  }): Promise<{ net: FakeTunnelNet; ds: KVDatastore }> {
    dir = await mkdtemp(join(tmpdir(), 'felix-ipip-'));
    const kv = new MemoryKVStore();
    ds = new KVDatastore(kv, { backend: 'memory' });
    const net = new FakeTunnelNet({ ipipModule: 'available' });
    net.addUplink('eth0', '198.18.0.2/24', 1500);
    await writeAffineBlock(kv, '198.19.0.0/26', 'node-a');
    await writeAffineBlock(kv, '198.19.0.64/26', 'node-b');
    await writeAffineBlock(kv, '198.19.0.128/26', 'node-c');
    await ds.create({
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'ipip' },
      spec: {
        cidr: '198.19.0.0/16',
        blockSize: 26,
        ipipMode: opts.mode,
        vxlanMode: 'Never',
        nodeSelector: 'all()',
      },
    } as Resource & { kind: 'IPPool' });
    const fc: Record<string, unknown> = {};
    if (opts.felixPrograms) fc.programClusterRoutes = 'Enabled';
    if (opts.ipipMTU !== undefined) fc.ipipMTU = opts.ipipMTU;
    if (Object.keys(fc).length > 0) {
      await ds.create({
        apiVersion: V3,
        kind: 'FelixConfiguration',
        metadata: { name: 'default' },
        spec: fc,
      } as Resource & { kind: 'FelixConfiguration' });
    }
    await ds.create(nodeRes('node-a', '198.18.0.2/24', '198.19.0.1'));
    await ds.create(nodeRes('node-b', '198.18.0.3/24', '198.19.0.65'));
    await ds.create(nodeRes('node-c', '198.18.1.4/24', '198.19.0.129'));
    daemon = new FelixDaemon({
      local: {
        env: { FELIX_FELIXHOSTNAME: 'node-a', FELIX_MTUFILEPATH: join(dir, 'mtu') },
        file: {},
        hostname: 'os-host',
      },
      datastore: ds,
      ipamBlocks: kvSource('ipam-blocks', kv, '/calico/ipam/v2/assignment/', decodeBlock),
      nft: new FakeNft(),
      net,
      log: NOOP_LOGGER,
      debounceMs: 10,
      interfacePollMs: 50,
    });
    await daemon.start();
    return { net, ds };
  }

  it('Always, routes by Felix: tunl0 addressed from the Node, MTU 1480, every remote block via its node over tunl0', async () => {
    const { net } = await start({ mode: 'Always', felixPrograms: true });
    await until('the route to node-c', () =>
      net.dump().includes('route 198.19.0.128/26 via 198.18.1.4 dev tunl0 proto 80 onlink'),
    );
    expect(net.dump()).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'addr 198.19.0.1/32 dev tunl0',
      'link eth0 mtu 1500 up',
      'link tunl0 mtu 1480 up ipip',
      'route 198.19.0.128/26 via 198.18.1.4 dev tunl0 proto 80 onlink',
      'route 198.19.0.64/26 via 198.18.0.3 dev tunl0 proto 80 onlink',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
  });

  it('CrossSubnet, routes by Felix: the node on this subnet unencapsulated, the other over tunl0; a deleted Node takes its route', async () => {
    const { net, ds } = await start({ mode: 'CrossSubnet', felixPrograms: true });
    await until('both routes', () => net.dump().filter((l) => l.startsWith('route')).length === 3);
    expect(net.dump().filter((l) => l.startsWith('route'))).toEqual([
      'route 198.19.0.128/26 via 198.18.1.4 dev tunl0 proto 80 onlink',
      'route 198.19.0.64/26 via 198.18.0.3 dev eth0 proto 80',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
    await ds.delete('Node', 'node-c');
    await until('node-c’s route gone', () => !net.dump().some((l) => l.includes('198.18.1.4')));
    expect(net.dump().filter((l) => l.startsWith('route'))).toEqual([
      'route 198.19.0.64/26 via 198.18.0.3 dev eth0 proto 80',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);
  });

  it('routes left to BIRD (the default): Felix keeps only the device, with FelixConfiguration ipipMTU', async () => {
    const { net } = await start({ mode: 'Always', felixPrograms: false, ipipMTU: 1400 });
    await until('tunl0 up', () => net.dump().includes('link tunl0 mtu 1400 up ipip'));
    expect(net.dump()).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'addr 198.19.0.1/32 dev tunl0',
      'link eth0 mtu 1500 up',
      'link tunl0 mtu 1400 up ipip',
    ]);
  });

  it('FelixConfiguration changed at run time: a new ipipMTU and programClusterRoutes Enabled take effect at once', async () => {
    const { net, ds } = await start({ mode: 'Always', felixPrograms: false, ipipMTU: 1400 });
    await until('tunl0 up', () => net.dump().includes('link tunl0 mtu 1400 up ipip'));
    const fc = await ds.get('FelixConfiguration', 'default');
    fc.spec = { ...fc.spec, ipipMTU: 1300, programClusterRoutes: 'Enabled' };
    await ds.update(fc as typeof fc & { kind: 'FelixConfiguration' });
    await until('the routes', () => net.dump().filter((l) => l.startsWith('route')).length === 3);
    expect(net.dump().filter((l) => l.includes('tunl0'))).toEqual([
      'addr 198.19.0.1/32 dev tunl0',
      'link tunl0 mtu 1300 up ipip',
      'route 198.19.0.128/26 via 198.18.1.4 dev tunl0 proto 80 onlink',
      'route 198.19.0.64/26 via 198.18.0.3 dev tunl0 proto 80 onlink',
    ]);
  });

  it('a changed tunnel address replaces the old one on tunl0', async () => {
    const { net, ds } = await start({ mode: 'Always', felixPrograms: true });
    await until('tunl0', () => net.links.has('tunl0'));
    const me = await ds.get('Node', 'node-a');
    (me.spec as { bgp: { ipv4IPIPTunnelAddr?: string } }).bgp.ipv4IPIPTunnelAddr = '198.19.0.2';
    await ds.update(me as typeof me & { kind: 'Node' });
    await until('the new address', () => net.dump().includes('addr 198.19.0.2/32 dev tunl0'));
    expect(net.dump().filter((l) => l.startsWith('addr'))).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'addr 198.19.0.2/32 dev tunl0',
    ]);
  });
});
