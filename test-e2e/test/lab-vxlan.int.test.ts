/**
 * The lab in VXLAN mode, on each datastore: `lab up --nodes 2 --mode vxlan --datastore …` (no BIRD;
 * a vxlanMode Always pool), one namespace, a pod on each node. Observed: each Node got a VXLAN
 * tunnel address from IPAM (through `lab calicoctl`), each kernel routes the other node's block via
 * that address over vxlan.calico, the pods reach each other over TCP and UDP, a NetworkPolicy
 * applied with `lab calicoctl` (and on the Kubernetes datastore a Kubernetes NetworkPolicy applied
 * with `lab kubectl`) changes what connects, and `lab down` leaves nothing.
 * Needs root, ip, nsenter, etcd (kubectl, openssl and kube-apiserver for the Kubernetes datastore);
 * under CI=true their absence fails the test instead of skipping.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  alive,
  blockOf,
  DATASTORES,
  kernelRoutes,
  LabDriver,
  missingPrerequisites,
  netnsList,
} from './lab-driver.js';
import { calicoPolicyScenario, kubePolicyScenario } from './policy-scenarios.js';

const ci = process.env.CI === 'true';

for (const datastore of DATASTORES) {
  const missing = missingPrerequisites(datastore);
  if (missing.length > 0) {
    describe(`lab end to end, VXLAN (${datastore})`, () => {
      it.skipIf(!ci)('has its prerequisites', () => {
        throw new Error(`missing prerequisites: ${missing.join(', ')}`);
      });
    });
  }
}

const PODS = ['blue/a', 'blue/b'];

describe.each(DATASTORES.filter((d) => missingPrerequisites(d).length === 0))(
  'lab end to end: 2 nodes, VXLAN, %s',
  (datastore) => {
    const name = `e2v${datastore === 'kubernetes' ? 'k' : ''}${Math.random().toString(16).slice(2, 6)}`;
    let dir: string;
    let lab: LabDriver;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-vxlan-'));
      lab = new LabDriver(name, join(dir, 'state'));
      const up = await lab.run('up', '--nodes', '2', '--mode', 'vxlan', '--datastore', datastore);
      expect(up.code, up.stdout + up.stderr).toBe(0);
      console.log(`lab up (vxlan, ${datastore}) took ${(up.ms / 1000).toFixed(1)} s`);
      expect(up.stdout).toContain('n1: ready (Felix in sync)');
      await lab.ok('ns', 'create', 'blue');
      await lab.ok('pod', 'create', 'blue/a', '--node', 'n1', '--labels', 'app=a');
      await lab.ok('pod', 'create', 'blue/b', '--node', 'n2', '--labels', 'app=b');
    }, 180_000);

    afterAll(async () => {
      if (lab && existsSync(join(lab.stateDir, 'state.json'))) await lab.run('down');
      if (dir) await rm(dir, { recursive: true, force: true });
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
    }, 60_000);

    it('the pods reach each other over TCP and UDP', async () => {
      for (const protocol of ['tcp', 'udp'] as const) {
        const report = await lab.connectivity(protocol);
        expect(
          report.cells.filter((c) => !c.reachable).map((c) => `${c.from}->${c.to}: ${c.error}`),
          protocol,
        ).toEqual([]);
        expect(report.cells.map((c) => [c.from, c.to, c.answeredBy])).toEqual([
          ['blue/a', 'blue/b', 'blue/b'],
          ['blue/b', 'blue/a', 'blue/a'],
        ]);
      }
    }, 60_000);

    it("each node has a tunnel address and routes the other's block through it over vxlan.calico", async () => {
      const nodes = JSON.parse((await lab.ok('calicoctl', 'get', 'nodes', '-o', 'json')).stdout) as {
        items: { metadata: { name: string }; spec: { ipv4VXLANTunnelAddr?: string } }[];
      };
      const vtep = new Map(nodes.items.map((n) => [n.metadata.name, n.spec.ipv4VXLANTunnelAddr]));
      expect(vtep.get('n1')).toMatch(/^198\.19\.\d+\.\d+$/);
      expect(vtep.get('n2')).toMatch(/^198\.19\.\d+\.\d+$/);
      const s = lab.state();
      for (const node of s.plan.nodes) {
        const routes = kernelRoutes(node.netns);
        for (const pod of s.pods.filter((p) => p.node !== node.name)) {
          expect(
            routes.find((r) => r.dst === blockOf(pod.ip)),
            `${node.name}: route to ${pod.name}'s block`,
          ).toMatchObject({
            gateway: vtep.get(pod.node),
            dev: 'vxlan.calico',
          });
        }
        expect(routes.some((r) => r.protocol === 'bird')).toBe(false);
      }
    });

    it('a NetworkPolicy applied with lab calicoctl changes lab connectivity', async () => {
      await calicoPolicyScenario(lab, dir, {
        namespace: 'blue',
        selector: "app == 'b'",
        allowFrom: "app == 'b'",
        pods: PODS,
        protectedPod: (id) => id === 'blue/b',
        allowedSource: () => false,
      });
    }, 120_000);

    it('a Kubernetes NetworkPolicy applied with lab kubectl is enforced', async () => {
      await kubePolicyScenario(lab, dir, {
        namespace: 'blue',
        podLabels: { app: 'a' },
        fromNamespaceLabels: { tier: 'front' },
        pods: PODS,
        protectedPod: (id) => id === 'blue/a',
        allowedSource: () => false,
      });
    }, 120_000);

    it('lab down leaves no namespace and no recorded process alive', async () => {
      const s = lab.state();
      const recorded = [...Object.values(s.processes), ...s.pods.map((p) => p.listener)];
      await lab.ok('down');
      expect(netnsList().filter((ns) => ns.startsWith(`${name}-`))).toEqual([]);
      expect(recorded.filter(alive)).toEqual([]);
      expect(existsSync(lab.stateDir)).toBe(false);
    }, 60_000);
  },
);
