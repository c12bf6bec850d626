/**
 * FelixDaemon's VXLAN path on fakes: Nodes, IPPools and IPAM blocks from the in-memory datastore
 * through the syncer, and the kernel state FakeTunnelNet ends up with. A Node deleted takes its
 * routes, neighbour and FDB entry away; a new block appears as a route. The hosts tunnel packets
 * are accepted from follow the Nodes and the external nodes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import { KVDatastore, kvSource, MemoryKVStore } from '@calico-ts/datastore';
import { blockKey, decodeBlock, encodeBlock } from '@calico-ts/datastore/internal';
import { FakeNft } from '@calico-ts/nftables/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { vtepMacFor } from '../calc/vxlan-resolver.js';
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

/** An empty block affine to `host`, written where IPAM keeps it. */
async function writeAffineBlock(kv: MemoryKVStore, cidr: string, host: string): Promise<void> {
  const block = {
    cidr,
    affinity: `host:${host}`,
    allocations: Array(64).fill(null),
    unallocated: Array.from({ length: 64 }, (_, i) => i),
    attributes: [],
    sequenceNumber: 0n,
    sequenceNumberForAllocation: null,
    deleted: false,
  };
  await kv.create(blockKey(cidr), encodeBlock(block));
}

describe('FelixDaemon VXLAN', () => {
  let dir: string;
  let ds: KVDatastore;
  let net: FakeTunnelNet;
  let kv: MemoryKVStore;
  let daemon: FelixDaemon;
  let nft: FakeNft;

  const nodeRes = (name: string, ip: string, tunnel: string) =>
    ({
      apiVersion: V3,
      kind: 'Node',
      metadata: { name },
      spec: { bgp: { ipv4Address: ip }, ipv4VXLANTunnelAddr: tunnel },
    }) as Resource & { kind: 'Node' };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'felix-vxlan-'));
    kv = new MemoryKVStore();
    ds = new KVDatastore(kv, { backend: 'memory' });
    net = new FakeTunnelNet();
    net.addUplink('eth0', '198.18.0.2/24', 1500);
    await writeAffineBlock(kv, '198.19.0.0/26', 'node-a');
    await writeAffineBlock(kv, '198.19.0.64/26', 'node-b');
    await ds.create({
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'vx' },
      spec: {
        cidr: '198.19.0.0/16',
        blockSize: 26,
        vxlanMode: 'Always',
        ipipMode: 'Never',
        nodeSelector: 'all()',
      },
    } as Resource & { kind: 'IPPool' });
    await ds.create(nodeRes('node-a', '198.18.0.2/24', '198.19.0.0'));
    await ds.create(nodeRes('node-b', '198.18.0.3/24', '198.19.0.64'));
    nft = new FakeNft();
    daemon = new FelixDaemon({
      local: {
        env: { FELIX_FELIXHOSTNAME: 'node-a', FELIX_MTUFILEPATH: join(dir, 'mtu') },
        file: {},
        hostname: 'os-host',
      },
      datastore: ds,
      ipamBlocks: kvSource('ipam-blocks', kv, '/calico/ipam/v2/assignment/', decodeBlock),
      nft,
      net,
      log: NOOP_LOGGER,
      debounceMs: 10,
      interfacePollMs: 50,
    });
    await daemon.start();
  });

  afterEach(async () => {
    await daemon.stop();
    await ds.close();
    await rm(dir, { recursive: true, force: true });
  });

  const has = (line: string) => net.dump().includes(line);
  const macB = vtepMacFor('node-b');

  it('programs the device and the remote node’s route, neighbour and FDB entry; a deleted Node takes them away', async () => {
    await until('the route to node-b', () =>
      has('route 198.19.0.64/26 via 198.19.0.64 dev vxlan.calico proto 80 onlink'),
    );
    expect(net.dump()).toEqual([
      'addr 198.18.0.2/24 dev eth0',
      'addr 198.19.0.0/32 dev vxlan.calico',
      `fdb ${macB} dev vxlan.calico dst 198.18.0.3 permanent`,
      'link eth0 mtu 1500 up',
      `link vxlan.calico mtu 1450 up vxlan id 4096 dstport 4789 local 198.18.0.2 dev eth0 address ${vtepMacFor('node-a')}`,
      `neigh 198.19.0.64 dev vxlan.calico lladdr ${macB} permanent`,
      'route 198.19.0.64/26 via 198.19.0.64 dev vxlan.calico proto 80 onlink',
      'route blackhole 198.19.0.0/26 proto 80',
    ]);

    await writeAffineBlock(kv, '198.19.1.0/26', 'node-b');
    await until('the new block of node-b', () =>
      has('route 198.19.1.0/26 via 198.19.0.64 dev vxlan.calico proto 80 onlink'),
    );

    await ds.delete('Node', 'node-b');
    await until('node-b’s routes gone', () => !net.dump().some((l) => l.includes('198.19.0.64')));
    expect(net.dump().filter((l) => l.includes('vxlan.calico'))).toEqual([
      'addr 198.19.0.0/32 dev vxlan.calico',
      `link vxlan.calico mtu 1450 up vxlan id 4096 dstport 4789 local 198.18.0.2 dev eth0 address ${vtepMacFor('node-a')}`,
    ]);
  });

  /** The members of an IPv4 set of table calico in the fake kernel, or undefined without the set. */
  const setMembers = (name: string) =>
    nft
      .dump()
      .tables.find((t) => t.family === 'ip' && t.name === 'calico')
      ?.sets.find((x) => x.name === name)
      ?.elem?.map((e) => JSON.stringify(e));

  it('accepts VXLAN from the other nodes’ VTEPs and the external nodes; the set follows the Nodes', async () => {
    await until('node-b in the VXLAN sources', () => setMembers('cali40all-vxlan-net')?.length === 1);
    expect(setMembers('cali40all-vxlan-net')).toEqual(['"198.18.0.3"']);
    // No IPIP pool: no IPIP rules.
    expect(setMembers('cali40all-hosts-net')).toBeUndefined();

    await ds.create({
      apiVersion: V3,
      kind: 'FelixConfiguration',
      metadata: { name: 'default' },
      spec: { externalNodesList: ['198.18.7.0/24'] },
    } as Resource & { kind: 'FelixConfiguration' });
    await until(
      'the external nodes in the VXLAN sources',
      () => setMembers('cali40all-vxlan-net')?.length === 2,
    );
    expect(setMembers('cali40all-vxlan-net')).toEqual([
      '"198.18.0.3"',
      JSON.stringify({ prefix: { addr: '198.18.7.0', len: 24 } }),
    ]);

    await ds.delete('Node', 'node-b');
    await until('node-b gone from the VXLAN sources', () => setMembers('cali40all-vxlan-net')?.length === 1);
  });

  it('accepts IPIP from every Calico host once a pool uses IPIP', async () => {
    await until('the VXLAN rules', () => setMembers('cali40all-vxlan-net') !== undefined);
    await ds.create({
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'ipip' },
      spec: {
        cidr: '198.18.64.0/18',
        blockSize: 26,
        ipipMode: 'Always',
        vxlanMode: 'Never',
        nodeSelector: 'all()',
      },
    } as Resource & { kind: 'IPPool' });
    await until('the IPIP sources', () => setMembers('cali40all-hosts-net') !== undefined);
    expect(setMembers('cali40all-hosts-net')).toEqual(['"198.18.0.2"', '"198.18.0.3"']);
  });

  it('an IPPool turned to vxlanMode Never removes the device', async () => {
    await until('the device', () => net.links.has('vxlan.calico'));
    const p = await ds.get('IPPool', 'vx');
    p.spec.vxlanMode = 'Never';
    await ds.update(p as typeof p & { kind: 'IPPool' });
    await until('the device gone', () => !net.links.has('vxlan.calico'));
    expect(net.dump()).toEqual(['addr 198.18.0.2/24 dev eth0', 'link eth0 mtu 1500 up']);
  });
});
