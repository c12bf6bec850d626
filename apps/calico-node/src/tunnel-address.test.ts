import type { IPPool, Node } from '@calico-ts/api';
import { loggerOf, NOOP_LOGGER } from '@calico-ts/api/log';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { beforeEach, describe, expect, it } from 'vitest';
import { reconcileTunnelAddresses } from './tunnel-address.js';

const pool = (name: string, cidr: string, spec: Partial<IPPool['spec']> = {}): IPPool =>
  ({
    apiVersion: 'projectcalico.org/v3',
    kind: 'IPPool',
    metadata: { name },
    spec: { cidr, ipipMode: 'Never', vxlanMode: 'Never', ...spec },
  }) as IPPool;

const node = (labels: Record<string, string> = {}): Node => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Node',
  metadata: { name: 'n1', labels },
  spec: { bgp: { ipv4Address: '198.18.0.11/24' } },
});

describe('reconciling the tunnel address on the datastore', () => {
  let kv: MemoryKVStore;
  let ds: KVDatastore;
  let ipam: IpamClient;
  const log: string[] = [];
  beforeEach(async () => {
    kv = new MemoryKVStore();
    ds = new KVDatastore(kv, { backend: 'etcdv3' });
    ipam = new IpamClient(ds, new IpamStore(kv));
    await ds.create(node());
  });
  const handleKey = '/calico/ipam/v2/handle/vxlan-tunnel-addr-n1';

  it('assigns one address from the VXLAN pool, records it on the Node, and keeps it', async () => {
    await ds.create(pool('default-ipv4-ippool', '198.19.0.0/16', { vxlanMode: 'Always' }));
    const addr = await reconcileTunnelAddresses(
      ds,
      ipam,
      'n1',
      loggerOf((_level, m) => log.push(m)),
    );
    expect(addr).toMatch(/^198\.19\.\d+\.\d+$/);
    expect((await ds.get('Node', 'n1')).spec.ipv4VXLANTunnelAddr).toBe(addr);
    const attrs = await ipam.getAssignmentAttributes(addr!);
    expect(attrs.handleId).toBe('vxlan-tunnel-addr-n1');
    expect(attrs.attrs).toMatchObject({ node: 'n1', type: 'vxlanTunnelAddress' });
    expect(JSON.parse(kv.dump().kvs[handleKey]!)).toEqual({ block: { [attrs.block]: 1 }, deleted: false });
    const rev = kv.dump().revision;
    expect(await reconcileTunnelAddresses(ds, ipam, 'n1', NOOP_LOGGER)).toBe(addr);
    expect(kv.dump().revision).toBe(rev);
  });

  it('assigns nothing without a VXLAN pool, and releases the address when VXLAN is turned off', async () => {
    await ds.create(pool('p', '198.19.0.0/16', { vxlanMode: 'Never' }));
    expect(await reconcileTunnelAddresses(ds, ipam, 'n1', NOOP_LOGGER)).toBeUndefined();
    expect((await ds.get('Node', 'n1')).spec.ipv4VXLANTunnelAddr).toBeUndefined();

    const p = await ds.get('IPPool', 'p');
    await ds.update({ ...p, spec: { ...p.spec, vxlanMode: 'Always' } });
    const addr = await reconcileTunnelAddresses(ds, ipam, 'n1', NOOP_LOGGER);
    expect(addr).toBeDefined();
    const q = await ds.get('IPPool', 'p');
    await ds.update({ ...q, spec: { ...q.spec, vxlanMode: 'Never' } });
    expect(await reconcileTunnelAddresses(ds, ipam, 'n1', NOOP_LOGGER)).toBeUndefined();
    expect((await ds.get('Node', 'n1')).spec.ipv4VXLANTunnelAddr).toBeUndefined();
    expect(kv.dump().kvs[handleKey]).toBeUndefined();
    await expect(ipam.getAssignmentAttributes(addr!)).rejects.toThrow(/not assigned/);
  });

  it('dual stack: an IPv6 VXLAN pool gives the node spec.ipv6VXLANTunnelAddr from IPv6 IPAM', async () => {
    await ds.create(pool('default-ipv4-ippool', '198.19.0.0/16', { vxlanMode: 'Always' }));
    await ds.create(pool('default-ipv6-ippool', 'fd00:19::/64', { vxlanMode: 'Always', blockSize: 122 }));
    const v4 = await reconcileTunnelAddresses(ds, ipam, 'n1', NOOP_LOGGER);
    const spec = (await ds.get('Node', 'n1')).spec;
    expect(spec.ipv4VXLANTunnelAddr).toBe(v4);
    expect(spec.ipv6VXLANTunnelAddr).toMatch(/^fd00:19::[0-9a-f:]+$/);
    const attrs = await ipam.getAssignmentAttributes(spec.ipv6VXLANTunnelAddr!);
    expect(attrs.handleId).toBe('vxlan-v6-tunnel-addr-n1');
    expect(attrs.attrs).toMatchObject({ node: 'n1', type: 'vxlanV6TunnelAddress' });
    // Turning VXLAN off in the IPv6 pool releases only the IPv6 address.
    const p6 = await ds.get('IPPool', 'default-ipv6-ippool');
    await ds.update({ ...p6, spec: { ...p6.spec, vxlanMode: 'Never' } });
    expect(await reconcileTunnelAddresses(ds, ipam, 'n1', NOOP_LOGGER)).toBe(v4);
    expect((await ds.get('Node', 'n1')).spec.ipv6VXLANTunnelAddr).toBeUndefined();
    expect(kv.dump().kvs['/calico/ipam/v2/handle/vxlan-v6-tunnel-addr-n1']).toBeUndefined();
  });
});
