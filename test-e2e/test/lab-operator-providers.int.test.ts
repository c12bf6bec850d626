/**
 * The operator's Helm chart with the two values files of upstream's Helm guide, on the real cluster:
 *
 *   lab up --kubelet --install operator-helm --helm-values eks
 *     `installation: {kubernetesProvider: EKS}`: Calico for policy only beside the Amazon VPC CNI.
 *     The lab gives every node that CNI's way of wiring pods first (lab-eni: eni… host interfaces,
 *     host-local on the Node's podCIDR, the fabric routing the ranges as a VPC does). What a user
 *     then sees: calico-node Running on every node with no CNI container beside it, no BIRD in any
 *     node (no bird process, nothing listening on 179, no bird.ctl), no IPPool, IPAM block or block
 *     affinity of Calico's, pods on different nodes answering each other, and a NetworkPolicy deny
 *     enforced on the pods' eni… interfaces until it is deleted.
 *   lab up --kubelet --install operator-helm --helm-values aks
 *     `{kubernetesProvider: AKS, cni: {type: Calico}, calicoNetwork: {bgp: Disabled, ipPools:
 *     [{cidr: 198.19.0.0/16, encapsulation: VXLAN}]}}` (the guide's 10.244.0.0/16 moved into the
 *     lab's range): the IPPool as given (VXLAN Always), vxlan.calico on every node with a route to
 *     each other node's blocks through it, no BIRD, pods answering across nodes.
 *
 * The time from `helm install` to TigeraStatus calico Available is printed. Own lab name and state
 * directory; `lab down` after each test, also when it failed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageRef } from '@calico-ts/images/definitions';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { httpGet, missingForCluster } from './cluster.js';
import { ensureImages } from './images.js';
import { kernelRoutes, LabDriver } from './lab-driver.js';

const ci = process.env.CI === 'true';
const missing = missingForCluster(['/usr/lib/cni/host-local', '/usr/lib/cni/loopback']);
if (missing.length > 0) {
  describe('lab up --kubelet: the operator chart with the EKS and AKS values', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

interface Pod {
  metadata: { name: string; namespace?: string };
  spec: { nodeName?: string; containers: { name: string }[]; initContainers?: { name: string }[] };
  status: { phase?: string; podIP?: string; containerStatuses?: { ready: boolean }[] };
}
interface Node {
  name: string;
  netns: string;
  dir?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha11 = (s: string) => createHash('sha1').update(s).digest('hex').slice(0, 11);

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

const inNode = (netns: string, argv: string[]) =>
  spawnSync('nsenter', [`--net=/run/netns/${netns}`, ...argv], { encoding: 'utf8' });

describe.skipIf(missing.length > 0)(
  'lab up --kubelet: the operator chart with the EKS and AKS values',
  () => {
    let dir = '';
    let lab: LabDriver | undefined;

    beforeAll(async () => {
      console.log(await ensureImages(undefined, ['pause', 'httpd']));
    }, 30 * 60_000);

    afterEach(async () => {
      if (lab && existsSync(join(lab.stateDir, 'state.json'))) await lab.run('down');
      if (dir) await rm(dir, { recursive: true, force: true });
      lab = undefined;
    }, 120_000);

    async function up(values: string): Promise<LabDriver> {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-providers-'));
      const l = new LabDriver(`e2ep${Math.random().toString(16).slice(2, 6)}`, join(dir, 'state'));
      lab = l;
      const r = await l.ok(
        'up',
        '--kubelet',
        '--nodes',
        '3',
        '--install',
        'operator-helm',
        '--helm-values',
        values,
      );
      const took = /\(([\d.]+) s after the Installation was created\)/.exec(r.stdout)?.[1];
      console.log(
        `--helm-values ${values}: helm install → calico-node ready on 3 nodes, calico Available: ${took} s`,
      );
      expect(took).toBeDefined();
      return l;
    }

    const nodesOf = (l: LabDriver) => (l.state() as unknown as { plan: { nodes: Node[] } }).plan.nodes;
    const json = async <T>(l: LabDriver, ...args: string[]) =>
      JSON.parse((await l.ok('kubectl', ...args, '-o', 'json')).stdout) as T;

    /** calico-node on every node, Running and ready; its containers. */
    async function calicoNodeOnEveryNode(l: LabDriver): Promise<Pod[]> {
      const pods = (
        await json<{ items: Pod[] }>(l, 'get', 'pods', '-n', 'calico-system', '-l', 'k8s-app=calico-node')
      ).items;
      expect(pods.map((p) => p.spec.nodeName).sort()).toEqual(nodesOf(l).map((n) => n.name));
      for (const p of pods) {
        expect(p.status.phase, p.metadata.name).toBe('Running');
        expect(
          p.status.containerStatuses?.every((c) => c.ready),
          p.metadata.name,
        ).toBe(true);
      }
      return pods;
    }

    /** No BIRD in any node: no bird process in its namespace, nothing listening on 179, no bird.ctl. */
    function noBird(l: LabDriver): void {
      for (const n of nodesOf(l)) {
        expect(processesIn(n.netns, 'bird'), `bird in ${n.name}`).toEqual([]);
        const ss = inNode(n.netns, ['ss', '-Hltn', 'sport = :179']);
        expect(ss.status, ss.stderr).toBe(0);
        expect(ss.stdout.trim(), `a listener on 179 in ${n.name}`).toBe('');
        const run = join(l.stateDir, 'nodes', n.name, 'k8s', 'host', 'run-calico');
        expect(existsSync(run), run).toBe(true);
        expect(
          readdirSync(run).filter((f) => f.startsWith('bird')),
          `${run}`,
        ).toEqual([]);
      }
    }

    /** A Deployment of 3 and a client; the pods on another node than the client's, each answering. */
    async function webAndClient(l: LabDriver): Promise<{ web: Pod[]; client: Pod }> {
      await l.ok('kubectl', 'create', 'deployment', 'web', `--image=${imageRef('httpd')}`, '--replicas=3');
      await l.ok('kubectl', 'run', 'client', `--image=${imageRef('httpd')}`);
      await l.ok('kubectl', 'rollout', 'status', 'deployment/web', '--timeout=120s');
      await l.ok('kubectl', 'wait', '--for=condition=Ready', 'pod/client', '--timeout=120s');
      const web = (await json<{ items: Pod[] }>(l, 'get', 'pods', '-l', 'app=web')).items;
      const client = await json<Pod>(l, 'get', 'pod', 'client');
      expect(web.some((p) => p.spec.nodeName !== client.spec.nodeName)).toBe(true);
      return { web, client };
    }

    /** Until each web pod answers the client (or, `answers` false, none does), within 30 s. */
    async function answers(l: LabDriver, web: Pod[], want: boolean): Promise<void> {
      const end = Date.now() + 30_000;
      for (;;) {
        const got = await Promise.all(web.map((p) => httpGet(l, 'client', p.status.podIP!)));
        const ok = got.every((g, i) => (g === web[i]!.metadata.name) === want);
        if (ok) return;
        if (Date.now() > end)
          throw new Error(
            `client → web: want ${want ? 'answers' : 'none'}, got ${web.map((p, i) => `${p.metadata.name} on ${p.spec.nodeName}: ${JSON.stringify(got[i])}`).join(', ')}`,
          );
        await sleep(1000);
      }
    }

    it('EKS: policy only beside the Amazon VPC CNI’s wiring; no BIRD, no IPAM; a deny enforced on eni…', async () => {
      const l = await up('eks');
      const nodes = nodesOf(l);
      // calico-node alone in its pod: the operator rendered no install-cni and no cni-refresh.
      for (const p of await calicoNodeOnEveryNode(l)) {
        expect(p.spec.containers.map((c) => c.name)).toEqual(['calico-node']);
        expect(p.spec.initContainers ?? []).toEqual([]);
      }
      const ds = await json<{
        spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
      }>(l, 'get', 'daemonset', 'calico-node', '-n', 'calico-system');
      const env = Object.fromEntries(ds.spec.template.spec.containers[0]!.env.map((e) => [e.name, e.value]));
      expect(env).toMatchObject({
        CALICO_NETWORKING_BACKEND: 'none',
        FELIX_INTERFACEPREFIX: 'eni',
        CLUSTER_TYPE: 'k8s,operator,ecs',
      });
      noBird(l);
      for (const kind of ['ippools', 'ipamblocks', 'blockaffinities'])
        expect(
          (await json<{ items: unknown[] }>(l, 'get', `${kind}.crd.projectcalico.org`)).items,
          kind,
        ).toEqual([]);
      // The pods' CNI is the lab's: its conflist is each node's only one.
      for (const n of nodes)
        expect(readdirSync(join(l.stateDir, 'nodes', n.name, 'k8s', 'host', 'etc-cni-net.d'))).toEqual([
          '10-lab-eni.conflist',
        ]);

      const { web } = await webAndClient(l);
      const ranges = new Map(
        (
          await json<{ items: { metadata: { name: string }; spec: { podCIDR: string } }[] }>(
            l,
            'get',
            'nodes',
          )
        ).items.map((n) => [n.metadata.name, n.spec.podCIDR]),
      );
      for (const p of web) {
        const node = nodes.find((n) => n.name === p.spec.nodeName)!;
        // The address from the node's range; the host interface the name Calico's endpoint has.
        expect(p.status.podIP!.split('.').slice(0, 3).join('.')).toBe(
          ranges.get(node.name)!.split('.').slice(0, 3).join('.'),
        );
        const iface = `eni${sha11(`default.${p.metadata.name}`)}`;
        expect(inNode(node.netns, ['ip', 'link', 'show', iface]).status, `${iface} on ${node.name}`).toBe(0);
        expect(
          kernelRoutes(node.netns).some((r) => r.dst === p.status.podIP && r.dev === iface),
          `${p.status.podIP} dev ${iface}`,
        ).toBe(true);
      }
      await answers(l, web, true);

      await l.applyYaml(
        'kubectl',
        dir,
        'web-deny',
        [
          'apiVersion: networking.k8s.io/v1',
          'kind: NetworkPolicy',
          'metadata: {name: web-deny, namespace: default}',
          'spec: {podSelector: {matchLabels: {app: web}}, policyTypes: [Ingress]}',
        ].join('\n'),
      );
      await answers(l, web, false);
      // Felix polices the eni… interface of each web pod in its node's ruleset.
      for (const p of web) {
        const node = nodes.find((n) => n.name === p.spec.nodeName)!;
        const rules = inNode(node.netns, ['nft', 'list', 'ruleset']).stdout;
        expect(rules, `nftables of ${node.name}`).toContain(`eni${sha11(`default.${p.metadata.name}`)}`);
      }
      await l.ok('kubectl', 'delete', 'networkpolicy', 'web-deny');
      await answers(l, web, true);
    }, 900_000);

    it('AKS: the Calico CNI with the values’ VXLAN pool, routes over vxlan.calico, no BIRD', async () => {
      const l = await up('aks');
      const nodes = nodesOf(l);
      await calicoNodeOnEveryNode(l);
      const pool = (await l.ok('calicoctl', 'get', 'ippool', 'default-ipv4-ippool', '-o', 'yaml')).stdout;
      expect(pool).toMatch(/cidr: 198\.19\.0\.0\/16/);
      expect(pool).toMatch(/vxlanMode: Always/);
      expect(pool).toMatch(/ipipMode: Never/);
      const ns = await json<{ metadata: { labels: Record<string, string> } }>(
        l,
        'get',
        'namespace',
        'calico-system',
      );
      expect(ns.metadata.labels['control-plane']).toBe('true');
      noBird(l);
      const { web } = await webAndClient(l);
      await answers(l, web, true);
      for (const n of nodes) {
        const link = execFileSync('nsenter', [
          `--net=/run/netns/${n.netns}`,
          'ip',
          '-d',
          'link',
          'show',
          'vxlan.calico',
        ]);
        expect(link.toString()).toMatch(/vxlan id 4096/);
      }
      // Each node routes every other node's blocks through vxlan.calico.
      const affinities = (
        await json<{ items: { spec: { node: string; cidr: string; state: string } }[] }>(
          l,
          'get',
          'blockaffinities.crd.projectcalico.org',
        )
      ).items.filter((a) => a.spec.state === 'confirmed');
      expect(new Set(affinities.map((a) => a.spec.node))).toEqual(new Set(nodes.map((n) => n.name)));
      for (const n of nodes) {
        const routes = kernelRoutes(n.netns);
        for (const a of affinities.filter((x) => x.spec.node !== n.name))
          expect(
            routes.some((r) => r.dst === a.spec.cidr && r.dev === 'vxlan.calico'),
            `${n.name}: ${a.spec.cidr} (${a.spec.node}) via vxlan.calico in ${JSON.stringify(routes)}`,
          ).toBe(true);
      }
    }, 900_000);
  },
);
