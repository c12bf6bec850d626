/**
 * `lab up --mode policy-only`: Calico beside a pod network it does not make, as upstream installs it
 * on EKS beside the Amazon VPC CNI. calico-node runs with CALICO_NETWORKING_BACKEND=none and
 * FELIX_INTERFACEPREFIX=eni; the pods are wired on eni… interfaces with host-local addresses from
 * their node's range, and the fabric routes the ranges between nodes as a cloud network would.
 *
 * What a user sees: pods on different nodes reach each other with no BIRD running in any node's
 * namespace and no IPPool or IPAM record of Calico's in the API server; every pod's host interface
 * is the one the Kubernetes datastore names its endpoint after (eni + 11 hex of SHA-1 of
 * "<namespace>.<pod>"); and a Kubernetes NetworkPolicy blocks exactly the pairs it selects, on the
 * same node and across nodes, until it is deleted.
 *
 * Own lab name and state directory; `lab down` in afterAll, also when a test failed.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alive, kernelRoutes, LabDriver, missingPrerequisites, netnsList } from './lab-driver.js';

const missing = missingPrerequisites();
if (!existsSync('/usr/lib/cni/host-local') && !existsSync('/opt/cni/bin/host-local'))
  missing.push('host-local (containernetworking-plugins)');
const ci = process.env.CI === 'true';

if (missing.length > 0) {
  describe('lab policy-only mode', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const NS = 'shop';
/** Two pods on each node, so a policy is seen on the same node and across nodes. */
const PODS = [
  { name: 'a', node: 'n1' },
  { name: 'b', node: 'n2' },
  { name: 'c', node: 'n1' },
  { name: 'd', node: 'n2' },
] as const;
const ids = PODS.map((p) => `${NS}/${p.name}`);
const nodeOf = (id: string) => PODS.find((p) => `${NS}/${p.name}` === id)!.node;

/** Upstream's host interface name of a pod on the Kubernetes datastore, computed here on its own. */
const ifaceOf = (pod: string) => `eni${createHash('sha1').update(`${NS}.${pod}`).digest('hex').slice(0, 11)}`;

/** PIDs of processes named `comm` whose network namespace is `netns`. */
function processesIn(netns: string, comm: string): number[] {
  const ino = statSync(`/run/netns/${netns}`).ino;
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() !== comm) continue;
      if (statSync(`/proc/${d}/ns/net`).ino === ino) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe.each(missing.length > 0 ? [] : ['policy-only'])(
  'lab: %s mode (Calico beside another CNI)',
  (mode) => {
    const name = `e2po${Math.random().toString(16).slice(2, 6)}`;
    let dir: string;
    let lab: LabDriver;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-policy-only-'));
      lab = new LabDriver(name, join(dir, 'state'));
      const up = await lab.run('up', '--nodes', '2', '--mode', mode);
      expect(up.code, up.stdout + up.stderr).toBe(0);
      await lab.ok('ns', 'create', NS);
      for (const p of PODS)
        await lab.ok('pod', 'create', `${NS}/${p.name}`, '--node', p.node, '-l', `app=${p.name}`);
    }, 240_000);

    afterAll(async () => {
      if (dir && existsSync(join(dir, 'state', 'state.json'))) {
        const down = await lab.run('down');
        if (down.code !== 0) console.log(down.stdout + down.stderr);
      }
      if (dir) await rm(dir, { recursive: true, force: true });
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
    }, 60_000);

    it('refuses policy-only on the etcd datastore, before making anything', async () => {
      const other = new LabDriver(`${name}x`, join(dir, 'state-x'));
      const r = await other.run('up', '--mode', 'policy-only', '--datastore', 'etcdv3');
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/--mode policy-only runs on the Kubernetes datastore/);
      expect(existsSync(join(dir, 'state-x'))).toBe(false);
      expect(netnsList().filter((n) => n.startsWith(`${name}x-`))).toEqual([]);
    });

    it('every pod reaches every other, across nodes, over the routes the lab set as a cloud would', async () => {
      expect(await lab.reachabilityMatches(() => true)).toEqual([]);
      const s = lab.state();
      // Addresses from host-local on each node's own range, not from a Calico pool.
      for (const p of s.pods) {
        const node = s.plan.nodes.find((n) => n.name === p.node)!;
        expect(p.ip, `${p.name} on ${p.node}`).toMatch(
          new RegExp(`^198\\.19\\.${node.name.slice(1)}\\.\\d+$`),
        );
      }
      const routes = kernelRoutes(s.plan.fabricNetns);
      for (const node of s.plan.nodes) {
        expect(routes.find((r) => r.dst === `198.19.${node.name.slice(1)}.0/24`)).toMatchObject({
          gateway: node.ip,
        });
      }
    }, 60_000);

    it('runs no BIRD and leaves no Calico pool or IPAM record', async () => {
      const s = lab.state();
      for (const node of s.plan.nodes) {
        expect(processesIn(node.netns, 'bird'), `BIRD in ${node.netns}`).toEqual([]);
        expect(alive(s.processes[`node/${node.name}`]!), `calico-node ${node.name}`).toBe(true);
        expect(kernelRoutes(node.netns).some((r) => r.protocol === 'bird')).toBe(false);
      }
      const r = await lab.ok(
        'kubectl',
        'get',
        'ippools.crd.projectcalico.org,ipamblocks.crd.projectcalico.org,blockaffinities.crd.projectcalico.org,ipamhandles.crd.projectcalico.org',
        '-o',
        'json',
      );
      expect((JSON.parse(r.stdout) as { items: unknown[] }).items).toEqual([]);
      const status = JSON.parse((await lab.ok('status', '-o', 'json')).stdout) as {
        mode: string;
        nodes: { name: string; ready: boolean; bird?: { running: boolean } }[];
      };
      expect(status.mode).toBe(mode);
      for (const n of status.nodes) {
        expect(n.ready, n.name).toBe(true);
        expect(n.bird?.running ?? false).toBe(false);
      }
    }, 60_000);

    it('names each endpoint after its pod’s eni… interface, which is the one on the node', async () => {
      const r = await lab.ok('calicoctl', 'get', 'workloadendpoints', '-n', NS, '-o', 'json');
      const weps = (JSON.parse(r.stdout) as { items: { spec: { pod: string; interfaceName: string } }[] })
        .items;
      expect(Object.fromEntries(weps.map((w) => [w.spec.pod, w.spec.interfaceName]))).toEqual(
        Object.fromEntries(PODS.map((p) => [p.name, ifaceOf(p.name)])),
      );
      const s = lab.state();
      for (const p of PODS) {
        const netns = s.plan.nodes.find((n) => n.name === p.node)!.netns;
        const links = JSON.parse(
          spawnSync('ip', ['-n', netns, '-j', 'link', 'show'], { encoding: 'utf8' }).stdout,
        ) as { ifname: string }[];
        expect(links.map((l) => l.ifname)).toContain(ifaceOf(p.name));
        expect(links.map((l) => l.ifname).filter((n) => n.startsWith('cali'))).toEqual([]);
      }
    }, 60_000);

    it('a Kubernetes NetworkPolicy cuts exactly what it selects, on the same node and across nodes', async () => {
      // b (on n2) takes ingress from a (on n1) only: c (n1) and d (n2) lose b; nothing else changes.
      const policy = {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'b-from-a', namespace: NS },
        spec: {
          podSelector: { matchLabels: { app: 'b' } },
          policyTypes: ['Ingress'],
          ingress: [{ from: [{ podSelector: { matchLabels: { app: 'a' } } }] }],
        },
      };
      const allowed = (from: string, to: string) => to !== `${NS}/b` || from === `${NS}/a`;
      // The matrix covers both kinds of cut.
      expect(nodeOf(`${NS}/c`)).not.toBe(nodeOf(`${NS}/b`));
      expect(nodeOf(`${NS}/d`)).toBe(nodeOf(`${NS}/b`));
      expect(ids.filter((from) => ids.some((to) => from !== to && !allowed(from, to)))).toEqual([
        `${NS}/c`,
        `${NS}/d`,
      ]);

      expect(await lab.reachabilityMatches(() => true), 'before').toEqual([]);
      await lab.applyYaml('kubectl', dir, 'b-from-a', JSON.stringify(policy));
      expect(await lab.reachabilityMatches(allowed), 'with the policy').toEqual([]);
      await lab.ok('kubectl', 'delete', '-f', join(dir, 'b-from-a.yaml'));
      expect(await lab.reachabilityMatches(() => true), 'after deleting it').toEqual([]);
    }, 150_000);

    it('lab down leaves no namespace and no recorded process alive', async () => {
      const s = lab.state();
      const recorded = [...Object.values(s.processes), ...s.pods.map((p) => p.listener)];
      await lab.ok('down');
      expect(netnsList().filter((n) => n.startsWith(`${name}-`))).toEqual([]);
      expect(recorded.filter(alive)).toEqual([]);
    }, 60_000);
  },
);
