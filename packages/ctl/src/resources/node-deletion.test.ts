import type { Kind } from '@calico-ts/api';
import { type Datastore, DatastoreError } from '@calico-ts/datastore';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { describe, expect, test } from 'vitest';
import { CtlError } from '../errors.js';
import type { Obj } from '../output/columns.js';
import { harness } from '../testing-internal/harness.js';
import { deleteNode, planNodeCleanup, workloadEndpointPrefix } from './node-deletion.js';

const wep = (ns: string, name: string, node: string, ips: string[]): Obj => ({
  kind: 'WorkloadEndpoint',
  metadata: { namespace: ns, name },
  spec: { node, ipNetworks: ips },
});

describe('planNodeCleanup', () => {
  test("endpoints by name prefix and spec.node, IPv4 tunnel addresses, the node's peers and host endpoints", () => {
    expect(workloadEndpointPrefix('node-1')).toBe('node--1-');
    const plan = planNodeCleanup('node-1', {
      node: {
        spec: {
          bgp: { ipv4IPIPTunnelAddr: '198.19.0.1' },
          ipv4VXLANTunnelAddr: '198.19.0.2',
          ipv6VXLANTunnelAddr: 'fd00::2',
          wireguard: { interfaceIPv4Address: '198.19.0.3', interfaceIPv6Address: 'fd00::3' },
        },
      },
      workloadEndpoints: [
        wep('default', 'node--1-k8s-web-eth0', 'node-1', ['198.19.0.10/32', 'fd00::10/128']),
        // Another node whose endpoint names share the prefix: spec.node decides.
        wep('default', 'node--1--b-k8s-web-eth0', 'node-1-b', ['198.19.0.20/32']),
        // spec.node alone is not enough either (upstream lists by name prefix).
        wep('default', 'other-k8s-web-eth0', 'node-1', ['198.19.0.30/32']),
        wep('prod', 'node--1-k8s-api-eth0', 'node-1', ['bogus', '198.19.0.11']),
      ],
      bgpPeers: [
        { metadata: { name: 'p1' }, spec: { node: 'node-1' } },
        { metadata: { name: 'p2' }, spec: { node: 'node-1-b' } },
        { metadata: { name: 'global' }, spec: {} },
      ],
      hostEndpoints: [
        { metadata: { name: 'h1' }, spec: { node: 'node-1' } },
        { metadata: { name: 'h2' }, spec: { node: 'node-2' } },
      ],
    });
    expect(plan).toEqual({
      releaseIPs: ['198.19.0.10', 'fd00::10', '198.19.0.11', '198.19.0.1', '198.19.0.2', '198.19.0.3'],
      workloadEndpoints: [
        { namespace: 'default', name: 'node--1-k8s-web-eth0' },
        { namespace: 'prod', name: 'node--1-k8s-api-eth0' },
      ],
      bgpPeers: ['p1'],
      nodeConfigName: 'node.node-1',
      hostEndpoints: ['h1'],
      unparsable: ['bogus'],
    });
  });

  test('a node that is gone has no tunnel addresses to release', () => {
    const plan = planNodeCleanup('n', {
      node: undefined,
      workloadEndpoints: [],
      bgpPeers: [],
      hostEndpoints: [],
    });
    expect(plan.releaseIPs).toEqual([]);
  });
});

const POOL =
  'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 198.19.0.0/24}\n';

/** A Node with an endpoint (and its address), a block affinity and a host endpoint; `keepNode` false removes the Node resource alone afterwards. */
async function seed(h: ReturnType<typeof harness>, node: string, keepNode = true) {
  expect((await h.run('apply -f -', { stdin: POOL })).code).toBe(0);
  await h.datastore.create({
    apiVersion: 'projectcalico.org/v3',
    kind: 'Node',
    metadata: { name: node },
    spec: {},
  });
  const ipam = new IpamClient(h.datastore, new IpamStore(h.store));
  const ip = await ipam.autoAssign({
    num4: 1,
    num6: 0,
    handleId: `k8s-pod-network.${node}`,
    hostname: node,
    attrs: { node, namespace: 'default', pod: 'web' },
  });
  await h.datastore.create({
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name: `${node}-k8s-web-eth0`, namespace: 'default' },
    spec: {
      node,
      orchestrator: 'k8s',
      pod: 'web',
      endpoint: 'eth0',
      interfaceName: 'caliweb',
      ipNetworks: [`${ip.ipv4[0]!.address}/32`],
    },
  } as never);
  await h.datastore.create({
    apiVersion: 'projectcalico.org/v3',
    kind: 'HostEndpoint',
    metadata: { name: `${node}-eth0` },
    spec: { node, interfaceName: 'eth0', expectedIPs: ['198.51.100.1'] },
  } as never);
  if (!keepNode) await h.datastore.delete('Node', node);
  return { ipam, block: ip.ipv4[0]!.block };
}

/** Keys of everything under /calico/ that mention the node. */
async function keysOf(h: ReturnType<typeof harness>, node: string): Promise<string[]> {
  return Object.keys(await h.dump()).filter((k) => k.includes(node));
}

describe('calicoctl delete node (in memory)', () => {
  test("a missing Node's leftovers are cleaned up as upstream does, and the delete still says it does not exist", async () => {
    const h = harness();
    await seed(h, 'ghost', false);
    expect(await keysOf(h, 'ghost')).toHaveLength(4); // endpoint, handle, affinity, host endpoint
    expect(await h.run('delete node ghost')).toEqual({
      code: 1,
      stdout: '',
      stderr: "Failed to delete 'Node' resource: resource does not exist: Node(ghost) with error: <nil>\n\n",
    });
    expect(await keysOf(h, 'ghost')).toEqual([]);
    expect(Object.keys(await h.dump()).filter((k) => k.includes('/ipam/'))).toEqual([]); // its empty block too
  });

  test('a stale resourceVersion is a conflict before anything is cleaned up', async () => {
    const h = harness();
    await seed(h, 'n1');
    const before = await h.dump();
    const doc =
      'apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: n1, resourceVersion: "1"}\nspec: {}\n';
    expect(await h.run('delete -f -', { stdin: doc })).toEqual({
      code: 1,
      stdout: '',
      stderr: "Failed to delete 'Node' resource: update conflict: Node(n1)\n\n",
    });
    expect(await h.dump()).toEqual(before);
  });

  test('a failing step names what failed and leaves the Node; deleting again finishes the job', async () => {
    const h = harness();
    const { ipam } = await seed(h, 'n1');
    const failing = new Proxy(h.datastore, {
      get(target, prop, receiver) {
        if (prop === 'delete') {
          return (kind: Kind, name: string, opts?: object) =>
            kind === 'HostEndpoint'
              ? Promise.reject(new DatastoreError('unavailable', 'etcd is unreachable'))
              : target.delete(kind, name, opts);
        }
        return Reflect.get(target, prop, receiver);
      },
    }) as Datastore;
    const err = await deleteNode(failing, 'n1', { ipam }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CtlError);
    expect((err as CtlError).message).toBe(
      'Node(n1) was not deleted: deleting HostEndpoint(n1-eth0) failed: etcd is unreachable',
    );
    // Endpoint, address and affinity are gone already; the host endpoint and the Node stay.
    expect((await keysOf(h, 'n1')).map((k) => k.replace(/.*\//, ''))).toEqual(['n1-eth0', 'n1']);
    expect(await h.run('delete node n1')).toEqual({
      code: 0,
      stdout: "Successfully deleted 1 'Node' resource(s)\n",
      stderr: '',
    });
    expect(await keysOf(h, 'n1')).toEqual([]);
  });
});
