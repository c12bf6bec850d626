import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import { missingKubePrerequisites } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lab, type NodeNs, net } from './lab.js';
import {
  buildPlugins,
  pluginDir,
  pluginFile,
  removePlugins,
  VARIANT,
  VIA_SERVICE,
} from './plugin-executable.js';

const CALICO = join(pluginDir, 'calico');
const seedText = readFileSync(join(import.meta.dirname, 'fixtures', '10-calico.conf'), 'utf8');

const missing = missingKubePrerequisites({ root: true, tools: ['ip', 'nsenter'] });
if (missing.length > 0) {
  describe(`CNI plugin in Kubernetes mode (etcd datastore, ${VARIANT})`, () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

/** Namespaces and the pools their labels select. */
const PROD = 'k8s-prod';
const DEV = 'k8s-dev';
const PLAIN = 'k8s-plain';
const PROD_POOL = '198.18.100.0/24';
const DEV_POOL = '198.18.101.0/24';

function inCidr(ip: string, cidr: string): boolean {
  const [base, len] = cidr.split('/') as [string, string];
  const n = (a: string) => a.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(len));
  return Math.floor(n(ip) / size) === Math.floor(n(base) / size);
}

describe.skipIf(missing.length > 0)(`CNI plugin in Kubernetes mode (etcd datastore, ${VARIANT})`, () => {
  const lab = new Lab();
  let services: { stop(): Promise<string[]> } | undefined;
  let node: NodeNs;

  beforeAll(async () => {
    await buildPlugins();
    await lab.start(1, 'etcdv3', { kubeApi: true });
    await lab.seed();
    node = lab.nodes[0]!;
    // The seed pool serves namespaces without an env label; one pool per env value.
    const seedPool = await lab.ds.get('IPPool', 'default-ipv4-ippool');
    (seedPool.spec as Record<string, unknown>).namespaceSelector = '!has(env)';
    await lab.ds.update(seedPool);
    for (const [name, cidr, env] of [
      ['prod-pool', PROD_POOL, 'prod'],
      ['dev-pool', DEV_POOL, 'dev'],
    ] as const) {
      await lab.ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: { name },
        spec: { cidr, blockSize: 28, nodeSelector: 'all()', namespaceSelector: `env == '${env}'` },
      } as Resource as Parameters<typeof lab.ds.create>[0]);
    }
    for (const [ns, labels] of [
      [PROD, { env: 'prod' }],
      [DEV, { env: 'dev' }],
      [PLAIN, {}],
    ] as const) {
      await lab.kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels } }),
      );
    }
    if (VIA_SERVICE) services = await lab.startServices(pluginFile);
  }, 180_000);

  afterAll(async () => {
    await services?.stop();
    await lab.close();
    await removePlugins();
  }, 60_000);

  /** The seed 10-calico.conf (etcd, policy k8s) pointed at this lab, with the kubeconfig of its API server. */
  function k8sConf(extra: Record<string, unknown> = {}): string {
    const c = JSON.parse(seedText) as Record<string, unknown>;
    return JSON.stringify({
      ...c,
      ...lab.etcdConf(),
      cniVersion: '1.0.0',
      policy: { type: 'k8s' },
      kubernetes: { kubeconfig: lab.api.kubeconfigPath },
      log_level: 'warning',
      nodename_file: node.nodenameFile,
      ipam_lock_file: node.lockFile,
      service_socket: node.serviceSocket,
      ...extra,
    });
  }

  function env(command: string, cid: string, netns: string, pod: string, ns: string) {
    return {
      CNI_COMMAND: command,
      CNI_CONTAINERID: cid,
      CNI_NETNS: netns,
      CNI_IFNAME: 'eth0',
      CNI_PATH: pluginDir,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns};K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=${cid}`,
    };
  }

  async function createPod(
    ns: string,
    name: string,
    o: { annotations?: Record<string, string>; spec?: Record<string, unknown> } = {},
  ): Promise<void> {
    await lab.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: ns, labels: { app: name }, annotations: o.annotations ?? {} },
        spec: {
          nodeName: node.name,
          containers: [{ name: 'c', image: 'registry.invalid/none' }],
          ...o.spec,
        },
      }),
    );
  }

  const wepName = (pod: string) => `${node.name.replaceAll('-', '--')}-k8s-${pod.replaceAll('-', '--')}-eth0`;

  async function handles(): Promise<string[]> {
    return (await lab.ipam.listHandles()).items.map((h) => h.value.handleId);
  }

  async function caliLinks(): Promise<string[]> {
    return (await net.listLinks(node.netns)).map((l) => l.name).filter((n) => n.startsWith('cali'));
  }

  /** A failed ADD leaves nothing: no allocation for the container, no host or pod interface, no endpoint. */
  async function expectNothingLeft(cid: string, netns: string, ns: string, pod: string) {
    expect(await handles()).not.toContain(`k8s-pod-network.${cid}`);
    expect(await net.findLink('eth0', netns)).toBeUndefined();
    await expect(lab.ds.get('WorkloadEndpoint', wepName(pod), { namespace: ns })).rejects.toThrow();
  }

  describe('a pod with labels, a service account and ports', () => {
    const pod = 'web-1';
    const cid = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    let netns: string;

    beforeAll(async () => {
      netns = await lab.addPod();
      await createPod(PROD, pod, {
        spec: {
          serviceAccountName: 'web',
          containers: [
            {
              name: 'c',
              image: 'registry.invalid/none',
              ports: [
                { name: 'http', containerPort: 8080 },
                { containerPort: 9090 },
                { name: 'dns', containerPort: 53, protocol: 'UDP' },
              ],
            },
          ],
        },
      });
    });

    it('ADD succeeds with an address from the pool its namespace’s labels select', async () => {
      const r = await lab.run(node, CALICO, env('ADD', cid, netns, pod, PROD), k8sConf());
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json.ips).toHaveLength(1);
      const ip = r.json.ips[0].address.split('/')[0];
      expect(inCidr(ip, PROD_POOL), ip).toBe(true);
    });

    it('the WorkloadEndpoint in etcd has the pod’s labels, service account, profiles and named ports', async () => {
      const wep = await lab.ds.get('WorkloadEndpoint', wepName(pod), { namespace: PROD });
      expect(wep.metadata.labels).toEqual({
        app: pod,
        'projectcalico.org/namespace': PROD,
        'projectcalico.org/orchestrator': 'k8s',
        'projectcalico.org/serviceaccount': 'web',
      });
      expect(wep.spec).toMatchObject({
        pod,
        containerID: cid,
        serviceAccountName: 'web',
        profiles: [`kns.${PROD}`, `ksa.${PROD}.web`],
        ports: [
          { name: 'http', protocol: 'TCP', port: 8080, hostPort: 0, hostIP: '' },
          { name: 'dns', protocol: 'UDP', port: 53, hostPort: 0, hostIP: '' },
        ],
      });
    });

    it('DEL removes it all', async () => {
      const r = await lab.run(node, CALICO, env('DEL', cid, netns, pod, PROD), k8sConf());
      expect(r.code, r.stdout + r.stderr).toBe(0);
      await expectNothingLeft(cid, netns, PROD, pod);
    });
  });

  it('namespaceSelector: a pod in the dev namespace gets a dev-pool address, one in a plain namespace the seed pool’s', async () => {
    for (const [ns, pool] of [
      [DEV, DEV_POOL],
      [PLAIN, '198.19.0.0/16'],
    ] as const) {
      const pod = `sel-${ns}`;
      const cid = `sel${ns.replaceAll('-', '')}0123456789`;
      const netns = await lab.addPod();
      await createPod(ns, pod);
      const r = await lab.run(node, CALICO, env('ADD', cid, netns, pod, ns), k8sConf());
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const ip = r.json.ips[0].address.split('/')[0];
      expect(inCidr(ip, pool), `${ns}: ${ip}`).toBe(true);
      const del = await lab.run(node, CALICO, env('DEL', cid, netns, pod, ns), k8sConf());
      expect(del.code, del.stdout + del.stderr).toBe(0);
    }
  }, 60_000);

  describe('ipAddrs and hwAddr', () => {
    const exactIp = '198.18.100.77';
    const first = { pod: 'fixed-1', cid: 'f1f1f1f1f1f1f1f1f1f1', netns: '' };

    it('ADD gives the pod exactly the ipAddrs address, held by IPAM for its container, and the hwAddr MAC', async () => {
      first.netns = await lab.addPod();
      await createPod(PROD, first.pod, {
        annotations: {
          'cni.projectcalico.org/ipAddrs': JSON.stringify([exactIp]),
          'cni.projectcalico.org/hwAddr': '02:42:c0:ff:ee:01',
        },
      });
      const r = await lab.run(node, CALICO, env('ADD', first.cid, first.netns, first.pod, PROD), k8sConf());
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json.ips).toEqual([{ address: `${exactIp}/32`, interface: 1 }]);
      expect(r.json.interfaces[1]).toMatchObject({ name: 'eth0', mac: '02:42:c0:ff:ee:01' });
      expect((await net.getLink('eth0', first.netns)).mac).toBe('02:42:c0:ff:ee:01');
      expect((await net.listAddrs({ dev: 'eth0', family: 4 }, first.netns)).map((a) => a.cidr)).toEqual([
        `${exactIp}/32`,
      ]);
      const handle = await lab.ipam.getHandle(`k8s-pod-network.${first.cid}`);
      expect(Object.keys(handle?.value.block ?? {})).toEqual(['198.18.100.64/28']);
      const wep = await lab.ds.get('WorkloadEndpoint', wepName(first.pod), { namespace: PROD });
      expect(wep.spec).toMatchObject({ ipNetworks: [`${exactIp}/32`], mac: '02:42:c0:ff:ee:01' });
    });

    it('a second pod asking for the same address fails, naming it, and leaves nothing', async () => {
      const pod = 'fixed-2';
      const cid = 'f2f2f2f2f2f2f2f2f2f2';
      const netns = await lab.addPod();
      await createPod(PROD, pod, {
        annotations: { 'cni.projectcalico.org/ipAddrs': JSON.stringify([exactIp]) },
      });
      const linksBefore = await caliLinks();
      const r = await lab.run(node, CALICO, env('ADD', cid, netns, pod, PROD), k8sConf());
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.json.msg).toMatch(
        new RegExp(
          `^pod ${PROD}/${pod}: annotation cni\\.projectcalico\\.org/ipAddrs asks for ${exactIp}: calico-ipam: `,
        ),
      );
      expect(r.stderr).not.toMatch(/\bat .*\.(m?js|ts):\d+/); // no stack trace
      await expectNothingLeft(cid, netns, PROD, pod);
      expect(await caliLinks()).toEqual(linksBefore);
      // The first pod keeps its address.
      expect(
        Object.keys((await lab.ipam.getHandle(`k8s-pod-network.${first.cid}`))?.value.block ?? {}),
      ).toEqual(['198.18.100.64/28']);
    });

    it('DEL of the first pod releases the address', async () => {
      const r = await lab.run(node, CALICO, env('DEL', first.cid, first.netns, first.pod, PROD), k8sConf());
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(await handles()).not.toContain(`k8s-pod-network.${first.cid}`);
    });
  });

  describe('refused ADDs leave nothing behind and say why', () => {
    async function refused(
      pod: string,
      ns: string,
      conf: string,
      annotations?: Record<string, string>,
    ): Promise<{ code: number | null; json: { code: number; msg: string }; stderr: string }> {
      const cid = `refused${pod.replaceAll('-', '')}01234`;
      const netns = await lab.addPod();
      if (annotations) await createPod(ns, pod, { annotations });
      const before = await caliLinks();
      const r = await lab.run(node, CALICO, env('ADD', cid, netns, pod, ns), conf);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stderr).not.toMatch(/\bat .*\.(m?js|ts):\d+/);
      await expectNothingLeft(cid, netns, ns, pod);
      expect(await caliLinks()).toEqual(before);
      return r;
    }

    it('an annotation that is not JSON: code 999 naming the pod, the annotation and its value', async () => {
      const r = await refused('bad-json', PROD, k8sConf(), {
        'cni.projectcalico.org/ipv4pools': 'prod-pool',
      });
      expect(r.json.code).toBe(999);
      expect(r.json.msg).toMatch(
        new RegExp(
          `^pod ${PROD}/bad-json: annotation cni\\.projectcalico\\.org/ipv4pools=prod-pool is not valid JSON`,
        ),
      );
    });

    it('ipAddrs with ipAddrsNoIpam: code 999', async () => {
      const r = await refused('both', PROD, k8sConf({ feature_control: { ip_addrs_no_ipam: true } }), {
        'cni.projectcalico.org/ipAddrs': '["198.18.100.90"]',
        'cni.projectcalico.org/ipAddrsNoIpam': '["198.18.100.91"]',
      });
      expect(r.json).toMatchObject({
        code: 999,
        msg: `pod ${PROD}/both: annotations cni.projectcalico.org/ipAddrs and cni.projectcalico.org/ipAddrsNoIpam cannot be used together`,
      });
    });

    it('floatingIPs without feature_control.floating_ips', async () => {
      const r = await refused('floating', PROD, k8sConf(), {
        'cni.projectcalico.org/floatingIPs': '["203.0.113.5"]',
      });
      expect(r.json.code).toBe(999);
      expect(r.json.msg).toMatch(
        /floatingIPs=\["203\.0\.113\.5"\] is not allowed: .*feature_control\.floating_ips$/,
      );
    });

    it('a pod the API server does not have: code 999 naming the pod and the API server', async () => {
      const r = await refused('ghost', PROD, k8sConf());
      expect(r.json).toEqual({
        cniVersion: '1.0.0',
        code: 999,
        msg: `pod ${PROD}/ghost does not exist in the Kubernetes API server ${lab.api.url}`,
      });
    });

    it('an API server nobody answers on: code 11 (try again) naming its URL', async () => {
      await createPod(PROD, 'unreachable');
      const r = await refused(
        'unreachable',
        PROD,
        k8sConf({ kubernetes: { kubeconfig: lab.api.kubeconfigPath, k8s_api_root: 'https://127.0.0.1:9' } }),
      );
      expect(r.json.code).toBe(11);
      expect(r.json.msg).toContain('https://127.0.0.1:9');
      expect(r.json.msg).toContain(`pod ${PROD}/unreachable`);
    });
  });

  if (VIA_SERVICE) {
    it('the node service answered the invocations', async () => {
      const logs = await services!.stop();
      services = undefined;
      const n = Number(/stopping after (\d+) invocations/.exec(logs[0] ?? '')?.[1] ?? -1);
      expect(n, logs[0]).toBeGreaterThan(5);
    });
  }
});
