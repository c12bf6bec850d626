import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKVStore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import type { AssignmentAttrs } from '@calico-ts/ipam/internal';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type CalicoctlRun, calicoctlExecutable } from './testing-internal/executable.js';

const EXE = calicoctlExecutable();
const R = '/calico/resources/v3/projectcalico.org';
const IPAM = '/calico/ipam/v2';

function calicoctl(args: string[], stdin = ''): Promise<CalicoctlRun> {
  return EXE.run(args, { stdin });
}

beforeAll(async () => {
  await EXE.ensureBuilt();
}, 120_000);

const POOLS = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 198.18.0.0/24}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-b}
spec: {cidr: 198.19.0.0/24}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-c}
spec: {cidr: 198.20.0.0/24}
`;

/** Everything under /calico/ as etcd holds it. */
async function dump(etcd: EtcdServer): Promise<Map<string, string>> {
  const r = await etcd.etcdctl(['get', '--prefix', '/calico/', '-w', 'json']);
  expect(r.code).toBe(0);
  const kvs = (JSON.parse(r.stdout).kvs ?? []) as { key: string; value?: string }[];
  const b64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');
  return new Map(kvs.map((kv) => [b64(kv.key), b64(kv.value)]));
}

describe.runIf(etcdAvailable())(`${EXE.name} delete node against etcd`, () => {
  let etcd: EtcdServer;
  let dir: string;
  let kv: KVStore;
  let ds: KVDatastore;
  let ipam: IpamClient;
  const ctl = (...args: string[]) => calicoctl([...args, '-c', join(dir, 'calicoctl.cfg')]);
  /** The blocks each node got, by pool. */
  const blocks: Record<string, { a: string; b: string; c: string }> = {};

  /** A node with two endpoints, three tunnel addresses, a leaked address, an empty block and its config. */
  async function populate(node: string, emptyBlock: string): Promise<void> {
    const esc = node.replaceAll('-', '--');
    await ds.create({ apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: node }, spec: {} });
    const assign = async (handleId: string, pool: string, attrs: AssignmentAttrs, num = 1) =>
      (await ipam.autoAssign({ num4: num, num6: 0, handleId, hostname: node, attrs, ipv4Pools: [pool] }))
        .ipv4;
    const web = await assign(
      `k8s-pod-network.${node}-web`,
      'pool-a',
      { node, namespace: 'default', pod: 'web-1' },
      2,
    );
    const api = await assign(`k8s-pod-network.${node}-api`, 'pool-a', {
      node,
      namespace: 'prod',
      pod: 'api',
    });
    const ipip = await assign(`ipip-tunnel-addr-${node}`, 'pool-a', { node, type: 'ipipTunnelAddress' });
    const vxlan = await assign(`vxlan-tunnel-addr-${node}`, 'pool-a', { node, type: 'vxlanTunnelAddress' });
    const wg = await assign(`wireguard-tunnel-addr-${node}`, 'pool-a', {
      node,
      type: 'wireguardTunnelAddress',
    });
    // An address no endpoint holds (a leak): its block keeps it and loses its owner.
    const leak = await assign(`k8s-pod-network.${node}-gone`, 'pool-b', {
      node,
      namespace: 'default',
      pod: 'gone',
    });
    expect(await ipam.claimAffinity(node, emptyBlock)).toEqual({ claimed: [emptyBlock], failed: [] });
    blocks[node] = { a: web[0]!.block, b: leak[0]!.block, c: emptyBlock };
    expect(new Set([...web, ...api, ...ipip, ...vxlan, ...wg].map((a) => a.block))).toEqual(
      new Set([web[0]!.block]),
    );

    const stored = await ds.get('Node', node);
    await ds.update({
      ...stored,
      spec: {
        bgp: { ipv4IPIPTunnelAddr: ipip[0]!.address },
        ipv4VXLANTunnelAddr: vxlan[0]!.address,
        wireguard: { interfaceIPv4Address: wg[0]!.address },
      },
    });
    const wep = (ns: string, pod: string, ips: string[]) =>
      ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: { name: `${esc}-k8s-${pod.replaceAll('-', '--')}-eth0`, namespace: ns },
        spec: {
          node,
          orchestrator: 'k8s',
          pod,
          endpoint: 'eth0',
          interfaceName: `cali${pod.replaceAll('-', '')}${node.length}`,
          ipNetworks: ips.map((ip) => `${ip}/32`),
        },
      } as never);
    await wep(
      'default',
      'web-1',
      web.map((a) => a.address),
    );
    await wep('prod', 'api', [api[0]!.address]);
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'BGPPeer',
      metadata: { name: `peer-${node}` },
      spec: { node, peerIP: '198.51.100.1', asNumber: 64513 },
    } as never);
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'FelixConfiguration',
      metadata: { name: `node.${node}` },
      spec: { logSeverityScreen: 'Debug' },
    } as never);
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'BGPConfiguration',
      metadata: { name: `node.${node}` },
      spec: { logSeverityScreen: 'Debug' },
    } as never);
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'HostEndpoint',
      metadata: { name: `${node}-eth0` },
      spec: { node, interfaceName: 'eth0', expectedIPs: ['198.51.100.10'] },
    } as never);
  }

  beforeAll(async () => {
    etcd = await startEtcd();
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-delete-node-int-'));
    await writeFile(
      join(dir, 'calicoctl.cfg'),
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: ${etcd.clientUrl}\n`,
    );
    kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints });
    ds = new KVDatastore(kv, { backend: 'etcdv3' });
    ipam = new IpamClient(ds, new IpamStore(kv));
    expect(await calicoctl(['apply', '-f', '-', '-c', join(dir, 'calicoctl.cfg')], POOLS)).toMatchObject({
      code: 0,
      stdout: "Successfully applied 3 'IPPool' resource(s)\n",
    });
    await populate('node-1', '198.20.0.0/26');
    await populate('node-1-b', '198.20.0.64/26');
    // Not node-scoped: a global peer and the global configurations stay.
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'BGPPeer',
      metadata: { name: 'global-peer' },
      spec: { peerIP: '198.51.100.2', asNumber: 64514 },
    } as never);
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'FelixConfiguration',
      metadata: { name: 'default' },
      spec: {},
    } as never);
  }, 60_000);

  afterAll(async () => {
    await ds?.close().catch(() => {});
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("a node that does not exist: upstream's not-found error, exit 1, nothing changes", async () => {
    const before = await dump(etcd);
    expect(before.has(`${R}/nodes/node-1`)).toBe(true);
    expect(await ctl('delete', 'node', 'node-9')).toEqual({
      code: 1,
      stdout: '',
      stderr: "Failed to delete 'Node' resource: resource does not exist: Node(node-9) with error: <nil>\n\n",
    });
    expect(await dump(etcd)).toEqual(before);
    expect(await ctl('delete', 'node', 'node-9', '--skip-not-exists')).toEqual({
      code: 0,
      stdout: "Successfully deleted 1 'Node' resource(s)\n",
      stderr: '',
    });
    expect(await dump(etcd)).toEqual(before);
  }, 60_000);

  test('delete node removes its endpoints, addresses, affinities, peers, configuration and host endpoints; the other node is untouched', async () => {
    const before = await dump(etcd);
    const b1 = blocks['node-1']!;
    const blockKey = (cidr: string) => `${IPAM}/assignment/ipv4/block/${cidr.replace('/', '-')}`;
    const gone = [
      `${R}/nodes/node-1`,
      `${R}/workloadendpoints/default/node--1-k8s-web--1-eth0`,
      `${R}/workloadendpoints/prod/node--1-k8s-api-eth0`,
      `${R}/bgppeers/peer-node-1`,
      `${R}/felixconfigurations/node.node-1`,
      `${R}/bgpconfigurations/node.node-1`,
      `${R}/hostendpoints/node-1-eth0`,
      `${IPAM}/host/node-1/ipv4/block/${b1.a.replace('/', '-')}`,
      `${IPAM}/host/node-1/ipv4/block/${b1.b.replace('/', '-')}`,
      `${IPAM}/host/node-1/ipv4/block/${b1.c.replace('/', '-')}`,
      blockKey(b1.a), // empty once the endpoints' and tunnel addresses are released
      blockKey(b1.c), // claimed, never used
      `${IPAM}/handle/k8s-pod-network.node-1-web`,
      `${IPAM}/handle/k8s-pod-network.node-1-api`,
      `${IPAM}/handle/ipip-tunnel-addr-node-1`,
      `${IPAM}/handle/vxlan-tunnel-addr-node-1`,
      `${IPAM}/handle/wireguard-tunnel-addr-node-1`,
    ];
    for (const k of gone) expect(before.has(k), k).toBe(true);
    const leakBlock = JSON.parse(before.get(blockKey(b1.b))!);
    expect(leakBlock.affinity).toBe('host:node-1');

    expect(await ctl('delete', 'node', 'node-1')).toEqual({
      code: 0,
      stdout: "Successfully deleted 1 'Node' resource(s)\n",
      stderr: '',
    });

    const after = await dump(etcd);
    for (const k of gone) expect(after.has(k), k).toBe(false);
    expect([...after.keys()].filter((k) => k.includes('node-1') && !k.includes('node-1-b'))).toEqual([
      `${IPAM}/handle/k8s-pod-network.node-1-gone`,
    ]);
    // The block with the leaked address stays, with no owner and the address still allocated.
    const leakAfter = JSON.parse(after.get(blockKey(b1.b))!);
    expect(leakAfter.affinity).toBeNull();
    expect(leakAfter.allocations).toEqual(leakBlock.allocations);
    expect(leakAfter.attributes).toEqual(leakBlock.attributes);
    // Every other key, node-1-b's objects, addresses and blocks included, is byte for byte the same.
    const expected = new Map(before);
    for (const k of gone) expected.delete(k);
    expected.set(blockKey(b1.b), after.get(blockKey(b1.b))!);
    expect(after).toEqual(expected);
    const b2 = blocks['node-1-b']!;
    for (const k of [
      `${R}/nodes/node-1-b`,
      `${R}/workloadendpoints/default/node--1--b-k8s-web--1-eth0`,
      `${R}/workloadendpoints/prod/node--1--b-k8s-api-eth0`,
      `${R}/bgppeers/peer-node-1-b`,
      `${R}/bgppeers/global-peer`,
      `${R}/felixconfigurations/node.node-1-b`,
      `${R}/felixconfigurations/default`,
      `${R}/bgpconfigurations/node.node-1-b`,
      `${R}/hostendpoints/node-1-b-eth0`,
      `${IPAM}/host/node-1-b/ipv4/block/${b2.a.replace('/', '-')}`,
      `${IPAM}/host/node-1-b/ipv4/block/${b2.c.replace('/', '-')}`,
      blockKey(b2.a),
      `${IPAM}/handle/ipip-tunnel-addr-node-1-b`,
    ]) {
      expect(after.get(k), k).toBe(before.get(k));
      expect(after.has(k), k).toBe(true);
    }

    // Deleting it again: it is gone, and nothing else changes.
    expect(await ctl('delete', 'node', 'node-1')).toEqual({
      code: 1,
      stdout: '',
      stderr: "Failed to delete 'Node' resource: resource does not exist: Node(node-1) with error: <nil>\n\n",
    });
    expect(await dump(etcd)).toEqual(after);
  }, 60_000);
});
