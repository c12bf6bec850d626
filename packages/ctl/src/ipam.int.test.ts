import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKVStore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type CalicoctlRun, calicoctlExecutable } from './testing-internal/executable.js';

const EXE = calicoctlExecutable();

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
spec: {cidr: 198.19.0.0/16}
`;

describe.runIf(etcdAvailable())(`${EXE.name} ipam against etcd`, () => {
  let etcd: EtcdServer;
  let dir: string;
  let kv: KVStore;
  let ds: KVDatastore;
  let ipam: IpamClient;
  const ctl = (...args: string[]) => calicoctl([...args, '-c', join(dir, 'calicoctl.cfg')]);

  beforeAll(async () => {
    etcd = await startEtcd();
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-ipam-int-'));
    await writeFile(
      join(dir, 'calicoctl.cfg'),
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: ${etcd.clientUrl}\n`,
    );
    kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints });
    ds = new KVDatastore(kv, { backend: 'etcdv3' });
    ipam = new IpamClient(ds, new IpamStore(kv));
  }, 60_000);

  afterAll(async () => {
    await ds?.close().catch(() => {});
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('show, show --ip, a leak found by check and freed by release, delete ippool', async () => {
    const apply = await calicoctl(['apply', '-f', '-', '-c', join(dir, 'calicoctl.cfg')], POOLS);
    expect(apply).toMatchObject({ code: 0, stdout: "Successfully applied 2 'IPPool' resource(s)\n" });
    for (const name of ['node-a', 'node-b']) {
      await ds.create({ apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name }, spec: {} });
    }
    const web1 = await ipam.autoAssign({
      num4: 3,
      num6: 0,
      handleId: 'k8s-pod-network.c1',
      hostname: 'node-a',
      attrs: { node: 'node-a', namespace: 'default', pod: 'web-1' },
      ipv4Pools: ['pool-a'],
    });
    const web2 = await ipam.autoAssign({
      num4: 1,
      num6: 0,
      handleId: 'k8s-pod-network.c2',
      hostname: 'node-a',
      attrs: { node: 'node-a', namespace: 'default', pod: 'web-2' },
      ipv4Pools: ['pool-a'],
    });
    const tunnel = await ipam.autoAssign({
      num4: 1,
      num6: 0,
      handleId: 'ipip-tunnel-addr-node-b',
      hostname: 'node-b',
      attrs: { node: 'node-b', type: 'ipipTunnelAddress' },
      ipv4Pools: ['pool-b'],
    });
    expect(web1.ipv4.map((a) => a.address)).toEqual(['198.18.0.192', '198.18.0.193', '198.18.0.194']);
    expect(web2.ipv4.map((a) => a.address)).toEqual(['198.18.0.195']);
    expect(tunnel.ipv4.map((a) => a.block)).toEqual(['198.19.107.0/26']);

    expect(await ctl('ipam', 'show')).toEqual({
      code: 0,
      stdout: `+----------+---------------+-----------+------------+--------------+
| GROUPING |     CIDR      | IPS TOTAL | IPS IN USE |   IPS FREE   |
+----------+---------------+-----------+------------+--------------+
| IP Pool  | 198.18.0.0/24 |       256 | 4 (2%)     | 252 (98%)    |
| IP Pool  | 198.19.0.0/16 |     65536 | 1 (0%)     | 65535 (100%) |
+----------+---------------+-----------+------------+--------------+
`,
      stderr: '',
    });
    expect(await ctl('ipam', 'show', '--ip=198.18.0.195')).toEqual({
      code: 0,
      stdout:
        'IP 198.18.0.195 is in use\nHandle ID: k8s-pod-network.c2\nActive Owner Attributes:\n  namespace: default\n  node: node-a\n  pod: web-2\n',
      stderr: '',
    });
    expect(await ctl('ipam', 'show', '--ip=198.18.0.7')).toEqual({
      code: 0,
      stdout: '198.18.0.7 is not assigned\n',
      stderr: '',
    });

    // web-1 runs (its endpoint holds its addresses), node-b's tunnel address is on its Node.
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node--a-k8s-web--1-eth0', namespace: 'default' },
      spec: {
        node: 'node-a',
        orchestrator: 'k8s',
        pod: 'web-1',
        endpoint: 'eth0',
        interfaceName: 'cali1',
        ipNetworks: ['198.18.0.192/32', '198.18.0.193/32', '198.18.0.194/32'],
      },
    } as never);
    const nodeB = await ds.get('Node', 'node-b');
    await ds.update({ ...nodeB, spec: { ...nodeB.spec, bgp: { ipv4IPIPTunnelAddr: '198.19.107.0' } } });
    const clean = await ctl('ipam', 'check');
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain('Found 1 IPs that are allocated in IPAM but not actually in use.\n');

    // The leak: web-2's handle record removed behind IPAM's back.
    const del = await etcd.etcdctl(['del', '/calico/ipam/v2/handle/k8s-pod-network.c2']);
    expect(del.stdout.trim()).toBe('1');
    const report = join(dir, 'report.json');
    const check = await ctl('ipam', 'check', '--show-problem-ips', '-o', report);
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(
      '  198.18.0.195 leaked; attrs Main:k8s-pod-network.c2 Extra:namespace=default,node=node-a,pod=web-2\n' +
        'Found 1 IPs that are allocated in IPAM but not actually in use.\n',
    );
    expect(check.stdout).toContain(
      "  k8s-pod-network.c2 is in use in a block but doesn't exist.\n" +
        'Found 1 handles mentioned in blocks with no matching handle resource.\n',
    );
    expect(check.stdout).toContain('Check complete; found 2 problems.\n');
    expect(check.stderr).toContain('Loading all IPAM blocks...\nFound 2 IPAM blocks.\n');
    const json = JSON.parse(await readFile(report, 'utf8'));
    expect(json.allocations['198.18.0.195']).toMatchObject([
      { ip: '198.18.0.195', handle: 'k8s-pod-network.c2', inUse: false, owners: null },
    ]);
    expect(json.allocations['198.18.0.192'][0]).toMatchObject({ inUse: true });

    expect(await ctl('ipam', 'release', '--ip=198.18.0.195')).toEqual({
      code: 0,
      stdout: 'Successfully released IP address 198.18.0.195\n',
      stderr: '',
    });
    expect((await ctl('ipam', 'show', '--ip=198.18.0.195')).stdout).toBe('198.18.0.195 is not assigned\n');
    const block = await etcd.etcdctl([
      'get',
      '--print-value-only',
      '/calico/ipam/v2/assignment/ipv4/block/198.18.0.192-26',
    ]);
    expect(JSON.parse(block.stdout).allocations.slice(0, 5)).toEqual([0, 0, 0, null, null]);
    expect((await ctl('ipam', 'check')).stdout).toContain('Check complete; found 0 problems.\n');
    expect(await ctl('ipam', 'release', '--ip=198.18.0.195')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'IP address 198.18.0.195 is not assigned\n',
    });

    // Deleting pool-b: disabled first, node-b's affinity released (its block keeps the tunnel address).
    expect(await ctl('delete', 'ippool', 'pool-b')).toEqual({
      code: 0,
      stdout: "Successfully deleted 1 'IPPool' resource(s)\n",
      stderr: '',
    });
    const affinities = await etcd.etcdctl(['get', '--prefix', '--keys-only', '/calico/ipam/v2/host/']);
    expect(affinities.stdout.split('\n').filter(Boolean)).toEqual([
      '/calico/ipam/v2/host/node-a/ipv4/block/198.18.0.192-26',
    ]);
    const orphan = await etcd.etcdctl([
      'get',
      '--print-value-only',
      '/calico/ipam/v2/assignment/ipv4/block/198.19.107.0-26',
    ]);
    expect(JSON.parse(orphan.stdout).affinity).toBeNull();
    expect(
      (await ctl('ipam', 'show', '--show-blocks')).stdout,
    ).toBe(`+----------+-----------------+-----------+------------+-----------+
| GROUPING |      CIDR       | IPS TOTAL | IPS IN USE | IPS FREE  |
+----------+-----------------+-----------+------------+-----------+
| IP Pool  | 198.18.0.0/24   |       256 | 3 (1%)     | 253 (99%) |
| Block    | 198.18.0.192/26 |        64 | 3 (5%)     | 61 (95%)  |
| Block    | 198.19.107.0/26 |        64 | 1 (2%)     | 63 (98%)  |
+----------+-----------------+-----------+------------+-----------+
`);
  }, 120_000);
});
