/**
 * The built `calico`/`calico-ipam` executables on the Kubernetes datastore: a real kube-apiserver
 * with the Calico CRDs, network config as a Kubernetes install writes it (`datastore_type:
 * kubernetes`, `kubernetes.kubeconfig`), pods that exist in the API server, and "node" network
 * namespaces the plugin runs in (root only; see lab.ts). What is checked is what a user sees: the
 * plugin's exit code and JSON, the Pod's `cni.projectcalico.org/*` annotations and the IPAM
 * objects through kubectl, and the veth and routes in the node's namespace.
 *
 * With CALICO_TEST_EXECUTABLE=native the native executables run, and with CALICO_TEST_SERVICE=1
 * every node runs a plugin service they hand their work to (cni.kdd.service.int.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { missingKubePrerequisites } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRDS, Lab, type NodeNs, net } from './lab.js';
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

const missing = missingKubePrerequisites({ root: true, crds: CRDS, tools: ['ip', 'nsenter', 'ping'] });
if (missing.length > 0) {
  describe(`CNI plugin on the Kubernetes datastore (${VARIANT})`, () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const NS = 'kdd-shop';
const POD_IP = 'cni.projectcalico.org/podIP';
const POD_IPS = 'cni.projectcalico.org/podIPs';
const CONTAINER_ID = 'cni.projectcalico.org/containerID';

interface KubeObject {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
}

describe.skipIf(missing.length > 0)(`CNI plugin on the Kubernetes datastore (${VARIANT})`, () => {
  const lab = new Lab();
  let services: { stop(): Promise<string[]> } | undefined;
  /** Wall time of each successful ADD, alone or in a concurrent batch, for the report at the end. */
  const addMs: { alone: number[]; concurrent: number[] } = { alone: [], concurrent: [] };

  beforeAll(async () => {
    await buildPlugins();
    await lab.start(2, 'kubernetes');
    await lab.seed();
    await lab.kubectl(['create', 'namespace', NS]);
    if (VIA_SERVICE) services = await lab.startServices(pluginFile);
  }, 180_000);

  afterAll(async () => {
    const how = `${VIA_SERVICE ? 'through the plugin service' : 'direct'}, ${process.env.CALICO_TEST_EXECUTABLE === 'native' ? 'native' : 'node bundle'}`;
    const summary = (ms: number[]) => {
      const s = [...ms].sort((a, b) => a - b);
      return `median ${s[Math.floor(s.length / 2)]!.toFixed(0)} ms (${s[0]!.toFixed(0)}–${s.at(-1)!.toFixed(0)} ms, ${s.length} ADDs)`;
    };
    if (addMs.alone.length > 0 || addMs.concurrent.length > 0) {
      process.stdout.write(
        `\nCNI ADD on the Kubernetes datastore (${how}):` +
          (addMs.alone.length > 0 ? ` one at a time ${summary(addMs.alone)};` : '') +
          (addMs.concurrent.length > 0
            ? ` ${addMs.concurrent.length} at once on 2 nodes ${summary(addMs.concurrent)}`
            : '') +
          '\n',
      );
    }
    await services?.stop();
    await lab.close();
    await removePlugins();
  }, 60_000);

  /**
   * The seed 10-calico.conf on the Kubernetes datastore: its etcd fields replaced by
   * `datastore_type: kubernetes` and `kubernetes.kubeconfig`, policy `k8s`, calico-ipam; plus the
   * node's own files (the nodename file calico/node would write, the IPAM lock, the service socket).
   */
  function seedConf(node: NodeNs, extra: Record<string, unknown> = {}): string {
    const c = JSON.parse(seedText) as Record<string, unknown>;
    for (const k of Object.keys(c)) if (k.startsWith('etcd_')) delete c[k];
    return JSON.stringify({
      ...c,
      ...lab.kubeConf(),
      ipam: { type: 'calico-ipam' },
      policy: { type: 'k8s' },
      log_level: 'warning',
      nodename_file: node.nodenameFile,
      ipam_lock_file: node.lockFile,
      service_socket: node.serviceSocket,
      ...extra,
    });
  }

  function env(command: string, cid: string, netns: string, pod: string, ns = NS) {
    return {
      CNI_COMMAND: command,
      CNI_CONTAINERID: cid,
      CNI_NETNS: netns,
      CNI_IFNAME: 'eth0',
      CNI_PATH: pluginDir,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns};K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=${cid}`,
    };
  }

  async function add(
    timing: keyof typeof addMs,
    node: NodeNs,
    cid: string,
    netns: string,
    pod: string,
    conf = seedConf(node),
  ) {
    const t0 = performance.now();
    const r = await lab.run(node, CALICO, env('ADD', cid, netns, pod), conf);
    if (r.code === 0) addMs[timing].push(performance.now() - t0);
    return r;
  }

  /** A Pod scheduled to `node`, as the scheduler would have left it for the kubelet. */
  async function createPod(name: string, node: NodeNs): Promise<void> {
    await lab.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NS, labels: { app: name } },
        spec: { nodeName: node.name, containers: [{ name: 'c', image: 'registry.invalid/none' }] },
      }),
    );
  }

  async function getJson<T>(args: string[]): Promise<T> {
    return JSON.parse(await lab.kubectl(['get', ...args, '-o', 'json'])) as T;
  }

  async function podAnnotations(name: string): Promise<Record<string, string>> {
    return (await getJson<KubeObject>(['pod', name, '-n', NS])).metadata.annotations ?? {};
  }

  async function ipamObjects(resource: 'ipamhandles' | 'ipamblocks' | 'blockaffinities') {
    return (await getJson<{ items: KubeObject[] }>([`${resource}.crd.projectcalico.org`])).items;
  }

  /** Every address some IPAMBlock has allocated, as kubectl shows the blocks. */
  async function allocatedAddresses(): Promise<string[]> {
    const out: string[] = [];
    for (const b of await ipamObjects('ipamblocks')) {
      const base = String(b.spec.cidr).split('/')[0]!.split('.').map(Number);
      (b.spec.allocations as (number | null)[]).forEach((a, i) => {
        if (a !== null) out.push(`${base[0]}.${base[1]}.${base[2]}.${base[3]! + i}`);
      });
    }
    return out;
  }

  function caliLinks(node: NodeNs) {
    return net.listLinks(node.netns).then((ls) => ls.filter((l) => l.name.startsWith('cali')));
  }

  async function podRoutes(node: NodeNs) {
    return (await net.listRoutes({ family: 4 }, node.netns)).filter((r) => r.dst.startsWith('198.19.'));
  }

  describe('a pod that exists in the API server, with the seed 10-calico.conf (CNI 0.1.0)', () => {
    const podName = 'web-1';
    const cid = 'b1c2d3e4f5a60718293a4b5c6d7e8f90';
    // sha1("kdd-shop.web-1")[:11], upstream's host-side name for the pod
    const hostIf = 'califaf9b7b5a74';
    let node: NodeNs;
    let netns: string;
    let podIp: string;

    beforeAll(async () => {
      node = lab.nodes[0]!;
      netns = await lab.addPod();
      await createPod(podName, node);
    });

    it('ADD succeeds with a 0.1.0 result: a /32 from the pool and the default route', async () => {
      const r = await add('alone', node, cid, netns, podName);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json).toEqual({
        cniVersion: '0.1.0',
        ip4: {
          ip: expect.stringMatching(/^198\.19\.\d+\.\d+\/32$/),
          routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
        },
        dns: {},
      });
      podIp = r.json.ip4.ip.split('/')[0];
    });

    it('the Pod carries the address and container ID in its cni.projectcalico.org annotations', async () => {
      expect(await podAnnotations(podName)).toMatchObject({
        [POD_IP]: `${podIp}/32`,
        [POD_IPS]: `${podIp}/32`,
        [CONTAINER_ID]: cid,
      });
    });

    it('kubectl shows the IPAMHandle, and the IPAMBlock and BlockAffinity of the node', async () => {
      const handles = await ipamObjects('ipamhandles');
      expect(handles).toHaveLength(1);
      const handle = handles[0]!;
      expect(handle.metadata.name).toBe(`k8s-pod-network.${cid}`);
      const blocks = await ipamObjects('ipamblocks');
      expect(blocks).toHaveLength(1);
      const block = blocks[0]!;
      const cidr = String(block.spec.cidr);
      expect(block.metadata.name).toBe(cidr.replace(/[./]/g, '-'));
      expect(handle.spec).toMatchObject({ handleID: `k8s-pod-network.${cid}`, block: { [cidr]: 1 } });
      expect(block.spec.affinity).toBe(`host:${node.name}`);
      const ordinal = Number(podIp.split('.')[3]) - Number(cidr.split('/')[0]!.split('.')[3]);
      const attrIndex = (block.spec.allocations as (number | null)[])[ordinal]!;
      expect(attrIndex).not.toBeNull();
      expect((block.spec.attributes as Record<string, unknown>[])[attrIndex]).toMatchObject({
        handle_id: `k8s-pod-network.${cid}`,
        secondary: { namespace: NS, node: node.name, pod: podName },
      });
      expect(await allocatedAddresses()).toEqual([podIp]);
      const affinities = await ipamObjects('blockaffinities');
      expect(affinities.map((a) => a.spec)).toEqual([
        expect.objectContaining({ node: node.name, cidr, state: 'confirmed', deleted: 'false' }),
      ]);
    });

    it('the node has the cali… end (ee:ee:ee:ee:ee:ee, proxy ARP) and the /32 route to the pod', async () => {
      const link = await net.getLink(hostIf, node.netns);
      expect(link).toMatchObject({ mac: 'ee:ee:ee:ee:ee:ee', up: true, kind: 'veth' });
      expect(await net.listRoutes({ dev: hostIf, family: 4 }, node.netns)).toContainEqual(
        expect.objectContaining({ dst: `${podIp}/32`, dev: hostIf, scope: 'link' }),
      );
      expect(await net.readSysctl(`net.ipv4.conf.${hostIf}.proxy_arp`, node.netns)).toBe('1');
      expect((await net.listAddrs({ dev: 'eth0', family: 4 }, netns)).map((a) => a.cidr)).toEqual([
        `${podIp}/32`,
      ]);
      expect(await net.listRoutes({ family: 4 }, netns)).toContainEqual(
        expect.objectContaining({ dst: '0.0.0.0/0', gateway: '169.254.1.1', dev: 'eth0' }),
      );
      const ping = spawnSync('nsenter', [`--net=${netns}`, 'ping', '-c', '1', '-W', '3', node.ip]);
      expect(ping.status, String(ping.stdout)).toBe(0);
    });

    it('Felix’s view, the WorkloadEndpoint, is the Pod with that address on that interface', async () => {
      const wepName = `${node.name.replaceAll('-', '--')}-k8s-web--1-eth0`;
      const wep = await lab.ds.get('WorkloadEndpoint', wepName, { namespace: NS });
      expect(wep.spec).toMatchObject({
        node: node.name,
        pod: podName,
        containerID: cid,
        ipNetworks: [`${podIp}/32`],
        interfaceName: hostIf,
        profiles: [`kns.${NS}`, `ksa.${NS}.default`],
      });
      expect(wep.metadata.labels).toMatchObject({ app: podName, 'projectcalico.org/namespace': NS });
    });

    it('DEL releases the address, clears the annotations and removes the veth and route', async () => {
      const del = await lab.run(node, CALICO, env('DEL', cid, netns, podName), seedConf(node));
      expect(del.code, del.stdout + del.stderr).toBe(0);
      expect(del.stdout).toBe('');
      const annotations = await podAnnotations(podName);
      for (const a of [POD_IP, POD_IPS, CONTAINER_ID]) expect(annotations[a], a).toBeUndefined();
      expect(await ipamObjects('ipamhandles')).toEqual([]);
      expect(await allocatedAddresses()).toEqual([]);
      expect(await net.findLink(hostIf, node.netns)).toBeUndefined();
      expect(await net.findLink('eth0', netns)).toBeUndefined();
      expect(await podRoutes(node)).toEqual([]);
    });

    it('DEL again succeeds and changes nothing', async () => {
      const again = await lab.run(node, CALICO, env('DEL', cid, netns, podName), seedConf(node));
      expect(again.code, again.stdout + again.stderr).toBe(0);
      expect(await ipamObjects('ipamhandles')).toEqual([]);
      expect(await podAnnotations(podName)).not.toHaveProperty(POD_IP);
    });
  });

  describe('a pod the API server does not have', () => {
    it('ADD fails with a CNI error naming the pod and the API server, and leaves no address, veth or annotation behind', async () => {
      const node = lab.nodes[1]!;
      const netns = await lab.addPod();
      const r = await lab.run(node, CALICO, env('ADD', 'c0ffee0123456789', netns, 'ghost'), seedConf(node));
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.json).toMatchObject({ cniVersion: '0.1.0', code: 999 });
      expect(r.json.msg).toBe(`pod ${NS}/ghost does not exist in the Kubernetes API server ${lab.api.url}`);
      expect(r.stderr).not.toMatch(/\bat .*\.(m?js|ts):\d+/); // no stack trace
      expect(await ipamObjects('ipamhandles')).toEqual([]);
      expect(await allocatedAddresses()).toEqual([]);
      expect(await caliLinks(node)).toEqual([]);
      expect(await net.findLink('eth0', netns)).toBeUndefined();
      expect(await podRoutes(node)).toEqual([]);
    });
  });

  describe('the pod’s cni.projectcalico.org annotations on the Kubernetes datastore', () => {
    it('ipAddrs: the Pod’s podIP annotation is exactly that address, which its IPAMBlock holds for the container', async () => {
      const node = lab.nodes[1]!;
      const name = 'fixed-ip';
      const cid = 'f1xed0123456789abcdef';
      const exact = '198.19.250.10';
      await lab.kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name,
            namespace: NS,
            labels: { app: name },
            annotations: { 'cni.projectcalico.org/ipAddrs': JSON.stringify([exact]) },
          },
          spec: { nodeName: node.name, containers: [{ name: 'c', image: 'registry.invalid/none' }] },
        }),
      );
      const netns = await lab.addPod();
      const r = await add('alone', node, cid, netns, name, seedConf(node, { cniVersion: '1.0.0' }));
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json.ips).toEqual([{ address: `${exact}/32`, interface: 1 }]);
      expect(await podAnnotations(name)).toMatchObject({
        [POD_IP]: `${exact}/32`,
        [POD_IPS]: `${exact}/32`,
        [CONTAINER_ID]: cid,
      });
      expect(await allocatedAddresses()).toContain(exact);
      const handle = (await ipamObjects('ipamhandles')).find(
        (h) => h.metadata.name === `k8s-pod-network.${cid}`,
      );
      expect(handle?.spec.block).toEqual({ '198.19.250.0/26': 1 });
      const del = await lab.run(node, CALICO, env('DEL', cid, netns, name), seedConf(node));
      expect(del.code, del.stdout + del.stderr).toBe(0);
      expect(await allocatedAddresses()).not.toContain(exact);
    });

    it('a bad annotation fails the ADD naming it, with no address, veth or Pod annotation left', async () => {
      const node = lab.nodes[1]!;
      const name = 'bad-pools';
      await lab.kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name,
            namespace: NS,
            annotations: { 'cni.projectcalico.org/ipv4pools': '[default-ipv4-ippool]' },
          },
          spec: { nodeName: node.name, containers: [{ name: 'c', image: 'registry.invalid/none' }] },
        }),
      );
      const netns = await lab.addPod();
      const before = await allocatedAddresses();
      const r = await lab.run(node, CALICO, env('ADD', 'bad0123456789abcdef', netns, name), seedConf(node));
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.json.code).toBe(999);
      expect(r.json.msg).toMatch(
        /^pod kdd-shop\/bad-pools: annotation cni\.projectcalico\.org\/ipv4pools=\[default-ipv4-ippool\] is not valid JSON/,
      );
      expect(await allocatedAddresses()).toEqual(before);
      expect(await net.findLink('eth0', netns)).toBeUndefined();
      expect(await podAnnotations(name)).not.toHaveProperty(POD_IP);
    });
  });

  describe('an API server nobody answers on', () => {
    it('ADD fails with code 11 naming its URL, and leaves no veth', async () => {
      const node = lab.nodes[1]!;
      const netns = await lab.addPod();
      const kubeconfig = join(lab.tmp, 'unreachable-kubeconfig');
      const text = readFileSync(lab.api.kubeconfigPath, 'utf8').replace(
        /server: \S+/,
        'server: https://127.0.0.1:9',
      );
      await writeFile(kubeconfig, text);
      const before = await caliLinks(node);
      const r = await lab.run(
        node,
        CALICO,
        env('ADD', 'down0123456789abcdef', netns, 'web-1'),
        seedConf(node, { kubernetes: { kubeconfig } }),
      );
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.json.code).toBe(11);
      expect(r.json.msg).toContain('https://127.0.0.1:9');
      expect(r.stderr).not.toMatch(/\bat .*\.(m?js|ts):\d+/);
      expect(await caliLinks(node)).toEqual(before);
      expect(await net.findLink('eth0', netns)).toBeUndefined();
    });
  });

  describe('pods one after another, as a node starts them', () => {
    it('five ADDs, each followed by its DEL, leave nothing behind', async () => {
      const node = lab.nodes[1]!;
      for (let i = 0; i < 5; i++) {
        const name = `seq-${i}`;
        const cid = `seq${i}0123456789abcdef`;
        await createPod(name, node);
        const netns = await lab.addPod();
        const r = await add('alone', node, cid, netns, name);
        expect(r.code, r.stdout + r.stderr).toBe(0);
        expect((await podAnnotations(name))[CONTAINER_ID]).toBe(cid);
        const del = await lab.run(node, CALICO, env('DEL', cid, netns, name), seedConf(node));
        expect(del.code, del.stdout + del.stderr).toBe(0);
      }
      expect(await ipamObjects('ipamhandles')).toEqual([]);
      expect(await allocatedAddresses()).toEqual([]);
      expect(await caliLinks(node)).toEqual([]);
    }, 120_000);
  });

  describe('pods on two nodes, and one deleted before its DEL (CNI 1.0.0)', () => {
    const pods: { node: NodeNs; name: string; cid: string; netns: string; ip: string }[] = [];
    const conf = (node: NodeNs) => seedConf(node, { cniVersion: '1.0.0' });

    it('concurrent ADDs on two nodes give distinct addresses from each node’s own block', async () => {
      const jobs = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const node = lab.nodes[i % 2]!;
          const name = `api-${i}`;
          await createPod(name, node);
          return { node, name, cid: `api${i}0123456789abcdef`, netns: await lab.addPod() };
        }),
      );
      const results = await Promise.all(
        jobs.map((j) => add('concurrent', j.node, j.cid, j.netns, j.name, conf(j.node))),
      );
      for (const [i, r] of results.entries()) {
        expect(r.code, `${jobs[i]!.name}: ${r.stdout}${r.stderr.slice(-2000)}`).toBe(0);
        pods.push({ ...jobs[i]!, ip: r.json.ips[0].address.split('/')[0] });
      }
      expect(new Set(pods.map((p) => p.ip)).size).toBe(8);
      const blocks = await ipamObjects('ipamblocks');
      const affinityOf = (ip: string) =>
        blocks.find((b) => {
          const [base, len] = String(b.spec.cidr).split('/');
          const size = 2 ** (32 - Number(len));
          const off = Number(ip.split('.')[3]) - Number(base!.split('.')[3]);
          return (
            ip.split('.').slice(0, 3).join('.') === base!.split('.').slice(0, 3).join('.') &&
            off >= 0 &&
            off < size
          );
        })?.spec.affinity;
      for (const p of pods) {
        expect(affinityOf(p.ip), p.name).toBe(`host:${p.node.name}`);
        expect((await podAnnotations(p.name))[POD_IP]).toBe(`${p.ip}/32`);
      }
      expect((await ipamObjects('ipamhandles')).map((h) => h.metadata.name).sort()).toEqual(
        pods.map((p) => `k8s-pod-network.${p.cid}`).sort(),
      );
    }, 120_000);

    it('pods on different nodes do not share an address or a host interface name', async () => {
      for (const n of lab.nodes) {
        expect(await caliLinks(n)).toHaveLength(pods.filter((p) => p.node === n).length);
      }
    });

    it('DEL of a pod already deleted from the API server (as kubelet does) still frees everything', async () => {
      const gone = pods[0]!;
      await lab.kubectl(['delete', 'pod', gone.name, '-n', NS, '--grace-period=0', '--force']);
      const del = await lab.run(
        gone.node,
        CALICO,
        env('DEL', gone.cid, gone.netns, gone.name),
        conf(gone.node),
      );
      expect(del.code, del.stdout + del.stderr).toBe(0);
      expect(await allocatedAddresses()).not.toContain(gone.ip);
      expect((await ipamObjects('ipamhandles')).map((h) => h.metadata.name)).not.toContain(
        `k8s-pod-network.${gone.cid}`,
      );
      expect(await net.findLink('eth0', gone.netns)).toBeUndefined();
    });

    it('concurrent DELs of the rest leave no allocation, handle, annotation, veth or route', async () => {
      const rest = pods.slice(1);
      const results = await Promise.all(
        rest.map((p) => lab.run(p.node, CALICO, env('DEL', p.cid, p.netns, p.name), conf(p.node))),
      );
      for (const [i, r] of results.entries()) {
        expect(r.code, `${rest[i]!.name}: ${r.stdout}${r.stderr.slice(-2000)}`).toBe(0);
      }
      expect(await allocatedAddresses()).toEqual([]);
      expect(await ipamObjects('ipamhandles')).toEqual([]);
      for (const p of rest) expect(await podAnnotations(p.name)).not.toHaveProperty(POD_IP);
      for (const n of lab.nodes) {
        expect(await caliLinks(n)).toEqual([]);
        expect(await podRoutes(n)).toEqual([]);
      }
    }, 120_000);
  });

  // Last: with CALICO_TEST_SERVICE=1 the invocations above went to the node services.
  if (VIA_SERVICE) {
    it('the node services answered the invocations', async () => {
      const logs = await services!.stop();
      services = undefined;
      const counts = logs.map((l) => Number(/stopping after (\d+) invocations/.exec(l)?.[1] ?? -1));
      for (const [i, n] of counts.entries()) expect(n, `node ${i + 1}: ${logs[i]}`).toBeGreaterThan(4);
    });
  }
});
