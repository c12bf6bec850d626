/**
 * Calico installed by the operator on the real cluster, as upstream's Quickstart has a user do it:
 *
 *   lab up --kubelet --install none
 *   lab kubectl create -f deploy/manifests/tigera-operator.yaml
 *   lab kubectl create -f <state>/cluster/custom-resources.yaml   (upstream's, the pool in 198.19/16)
 *   lab kubectl get pods -n calico-system     until every pod is Running
 *   lab kubectl get tigerastatus              calico, ippools and apiserver Available
 *
 * then what the user checks: every Node Ready, pods on different nodes answer each other, the pool
 * is the Installation's; projectcalico.org/v3 through calico-apiserver with kubectl alone (a
 * GlobalNetworkPolicy applied is enforced, an invalid one refused with calicoctl's message and
 * nothing written, deleted and traffic flows again); editing the Installation's MTU and then its
 * pool's encapsulation rolls out and reaches every node's kernel. Then `--install operator --mode
 * vxlan`, where the lab runs the same two commands and waits: the pool is VXLAN and pods answer over
 * vxlan.calico; an image that cannot be pulled makes TigeraStatus calico Degraded with the reason
 * until it is put back; deleting the Installation removes calico-system. The time from `kubectl
 * create -f custom-resources.yaml` to Available is printed.
 */

import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageRef } from '@calico-ts/images/definitions';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { httpGet, missingForCluster } from './cluster.js';
import { ensureImages } from './images.js';
import { kernelRoutes, LabDriver, ROOT } from './lab-driver.js';

const ci = process.env.CI === 'true';
const missing = missingForCluster();
if (missing.length > 0) {
  describe('lab up --kubelet: Calico by the operator', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

interface Pod {
  metadata: { name: string };
  spec: { nodeName?: string };
  status: { phase?: string; podIP?: string };
}

interface Status {
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every second until it returns a truthy value, or fails saying what it saw. */
async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const t0 = performance.now();
  for (;;) {
    const v = await check();
    if (v) return v;
    if (performance.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(1000);
  }
}

/** The MTU of `dev` in a node's namespace, or undefined when it does not exist. */
function linkMtu(netns: string, dev: string): number | undefined {
  const r = spawnSync('ip', ['-n', netns, '-j', 'link', 'show', dev], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  return (JSON.parse(r.stdout) as { mtu: number }[])[0]?.mtu;
}

describe.skipIf(missing.length > 0)('lab up --kubelet: Calico by the operator', () => {
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

  async function up(...args: string[]): Promise<LabDriver> {
    dir = await mkdtemp(join(tmpdir(), 'calico-e2e-operator-'));
    const l = new LabDriver(`e2eo${Math.random().toString(16).slice(2, 6)}`, join(dir, 'state'));
    lab = l;
    await l.ok('up', '--kubelet', '--nodes', '3', ...args);
    return l;
  }

  const condition = (s: Status | undefined, type: string) =>
    s?.status?.conditions?.find((c) => c.type === type);

  async function tigeraStatuses(l: LabDriver): Promise<Map<string, Status>> {
    const r = await l.run('kubectl', 'get', 'tigerastatus', '-o', 'json');
    if (r.code !== 0) return new Map();
    return new Map((JSON.parse(r.stdout) as { items: Status[] }).items.map((s) => [s.metadata.name, s]));
  }

  /** A Deployment of 3 and a client pod: the client reaches a pod on another node, each by its address. */
  async function podsAnswerAcrossNodes(l: LabDriver): Promise<void> {
    await l.ok('kubectl', 'create', 'deployment', 'web', `--image=${imageRef('httpd')}`, '--replicas=3');
    await l.ok('kubectl', 'run', 'client', `--image=${imageRef('httpd')}`);
    await l.ok('kubectl', 'rollout', 'status', 'deployment/web', '--timeout=120s');
    await l.ok('kubectl', 'wait', '--for=condition=Ready', 'pod/client', '--timeout=120s');
    const pods = (
      JSON.parse((await l.ok('kubectl', 'get', 'pods', '-l', 'app=web', '-o', 'json')).stdout) as {
        items: Pod[];
      }
    ).items;
    const client = JSON.parse((await l.ok('kubectl', 'get', 'pod', 'client', '-o', 'json')).stdout) as Pod;
    expect(pods.some((p) => p.spec.nodeName !== client.spec.nodeName)).toBe(true);
    for (const p of pods) {
      expect(p.status.podIP).toMatch(/^198\.19\./);
      expect(await httpGet(l, 'client', p.status.podIP!), `${p.metadata.name} on ${p.spec.nodeName}`).toBe(
        p.metadata.name,
      );
    }
  }

  /**
   * projectcalico.org/v3 with kubectl alone, through the aggregation layer: the pool listed, a
   * GlobalNetworkPolicy denying the web pods applied and enforced, an invalid one refused with the
   * message calicoctl gives for the same file and nothing written, the policy deleted and the pods
   * answer again.
   */
  async function calicoApiThroughKubectl(l: LabDriver): Promise<void> {
    const pools = (await l.ok('kubectl', 'get', 'ippools.projectcalico.org')).stdout;
    console.log(pools);
    expect(pools).toMatch(/^default-ipv4-ippool\s/m);
    const web = (
      JSON.parse((await l.ok('kubectl', 'get', 'pods', '-l', 'app=web', '-o', 'json')).stdout) as {
        items: Pod[];
      }
    ).items;
    const deny = [
      'apiVersion: projectcalico.org/v3',
      'kind: GlobalNetworkPolicy',
      'metadata: {name: deny-web}',
      "spec: {order: 10, selector: app == 'web', types: [Ingress], ingress: [{action: Deny}]}",
      '',
    ].join('\n');
    await l.applyYaml('kubectl', l.stateDir, 'deny-web', deny);
    const stored = (await l.ok('calicoctl', 'get', 'globalnetworkpolicy', 'deny-web', '-o', 'yaml')).stdout;
    expect(stored).toMatch(/selector: app == 'web'/);
    await until('the deny policy enforced on every web pod', 60_000, async () => {
      for (const p of web) if ((await httpGet(l, 'client', p.status.podIP!, 80, 1)) !== '') return undefined;
      return true;
    });
    const bad = [
      'apiVersion: projectcalico.org/v3',
      'kind: GlobalNetworkPolicy',
      'metadata: {name: bad-selector}',
      'spec: {selector: app ==, types: [Ingress], ingress: [{action: Deny}]}',
      '',
    ].join('\n');
    const file = join(l.stateDir, 'bad-selector.yaml');
    writeFileSync(file, bad);
    const byKubectl = await l.run('kubectl', 'apply', '-f', file);
    const byCalicoctl = await l.run('calicoctl', 'validate', '-f', file);
    console.log(byKubectl.stderr.trim());
    expect(byKubectl.code).not.toBe(0);
    expect(byCalicoctl.code).not.toBe(0);
    const why = /spec\.selector: .*$/m.exec(byCalicoctl.stdout + byCalicoctl.stderr)?.[0];
    expect(why, byCalicoctl.stdout + byCalicoctl.stderr).toBeDefined();
    expect(byKubectl.stderr).toContain(why!);
    expect((await l.run('calicoctl', 'get', 'globalnetworkpolicy', 'bad-selector')).code).not.toBe(0);
    await l.ok('kubectl', 'delete', 'globalnetworkpolicies.projectcalico.org', 'deny-web');
    await until('the web pods answer again', 60_000, async () => {
      for (const p of web)
        if ((await httpGet(l, 'client', p.status.podIP!, 80, 1)) !== p.metadata.name) return undefined;
      return true;
    });
  }

  /** `kubectl patch installation default` and wait for the DaemonSet's rollout. */
  async function patchInstallation(l: LabDriver, patch: unknown): Promise<void> {
    await l.ok('kubectl', 'patch', 'installation', 'default', '--type=merge', '-p', JSON.stringify(patch));
    await sleep(5000); // the operator's pass (a watch) and the DaemonSet's new generation
    await l.ok(
      'kubectl',
      'rollout',
      'status',
      'daemonset/calico-node',
      '-n',
      'calico-system',
      '--timeout=300s',
    );
  }

  /**
   * The MTU, then the pool's encapsulation, edited in the Installation: each rolls out and is then
   * in every node's kernel (vxlan.calico's MTU; routes to the other nodes' blocks through
   * vxlan.calico once the pool is VXLAN Always, where BIRD carried them unencapsulated before).
   */
  async function installationEditsReachTheKernel(l: LabDriver): Promise<void> {
    const nodes = l.state().plan.nodes;
    const t0 = performance.now();
    await patchInstallation(l, { spec: { calicoNetwork: { mtu: 1400 } } });
    await until('vxlan.calico at MTU 1400 on every node', 120_000, async () =>
      nodes.every((n) => linkMtu(n.netns, 'vxlan.calico') === 1400) ? true : undefined,
    );
    console.log(
      `mtu 1400: rolled and in every node's kernel in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const viaVxlan = (netns: string) =>
      kernelRoutes(netns).filter((r) => r.dst.startsWith('198.19.') && r.dev === 'vxlan.calico').length;
    expect(nodes.map((n) => viaVxlan(n.netns))).toEqual(nodes.map(() => 0));
    const spec = JSON.parse(
      (await l.ok('kubectl', 'get', 'installation', 'default', '-o', 'json')).stdout,
    ).spec;
    const pools = spec.calicoNetwork.ipPools as { encapsulation: string }[];
    pools[0]!.encapsulation = 'VXLAN';
    const t1 = performance.now();
    await patchInstallation(l, { spec: { calicoNetwork: { ipPools: pools } } });
    const pool = (await l.ok('calicoctl', 'get', 'ippool', 'default-ipv4-ippool', '-o', 'yaml')).stdout;
    expect(pool).toMatch(/vxlanMode: Always/);
    // Every node has blocks of the web pods, the client or calico-apiserver on the others: each
    // reaches them through vxlan.calico now.
    await until('routes to other nodes’ blocks through vxlan.calico on every node', 120_000, async () =>
      nodes.every((n) => viaVxlan(n.netns) > 0) ? true : undefined,
    );
    console.log(
      `encapsulation VXLAN: pool updated, routes via vxlan.calico on every node in ${((performance.now() - t1) / 1000).toFixed(1)} s`,
    );
    const web = (
      JSON.parse((await l.ok('kubectl', 'get', 'pods', '-l', 'app=web', '-o', 'json')).stdout) as {
        items: Pod[];
      }
    ).items;
    for (const p of web) expect(await httpGet(l, 'client', p.status.podIP!)).toBe(p.metadata.name);
  }

  /**
   * A registry that serves nothing (a closed port on the node's loopback: no traffic leaves the
   * lab): TigeraStatus calico turns Degraded with the pod, the container and what to check; with the
   * registry removed it is Available again.
   */
  async function missingImageDegrades(l: LabDriver): Promise<void> {
    await l.ok(
      'kubectl',
      'patch',
      'installation',
      'default',
      '--type=merge',
      '-p',
      '{"spec":{"registry":"127.0.0.1:9/"}}',
    );
    const degraded = await until('TigeraStatus calico Degraded', 180_000, async () => {
      const d = condition((await tigeraStatuses(l)).get('calico'), 'Degraded');
      return d?.status === 'True' ? d : undefined;
    });
    console.log(`calico Degraded: ${degraded.reason}: ${degraded.message}`);
    expect(degraded.reason).toBe('PodFailure');
    expect(degraded.message).toMatch(/127\.0\.0\.1:9\/calico-ts\//);
    expect(degraded.message).toMatch(/check the image name, the registry and imagePullSecrets/);
    await l.ok(
      'kubectl',
      'patch',
      'installation',
      'default',
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/spec/registry"}]',
    );
    await until('TigeraStatus calico Available again, nothing Degraded', 300_000, async () => {
      const s = (await tigeraStatuses(l)).get('calico');
      return condition(s, 'Available')?.status === 'True' && condition(s, 'Degraded')?.status === 'False'
        ? true
        : undefined;
    });
  }

  /** `kubectl delete installation default`: calico-system, the APIService and the statuses go. */
  async function deletingTheInstallationRemovesCalicoSystem(l: LabDriver): Promise<void> {
    const t0 = performance.now();
    await l.ok('kubectl', 'delete', 'installation', 'default', '--timeout=300s');
    await until('namespace calico-system gone', 300_000, async () =>
      (await l.run('kubectl', 'get', 'namespace', 'calico-system')).code !== 0 ? true : undefined,
    );
    console.log(
      `kubectl delete installation default → calico-system gone in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    expect((await l.run('kubectl', 'get', 'apiservice', 'v3.projectcalico.org')).code).not.toBe(0);
    expect((await l.run('kubectl', 'get', 'clusterrole', 'calico-node')).code).not.toBe(0);
    const statuses = await tigeraStatuses(l);
    expect(statuses.has('calico')).toBe(false);
    // The pool stays, as upstream leaves it.
    await l.ok('calicoctl', 'get', 'ippool', 'default-ipv4-ippool');
  }

  it('the Quickstart by hand: tigera-operator.yaml, custom-resources.yaml, every pod Running, Available', async () => {
    const l = await up('--install', 'none');
    await l.ok('kubectl', 'create', '-f', join(ROOT, 'deploy/manifests/tigera-operator.yaml'));
    await l.ok(
      'kubectl',
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/installations.operator.tigera.io',
    );
    const custom = join(l.stateDir, 'cluster/custom-resources.yaml');
    const t0 = performance.now();
    await l.ok('kubectl', 'create', '-f', custom);
    let shown = '';
    for (;;) {
      const pods = (
        JSON.parse((await l.ok('kubectl', 'get', 'pods', '-n', 'calico-system', '-o', 'json')).stdout) as {
          items: Pod[];
        }
      ).items;
      const statuses = await tigeraStatuses(l);
      const running = pods.length > 0 && pods.every((p) => p.status.phase === 'Running');
      const available = ['calico', 'ippools', 'apiserver'].every(
        (n) => condition(statuses.get(n), 'Available')?.status === 'True',
      );
      if (running && available) break;
      shown = `${pods.map((p) => `${p.metadata.name} ${p.status.phase}`).join(', ')}; ${[...statuses]
        .map(([n, s]) => `${n} ${condition(s, 'Available')?.status}`)
        .join(', ')}`;
      if (performance.now() - t0 > 300_000) throw new Error(`not Running and Available in 300 s: ${shown}`);
      await sleep(1000);
    }
    console.log(
      `kubectl create -f custom-resources.yaml → calico-system Running, calico and apiserver Available: ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const pods = (await l.ok('kubectl', 'get', 'pods', '-n', 'calico-system', '-o', 'wide')).stdout;
    console.log(pods);
    // calico-node (with its cni-refresh sidecar) on every node, Typha scaled for 3 nodes (2), kube-controllers.
    expect(pods.match(/^calico-node-\S+\s+2\/2\s+Running/gm)).toHaveLength(3);
    expect(pods.match(/^calico-typha-\S+\s+1\/1\s+Running/gm)).toHaveLength(2);
    expect(pods.match(/^calico-kube-controllers-\S+\s+1\/1\s+Running/gm)).toHaveLength(1);
    expect(pods.match(/^calico-apiserver-\S+\s+1\/1\s+Running/gm)).toHaveLength(2);
    const table = (await l.ok('kubectl', 'get', 'tigerastatus')).stdout;
    console.log(table);
    expect(table.split('\n')[0]!.split(/\s+/)).toEqual([
      'NAME',
      'AVAILABLE',
      'PROGRESSING',
      'DEGRADED',
      'SINCE',
    ]);
    expect(table).toMatch(/^calico\s+True\s+False\s+False\s/m);
    expect(table).toMatch(/^ippools\s+True\s+False\s+False\s/m);
    expect(table).toMatch(/^apiserver\s+True\s+False\s+False\s/m);
    const nodes = (await l.ok('kubectl', 'get', 'nodes')).stdout;
    expect(nodes.match(/\sReady\s/g)).toHaveLength(3);
    const pool = (await l.ok('calicoctl', 'get', 'ippool', 'default-ipv4-ippool', '-o', 'yaml')).stdout;
    expect(pool).toMatch(/cidr: 198\.19\.0\.0\/16/);
    expect(pool).toMatch(/vxlanMode: CrossSubnet/);
    await podsAnswerAcrossNodes(l);
    await calicoApiThroughKubectl(l);
    await installationEditsReachTheKernel(l);
  }, 900_000);

  it('--install operator --mode vxlan: the lab runs the same commands; a VXLAN pool, pods answer', async () => {
    const l = await up('--install', 'operator', '--mode', 'vxlan');
    const pool = (await l.ok('calicoctl', 'get', 'ippool', 'default-ipv4-ippool', '-o', 'yaml')).stdout;
    expect(pool).toMatch(/vxlanMode: Always/);
    await podsAnswerAcrossNodes(l);
    await missingImageDegrades(l);
    await deletingTheInstallationRemovesCalicoSystem(l);
  }, 900_000);
});
