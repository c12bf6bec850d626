/**
 * The lab end to end, as a user drives it, on each datastore (`lab up --datastore etcdv3|kubernetes`):
 * `lab up --nodes 3 --mode bgp`, two namespaces, four pods across the nodes, then what the user
 * sees — every pod reaches every other over TCP and UDP (`lab connectivity -o json`), each node's
 * kernel holds the other nodes' blocks as `proto bird` routes via those nodes, BIRD reports every
 * mesh session Established on its control socket, a NetworkPolicy applied with `lab calicoctl`
 * changes the connectivity matrix (and, on the Kubernetes datastore, so does a Kubernetes
 * NetworkPolicy applied with `lab kubectl`, and `lab kubectl` shows the IPPools calicoctl wrote as
 * crd.projectcalico.org/v1 objects) — and `lab down` leaves no namespace and no live process behind.
 *
 * Each lab gets its own name and state directory, so a developer's `pnpm lab` is untouched. Needs
 * root, ip, nsenter, etcd and bird (and kubectl, openssl and the kube-apiserver scripts/setup.sh
 * builds, for the Kubernetes datastore); under CI=true their absence fails the test instead of
 * skipping.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BirdControlClient } from '@calico-ts/bird-bridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  alive,
  blockOf,
  DATASTORES,
  kernelRoutes,
  LAB,
  LabDriver,
  missingPrerequisites,
  netnsList,
  type ProcRecord,
  ROOT,
} from './lab-driver.js';
import {
  calicoPolicyScenario,
  etcdKeepsBoth,
  kubePolicyScenario,
  kubeStoredIPPool,
  serviceEgressScenario,
} from './policy-scenarios.js';

const ci = process.env.CI === 'true';
const missing = missingPrerequisites();

for (const datastore of DATASTORES) {
  const m = missingPrerequisites(datastore);
  if (m.length > 0) {
    describe(`lab end to end (${datastore})`, () => {
      it.skipIf(!ci)('has its prerequisites', () => {
        throw new Error(`missing prerequisites: ${m.join(', ')}`);
      });
    });
  }
}

const POD_LIST = [
  { ref: 'team-a/web-1', node: 'n1', labels: 'app=web' },
  { ref: 'team-a/web-2', node: 'n2', labels: 'app=web' },
  { ref: 'team-b/db-1', node: 'n3', labels: 'app=db' },
  { ref: 'team-b/db-2', node: 'n1', labels: 'app=db' },
] as const;

const POD_IDS = POD_LIST.map((p) => p.ref);

describe.each(DATASTORES.filter((d) => missingPrerequisites(d).length === 0))(
  'lab end to end: 3 nodes, BGP, %s',
  (datastore) => {
    const name = `e2e${datastore === 'kubernetes' ? 'k' : ''}${Math.random().toString(16).slice(2, 6)}`;
    let dir: string;
    let stateDir: string;
    let lab: LabDriver;
    let upMs = 0;
    let upOutput = '';
    const labOk = (...args: string[]) => lab.ok(...args);
    const state = () => lab.state();

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-'));
      stateDir = join(dir, 'state');
      lab = new LabDriver(name, stateDir);
      const r = await lab.run('up', '--nodes', '3', '--mode', 'bgp', '--datastore', datastore);
      upMs = r.ms;
      upOutput = r.stdout + r.stderr;
      expect(r.code, upOutput).toBe(0);
      await labOk('ns', 'create', 'team-a', '--labels', 'tier=front');
      await labOk('ns', 'create', 'team-b');
      for (const p of POD_LIST) await labOk('pod', 'create', p.ref, '--node', p.node, '--labels', p.labels);
    }, 180_000);

    afterAll(async () => {
      // A safety net: `lab down` is idempotent, and must run even when a test failed.
      if (stateDir && existsSync(join(stateDir, 'state.json'))) await lab.run('down');
      if (dir) await rm(dir, { recursive: true, force: true });
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
    }, 60_000);

    it('comes up with three ready nodes, reported as it goes', () => {
      for (const n of ['n1', 'n2', 'n3'])
        expect(upOutput).toContain(`${n}: ready (Felix in sync, BGP sessions Established)`);
      expect(upOutput).toMatch(new RegExp(`lab "${name}" is up in [0-9.]+ s`));
      expect(upOutput).toContain(`datastore ${datastore}`);
      console.log(`lab up (bgp, ${datastore}) took ${(upMs / 1000).toFixed(1)} s`);
      expect(state().plan.nodes.map((n) => n.netns)).toEqual([`${name}-n1`, `${name}-n2`, `${name}-n3`]);
    });

    it('every pod reaches every other pod over TCP and UDP', async () => {
      for (const protocol of ['tcp', 'udp'] as const) {
        const report = await lab.connectivity(protocol);
        const failures = report.cells
          .filter((c) => !c.reachable)
          .map((c) => `${c.from}->${c.to}: ${c.error}`);
        expect(failures, protocol).toEqual([]);
        expect(report.cells).toHaveLength(12);
        expect(report.allReachable).toBe(true);
        for (const c of report.cells) expect(c.answeredBy).toBe(c.to);
      }
    }, 60_000);

    it("each node's kernel routes the other nodes' blocks via them, proto bird", () => {
      const s = state();
      for (const node of s.plan.nodes) {
        const routes = kernelRoutes(node.netns);
        for (const pod of s.pods.filter((p) => p.node !== node.name)) {
          const via = s.plan.nodes.find((n) => n.name === pod.node)!;
          const route = routes.find((r) => r.dst === blockOf(pod.ip));
          expect(
            route,
            `${node.name}: route to ${blockOf(pod.ip)} (pod ${pod.namespace}/${pod.name})`,
          ).toMatchObject({
            gateway: via.ip,
            dev: 'eth0',
            protocol: 'bird',
          });
        }
        // Its own pods' blocks are blackholes it originates; its pods have /32s to their cali interfaces.
        for (const pod of s.pods.filter((p) => p.node === node.name)) {
          expect(routes.find((r) => r.dst === blockOf(pod.ip))).toMatchObject({
            type: 'blackhole',
            protocol: 'bird',
          });
          expect(routes.find((r) => r.dst === pod.ip)?.dev).toMatch(/^cali[0-9a-f]{11}$/);
        }
      }
    });

    it('BIRD on every node shows every mesh session Established', async () => {
      const s = state();
      for (const node of s.plan.nodes) {
        const rows = await new BirdControlClient(join(node.runDir, 'bird.ctl')).showProtocols();
        const mesh = rows
          .filter((r) => r.proto === 'BGP')
          .map((r) => [r.name, r.state, r.info.split(/\s+/)[0]])
          .sort();
        const expected = s.plan.nodes
          .filter((n) => n.name !== node.name)
          .map((n) => [`Mesh_${n.ip.replaceAll('.', '_')}`, 'up', 'Established']);
        expect(mesh, node.name).toEqual(expected);
      }
    });

    it('a NetworkPolicy applied with lab calicoctl changes lab connectivity, and deleting it restores it', async () => {
      await calicoPolicyScenario(lab, dir, {
        namespace: 'team-b',
        selector: "app == 'db'",
        allowFrom: "app == 'db'",
        pods: POD_IDS,
        protectedPod: (id) => id.startsWith('team-b/db-'),
        allowedSource: (id) => id.startsWith('team-b/db-'),
      });
    }, 120_000);

    it('a Kubernetes NetworkPolicy applied with lab kubectl is enforced, and deleting it restores it', async () => {
      await kubePolicyScenario(lab, dir, {
        namespace: 'team-a',
        podLabels: { app: 'web' },
        fromNamespaceLabels: { tier: 'front' },
        pods: POD_IDS,
        protectedPod: (id) => id.startsWith('team-a/web-'),
        allowedSource: (id) => id.startsWith('team-a/'),
      });
    }, 120_000);

    // Defined only where they apply: a skipped test counts as a failure under CI=true.
    if (datastore === 'kubernetes') {
      it('an egress policy allowing only a Service reaches exactly its endpoints, and nothing while it has none', async () => {
        await serviceEgressScenario(lab, dir, {
          namespace: 'team-a',
          selector: "app == 'web'",
          isSelected: (id) => id.startsWith('team-a/web-'),
          serviceNamespace: 'team-b',
          endpointPod: 'team-b/db-1',
        });
      }, 180_000);

      it("lab kubectl shows an IPPool written with lab calicoctl in upstream's stored shape", async () => {
        await kubeStoredIPPool(lab, dir);
      });
    } else {
      it("the API server keeps its objects under /registry in the lab's etcd, beside Calico's /calico/", async () => {
        await etcdKeepsBoth(lab);
      });
    }

    it('lab status agrees, and refuses a second lab up with a clear message', async () => {
      const st = JSON.parse((await labOk('status', '-o', 'json')).stdout) as {
        datastore: string;
        apiServer?: { url: string; running: boolean; ready: boolean };
        kubeControllers?: { running: boolean; ready: boolean; controllers: string[] };
        nodes: { name: string; ready: boolean; peers: { bgpState: string }[] }[];
        pods: { listener: { running: boolean } }[];
      };
      expect(st.datastore).toBe(datastore);
      expect(st.apiServer).toMatchObject({ url: 'https://198.18.0.2:6443', running: true, ready: true });
      expect(st.kubeControllers).toEqual(
        expect.objectContaining({
          running: true,
          ready: true,
          controllers:
            datastore === 'kubernetes'
              ? ['node']
              : ['policy', 'namespace', 'serviceaccount', 'workloadendpoint', 'node'],
        }),
      );
      const table = (await labOk('status')).stdout;
      expect(table).toMatch(/^kube-apiserver +running \(\d+\) +yes /m);
      expect(table).toMatch(/^calico-kube-controllers +running \(\d+\) +yes /m);
      expect(st.nodes.map((n) => [n.name, n.ready, n.peers.map((p) => p.bgpState)])).toEqual([
        ['n1', true, ['Established', 'Established']],
        ['n2', true, ['Established', 'Established']],
        ['n3', true, ['Established', 'Established']],
      ]);
      expect(st.pods.every((p) => p.listener.running)).toBe(true);
      const again = await lab.run('up');
      expect(again.code).toBe(1);
      expect(again.stderr).toContain(`the lab "${name}" is already up`);
    });

    it('lab down leaves no namespace and no recorded process alive', async () => {
      const s = state();
      const recorded: ProcRecord[] = [...Object.values(s.processes), ...s.pods.map((p) => p.listener)];
      const birdPids = s.plan.nodes.map((n) =>
        Number(readFileSync(join(n.runDir, 'bird.pid'), 'utf8').trim()),
      );
      expect(recorded.every(alive)).toBe(true);
      expect(s.namespaces.every((ns) => netnsList().includes(ns))).toBe(true);

      expect(Object.keys(s.processes)).toEqual(
        expect.arrayContaining(['etcd', 'kube-apiserver', 'kube-controllers']),
      );
      const r = await labOk('down');
      expect(r.stdout).toMatch(
        new RegExp(`lab "${name}" is down: \\d+ processes stopped, 9 namespaces removed`),
      );
      const left = netnsList().filter((ns) => ns.startsWith(`${name}-`));
      expect(left).toEqual([]);
      expect(recorded.filter(alive)).toEqual([]);
      for (const pid of birdPids)
        expect(
          existsSync(`/proc/${pid}/cmdline`) &&
            readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(stateDir),
        ).toBe(false);
      expect(existsSync(stateDir)).toBe(false);
    }, 60_000);
  },
);

describe.skipIf(missing.length > 0)('lab up that fails', () => {
  const name = `e2f${Math.random().toString(16).slice(2, 6)}`;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-e2e-fail-'));
  });
  afterAll(async () => {
    const stateDir = join(dir, 'state');
    if (existsSync(join(stateDir, 'state.json'))) {
      spawnSync(process.execPath, [LAB, '--name', name, '--state-dir', stateDir, 'down'], { cwd: ROOT });
    }
    spawnSync('ip', ['netns', 'del', `${name}-n2`]);
    await rm(dir, { recursive: true, force: true });
  });

  const up = (env: Record<string, string> = {}) =>
    spawnSync(
      process.execPath,
      [LAB, '--name', name, '--state-dir', join(dir, 'state'), 'up', '--nodes', '2'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, ...env },
        timeout: 60_000,
      },
    );
  const ours = () =>
    spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .stdout.split('\n')
      .map((l) => l.split(' ')[0]!)
      .filter((l) => l.startsWith(`${name}-`));

  it('removes everything it made when a node cannot start', () => {
    const r = up({ CALICO_LAB_NODE_BIN: '/bin/false' });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('lab up failed; removing what it made');
    expect(r.stdout).toMatch(/stopped etcd \(pid \d+\)/);
    expect(r.stderr).toMatch(/lab: calico-node n[12] exited/);
    expect(ours()).toEqual([]);
    expect(existsSync(join(dir, 'state'))).toBe(false);
  });

  it('refuses to start over a namespace it did not make, and makes nothing', () => {
    expect(spawnSync('ip', ['netns', 'add', `${name}-n2`]).status).toBe(0);
    const r = up();
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`network namespace ${name}-n2 already exists and this lab did not make it`);
    expect(ours()).toEqual([`${name}-n2`]);
    expect(existsSync(join(dir, 'state', 'state.json'))).toBe(false);
  });
});
