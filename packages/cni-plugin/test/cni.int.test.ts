/**
 * The built `calico`/`calico-ipam` executables against a real etcd and real network namespaces
 * (root only). Each "node" is its own network namespace and the plugin runs inside it, as a
 * container runtime on that host would run it; see lab.ts. The network configs have `policy.type:
 * k8s`, as an etcd-datastore Kubernetes install writes them, so the plugin reads each pod from a real
 * kube-apiserver; the lab creates the pod there before its ADD (`autoPods`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingKubePrerequisites } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lab, type NodeNs, net, runIn } from './lab.js';
import {
  buildPlugins,
  pluginDir,
  pluginFile,
  removePlugins,
  VARIANT,
  VIA_SERVICE,
} from './plugin-executable.js';

const bin = pluginDir;
const CALICO = join(bin, 'calico');
const seedText = readFileSync(join(import.meta.dirname, 'fixtures', '10-calico.conf'), 'utf8');

const missing = missingKubePrerequisites({ root: true, kubectl: false, tools: ['ip', 'nsenter', 'ping'] });
const ci = process.env.CI === 'true';

if (missing.length > 0) {
  describe(`CNI plugin integration (${VARIANT})`, () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const SEED_CID = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

describe.skipIf(missing.length > 0)(`CNI plugin integration (${VARIANT})`, () => {
  const lab = new Lab();
  let services: { stop(): Promise<string[]> } | undefined;

  beforeAll(async () => {
    await buildPlugins();
    await lab.start(3, 'etcdv3', { kubeApi: true, autoPods: true });
    await lab.seed();
    if (VIA_SERVICE) services = await lab.startServices(pluginFile);
  }, 120_000);

  afterAll(async () => {
    await services?.stop();
    await lab.close();
    await removePlugins();
  }, 60_000);

  /**
   * The seed 10-calico.conf with only this lab's datastore and API server locations and the node's
   * own files (the nodename file calico/node would write, the IPAM lock) set.
   */
  function seedConf(node: NodeNs, extra: Record<string, unknown> = {}): string {
    const c = JSON.parse(seedText) as Record<string, unknown>;
    return JSON.stringify({
      ...c,
      ...lab.etcdConf(),
      ...kubeConf(),
      nodename_file: node.nodenameFile,
      ipam_lock_file: node.lockFile,
      service_socket: node.serviceSocket,
      ...extra,
    });
  }

  function conf(node: NodeNs, extra: Record<string, unknown> = {}): string {
    return JSON.stringify({
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'calico',
      log_level: 'warning',
      ipam: { type: 'calico-ipam' },
      policy: { type: 'k8s' },
      nodename_file: node.nodenameFile,
      ipam_lock_file: node.lockFile,
      service_socket: node.serviceSocket,
      ...lab.etcdConf(),
      ...kubeConf(),
      ...extra,
    });
  }

  /** Where the pods are: this lab's API server (the seed's API root and token are another cluster's). */
  function kubeConf(): Record<string, unknown> {
    return { policy: { type: 'k8s' }, kubernetes: { kubeconfig: lab.api.kubeconfigPath } };
  }

  function env(command: string, cid: string, netns: string, pod: string, over: Record<string, string> = {}) {
    return {
      CNI_COMMAND: command,
      CNI_CONTAINERID: cid,
      CNI_NETNS: netns,
      CNI_IFNAME: 'eth0',
      CNI_PATH: bin,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=${cid}`,
      ...over,
    };
  }

  async function etcdKeys(prefix: string): Promise<string[]> {
    const r = await lab.etcd.etcdctl(['get', '--prefix', prefix, '--keys-only']);
    return r.stdout.split('\n').filter((l) => l.trim() !== '');
  }

  async function etcdValue(key: string): Promise<unknown> {
    const r = await lab.etcd.etcdctl(['get', key, '--print-value-only']);
    return r.stdout.trim() ? JSON.parse(r.stdout) : undefined;
  }

  async function allocatedAddresses(): Promise<string[]> {
    const blocks = await lab.ipam.listBlocks();
    const out: string[] = [];
    for (const b of blocks.items) {
      const base = b.value.cidr.split('/')[0]!.split('.').map(Number);
      b.value.allocations.forEach((a, i) => {
        if (a !== null) out.push(`${base[0]}.${base[1]}.${base[2]}.${base[3]! + i}`);
      });
    }
    return out;
  }

  function ping(fromNetns: string, to: string): boolean {
    return spawnSync('nsenter', [`--net=${fromNetns}`, 'ping', '-c', '1', '-W', '3', to]).status === 0;
  }

  describe('a pod set up with the seed 10-calico.conf (CNI 0.1.0)', () => {
    let pod: string;
    let node: NodeNs;
    let podIp: string;
    const hostIf = 'cali279796d25e7'; // sha1("default.22-my-nginx-2523304718-7stgs")[:11]
    const podName = '22-my-nginx-2523304718-7stgs';

    beforeAll(async () => {
      node = lab.nodes[0]!;
      pod = await lab.addPod();
    });

    it('ADD returns a 0.1.0 result with a /32 from the pool', async () => {
      const r = await lab.run(node, CALICO, env('ADD', SEED_CID, pod, podName), seedConf(node));
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

    it('the pod has eth0 with the /32, the link route to 169.254.1.1 and the default route', async () => {
      const addrs = await net.listAddrs({ dev: 'eth0', family: 4 }, pod);
      expect(addrs.map((a) => a.cidr)).toEqual([`${podIp}/32`]);
      const link = await net.getLink('eth0', pod);
      expect(link.mtu).toBe(1500);
      expect(link.up).toBe(true);
      const routes = await net.listRoutes({ family: 4 }, pod);
      expect(routes).toContainEqual(
        expect.objectContaining({ dst: '169.254.1.1/32', dev: 'eth0', scope: 'link' }),
      );
      expect(routes).toContainEqual(
        expect.objectContaining({ dst: '0.0.0.0/0', gateway: '169.254.1.1', dev: 'eth0' }),
      );
    });

    it('the node has the cali… end with MAC ee:ee:ee:ee:ee:ee, proxy ARP and the /32 route', async () => {
      const link = await net.getLink(hostIf, node.netns);
      expect(link).toMatchObject({ mac: 'ee:ee:ee:ee:ee:ee', up: true, kind: 'veth' });
      const routes = await net.listRoutes({ dev: hostIf, family: 4 }, node.netns);
      expect(routes).toContainEqual(
        expect.objectContaining({ dst: `${podIp}/32`, dev: hostIf, scope: 'link' }),
      );
      expect(await net.readSysctl(`net.ipv4.conf.${hostIf}.proxy_arp`, node.netns)).toBe('1');
      expect(await net.readSysctl(`net.ipv4.neigh.${hostIf}.proxy_delay`, node.netns)).toBe('0');
      expect(await net.readSysctl(`net.ipv4.conf.${hostIf}.forwarding`, node.netns)).toBe('1');
      expect(await net.readSysctl(`net.ipv4.conf.${hostIf}.route_localnet`, node.netns)).toBe('1');
    });

    it('ARP for 169.254.1.1 is answered through the host end, and the pod reaches the node', async () => {
      expect(ping(pod, node.ip)).toBe(true);
      const neigh = await net.listNeighbours({ dev: 'eth0', family: 4 }, pod);
      expect(neigh).toContainEqual(
        expect.objectContaining({ dst: '169.254.1.1', lladdr: 'ee:ee:ee:ee:ee:ee' }),
      );
    });

    it('etcd has the WorkloadEndpoint and the allocation, in upstream’s keys', async () => {
      const wepName = `${node.name.replaceAll('-', '--')}-k8s-${podName.replaceAll('-', '--')}-eth0`;
      const wep = (await etcdValue(
        `/calico/resources/v3/projectcalico.org/workloadendpoints/default/${wepName}`,
      )) as {
        metadata: { labels: Record<string, string> };
        spec: Record<string, unknown>;
      };
      expect(wep).toBeDefined();
      expect(wep.metadata.labels).toMatchObject({
        'projectcalico.org/namespace': 'default',
        'projectcalico.org/orchestrator': 'k8s',
      });
      const mac = (await net.getLink('eth0', pod)).mac;
      expect(wep.spec).toMatchObject({
        orchestrator: 'k8s',
        node: node.name,
        containerID: SEED_CID,
        pod: podName,
        endpoint: 'eth0',
        ipNetworks: [`${podIp}/32`],
        profiles: ['kns.default'],
        interfaceName: hostIf,
        mac,
      });
      const handle = (await etcdValue(`/calico/ipam/v2/handle/k8s-pod-network.${SEED_CID}`)) as {
        block: Record<string, number>;
      };
      expect(Object.values(handle.block)).toEqual([1]);
      expect(await allocatedAddresses()).toContain(podIp);
    });

    it('CHECK passes, then fails naming the problem once the pod’s default route is deleted', async () => {
      const add = {
        cniVersion: '0.4.0',
        ips: [{ version: '4', address: `${podIp}/32`, interface: 1 }],
        interfaces: [{ name: hostIf }, { name: 'eth0', sandbox: pod }],
      };
      const checkConf = seedConf(node, { cniVersion: '0.4.0', prevResult: add });
      const ok = await lab.run(node, CALICO, env('CHECK', SEED_CID, pod, podName), checkConf);
      expect(ok.code, ok.stdout + ok.stderr).toBe(0);
      await net.delRoute({ dst: 'default', gateway: '169.254.1.1', dev: 'eth0' }, {}, pod);
      const bad = await lab.run(node, CALICO, env('CHECK', SEED_CID, pod, podName), checkConf);
      expect(bad.code).toBe(1);
      expect(bad.json).toMatchObject({
        code: 999,
        msg: `${pod} has no default route (0.0.0.0/0) via 169.254.1.1 dev eth0`,
      });
      await net.addRoute({ dst: 'default', gateway: '169.254.1.1', dev: 'eth0' }, pod);
    });

    it('DEL removes everything, and a second DEL succeeds', async () => {
      const del = await lab.run(node, CALICO, env('DEL', SEED_CID, pod, podName), seedConf(node));
      expect(del.code, del.stdout + del.stderr).toBe(0);
      expect(del.stdout).toBe('');
      expect(await net.findLink(hostIf, node.netns)).toBeUndefined();
      expect(await net.findLink('eth0', pod)).toBeUndefined();
      expect(
        (await net.listRoutes({ family: 4 }, node.netns)).filter((r) => r.dst.startsWith('198.19.')),
      ).toEqual([]);
      expect(await etcdKeys('/calico/ipam/v2/handle/')).toEqual([]);
      expect(await etcdKeys('/calico/resources/v3/projectcalico.org/workloadendpoints/')).toEqual([]);
      expect(await allocatedAddresses()).toEqual([]);
      const again = await lab.run(node, CALICO, env('DEL', SEED_CID, pod, podName), seedConf(node));
      expect(again.code, again.stdout + again.stderr).toBe(0);
    });
  });

  describe('two pods on one node (CNI 1.0.0)', () => {
    const pods: { netns: string; cid: string; name: string; ip: string }[] = [];

    it('ADD returns 1.0.0 results (ips without version)', async () => {
      const node = lab.nodes[1]!;
      for (const name of ['web', 'db']) {
        const netns = await lab.addPod();
        const cid = `${name}0123456789abcdef`;
        const r = await lab.run(node, CALICO, env('ADD', cid, netns, name), conf(node));
        expect(r.code, r.stdout + r.stderr).toBe(0);
        expect(r.json).toMatchObject({
          cniVersion: '1.0.0',
          interfaces: [
            { name: expect.stringMatching(/^cali[0-9a-f]{11}$/), mac: 'ee:ee:ee:ee:ee:ee' },
            { name: 'eth0', mac: expect.stringMatching(/^[0-9a-f:]{17}$/), sandbox: netns },
          ],
          ips: [{ interface: 1, address: expect.stringMatching(/^198\.19\.\d+\.\d+\/32$/) }],
          routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
          dns: {},
        });
        expect(r.json.ips[0].version).toBeUndefined();
        pods.push({ netns, cid, name, ip: r.json.ips[0].address.split('/')[0] });
      }
    });

    it('they ping each other', () => {
      expect(ping(pods[0]!.netns, pods[1]!.ip)).toBe(true);
      expect(ping(pods[1]!.netns, pods[0]!.ip)).toBe(true);
    });

    it('they talk TCP', async () => {
      const [a, b] = [pods[0]!, pods[1]!];
      const server = lab.spawnIn(b.netns, process.execPath, [
        '-e',
        `require('node:net').createServer((s) => s.on('data', (d) => s.end('pong ' + d))).listen(8080, '${b.ip}', () => console.log('ready'))`,
      ]);
      await new Promise<void>((resolve) => server.stdout!.once('data', () => resolve()));
      const client = await runIn(
        a.netns,
        process.execPath,
        [
          '-e',
          `const s = require('node:net').connect(8080, '${b.ip}', () => s.write('ping')); s.on('data', (d) => { process.stdout.write(String(d)); s.end(); });`,
        ],
        {},
        '',
      );
      expect(client.stdout).toBe('pong ping');
      server.kill('SIGKILL');
    });

    it('DEL both', async () => {
      const node = lab.nodes[1]!;
      for (const p of pods) {
        const r = await lab.run(node, CALICO, env('DEL', p.cid, p.netns, p.name), conf(node));
        expect(r.code, r.stdout + r.stderr).toBe(0);
      }
      expect(await allocatedAddresses()).toEqual([]);
    });
  });

  describe('concurrency', () => {
    const done: { node: NodeNs; netns: string; cid: string; name: string; ip: string }[] = [];

    async function addMany(nodes: NodeNs[], count: number, tag: string) {
      const jobs = await Promise.all(
        Array.from({ length: count }, async (_, i) => ({
          node: nodes[i % nodes.length]!,
          netns: await lab.addPod(),
          cid: `${tag}${String(i).padStart(4, '0')}deadbeef`,
          name: `${tag}-${i}`,
        })),
      );
      const results = await Promise.all(
        jobs.map((j) => lab.run(j.node, CALICO, env('ADD', j.cid, j.netns, j.name), conf(j.node))),
      );
      results.forEach((r, i) => {
        expect(r.code, `${jobs[i]!.name}: ${r.stdout}${r.stderr.slice(-2000)}`).toBe(0);
        done.push({ ...jobs[i]!, ip: r.json.ips[0].address.split('/')[0] });
      });
    }

    it('30 concurrent ADDs on one node and 30 across three nodes give 60 distinct addresses', async () => {
      await addMany([lab.nodes[0]!], 30, 'one');
      await addMany(lab.nodes, 30, 'three');
      const ips = done.map((d) => d.ip);
      expect(new Set(ips).size).toBe(60);
      expect((await allocatedAddresses()).sort()).toEqual([...ips].sort());
      expect(await etcdKeys('/calico/ipam/v2/handle/')).toHaveLength(60);
      expect(await etcdKeys('/calico/resources/v3/projectcalico.org/workloadendpoints/')).toHaveLength(60);
      // Each node's pods share the node's affine block(s).
      for (const n of lab.nodes) {
        const mine = done.filter((d) => d.node === n);
        const links = (await net.listLinks(n.netns)).filter((l) => l.name.startsWith('cali'));
        expect(links).toHaveLength(mine.length);
      }
    }, 300_000);

    it('concurrent DELs leave no allocation, handle, endpoint, veth or route', async () => {
      const results = await Promise.all(
        done.map((d) => lab.run(d.node, CALICO, env('DEL', d.cid, d.netns, d.name), conf(d.node))),
      );
      for (const [i, r] of results.entries()) {
        expect(r.code, `${done[i]!.name}: ${r.stdout}${r.stderr.slice(-2000)}`).toBe(0);
      }
      expect(await allocatedAddresses()).toEqual([]);
      expect(await etcdKeys('/calico/ipam/v2/handle/')).toEqual([]);
      expect(await etcdKeys('/calico/resources/v3/projectcalico.org/workloadendpoints/')).toEqual([]);
      for (const n of lab.nodes) {
        expect((await net.listLinks(n.netns)).filter((l) => l.name.startsWith('cali'))).toEqual([]);
        expect(
          (await net.listRoutes({ family: 4 }, n.netns)).filter((r) => r.dst.startsWith('198.19.')),
        ).toEqual([]);
      }
    }, 300_000);
  });

  describe('CNI 1.1: STATUS and GC', () => {
    it('STATUS is ready with a reachable datastore and a pool with room', async () => {
      const node = lab.nodes[0]!;
      const r = await lab.run(
        node,
        CALICO,
        { CNI_COMMAND: 'STATUS', CNI_PATH: bin },
        conf(node, { cniVersion: '1.1.0' }),
      );
      expect(r.code, r.stdout + r.stderr).toBe(0);
    });

    it('STATUS is code 50 while the only IPv4 pool is disabled, and for calico-ipam too', async () => {
      const node = lab.nodes[0]!;
      const pools = (await lab.ds.list('IPPool')).items;
      const setDisabled = async (disabled: boolean) => {
        for (const p of pools) {
          const cur = await lab.ds.get('IPPool', p.metadata.name);
          await lab.ds.update({ ...cur, spec: { ...cur.spec, disabled } } as typeof cur);
        }
      };
      await setDisabled(true);
      try {
        const c = conf(node, { cniVersion: '1.1.0' });
        for (const program of [CALICO, join(bin, 'calico-ipam')]) {
          const r = await lab.run(node, program, { CNI_COMMAND: 'STATUS', CNI_PATH: bin }, c);
          expect(r.code).toBe(1);
          expect(r.json).toMatchObject({
            cniVersion: '1.1.0',
            code: 50,
            msg: expect.stringContaining('no enabled IP pool'),
          });
        }
      } finally {
        await setDisabled(false);
      }
      const ok = await lab.run(
        node,
        CALICO,
        { CNI_COMMAND: 'STATUS', CNI_PATH: bin },
        conf(node, { cniVersion: '1.1.0' }),
      );
      expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    });

    it('GC frees the allocations missing from cni.dev/valid-attachments', async () => {
      const node = lab.nodes[2]!;
      const pods: { netns: string; cid: string; name: string; ip: string }[] = [];
      for (const name of ['keep', 'stale1', 'stale2']) {
        const netns = await lab.addPod();
        const cid = `${name}cafe0123`;
        const r = await lab.run(
          node,
          CALICO,
          env('ADD', cid, netns, name),
          conf(node, { cniVersion: '1.1.0' }),
        );
        expect(r.code, r.stdout + r.stderr).toBe(0);
        pods.push({ netns, cid, name, ip: r.json.ips[0].address.split('/')[0] });
      }
      const gc = await lab.run(
        node,
        CALICO,
        { CNI_COMMAND: 'GC', CNI_PATH: bin },
        conf(node, {
          cniVersion: '1.1.0',
          'cni.dev/valid-attachments': [{ containerID: pods[0]!.cid, ifname: 'eth0' }],
        }),
      );
      expect(gc.code, gc.stdout + gc.stderr).toBe(0);
      expect(await allocatedAddresses()).toEqual([pods[0]!.ip]);
      expect(await etcdKeys('/calico/ipam/v2/handle/')).toEqual([
        `/calico/ipam/v2/handle/k8s-pod-network.${pods[0]!.cid}`,
      ]);
      for (const p of pods) {
        expect((await lab.run(node, CALICO, env('DEL', p.cid, p.netns, p.name), conf(node))).code).toBe(0);
      }
    });
  });

  describe('other configurations', () => {
    it('calico-ipam as a separate executable (a copy of the bundle) is exec’d with the same env and stdin', async () => {
      const node = lab.nodes[1]!;
      const dir = await mkdtemp(join(tmpdir(), `${lab.id}-ipam-`));
      try {
        await copyFile(pluginFile, join(dir, 'calico-ipam'));
        await chmod(join(dir, 'calico-ipam'), 0o755);
        const netns = await lab.addPod();
        const e = env('ADD', 'execipam0123', netns, 'execipam', { CNI_PATH: `${dir}:${bin}` });
        const r = await lab.run(node, CALICO, { ...e }, conf(node, { log_level: 'info' }));
        expect(r.code, r.stdout + r.stderr).toBe(0);
        // The copy logged as its own process.
        const pids = new Set([...r.stderr.matchAll(/\[INFO\]\[(\d+)\] calico-ipam /g)].map((m) => m[1]));
        const ownPids = new Set([...r.stderr.matchAll(/\[INFO\]\[(\d+)\] calico /g)].map((m) => m[1]));
        expect(pids.size).toBe(1);
        expect([...pids][0]).not.toBe([...ownPids][0]);
        const del = await lab.run(node, CALICO, { ...e, CNI_COMMAND: 'DEL' }, conf(node));
        expect(del.code, del.stdout + del.stderr).toBe(0);
        expect(await allocatedAddresses()).toEqual([]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('without a policy plugin, a plain CNI workload gets the network profile, created in etcd', async () => {
      const node = lab.nodes[1]!;
      const netns = await lab.addPod();
      const c = conf(node, { name: 'plain-net', policy: undefined });
      const e = env('ADD', 'plain0123', netns, '', { CNI_ARGS: 'K8S_POD_NAME=ignored' });
      const r = await lab.run(node, CALICO, e, c);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const wepName = `${node.name.replaceAll('-', '--')}-cni-plain0123-eth0`;
      const wep = (await etcdValue(
        `/calico/resources/v3/projectcalico.org/workloadendpoints/default/${wepName}`,
      )) as {
        spec: Record<string, unknown>;
      };
      expect(wep.spec).toMatchObject({
        orchestrator: 'cni',
        containerID: 'plain0123',
        profiles: ['plain-net'],
        interfaceName: 'caliplain0123',
      });
      const profile = (await etcdValue('/calico/resources/v3/projectcalico.org/profiles/plain-net')) as {
        spec: Record<string, unknown>;
      };
      expect(profile.spec).toMatchObject({
        egress: [{ action: 'Allow' }],
        ingress: [{ action: 'Allow', source: { selector: 'has(plain-net)' } }],
        labelsToApply: { 'plain-net': '' },
      });
      expect((await lab.run(node, CALICO, { ...e, CNI_COMMAND: 'DEL' }, c)).code).toBe(0);
      expect(await etcdKeys('/calico/resources/v3/projectcalico.org/workloadendpoints/')).toEqual([]);
    });

    it('dual stack: a /128 with the default route via fe80::ecee:eeff:feee:eeee, reaching the node over IPv6', async () => {
      const node = lab.nodes[2]!;
      await lab.ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: { name: 'default-ipv6-ippool' },
        spec: {
          cidr: 'fd00:c6:13::/112',
          blockSize: 122,
          ipipMode: 'Never',
          vxlanMode: 'Never',
          nodeSelector: 'all()',
        },
      } as Parameters<typeof lab.ds.create>[0]);
      await net.addAddr('br0', 'fd00:c6:12::1/64', { noDad: true }, lab.fabric);
      await net.addAddr('eth0', 'fd00:c6:12::13/64', { noDad: true }, node.netns);
      await net.addRoute({ dst: 'default', family: 6, gateway: 'fd00:c6:12::1', dev: 'eth0' }, node.netns);
      const netns = await lab.addPod();
      const c = conf(node, { ipam: { type: 'calico-ipam', assign_ipv4: 'true', assign_ipv6: 'true' } });
      const e = env('ADD', 'dualstack01', netns, 'dual');
      const r = await lab.run(node, CALICO, e, c);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json.ips).toEqual([
        { interface: 1, address: expect.stringMatching(/^198\.19\.\d+\.\d+\/32$/) },
        { interface: 1, address: expect.stringMatching(/^fd00:c6:13::[0-9a-f:]*\/128$/) },
      ]);
      expect(r.json.routes).toEqual([
        { dst: '0.0.0.0/0', gw: '169.254.1.1' },
        { dst: '::/0', gw: 'fe80::ecee:eeff:feee:eeee' },
      ]);
      const v6 = r.json.ips[1].address as string;
      expect((await net.listAddrs({ dev: 'eth0', family: 6 }, netns)).map((a) => a.cidr)).toContain(v6);
      expect(await net.listRoutes({ family: 6 }, netns)).toContainEqual(
        expect.objectContaining({ dst: '::/0', gateway: 'fe80::ecee:eeff:feee:eeee', dev: 'eth0' }),
      );
      const hostIf = r.json.interfaces[0].name as string;
      expect(await net.listRoutes({ dev: hostIf, family: 6 }, node.netns)).toContainEqual(
        expect.objectContaining({ dst: v6 }),
      );
      const ping6 = spawnSync('nsenter', [
        `--net=${netns}`,
        'ping',
        '-6',
        '-c',
        '1',
        '-W',
        '3',
        'fd00:c6:12::13',
      ]);
      expect(ping6.status, String(ping6.stdout) + String(ping6.stderr)).toBe(0);
      expect((await lab.run(node, CALICO, { ...e, CNI_COMMAND: 'DEL' }, c)).code).toBe(0);
      expect(await etcdKeys('/calico/ipam/v2/handle/')).toEqual([]);
    });
  });

  describe('a conflist with host-local IPAM', () => {
    it.skipIf(!existsSync('/usr/lib/cni/host-local'))(
      'ADD and DEL through the host-local plugin',
      async () => {
        const node = lab.nodes[0]!;
        const dataDir = await mkdtemp(join(tmpdir(), `${lab.id}-hostlocal-`));
        try {
          const netns = await lab.addPod();
          const c = conf(node, {
            name: 'hl-net',
            ipam: { type: 'host-local', subnet: '198.19.200.0/24', dataDir },
          });
          const e = env('ADD', 'hostlocal0123', netns, 'hl', { CNI_PATH: `${bin}:/usr/lib/cni` });
          const r = await lab.run(node, CALICO, e, c);
          expect(r.code, r.stdout + r.stderr).toBe(0);
          expect(r.json.ips).toEqual([
            { interface: 1, address: expect.stringMatching(/^198\.19\.200\.\d+\/32$/) },
          ]);
          const ip = r.json.ips[0].address.split('/')[0];
          expect(existsSync(join(dataDir, 'hl-net', ip))).toBe(true);
          expect(ping(netns, node.ip)).toBe(true);
          const del = await lab.run(node, CALICO, { ...e, CNI_COMMAND: 'DEL' }, c);
          expect(del.code, del.stdout + del.stderr).toBe(0);
          expect(existsSync(join(dataDir, 'hl-net', ip))).toBe(false);
        } finally {
          await rm(dataDir, { recursive: true, force: true });
        }
      },
    );
  });

  // Last: with CALICO_TEST_SERVICE=1 every invocation above went to the node's service, not only
  // succeeded. Stopping the services makes each report how many it answered.
  if (VIA_SERVICE) {
    it('the node services answered the invocations', async () => {
      const logs = await services!.stop();
      services = undefined;
      const counts = logs.map((l) => Number(/stopping after (\d+) invocations/.exec(l)?.[1] ?? -1));
      for (const [i, n] of counts.entries()) expect(n, `node ${i + 1}: ${logs[i]}`).toBeGreaterThan(10);
      expect(counts.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(60);
    });
  }
});
