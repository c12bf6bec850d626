/**
 * Losing a node, on a 4-node BGP lab (full mesh) with a pod on every node:
 *
 * 1. n3's calico-node is stopped (SIGTERM, as Kubernetes stops a pod) and n4's is killed
 *    (SIGKILL, a crash), each by the PID the lab recorded for it. Their BIRDs go with them, without
 *    a BGP shutdown: as upstream, where BIRD dies with its calico-node pod. The other BIRDs see the
 *    sessions drop and, by graceful restart, keep n3's and n4's routes (stale) for the restart time
 *    (nodeMeshMaxRestartTime, default 120 s); n3's and n4's kernels keep theirs too. So pods on n1
 *    and n2 still reach the pods on n3 and n4, and back, over TCP.
 * 2. The Node n3 is deleted: on etcd with `lab calicoctl delete node n3` (upstream's way there), on
 *    the Kubernetes datastore with `lab kubectl delete node n3` (the Calico Node is the Kubernetes
 *    Node). n1 and n2 drop the session to n3 and, with it, the routes to n3's blocks — in their
 *    kernels too — so n3's pod is no longer reachable, while n4 (not deleted) keeps its routes.
 * 3. n3's blocks and its pod's address are freed at once: on etcd by calicoctl's node deletion; on
 *    the Kubernetes datastore by kube-controllers' node controller once the pod is gone too (deleted
 *    with `lab kubectl delete pod --force`, as the pod garbage collector does for a deleted node),
 *    long before the leak grace period (15 min by default) could have released anything.
 *
 * Runs on both datastores.
 * Own lab name and state directory; `lab down` in afterAll, also when a test failed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BirdControlClient } from '@calico-ts/bird-bridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bgpSessions, blockAffinities, labStatus, sessionLines, until } from './bgp-observe.js';
import { alive, DATASTORES, kernelRoutes, LabDriver, missingPrerequisites } from './lab-driver.js';

const missing = missingPrerequisites();
const ci = process.env.CI === 'true';

if (missing.length > 0) {
  describe('lab node loss', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const mesh = (ip: string) => `Mesh_${ip.replaceAll('.', '_')}`;

/** Running and not a zombie (a dead child whose parent has not reaped it is gone for BGP). */
function pidRuns(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

describe.each(missing.length > 0 ? [] : DATASTORES)(
  'lab: a node stopped, a node crashed, then a Node deleted, %s',
  (datastore) => {
    const name = `e2l${datastore === 'kubernetes' ? 'k' : ''}${Math.random().toString(16).slice(2, 6)}`;
    let dir: string;
    let lab: LabDriver;
    let blocks: Map<string, string[]>;
    let lostAt = 0;
    const t0 = Date.now();
    const node = (n: string) => lab.state().plan.nodes.find((x) => x.name === n)!;
    /** Does `on`'s kernel route every block of `owner` via `owner`, as BIRD put it there? */
    const routesTo = (on: string, owner: string) => {
      const routes = kernelRoutes(node(on).netns);
      return blocks
        .get(owner)!
        .map((cidr) => routes.find((r) => r.dst === cidr))
        .map((r) => (r ? `${r.dst} via ${r.gateway} ${r.protocol}` : 'none'));
    };
    const viaOwner = (owner: string) => blocks.get(owner)!.map((c) => `${c} via ${node(owner).ip} bird`);
    const cellsFrom = async () => {
      const r = await lab.ok('connectivity', '--protocol', 'tcp', '-o', 'json', '--timeout-ms', '3000');
      return (JSON.parse(r.stdout) as { cells: { from: string; to: string; reachable: boolean }[] }).cells;
    };

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-loss-'));
      lab = new LabDriver(name, join(dir, 'state'));
      const up = await lab.run('up', '--nodes', '4', '--mode', 'bgp', '--datastore', datastore);
      expect(up.code, up.stdout + up.stderr).toBe(0);
      await lab.ok('ns', 'create', 'loss');
      for (const n of ['n1', 'n2', 'n3', 'n4']) await lab.ok('pod', 'create', `loss/on-${n}`, '--node', n);
      blocks = await blockAffinities(lab);
    }, 150_000);

    afterAll(async () => {
      if (dir && existsSync(join(dir, 'state', 'state.json'))) {
        const down = await lab.run('down');
        if (down.code !== 0) console.log(down.stdout + down.stderr);
      }
      if (dir) await rm(dir, { recursive: true, force: true });
      console.log(`node-loss scenario: ${((Date.now() - t0) / 1000).toFixed(1)} s in all`);
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
    }, 60_000);

    it('starts with every pod reaching every other and every route in place', async () => {
      const report = await lab.connectivity('tcp');
      expect(report.cells.filter((c) => !c.reachable)).toEqual([]);
      expect(report.cells).toHaveLength(12);
      // A new pod is reachable at once through its own /32 (BIRD learns the route the CNI plugin
      // adds); the block's /26 follows when the owner's BIRD has the block in its configuration.
      const t = Date.now();
      for (const on of ['n1', 'n2']) {
        for (const owner of ['n3', 'n4']) {
          await until(
            `${on}: routes to ${owner}'s blocks via ${owner}`,
            () => JSON.stringify(routesTo(on, owner)) === JSON.stringify(viaOwner(owner)),
            20_000,
            100,
          ).catch(() => undefined);
          expect(routesTo(on, owner), `${on} → ${owner}`).toEqual(viaOwner(owner));
        }
      }
      console.log(`block routes in place ${Date.now() - t} ms after the connectivity check`);
    }, 60_000);

    it("n3's calico-node stopped (SIGTERM) and n4's killed (SIGKILL) by their recorded PIDs: their BIRDs go too", async () => {
      const s = lab.state();
      const targets = [
        { node: 'n3', signal: 'SIGTERM' as const },
        { node: 'n4', signal: 'SIGKILL' as const },
      ].map((t) => ({
        ...t,
        rec: s.processes[`node/${t.node}`]!,
        birdPid: Number(readFileSync(join(node(t.node).runDir, 'bird.pid'), 'utf8').trim()),
      }));
      for (const t of targets) {
        expect(alive(t.rec), `calico-node ${t.node}`).toBe(true);
        expect(pidRuns(t.birdPid), `BIRD ${t.node}`).toBe(true);
      }
      lostAt = Date.now();
      for (const t of targets) process.kill(t.rec.pid, t.signal);
      for (const t of targets) {
        await until(`calico-node ${t.node} gone`, () => !alive(t.rec), 15_000, 50);
        await until(`BIRD of ${t.node} gone`, () => !pidRuns(t.birdPid), 15_000, 50);
      }
      console.log(`calico-node and BIRD of n3 and n4 gone ${Date.now() - lostAt} ms after the signals`);
      // Stopped on SIGTERM, calico-node said how it ended BIRD.
      const log = readFileSync(join(dir, 'state', 'nodes', 'n3', 'calico-node.log'), 'utf8');
      expect(log).toContain('BIRD killed; peers keep its routes for their graceful restart time');
    }, 60_000);

    it("n1's and n2's BIRDs lose the sessions but keep n3's and n4's routes (graceful restart), in BIRD and the kernel", async () => {
      for (const on of ['n1', 'n2']) {
        await until(`${on}: sessions to n3 and n4 down`, async () => {
          const s = sessionLines(await bgpSessions(node(on).runDir));
          return (
            !s.includes(`${mesh(node('n3').ip)} Established`) &&
            !s.includes(`${mesh(node('n4').ip)} Established`)
          );
        });
        // Give a withdrawal every chance to arrive: BIRD's kernel sync runs every 2 s.
        await new Promise((r) => setTimeout(r, 2500));
        for (const owner of ['n3', 'n4']) {
          expect(routesTo(on, owner), `${on}: kernel routes to ${owner}'s blocks`).toEqual(viaOwner(owner));
          const bird = new BirdControlClient(join(node(on).runDir, 'bird.ctl'));
          const route = (await bird.command(`show route ${blocks.get(owner)![0]}`)).lines.map((l) => l.text);
          expect(route.join('\n'), `${on}: BIRD's route to ${owner}'s block`).toContain(
            `[${mesh(node(owner).ip)}`,
          );
          const proto = (await bird.command(`show protocols all "${mesh(node(owner).ip)}"`)).lines.map(
            (l) => l.text,
          );
          expect(proto.join('\n'), `${on}: session to ${owner}`).toContain(
            'Neighbor graceful restart active',
          );
        }
      }
      // The stopped nodes' own kernels keep what their BIRD programmed (nothing withdrew it).
      expect(routesTo('n3', 'n1')).toEqual(viaOwner('n1'));
      expect(routesTo('n4', 'n2')).toEqual(viaOwner('n2'));
    }, 60_000);

    it('pods on n1 and n2 still reach the pods on n3 and n4, and back, over TCP', async () => {
      const cells = await cellsFrom();
      expect(cells.filter((c) => !c.reachable).map((c) => `${c.from}->${c.to}`)).toEqual([]);
      expect(cells).toHaveLength(12);
      console.log(`still reachable ${((Date.now() - lostAt) / 1000).toFixed(1)} s after the loss`);
      // Within the graceful restart time, or this proves nothing about it.
      expect(Date.now() - lostAt).toBeLessThan(100_000);
    }, 60_000);

    it('lab status shows n3 and n4 down and the others without sessions to them', async () => {
      const { json } = await labStatus(lab);
      expect(json.nodes.map((n) => [n.name, n.calicoNode.running, n.bird?.running])).toEqual([
        ['n1', true, true],
        ['n2', true, true],
        ['n3', false, false],
        ['n4', false, false],
      ]);
      const n1 = json.nodes[0]!;
      expect(n1.peers!.map((p) => [p.node, p.bgpState === 'Established'])).toEqual([
        ['n2', true],
        ['n3', false],
        ['n4', false],
      ]);
    });

    it("deleting Node n3 takes its block routes out of n1's and n2's kernels; n4's stay", async () => {
      if (datastore === 'kubernetes') await lab.ok('kubectl', 'delete', 'node', 'n3');
      else await lab.ok('calicoctl', 'delete', 'node', 'n3');
      const t = Date.now();
      for (const on of ['n1', 'n2']) {
        await until(
          `${on}: no route to n3's blocks`,
          () => routesTo(on, 'n3').every((r) => r === 'none'),
          20_000,
        );
        expect((await bgpSessions(node(on).runDir)).map((s) => s.name)).not.toContain(mesh(node('n3').ip));
        expect(routesTo(on, 'n4'), `${on} → n4`).toEqual(viaOwner('n4'));
      }
      console.log(`Node n3 deleted → its routes gone from n1 and n2 in ${Date.now() - t} ms`);
      const cells = await cellsFrom();
      const lost = cells.filter((c) => !c.reachable).map((c) => `${c.from}->${c.to}`);
      // n3's pod is cut off from n1's and n2's (no route either way); n4's pod still answers.
      expect(lost.sort()).toEqual(
        [
          'loss/on-n1->loss/on-n3',
          'loss/on-n2->loss/on-n3',
          'loss/on-n3->loss/on-n1',
          'loss/on-n3->loss/on-n2',
        ].sort(),
      );
    }, 60_000);

    it("n3's blocks and its pod's address are freed at once; n4's stay", async () => {
      const ip = lab.state().pods.find((p) => p.name === 'on-n3')!.ip;
      // Each poll runs a lab command (a second or more on a busy machine); a minute is still far
      // inside the 15 min leak grace period this must not wait for.
      const t = Date.now();
      // What the pod garbage collector does with a deleted node's pods: no kubelet runs CNI DEL.
      if (datastore === 'kubernetes')
        await lab.ok('kubectl', 'delete', 'pod', '-n', 'loss', 'on-n3', '--force', '--grace-period=0');
      await until(
        "n3's block affinities released",
        async () => !(await blockAffinities(lab)).has('n3'),
        60_000,
        1000,
      );
      await until(
        `n3's pod's address ${ip} released`,
        async () =>
          (await lab.ok('calicoctl', 'ipam', 'show', '--ip', ip)).stdout.includes('is not assigned'),
        60_000,
        1000,
      );
      console.log(
        `n3's blocks and address freed ${((Date.now() - t) / 1000).toFixed(1)} s after the deletion`,
      );
      expect((await blockAffinities(lab)).get('n4')).toEqual(blocks.get('n4'));
    }, 150_000);
  },
);
