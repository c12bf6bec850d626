/**
 * Tunnel address allocation over the in-memory store with the real IpamClient: what lands in the
 * Node resource and in the IPAM records (handle, allocation attributes) is asserted as stored.
 */
import type { IPPoolSpec } from '@calico-ts/api';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { parseJsonExact } from '@calico-ts/datastore/internal';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  ensureIpipTunnelAddress,
  ensureVxlanTunnelAddress,
  TunnelAddressError,
  tunnelPoolCidrs,
} from './tunnel-address.js';

const V3 = 'projectcalico.org/v3';

describe('ensureVxlanTunnelAddress', () => {
  let kv: MemoryKVStore;
  let ds: KVDatastore;
  let ipam: IpamClient;

  const pool = (name: string, spec: Partial<IPPoolSpec> & { cidr: string }) =>
    ds.create({ apiVersion: V3, kind: 'IPPool', metadata: { name }, spec: { blockSize: 26, ...spec } });
  const raw = async (key: string) => {
    const got = await kv.get(key);
    return got ? (parseJsonExact(got.value) as Record<string, unknown>) : undefined;
  };
  const nodeSpec = async (name = 'node-a') =>
    (await raw(`/calico/resources/v3/projectcalico.org/nodes/${name}`))?.spec;

  beforeEach(async () => {
    kv = new MemoryKVStore();
    ds = new KVDatastore(kv, { backend: 'memory' });
    ipam = new IpamClient(ds, new IpamStore(kv), { sleep: async () => {} });
    await ds.create({
      apiVersion: V3,
      kind: 'Node',
      metadata: { name: 'node-a', labels: { zone: 'z1' } },
      spec: { bgp: { ipv4Address: '198.18.0.2/24' } },
    });
    await pool('pods', { cidr: '198.19.0.0/24', vxlanMode: 'Never' });
    await pool('vx', { cidr: '198.19.1.0/26', vxlanMode: 'Always' });
  });

  it('assigns one address from a VXLAN pool with upstream’s handle and attributes, records it in the Node, and is idempotent', async () => {
    const r = await ensureVxlanTunnelAddress(ds, ipam, 'node-a');
    expect(r).toEqual({ address: '198.19.1.0', action: 'assigned' });
    expect(await nodeSpec()).toEqual({
      bgp: { ipv4Address: '198.18.0.2/24' },
      ipv4VXLANTunnelAddr: '198.19.1.0',
    });
    expect(await raw('/calico/ipam/v2/handle/vxlan-tunnel-addr-node-a')).toEqual({
      block: { '198.19.1.0/26': 1 },
      deleted: false,
    });
    const block = await raw('/calico/ipam/v2/assignment/ipv4/block/198.19.1.0-26');
    expect(block?.affinity).toBe('host:node-a');
    expect(block?.attributes).toEqual([
      { handle_id: 'vxlan-tunnel-addr-node-a', secondary: { node: 'node-a', type: 'vxlanTunnelAddress' } },
    ]);

    const rev = await kv.revision();
    expect(await ensureVxlanTunnelAddress(ds, ipam, 'node-a')).toEqual({
      address: '198.19.1.0',
      action: 'kept',
    });
    expect(await kv.revision()).toBe(rev);
  });

  it('reads the pools from the caller’s cache when it answers, and lists them when it does not', async () => {
    let listed = 0;
    const counting = new Proxy(ds, {
      get(target, prop, receiver) {
        if (prop === 'list')
          return (...a: Parameters<KVDatastore['list']>) => {
            if (a[0] === 'IPPool') listed++;
            return target.list(...a);
          };
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    // The cache holds no VXLAN pool (yet): no address, and no list of the datastore's pools.
    expect(await ensureVxlanTunnelAddress(counting, ipam, 'node-a', { pools: () => [] })).toEqual({
      action: 'none',
    });
    expect(listed).toBe(0);
    expect(await nodeSpec()).toEqual({ bgp: { ipv4Address: '198.18.0.2/24' } });
    // The cache cannot answer (its watch is down): the datastore's pools decide.
    expect(await ensureVxlanTunnelAddress(counting, ipam, 'node-a', { pools: () => undefined })).toEqual({
      address: '198.19.1.0',
      action: 'assigned',
    });
    expect(listed).toBe(1);
  });

  it('replaces an address IPAM no longer holds, and one that now belongs to a pod (leaving the pod’s)', async () => {
    await ensureVxlanTunnelAddress(ds, ipam, 'node-a');
    await ipam.releaseByHandle('vxlan-tunnel-addr-node-a');
    await ipam.assignIP('198.19.1.0', {
      handleId: 'k8s-pod-network.c1',
      attrs: { node: 'node-a', pod: 'p', namespace: 'n' },
      hostname: 'node-a',
    });
    const r = await ensureVxlanTunnelAddress(ds, ipam, 'node-a');
    expect(r).toEqual({ address: '198.19.1.1', action: 'assigned', previous: '198.19.1.0' });
    expect((await ipam.getAssignmentAttributes('198.19.1.0')).handleId).toBe('k8s-pod-network.c1');
    expect((await ipam.getAssignmentAttributes('198.19.1.1')).attrs).toEqual({
      node: 'node-a',
      type: 'vxlanTunnelAddress',
    });

    await ipam.releaseByHandle('vxlan-tunnel-addr-node-a');
    // Released addresses go to the back of the block's free list, so the next one is .2.
    expect(await ensureVxlanTunnelAddress(ds, ipam, 'node-a')).toEqual({
      address: '198.19.1.2',
      action: 'assigned',
      previous: '198.19.1.1',
    });
  });

  it('moves the address when its pool stops being a VXLAN pool, and removes it when none is left', async () => {
    await ensureVxlanTunnelAddress(ds, ipam, 'node-a');
    await pool('vx2', { cidr: '198.19.2.0/26', vxlanMode: 'CrossSubnet' });
    const vx = await ds.get('IPPool', 'vx');
    vx.spec.vxlanMode = 'Never';
    await ds.update(vx);
    expect(await ensureVxlanTunnelAddress(ds, ipam, 'node-a')).toEqual({
      address: '198.19.2.0',
      action: 'assigned',
      previous: '198.19.1.0',
    });
    expect(await raw('/calico/ipam/v2/handle/vxlan-tunnel-addr-node-a')).toEqual({
      block: { '198.19.2.0/26': 1 },
      deleted: false,
    });

    const vx2 = await ds.get('IPPool', 'vx2');
    vx2.spec.disabled = true;
    await ds.update(vx2);
    expect(await ensureVxlanTunnelAddress(ds, ipam, 'node-a')).toEqual({
      action: 'removed',
      previous: '198.19.2.0',
    });
    expect(await nodeSpec()).toEqual({ bgp: { ipv4Address: '198.18.0.2/24' } });
    expect(await raw('/calico/ipam/v2/handle/vxlan-tunnel-addr-node-a')).toBeUndefined();
    await expect(ipam.getAssignmentAttributes('198.19.2.0')).rejects.toMatchObject({ code: 'not-found' });
    expect(await ensureVxlanTunnelAddress(ds, ipam, 'node-a')).toEqual({ action: 'none' });
  });

  it('honours allowedUses and nodeSelector, and fails clearly for a missing Node', async () => {
    const node = await ds.get('Node', 'node-a');
    const pools = [
      {
        metadata: { name: 'a' },
        spec: { cidr: '198.19.4.0/24', vxlanMode: 'Always', allowedUses: ['Workload'] },
      },
      {
        metadata: { name: 'b' },
        spec: { cidr: '198.19.5.0/24', vxlanMode: 'Always', nodeSelector: 'zone == "z2"' },
      },
      {
        metadata: { name: 'c' },
        spec: { cidr: '198.19.6.0/24', vxlanMode: 'Always', nodeSelector: 'zone == "z1"' },
      },
      { metadata: { name: 'd' }, spec: { cidr: 'fd00:19::/120', vxlanMode: 'Always' } },
      { metadata: { name: 'e' }, spec: { cidr: '198.19.7.0/24', ipipMode: 'Always' } },
    ] as unknown as Parameters<typeof tunnelPoolCidrs>[2];
    expect(tunnelPoolCidrs('vxlan', node, pools)).toEqual(['198.19.6.0/24']);
    expect(tunnelPoolCidrs('ipip', node, pools)).toEqual(['198.19.7.0/24']);

    const err = await ensureVxlanTunnelAddress(ds, ipam, 'node-x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TunnelAddressError);
    expect(err).toMatchObject({ code: 'node-not-found', message: 'Calico Node "node-x" does not exist' });
  });

  it('IPIP: the address goes to spec.bgp.ipv4IPIPTunnelAddr with its own handle', async () => {
    await pool('ipip', { cidr: '198.19.3.0/26', ipipMode: 'Always' });
    expect(await ensureIpipTunnelAddress(ds, ipam, 'node-a')).toEqual({
      address: '198.19.3.0',
      action: 'assigned',
    });
    expect(await nodeSpec()).toEqual({
      bgp: { ipv4Address: '198.18.0.2/24', ipv4IPIPTunnelAddr: '198.19.3.0' },
    });
    expect((await ipam.getAssignmentAttributes('198.19.3.0')).handleId).toBe('ipip-tunnel-addr-node-a');
    await ds.delete('IPPool', 'ipip');
    expect(await ensureIpipTunnelAddress(ds, ipam, 'node-a')).toEqual({
      action: 'removed',
      previous: '198.19.3.0',
    });
    expect(await nodeSpec()).toEqual({ bgp: { ipv4Address: '198.18.0.2/24' } });
  });
});
