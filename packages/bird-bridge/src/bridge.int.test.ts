/**
 * Two nodes end to end: network namespaces `bbtest-<tag>-a/b` joined by a veth pair
 * (198.18.0.1/24, 198.18.0.2/24), a private etcd holding two Nodes, an IPPool and one affine block
 * per node, and per node a BirdBridge driving a real BIRD 2 inside that node's namespace.
 * Observed: the mesh sessions reach Established (read over the control socket), each kernel table
 * gets the other node's block as a `proto bird` route via the peer, and deleting one Node withdraws
 * its route from the other. Needs root, ip, nsenter, bird and etcd; under CI=true their absence
 * fails the test.
 */
import { etcdAvailable } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { BirdControlClient } from './bird/bird-control-client.js';
import { ip, privilegedTestsCanRun, until } from './testing-internal/netns.js';
import { NODES, TwoNodes } from './testing-internal/two-nodes.js';

interface KernelRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  type?: string;
  metric?: number;
}

describe.runIf(privilegedTestsCanRun() && etcdAvailable())(
  'BirdBridge: two nodes, real etcd and BIRD',
  () => {
    const lab = new TwoNodes({ prefix: 'bbtest', vethPrefix: 'bb' });
    const { tag, ns, bridges, supervisors, logs } = lab;
    const clients: Record<string, BirdControlClient> = {};
    let admin: TwoNodes['admin'];

    /** The routes BIRD put in a namespace's main table. */
    const kernelRoutes = async (side: 'a' | 'b'): Promise<KernelRoute[]> =>
      (JSON.parse(await ip(['-n', ns[side], '-j', 'route', 'show'])) as KernelRoute[]).filter(
        (r) => r.protocol === 'bird',
      );

    beforeAll(async () => {
      await lab.wire();
      await lab.seed();
      admin = lab.admin;
      for (const n of NODES) clients[n.name] = (await lab.startNode(n.side)).client;
    }, 120_000);

    afterAll(async () => {
      await lab.close();
      if (logs.some((l) => / error /.test(l))) console.log(logs.join('\n'));
    }, 60_000);

    test('each BIRD runs in its own namespace, on the rendered configuration', async () => {
      for (const s of supervisors) expect(s.status()).toMatchObject({ running: true, restarts: 0 });
      expect((await clients['node-a']!.showStatus()).routerId).toBe('198.18.0.1');
      expect((await clients['node-b']!.showStatus()).routerId).toBe('198.18.0.2');
    });

    test('the node-to-node mesh sessions reach Established', async () => {
      for (const [me, peerName] of [
        ['node-a', 'Mesh_198_18_0_2'],
        ['node-b', 'Mesh_198_18_0_1'],
      ] as const) {
        const row = await until(
          `${me} ${peerName} Established`,
          async () => {
            const r = (await clients[me]!.showProtocols()).find((p) => p.name === peerName);
            return r?.state === 'up' && r.info.startsWith('Established') ? r : undefined;
          },
          60_000,
        );
        expect(row).toMatchObject({ proto: 'BGP', state: 'up' });
      }
    }, 70_000);

    test("each kernel table holds the other node's block via the peer, proto bird", async () => {
      const a = await until('route to node-b block in ns a', async () =>
        (await kernelRoutes('a')).find((r) => r.dst === '198.19.0.64/26'),
      );
      // Upstream's normal route priority (ipv4NormalRoutePriority, default 1024) is the metric.
      expect(a).toMatchObject({ gateway: '198.18.0.2', dev: `bb${tag}a`, protocol: 'bird', metric: 1024 });
      const b = await until('route to node-a block in ns b', async () =>
        (await kernelRoutes('b')).find((r) => r.dst === '198.19.0.0/26'),
      );
      expect(b).toMatchObject({ gateway: '198.18.0.1', dev: `bb${tag}b`, protocol: 'bird' });
      // Each node's own block is a blackhole it originates; the fabric subnet is not BIRD's.
      expect((await kernelRoutes('a')).find((r) => r.dst === '198.19.0.0/26')).toMatchObject({
        type: 'blackhole',
      });
      expect((await kernelRoutes('a')).map((r) => r.dst)).not.toContain('198.18.0.0/24');
      expect(
        (await clients['node-a']!.showRoutes()).find((r) => r.network === '198.19.0.64/26'),
      ).toMatchObject({
        protocol: 'Mesh_198_18_0_2',
        gateway: '198.18.0.2',
      });
    }, 40_000);

    test('BGPConfiguration ipv4NormalRoutePriority sets the metric of the routes BIRD programs', async () => {
      await admin.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'BGPConfiguration',
        metadata: { name: 'default' },
        spec: { ipv4NormalRoutePriority: 2048 },
      });
      const moved = await until('the route at metric 2048 in ns a', async () =>
        (await kernelRoutes('a')).find((r) => r.dst === '198.19.0.64/26' && r.metric === 2048),
      );
      expect(moved).toMatchObject({ gateway: '198.18.0.2', protocol: 'bird' });
      // The route BIRD programmed at 1024 is removed once the 2048 one is there (at a lower
      // metric it would keep winning).
      await until(
        'only the route at metric 2048 in ns a',
        async () => {
          const rs = (await kernelRoutes('a')).filter((r) => r.dst === '198.19.0.64/26');
          return rs.length === 1 ? rs : undefined;
        },
        15_000,
      );
      expect(
        logs.some((l) => l.includes('removed a route BIRD programmed under an earlier route priority')),
      ).toBe(true);
      await admin.delete('BGPConfiguration', 'default');
      await until(
        'only the route at metric 1024 in ns a',
        async () => {
          const rs = (await kernelRoutes('a')).filter((r) => r.dst === '198.19.0.64/26');
          return rs.length === 1 && rs[0]!.metric === 1024 ? rs : undefined;
        },
        15_000,
      );
    }, 60_000);

    test("deleting a Node withdraws its block's route from the other node", async () => {
      await admin.delete('Node', 'node-b');
      await until(
        'node-b route withdrawn from ns a',
        async () => !(await kernelRoutes('a')).some((r) => r.dst === '198.19.0.64/26'),
        30_000,
      );
      // The route can leave ns a before node-a's bridge has reloaded BIRD without the peer (node-b's
      // own bridge stops exporting its block when its Node goes): wait for the reload as well,
      // rather than reading BIRD's protocols at the moment the route went.
      await until(
        'node-a BIRD without the node-b mesh peer',
        async () => !(await clients['node-a']!.showProtocols()).some((r) => r.name === 'Mesh_198_18_0_2'),
        30_000,
      );
      const rows = await clients['node-a']!.showProtocols();
      expect(rows.map((r) => r.name)).not.toContain('Mesh_198_18_0_2');
      expect(bridges[0]!.stats().outcomes[4]).toEqual({ kind: 'reloaded' });
    }, 70_000);
  },
);
