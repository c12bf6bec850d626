/**
 * The other install paths on the real cluster (`lab up --kubelet --install …`), each as its guide
 * has a user do it, each checked by what a user would look at afterwards:
 *
 *   etcd: calico-etcd.yaml with etcd_endpoints set: the DaemonSet ready, pods of a Deployment
 *         answer across nodes, their WorkloadEndpoints are keys in the lab's etcd under /calico/,
 *         and the API server serves no Calico CRD (the manifest installs none)
 *   helm: the chart (`helm install calico-ts deploy/helm/calico-ts`) in vxlan mode: the release
 *         deployed, the pool VXLAN Always, pods answer across nodes through vxlan.calico
 *
 * One lab at a time, each removed at the end, also on failure. The main scenario (manifest,
 * rolling update, SIGKILL, churn, teardown) is lab-kubelet.int.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageRef } from '@calico-ts/images/definitions';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { httpGet, missingForCluster } from './cluster.js';
import { ensureImages } from './images.js';
import { LabDriver } from './lab-driver.js';

const ci = process.env.CI === 'true';
const missing = missingForCluster(['/usr/bin/etcdctl', '/var/cache/calico-ts/bin/helm-v3.22.0']);
if (missing.length > 0) {
  describe('lab up --kubelet --install etcd|helm', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

interface Pod {
  metadata: { name: string };
  spec: { nodeName?: string };
  status: { podIP?: string };
}

describe.skipIf(missing.length > 0)('lab up --kubelet: the etcd manifest and the Helm chart', () => {
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

  async function up(install: string, mode: string): Promise<LabDriver> {
    dir = await mkdtemp(join(tmpdir(), `calico-e2e-kubelet-${install}-`));
    const l = new LabDriver(`e2e${install[0]}${Math.random().toString(16).slice(2, 6)}`, join(dir, 'state'));
    lab = l;
    const t0 = performance.now();
    await l.ok('up', '--kubelet', '--install', install, '--mode', mode, '--nodes', '3');
    console.log(
      `lab up --kubelet --install ${install} --mode ${mode}: ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const ds = (await l.ok('kubectl', 'get', 'daemonset', 'calico-node', '--namespace=kube-system')).stdout;
    expect(ds.trim().split('\n')[1]?.split(/\s+/).slice(1, 4)).toEqual(['3', '3', '3']);
    return l;
  }

  /** A Deployment of 3, each pod answering with its name to a client pod, from every node. */
  async function podsAnswerAcrossNodes(l: LabDriver): Promise<Pod[]> {
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
    return pods;
  }

  it('--install etcd: calico-etcd.yaml on the lab etcd, endpoints under /calico/, no CRDs', async () => {
    const l = await up('etcd', 'bgp');
    const pods = await podsAnswerAcrossNodes(l);
    const st = l.state() as unknown as { plan: { etcdNetns: string; etcdUrl: string } };
    const keys = execFileSync('nsenter', [
      `--net=/run/netns/${st.plan.etcdNetns}`,
      'etcdctl',
      `--endpoints=${st.plan.etcdUrl}`,
      'get',
      '--prefix',
      '--keys-only',
      '/calico/resources/v3/projectcalico.org/workloadendpoints/default/',
    ])
      .toString()
      .split('\n')
      .filter(Boolean);
    for (const p of pods)
      expect(keys.some((k) => k.includes(p.metadata.name.replaceAll('-', '--')))).toBe(true);
    const crds = (await l.ok('kubectl', 'get', 'crd', '-o', 'name')).stdout;
    expect(crds).not.toContain('projectcalico.org');
    expect((await l.ok('calicoctl', 'get', 'workloadendpoints', '-n', 'default')).stdout).toContain(
      pods[0]!.metadata.name,
    );
  }, 360_000);

  it('--install helm: the chart in vxlan mode, the release deployed, pods across nodes over VXLAN', async () => {
    const l = await up('helm', 'vxlan');
    const pool = (await l.ok('calicoctl', 'get', 'ippool', 'default-ipv4-ippool', '-o', 'yaml')).stdout;
    expect(pool).toMatch(/cidr: 198\.19\.0\.0\/16/);
    expect(pool).toMatch(/vxlanMode: Always/);
    const secrets = (
      await l.ok('kubectl', 'get', 'secrets', '-n', 'kube-system', '-l', 'owner=helm', '-o', 'name')
    ).stdout;
    expect(secrets).toContain('sh.helm.release.v1.calico-ts.v1');
    await podsAnswerAcrossNodes(l);
    const st = l.state() as unknown as { plan: { nodes: { netns: string }[] } };
    const link = execFileSync('nsenter', [
      `--net=/run/netns/${st.plan.nodes[0]!.netns}`,
      'ip',
      '-d',
      'link',
      'show',
      'vxlan.calico',
    ]).toString();
    expect(link).toMatch(/vxlan id 4096/);
  }, 360_000);
});
