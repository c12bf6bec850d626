/**
 * Two nodes end to end: network namespaces `bbtest-<tag>-a/b` joined by a veth pair
 * (198.18.0.1/24, 198.18.0.2/24), a private etcd holding two Nodes, an IPPool and one affine block
 * per node, and per node a BirdBridge driving a real BIRD 2 inside that node's namespace.
 * Observed: the mesh sessions reach Established (read over the control socket), each kernel table
 * gets the other node's block as a `proto bird` route via the peer, and deleting one Node withdraws
 * its route from the other. Needs root, ip, nsenter, bird and etcd; under CI=true their absence
 * fails the test.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IpamStore, KVDatastore } from '@calico-ts/datastore';
import { EtcdKVStore } from '@calico-ts/datastore/etcd3';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BirdControlClient } from './bird/bird-control-client.js';
import { type BirdLogger, BirdSupervisor } from './bird/bird-supervisor.js';
import { BirdBridge, nodeAffinitySource } from './bridge.js';
import { node, pool } from './render/testdata/golden-cases.js';
import {
  addNetns,
  deleteNetns,
  ip,
  nsenterPrefix,
  pidAlive,
  privilegedTestsCanRun,
  uniqueTag,
  until,
} from './testing-internal/netns.js';

interface KernelRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  type?: string;
  metric?: number;
}

const NODES = [
  { name: 'node-a', side: 'a', addr: '198.18.0.1', block: '198.19.0.0/26' },
  { name: 'node-b', side: 'b', addr: '198.18.0.2', block: '198.19.0.64/26' },
] as const;

describe.runIf(privilegedTestsCanRun() && etcdAvailable())(
  'BirdBridge: two nodes, real etcd and BIRD',
  () => {
    const tag = uniqueTag();
    const ns = { a: `bbtest-${tag}-a`, b: `bbtest-${tag}-b` };
    const created: string[] = [];
    let dir: string;
    let etcd: EtcdServer | undefined;
    const stores: EtcdKVStore[] = [];
    const bridges: BirdBridge[] = [];
    const supervisors: BirdSupervisor[] = [];
    const clients: Record<string, BirdControlClient> = {};
    let admin: KVDatastore;
    const logs: string[] = [];

    /** The routes BIRD put in a namespace's main table. */
    const kernelRoutes = async (side: 'a' | 'b'): Promise<KernelRoute[]> =>
      (JSON.parse(await ip(['-n', ns[side], '-j', 'route', 'show'])) as KernelRoute[]).filter(
        (r) => r.protocol === 'bird',
      );

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'bbtest-'));
      for (const n of NODES) created.push(addNetns(ns[n.side]));
      await ip([
        'link',
        'add',
        `bb${tag}a`,
        'netns',
        ns.a,
        'type',
        'veth',
        'peer',
        'name',
        `bb${tag}b`,
        'netns',
        ns.b,
      ]);
      for (const n of NODES) {
        await ip(['-n', ns[n.side], 'addr', 'add', `${n.addr}/24`, 'dev', `bb${tag}${n.side}`]);
        await ip(['-n', ns[n.side], 'link', 'set', `bb${tag}${n.side}`, 'up']);
      }

      etcd = await startEtcd();
      const adminKv = new EtcdKVStore({ endpoints: etcd.endpoints });
      stores.push(adminKv);
      admin = new KVDatastore(adminKv, { backend: 'etcdv3' });
      const ipam = new IpamStore(adminKv);
      await admin.create(
        pool('default-ipv4-ippool', { cidr: '198.19.0.0/16', ipipMode: 'Never', vxlanMode: 'Never' }),
      );
      for (const n of NODES) {
        await admin.create(node(n.name, { ipv4Address: `${n.addr}/24` }));
        await ipam.createAffinity({ host: n.name, cidr: n.block, state: 'confirmed', deleted: false });
      }

      for (const n of NODES) {
        const kv = new EtcdKVStore({ endpoints: etcd.endpoints });
        stores.push(kv);
        const log: BirdLogger = (level, message, fields) =>
          logs.push(`${n.name} ${level} ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`);
        const sup = new BirdSupervisor({
          configDir: join(dir, n.side, 'config'),
          socketPath: join(dir, n.side, 'bird.ctl'),
          commandPrefix: nsenterPrefix(ns[n.side]),
          log,
        });
        supervisors.push(sup);
        clients[n.name] = new BirdControlClient(join(dir, n.side, 'bird.ctl'));
        const bridge = new BirdBridge({
          datastore: new KVDatastore(kv, { backend: 'etcdv3' }),
          affinities: nodeAffinitySource(kv, n.name),
          nodeName: n.name,
          targets: { 4: sup },
          log,
        });
        bridges.push(bridge);
        await bridge.start();
      }
    }, 120_000);

    afterAll(async () => {
      for (const b of bridges) await b.stop().catch(() => undefined);
      // Belt and braces: a BIRD this test started that is somehow still alive is killed by its PID.
      for (const s of supervisors) {
        const pid = s.pid;
        if (pid !== undefined && pidAlive(pid)) process.kill(pid, 'SIGKILL');
      }
      for (const s of stores) await s.close().catch(() => undefined);
      await etcd?.stop();
      deleteNetns(created);
      if (dir) await rm(dir, { recursive: true, force: true });
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
      const rows = await clients['node-a']!.showProtocols();
      expect(rows.map((r) => r.name)).not.toContain('Mesh_198_18_0_2');
      expect(bridges[0]!.stats().outcomes[4]).toEqual({ kind: 'reloaded' });
    }, 40_000);
  },
);
