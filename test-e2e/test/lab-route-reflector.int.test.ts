/**
 * Route-reflector topology on a 4-node BGP lab, configured as upstream documents it, with
 * `lab calicoctl` only: n1 gets `spec.bgp.routeReflectorClusterID: 224.0.0.1` and the label
 * `route-reflector: "true"`, a BGPPeer `peer-with-rr` (nodeSelector all(), peerSelector
 * route-reflector == 'true') peers every node with it, and BGPConfiguration default turns the
 * node-to-node mesh off. Observed: every client's BIRD has exactly one BGP session, to n1,
 * Established (no mesh session left); n1's BIRD has one per client and reflects to each
 * (`route-reflector` session); each kernel routes every other node's blocks (from etcd's
 * affinities) via that node itself — not via the reflector — as `proto bird`; pods on all four
 * nodes reach each other over TCP and UDP; `lab status` names the reflector and its clients.
 *
 * Own lab name and state directory; `lab down` in afterAll, also when a test failed.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyYaml,
  bgpSessions,
  blockAffinities,
  labStatus,
  sessionLines,
  sessionWords,
  until,
} from './bgp-observe.js';
import { DATASTORES, kernelRoutes, LabDriver, missingPrerequisites } from './lab-driver.js';

const missing = missingPrerequisites();
const ci = process.env.CI === 'true';

if (missing.length > 0) {
  describe('lab route reflector', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const CLUSTER_ID = '224.0.0.1';
const mesh = (ip: string) => `Mesh_${ip.replaceAll('.', '_')}`;
const nodePeer = (ip: string) => `Node_${ip.replaceAll('.', '_')}`;

describe.each(missing.length > 0 ? [] : DATASTORES)(
  'lab: route reflector topology, 4 nodes, %s',
  (datastore) => {
    const name = `e2r${datastore === 'kubernetes' ? 'k' : ''}${Math.random().toString(16).slice(2, 6)}`;
    let dir: string;
    let lab: LabDriver;
    const nodes = () => lab.state().plan.nodes;
    const t0 = Date.now();

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-rr-'));
      lab = new LabDriver(name, join(dir, 'state'));
      const up = await lab.run('up', '--nodes', '4', '--mode', 'bgp', '--datastore', datastore);
      expect(up.code, up.stdout + up.stderr).toBe(0);
      console.log(`lab up --nodes 4 (${datastore}): ${(up.ms / 1000).toFixed(1)} s`);
      await lab.ok('ns', 'create', 'rr');
      for (const n of ['n1', 'n2', 'n3', 'n4']) await lab.ok('pod', 'create', `rr/on-${n}`, '--node', n);
      // Before: the full mesh, three sessions per node.
      for (const n of nodes()) {
        expect(sessionLines(await bgpSessions(n.runDir)), n.name).toEqual(
          nodes()
            .filter((o) => o.name !== n.name)
            .map((o) => `${mesh(o.ip)} Established`),
        );
      }

      // Upstream's recipe, in its order: the reflector, the peering, then the mesh off.
      const n1 = JSON.parse((await lab.ok('calicoctl', 'get', 'node', 'n1', '-o', 'json')).stdout) as {
        metadata: { labels?: Record<string, string> };
        spec: { bgp: Record<string, unknown> };
      };
      n1.metadata.labels = { ...n1.metadata.labels, 'route-reflector': 'true' };
      n1.spec.bgp.routeReflectorClusterID = CLUSTER_ID;
      await applyYaml(lab, dir, 'n1', JSON.stringify(n1));
      await applyYaml(
        lab,
        dir,
        'peer-with-rr',
        [
          'apiVersion: projectcalico.org/v3',
          'kind: BGPPeer',
          'metadata:',
          '  name: peer-with-rr',
          'spec:',
          '  nodeSelector: all()',
          "  peerSelector: route-reflector == 'true'",
          '',
        ].join('\n'),
      );
      await applyYaml(
        lab,
        dir,
        'bgpconfig',
        [
          'apiVersion: projectcalico.org/v3',
          'kind: BGPConfiguration',
          'metadata:',
          '  name: default',
          'spec:',
          '  nodeToNodeMeshEnabled: false',
          '',
        ].join('\n'),
      );
    }, 150_000);

    afterAll(async () => {
      if (dir && existsSync(join(dir, 'state', 'state.json'))) {
        const down = await lab.run('down');
        if (down.code !== 0) console.log(down.stdout + down.stderr);
      }
      if (dir) await rm(dir, { recursive: true, force: true });
      console.log(`route-reflector scenario: ${((Date.now() - t0) / 1000).toFixed(1)} s in all`);
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
    }, 60_000);

    it('each client has exactly one BGP session, to n1, Established; n1 has one per client', async () => {
      const [rr, ...clients] = nodes();
      const t = Date.now();
      for (const c of clients) {
        await until(`${c.name}: only ${nodePeer(rr!.ip)} Established`, async () => {
          const s = sessionLines(await bgpSessions(c.runDir));
          return s.length === 1 && s[0] === `${nodePeer(rr!.ip)} Established`;
        });
      }
      const expected = clients.map((c) => `${nodePeer(c.ip)} Established`);
      await until(
        'n1: a session per client, Established',
        async () => JSON.stringify(sessionLines(await bgpSessions(rr!.runDir))) === JSON.stringify(expected),
      );
      console.log(`mesh → route reflector: sessions settled in ${Date.now() - t} ms`);
      // Stated once more, plainly: no client peers with another client, nobody keeps a mesh session.
      for (const c of clients) {
        const names = (await bgpSessions(c.runDir)).map((s) => s.name);
        expect(names, c.name).toEqual([nodePeer(rr!.ip)]);
      }
      expect(sessionLines(await bgpSessions(rr!.runDir))).toEqual(expected);
    }, 60_000);

    it("n1's BIRD reflects routes to each client; the clients' sessions are plain iBGP", async () => {
      const [rr, ...clients] = nodes();
      for (const c of clients) {
        expect(await sessionWords(rr!.runDir, nodePeer(c.ip)), `n1 → ${c.name}`).toMatch(
          /^internal .*route-reflector/,
        );
        const back = await sessionWords(c.runDir, nodePeer(rr!.ip));
        expect(back, `${c.name} → n1`).toMatch(/^internal /);
        expect(back).not.toContain('route-reflector');
      }
    });

    it("every kernel routes every other node's blocks via that node (not via the reflector), proto bird", async () => {
      const s = lab.state();
      const blocks = await blockAffinities(lab);
      expect([...blocks.keys()].sort()).toEqual(['n1', 'n2', 'n3', 'n4']);
      for (const n of s.plan.nodes) {
        await until(`${n.name}: routes to the other nodes' blocks`, () => {
          const routes = kernelRoutes(n.netns);
          return s.plan.nodes
            .filter((o) => o.name !== n.name)
            .every((o) =>
              blocks
                .get(o.name)!
                .every((cidr) =>
                  routes.some((r) => r.dst === cidr && r.gateway === o.ip && r.protocol === 'bird'),
                ),
            );
        });
        const routes = kernelRoutes(n.netns);
        for (const o of s.plan.nodes.filter((x) => x.name !== n.name)) {
          for (const cidr of blocks.get(o.name)!) {
            expect(
              routes.find((r) => r.dst === cidr),
              `${n.name}: ${cidr} of ${o.name}`,
            ).toMatchObject({ gateway: o.ip, dev: 'eth0', protocol: 'bird' });
          }
        }
        for (const cidr of blocks.get(n.name)!) {
          expect(routes.find((r) => r.dst === cidr)).toMatchObject({ type: 'blackhole', protocol: 'bird' });
        }
      }
    }, 60_000);

    it('pods on all four nodes reach each other over TCP and UDP', async () => {
      for (const protocol of ['tcp', 'udp'] as const) {
        const report = await lab.connectivity(protocol);
        expect(
          report.cells.filter((c) => !c.reachable).map((c) => `${c.from}->${c.to}: ${c.error}`),
          protocol,
        ).toEqual([]);
        expect(report.cells).toHaveLength(12);
        for (const c of report.cells) expect(c.answeredBy).toBe(c.to);
      }
    }, 60_000);

    it('lab status names the route reflector, its clients and each session', async () => {
      // Readiness is what each calico-node last saw of its BGP sessions (checked every 2 s): after
      // the switch to the reflector it follows the sessions, so wait for it.
      const t = Date.now();
      const status = await until(
        'every node ready in lab status',
        async () => {
          const s = await labStatus(lab);
          return s.json.nodes.every((n) => n.ready) ? s : undefined;
        },
        20_000,
        500,
      ).catch(() => labStatus(lab));
      const { json, table } = status!;
      console.log(`every node ready in lab status ${Date.now() - t} ms after the pods reached each other`);
      expect(json.nodes.map((n) => [n.name, n.ready, n.bgpRole])).toEqual([
        ['n1', true, 'route reflector (clients n2, n3, n4)'],
        ['n2', true, 'rr client of n1'],
        ['n3', true, 'rr client of n1'],
        ['n4', true, 'rr client of n1'],
      ]);
      expect(json.nodes[0]!.peers!.map((p) => [p.node, p.type, p.rrClient, p.bgpState])).toEqual([
        ['n2', 'node specific', true, 'Established'],
        ['n3', 'node specific', true, 'Established'],
        ['n4', 'node specific', true, 'Established'],
      ]);
      expect(json.nodes[1]!.peers!.map((p) => [p.node, p.type, p.rrClient, p.bgpState])).toEqual([
        ['n1', 'node specific', false, 'Established'],
      ]);
      const row = (n: string) => table.split('\n').find((l) => l.startsWith(`${n} `)) ?? '';
      expect(row('n1')).toContain(
        'route reflector (clients n2, n3, n4)  n2 rr-client Established, n3 rr-client Established, n4 rr-client Established',
      );
      expect(row('n3')).toMatch(/ rr client of n1 +n1 node Established$/);
      console.log(table);
    });
  },
);
