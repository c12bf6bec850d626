import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { describe, expect, test } from 'vitest';
import { type Harness, harness } from '../testing-internal/harness.js';

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

const TS = '2025-01-02 03:04:05 +0000 UTC';

/** Two nodes, two pools; node-a holds 3 addresses of pool-a for one pod, node-b its IPIP tunnel address. */
async function setup(): Promise<{ h: Harness; ipam: IpamClient }> {
  const h = harness();
  const ipam = new IpamClient(h.datastore, new IpamStore(h.store), {
    now: () => new Date('2025-01-02T03:04:05Z'),
    random: () => 0.5,
    sleep: async () => {},
  });
  for (const name of ['node-a', 'node-b']) {
    await h.datastore.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name },
      spec: {},
    });
  }
  expect((await h.run('apply -f -', { stdin: POOLS })).code).toBe(0);
  await ipam.autoAssign({
    num4: 3,
    num6: 0,
    handleId: 'k8s-pod-network.c1',
    hostname: 'node-a',
    attrs: { node: 'node-a', namespace: 'default', pod: 'web-1', timestamp: TS },
    ipv4Pools: ['pool-a'],
  });
  await ipam.autoAssign({
    num4: 1,
    num6: 0,
    handleId: 'ipip-tunnel-addr-node-b',
    hostname: 'node-b',
    attrs: { node: 'node-b', type: 'ipipTunnelAddress' },
    ipv4Pools: ['pool-b'],
  });
  return { h, ipam };
}

const POOL_TABLE = `+----------+---------------+-----------+------------+--------------+
| GROUPING |     CIDR      | IPS TOTAL | IPS IN USE |   IPS FREE   |
+----------+---------------+-----------+------------+--------------+
| IP Pool  | 198.18.0.0/24 |       256 | 3 (1%)     | 253 (99%)    |
| IP Pool  | 198.19.0.0/16 |     65536 | 1 (0%)     | 65535 (100%) |
+----------+---------------+-----------+------------+--------------+
`;

describe('ipam show', () => {
  test('pool utilisation, and with --show-blocks each block under its pool', async () => {
    const { h } = await setup();
    expect(await h.run('ipam show')).toEqual({ code: 0, stdout: POOL_TABLE, stderr: '' });
    expect((await h.run('ipam show --show-blocks')).stdout).toBe(
      `+----------+-----------------+-----------+------------+--------------+
| GROUPING |      CIDR       | IPS TOTAL | IPS IN USE |   IPS FREE   |
+----------+-----------------+-----------+------------+--------------+
| IP Pool  | 198.18.0.0/24   |       256 | 3 (1%)     | 253 (99%)    |
| Block    | 198.18.0.192/26 |        64 | 3 (5%)     | 61 (95%)     |
| IP Pool  | 198.19.0.0/16   |     65536 | 1 (0%)     | 65535 (100%) |
| Block    | 198.19.107.0/26 |        64 | 1 (2%)     | 63 (98%)     |
+----------+-----------------+-----------+------------+--------------+
`,
    );
  });

  test('big pools print as Go %.5g does; a block of no pool shows only as a block row', async () => {
    const { h } = await setup();
    await h.store.delete('/calico/resources/v3/projectcalico.org/ippools/pool-b');
    await h.run('apply -f -', {
      stdin:
        'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: big}\nspec: {cidr: 10.0.0.0/8}\n',
    });
    expect((await h.run('ipam show --show-blocks')).stdout).toBe(
      `+----------+-----------------+------------+------------+-------------------+
| GROUPING |      CIDR       | IPS TOTAL  | IPS IN USE |     IPS FREE      |
+----------+-----------------+------------+------------+-------------------+
| IP Pool  | 10.0.0.0/8      | 1.6777e+07 | 0 (0%)     | 1.6777e+07 (100%) |
| IP Pool  | 198.18.0.0/24   |        256 | 3 (1%)     | 253 (99%)         |
| Block    | 198.18.0.192/26 |         64 | 3 (5%)     | 61 (95%)          |
| Block    | 198.19.107.0/26 |         64 | 1 (2%)     | 63 (98%)          |
+----------+-----------------+------------+------------+-------------------+
`,
    );
  });

  test('--ip: the holder of an allocated address, and a free one', async () => {
    const { h } = await setup();
    expect(await h.run('ipam show --ip=198.18.0.193')).toEqual({
      code: 0,
      stdout: `IP 198.18.0.193 is in use
Handle ID: k8s-pod-network.c1
Active Owner Attributes:
  namespace: default
  node: node-a
  pod: web-1
  timestamp: ${TS}
`,
      stderr: '',
    });
    expect(await h.run('ipam show --ip 198.18.0.1')).toEqual({
      code: 0,
      stdout: '198.18.0.1 is not assigned\n',
      stderr: '',
    });
    expect(await h.run('ipam show --ip=10.9.9.9')).toEqual({
      code: 0,
      stdout: '10.9.9.9 is not assigned\n',
      stderr: '',
    });
    expect(await h.run('ipam show --ip=198.18.0.300')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Error executing command: invalid IP address specified: 198.18.0.300\n',
    });
    expect((await h.run('ipam show --show-blocks --show-borrowed')).code).toBe(1);
  });

  test('--show-borrowed lists addresses a node took from another node’s block', async () => {
    const { h, ipam } = await setup();
    await ipam.assignIP('198.18.0.200', {
      handleId: 'k8s-pod-network.c2',
      hostname: 'node-b',
      attrs: { node: 'node-b', namespace: 'prod', pod: 'db-0' },
    });
    await ipam.assignIP('198.18.0.201', {
      handleId: 'vxlan-tunnel-addr-node-b',
      hostname: 'node-b',
      attrs: { node: 'node-b', type: 'vxlanTunnelAddress' },
    });
    await ipam.assignIP('198.18.0.202', { handleId: 'old', hostname: 'node-b', attrs: {} as never });
    expect((await h.run('ipam show --show-borrowed')).stdout).toBe(
      `+--------------+----------------+-----------------+-------------+--------------------+--------------+
|      IP      | BORROWING-NODE |      BLOCK      | BLOCK OWNER |        TYPE        | ALLOCATED-TO |
+--------------+----------------+-----------------+-------------+--------------------+--------------+
| 198.18.0.200 | node-b         | 198.18.0.192/26 | node-a      | pod                | prod/db-0    |
| 198.18.0.201 | node-b         | 198.18.0.192/26 | node-a      | vxlanTunnelAddress |              |
+--------------+----------------+-----------------+-------------+--------------------+--------------+

Note: found 1 IP allocations without an explicit node association. Unable to determine if they are borrowed.
`,
    );
  });
});

describe('ipam configure', () => {
  test('sets strict affinity and the block limit, keeping other fields; show-configuration reads them', async () => {
    const h = harness();
    const table = (strict: string, max: string) => `+--------------------+-------+
|      PROPERTY      | VALUE |
+--------------------+-------+
| StrictAffinity     | ${strict} |
| AutoAllocateBlocks | true  |
| MaxBlocksPerHost   | ${max} |
+--------------------+-------+
`;
    expect((await h.run('ipam show --show-configuration')).stdout).toBe(table('false', '    0'));
    expect(await h.run('ipam configure --strictaffinity=true --max-blocks-per-host=4')).toEqual({
      code: 0,
      stdout: 'Successfully set StrictAffinity to: true\nSuccessfully set MaxBlocksPerHost to: 4\n',
      stderr: '',
    });
    expect((await h.dump())['/calico/ipam/v2/config']).toBe(
      '{"strict_affinity":true,"auto_allocate_blocks":true,"maxBlocksPerHost":4}',
    );
    expect((await h.run('ipam show --show-configuration')).stdout).toBe(table('true ', '    4'));
    expect((await h.run('ipam configure --strictaffinity=F')).stdout).toBe(
      'Successfully set StrictAffinity to: false\n',
    );
    expect((await h.dump())['/calico/ipam/v2/config']).toBe(
      '{"strict_affinity":false,"auto_allocate_blocks":true,"maxBlocksPerHost":4}',
    );
  });

  test('refuses bad values and an empty request, writing nothing', async () => {
    const h = harness();
    for (const [args, err] of [
      ['ipam configure --strictaffinity=yes', 'invalid value. Use true or false to set strictaffinity'],
      ['ipam configure --max-blocks-per-host=four', 'invalid value for maxblockhost. Use a valid number'],
      ['ipam configure', 'at least one configuration option must be specified'],
    ] as const) {
      expect(await h.run(args)).toEqual({ code: 1, stdout: '', stderr: `${err}\n` });
    }
    expect((await h.dump())['/calico/ipam/v2/config']).toBeUndefined();
  });
});

/** node-a's pod 198.18.0.192-193 has an endpoint, 198.18.0.194 is leaked; node-b's tunnel address is its Node's. */
async function inUseSetup() {
  const s = await setup();
  await s.h.datastore.create({
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name: 'node--a-k8s-web--1-eth0', namespace: 'default' },
    spec: {
      node: 'node-a',
      orchestrator: 'k8s',
      pod: 'web-1',
      endpoint: 'eth0',
      interfaceName: 'cali1',
      ipNetworks: ['198.18.0.192/32', '198.18.0.193/32', '198.18.0.99/32'],
    },
  } as never);
  const node = await s.h.datastore.get('Node', 'node-b');
  await s.h.datastore.update({
    ...node,
    spec: { ...node.spec, bgp: { ipv4IPIPTunnelAddr: '198.19.107.0' } },
  });
  return s;
}

describe('ipam check', () => {
  test('reports leaked and unallocated addresses, progress on stderr, findings on stdout', async () => {
    const { h } = await inUseSetup();
    const r = await h.run('ipam check --show-problem-ips');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`  node-a has 3 allocations
  node-b has 1 allocations
Node with most allocations has 3; median is 1

  198.18.0.194 leaked; attrs Main:k8s-pod-network.c1 Extra:namespace=default,node=node-a,pod=web-1,timestamp=${TS}
Found 1 IPs that are allocated in IPAM but not actually in use.
  198.18.0.99 in use by Workload(default/node--a-k8s-web--1-eth0) and in active IPAM pool but has no IPAM allocation.
Found 0 in-use IPs that are not in active IP pools.
Found 1 in-use IPs that are in active IP pools but have no corresponding IPAM allocation.

Found 0 handles with no matching IPs (and 2 handles with matches).
Found 0 handles mentioned in blocks with no matching handle resource.
Found 0 handle counts that disagree with the blocks.
Found 0 block affinities whose node or block is missing.
Check complete; found 2 problems.
`);
    expect(r.stderr).toBe(`Checking IPAM for inconsistencies...

Loading all IPAM blocks...
Found 2 IPAM blocks.
 IPAM block 198.18.0.192/26 affinity=host:node-a:
 IPAM block 198.19.107.0/26 affinity=host:node-b:
IPAM blocks record 4 allocations.

Loading all IPAM pools...
  198.18.0.0/24
  198.19.0.0/16
Found 2 active IP pools.

Loading all nodes.
Found 1 node tunnel IPs.

Loading all workload endpoints.
Found 3 workload IPs.
Workloads and nodes are using 4 IPs.

Loading all handles
Looking for top (up to 20) nodes by allocations...
Scanning for IPs that are allocated but not actually in use...
Scanning for IPs that are in use by a workload or node but not allocated in IPAM...
Scanning for IPAM handles with no matching IPs...
Scanning for IPs with missing handle...
Scanning for handle counts that disagree with the blocks...
Scanning for block affinities of missing nodes or blocks...
`);
  });

  test('a deleted handle record: missing handle reported; -o writes upstream’s report shape', async () => {
    const { h } = await inUseSetup();
    await h.store.delete('/calico/ipam/v2/handle/ipip-tunnel-addr-node-b');
    await h.store.put(
      '/calico/ipam/v2/handle/k8s-pod-network.gone',
      '{"block":{"198.18.0.192/26":1},"deleted":false}',
    );
    const r = await h.run('ipam check -o /report.json');
    expect(r.stdout).toContain(
      'Found 1 handles with no matching IPs (and 1 handles with matches).\n' +
        'Found 1 handles mentioned in blocks with no matching handle resource.\n',
    );
    expect(r.stdout).toContain('Check complete; found 4 problems.\n');
    const text = h.files['/report.json']!;
    expect(text).toMatch(
      /^\{\n {2}"version": "v3\.32\.1",\n {2}"clusterGUID": "0123456789abcdef0123456789abcdef",\n/,
    );
    expect(text).toContain('"sequenceNumber": 1735787045000000000,');
    const report = JSON.parse(text);
    expect(Object.keys(report)).toEqual([
      'version',
      'clusterGUID',
      'datastoreLocked',
      'clusterInformationRevision',
      'clusterType',
      'allocations',
      'leakedHandles',
    ]);
    expect(report.datastoreLocked).toBe(false);
    expect(report.clusterInformationRevision).toBe(
      (await h.datastore.get('ClusterInformation', 'default')).metadata.resourceVersion,
    );
    expect(Object.keys(report.allocations)).toEqual([
      '198.18.0.192',
      '198.18.0.193',
      '198.18.0.194',
      '198.19.107.0',
    ]);
    expect(report.allocations['198.18.0.193']).toEqual([
      {
        ip: '198.18.0.193',
        handle: 'k8s-pod-network.c1',
        sequenceNumber: 1735787045000000000,
        pod: 'web-1',
        namespace: 'default',
        node: 'node-a',
        creationTimestamp: TS,
        inUse: true,
        owners: ['Workload(default/node--a-k8s-web--1-eth0)'],
      },
    ]);
    expect(report.allocations['198.18.0.194'][0].inUse).toBe(false);
    expect(report.allocations['198.18.0.194'][0].owners).toBeNull();
    expect(report.leakedHandles).toEqual([
      {
        ID: 'k8s-pod-network.gone',
        UID: null,
        Revision: (await h.store.get('/calico/ipam/v2/handle/k8s-pod-network.gone'))!.modRevision,
      },
    ]);
  });
});

describe('ipam release', () => {
  test('--ip frees an allocated address; a free one is an error', async () => {
    const { h } = await setup();
    expect(await h.run('ipam release --ip=198.18.0.194')).toEqual({
      code: 0,
      stdout: 'Successfully released IP address 198.18.0.194\n',
      stderr: '',
    });
    expect((await h.run('ipam show --ip=198.18.0.194')).stdout).toBe('198.18.0.194 is not assigned\n');
    expect(JSON.parse((await h.dump())['/calico/ipam/v2/handle/k8s-pod-network.c1']!).block).toEqual({
      '198.18.0.192/26': 2,
    });
    expect(await h.run('ipam release --ip=198.18.0.194')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'IP address 198.18.0.194 is not assigned\n',
    });
    expect((await h.run('ipam release --ip=nope')).stderr).toBe(
      'Error executing command: invalid IP address specified: nope\n',
    );
  });

  test('--from-report releases only on a locked datastore (or --force) with a current report of this cluster', async () => {
    const { h } = await inUseSetup();
    await h.store.put(
      '/calico/ipam/v2/handle/k8s-pod-network.gone',
      '{"block":{"198.18.0.192/26":1},"deleted":false}',
    );
    await h.run('ipam check -o /stale.json');
    expect((await h.run('datastore migrate lock')).code).toBe(0);
    await h.run('ipam check -o /r.json');

    expect(await h.run('ipam release --from-report=/stale.json')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'the provided reports are all stale - at least one should be up-to-date. Please generate a new report while the data store is locked and try again\n',
    });
    const other = JSON.parse(h.files['/r.json']!);
    h.files['/other.json'] = JSON.stringify({ ...other, clusterGUID: 'ffff' });
    expect((await h.run('ipam release --from-report=/other.json --force')).stderr).toBe(
      'cluster does not match the provided report (/other.json): mismatched cluster GUID. Refusing to release\n',
    );
    h.files['/old.json'] = h.files['/r.json']!.replace('"v3.32.1"', '"v3.31.0"');
    expect((await h.run('ipam release --from-report=/old.json')).stderr).toBe(
      'the provided report (/old.json) was produced using a different version (v3.31.0) of calicoctl. Refusing to release\n',
    );

    const r = await h.run(['ipam', 'release', '--from-report=/r.json', '--from-report=/stale.json']);
    expect(r).toEqual({
      code: 0,
      stdout: `Releasing 1 old IPs...
Released 1 IPs successfully
Deleting 1 handles...
Key: '.' = Deleted OK; 'x' = skip, handle missing/changed.
.
Released 1 handles; 0 skipped; 0 errors.
You may now unlock the data store.
`,
      stderr: '',
    });
    expect((await h.run('ipam show --ip=198.18.0.194')).stdout).toBe('198.18.0.194 is not assigned\n');
    expect((await h.run('ipam show --ip=198.18.0.193')).stdout).toContain('is in use');
    expect((await h.dump())['/calico/ipam/v2/handle/k8s-pod-network.gone']).toBeUndefined();

    // The same report again: the address is free already, the handle gone.
    expect((await h.run('ipam release --from-report=/r.json')).stdout).toBe(`Releasing 1 old IPs...
Released 0 IPs successfully
1 addresses marked as leaked in the report had already been cleaned up.
Deleting 1 handles...
Key: '.' = Deleted OK; 'x' = skip, handle missing/changed.
x
Released 0 handles; 1 skipped; 0 errors.
You may now unlock the data store.
`);
  });

  test('an unlocked datastore needs --force, and says so', async () => {
    const { h } = await inUseSetup();
    await h.run('ipam check -o /r.json');
    expect((await h.run('ipam release --from-report=/r.json')).stderr).toBe(
      'data store is not locked. Either lock the data store, or re-run with --force\n',
    );
    expect((await h.run('ipam show --ip=198.18.0.194')).stdout).toContain('is in use');
    const r = await h.run('ipam release --from-report=/r.json --force');
    expect(r.stdout).toBe(`WARNING: Data store is not locked. Ignoring due to --force option
Releasing 1 old IPs...
Released 1 IPs successfully
Report didn't contain any handles to clean up.
You may now unlock the data store.
`);
  });

  test('an address re-assigned since the report is left alone', async () => {
    const { h, ipam } = await inUseSetup();
    await h.run('datastore migrate lock');
    await h.run('ipam check -o /r.json');
    await ipam.releaseIPs(['198.18.0.194']);
    await ipam.assignIP('198.18.0.194', {
      handleId: 'k8s-pod-network.new',
      hostname: 'node-a',
      attrs: { node: 'node-a', namespace: 'default', pod: 'web-2' },
    });
    const r = await h.run('ipam release --from-report=/r.json');
    expect(r.stdout).toContain(
      'Released 0 IPs successfully\n1 addresses were assigned again since the report and were left alone.\n',
    );
    expect((await h.run('ipam show --ip=198.18.0.194')).stdout).toContain('Handle ID: k8s-pod-network.new\n');
  });
});

describe('delete ippool', () => {
  test('disables the pool, releases every block affinity in it, then deletes it; used blocks keep their addresses', async () => {
    const { h, ipam } = await setup();
    await ipam.claimAffinity('node-b', '198.18.0.0/26');
    const r = await h.run('delete ippool pool-a');
    expect(r).toEqual({ code: 0, stdout: "Successfully deleted 1 'IPPool' resource(s)\n", stderr: '' });
    const keys = Object.keys(await h.dump()).filter((k) => k.startsWith('/calico/ipam/'));
    expect(keys).toEqual([
      '/calico/ipam/v2/assignment/ipv4/block/198.18.0.192-26',
      '/calico/ipam/v2/assignment/ipv4/block/198.19.107.0-26',
      '/calico/ipam/v2/handle/ipip-tunnel-addr-node-b',
      '/calico/ipam/v2/handle/k8s-pod-network.c1',
      '/calico/ipam/v2/host/node-b/ipv4/block/198.19.107.0-26',
    ]);
    const block = JSON.parse((await h.dump())['/calico/ipam/v2/assignment/ipv4/block/198.18.0.192-26']!);
    expect(block.affinity).toBeNull();
    expect((await h.run('get ippool pool-a')).stderr).toBe(
      'resource does not exist: IPPool(pool-a) with error: <nil>\n',
    );
    expect((await h.run('delete ippool pool-a')).stderr).toBe(
      "Failed to delete 'IPPool' resource: resource does not exist: IPPool(pool-a) with error: <nil>\n\n",
    );
  });
});
