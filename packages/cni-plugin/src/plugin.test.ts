import { beforeEach, describe, expect, it } from 'vitest';
import { CniPluginError } from './errors.js';
import type { HostInfo } from './handlers/context.js';
import { delegateError, FakeDelegateRunner } from './io/delegate.js';
import { FakeBackend } from './io/fake-backend.js';
import { FakeNetOps } from './io/fake-net-ops.js';
import { NO_LOCK } from './io/host-lock.js';
import { FakeKubeReader, type KubeReader, memoizedReader } from './io/kube.js';
import { LinuxDataplane } from './io/linux-dataplane.js';
import { silentLogger } from './io/logger.js';
import { type PluginEffects, type Program, runPlugin } from './plugin.js';
import type { Env } from './spec/env.js';

const POD = '/run/netns/pod1';
const CID = 'c0ffee0123456789abcdef';

interface Harness {
  net: FakeNetOps;
  backend: FakeBackend;
  /** The Kubernetes API: pod default/nginx (labels, service account web-sa, a named port). */
  kube: FakeKubeReader;
  files: Map<string, string>;
  run(program: Program, env: Env, stdin: string, args?: string[]): Promise<RunResult>;
}

interface RunResult {
  exitCode: number;
  stdout: string;
  // biome-ignore lint/suspicious/noExplicitAny: the plugin's JSON answer, read field by field
  json: any;
}

function harness(): Harness {
  const net = new FakeNetOps();
  net.addNetns(POD);
  const backend = new FakeBackend();
  const kube = new FakeKubeReader().addPod({
    metadata: { name: 'nginx', namespace: 'default', labels: { app: 'nginx' } },
    spec: {
      nodeName: 'node1',
      serviceAccountName: 'web-sa',
      containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8080 }, { containerPort: 9090 }] }],
    },
  });
  const files = new Map<string, string>([['/var/lib/calico/nodename', 'node1\n']]);
  const host: HostInfo = {
    readFile: async (p) => files.get(p),
    hostname: () => 'os-hostname',
    now: () => new Date('2024-05-01T10:00:00.123Z'),
  };
  // One invocation's reader, shared with its in-process calico-ipam as effects.ts shares it.
  const effects = (stdin: string, reader: KubeReader): PluginEffects => ({
    log: silentLogger(),
    host,
    readStdin: async () => stdin,
    delegate: (_inv, env) => {
      const d = new FakeDelegateRunner();
      // calico-ipam "executable": the same plugin code, run as calico-ipam with the same env.
      d.register('calico-ipam', async (command, input, extraArgs) => {
        const out = await runPlugin(
          'calico-ipam',
          [],
          {
            ...env,
            CNI_COMMAND: command,
            ...(extraArgs ? { CNI_ARGS: [env.CNI_ARGS, extraArgs].filter(Boolean).join(';') } : {}),
          },
          effects(input, reader),
          'test',
        );
        if (out.exitCode !== 0) throw delegateError('calico-ipam', command, out.exitCode, out.stdout, '');
        return out.stdout;
      });
      return d;
    },
    openBackend: async () => backend,
    openKube: async () => reader,
    dataplane: () => new LinuxDataplane(net),
    lock: NO_LOCK,
  });
  return {
    net,
    backend,
    kube,
    files,
    async run(program, env, stdin, args = []) {
      const out = await runPlugin(program, args, env, effects(stdin, memoizedReader(kube)), 'v0.1.0-test');
      return { ...out, json: out.stdout.startsWith('{') ? JSON.parse(out.stdout) : undefined };
    },
  };
}

const k8sEnv = (command: string, over: Partial<Record<string, string>> = {}): Env => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: CID,
  CNI_NETNS: POD,
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
  CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=nginx;K8S_POD_INFRA_CONTAINER_ID=' + CID,
  ...over,
});

const conf = (o: Record<string, unknown> = {}) =>
  JSON.stringify({
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'calico',
    ipam: { type: 'calico-ipam' },
    ...o,
  });

const WEP = 'node1-k8s-nginx-eth0';
const HOST_IF = 'calic440f455693';

let h: Harness;
beforeEach(() => {
  h = harness();
});

/** Nothing of the pod is left: no allocation, endpoint, veth or host route. */
function expectClean() {
  expect([...h.backend.allocations.keys()]).toEqual([]);
  expect([...h.backend.endpoints.keys()]).toEqual([]);
  expect(h.net.ns('').links.has(HOST_IF)).toBe(false);
  expect(h.net.ns(POD).links.has('eth0')).toBe(false);
  expect(h.net.ns('').routes).toEqual([]);
}

describe('calico ADD', () => {
  it('sets up a Kubernetes pod and returns a 1.0.0 result', async () => {
    const r = await h.run('calico', k8sEnv('ADD'), conf({ policy: { type: 'k8s' } }));
    expect(r.exitCode).toBe(0);
    const mac = h.net.ns(POD).links.get('eth0')!.mac;
    expect(r.json).toEqual({
      cniVersion: '1.0.0',
      interfaces: [
        { name: HOST_IF, mac: 'ee:ee:ee:ee:ee:ee' },
        { name: 'eth0', mac, mtu: 1500, sandbox: POD },
      ],
      ips: [{ interface: 1, address: '198.19.0.0/32' }],
      routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
      dns: {},
    });
    const wep = h.backend.endpoints.get(`default/${WEP}`)!;
    // The Pod's labels and service account, as upstream's conversion gives them.
    expect(wep.metadata.labels).toEqual({
      app: 'nginx',
      'projectcalico.org/namespace': 'default',
      'projectcalico.org/orchestrator': 'k8s',
      'projectcalico.org/serviceaccount': 'web-sa',
    });
    expect(wep.spec).toEqual({
      orchestrator: 'k8s',
      node: 'node1',
      containerID: CID,
      pod: 'nginx',
      endpoint: 'eth0',
      ipNetworks: ['198.19.0.0/32'],
      profiles: ['kns.default', 'ksa.default.web-sa'],
      interfaceName: HOST_IF,
      mac,
      serviceAccountName: 'web-sa',
      ports: [{ name: 'http', protocol: 'TCP', port: 8080, hostPort: 0, hostIP: '' }],
    });
    expect(h.kube.reads.sort()).toEqual(['namespace/default', 'pod/default/nginx']);
    expect(h.backend.allocations.get('198.19.0.0')).toMatchObject({
      handleId: `k8s-pod-network.${CID}`,
      attrs: {
        node: 'node1',
        namespace: 'default',
        pod: 'nginx',
        timestamp: '2024-05-01 10:00:00.123 +0000 UTC',
      },
    });
    // Policy comes from Kubernetes: no network profile.
    expect(h.backend.profiles.size).toBe(0);
  });

  it('answers the seed 10-calico.conf (CNI 0.1.0) in the ip4 form', async () => {
    const { readFileSync } = await import('node:fs');
    const seed = readFileSync(new URL('../test/fixtures/10-calico.conf', import.meta.url), 'utf8');
    const r = await h.run('calico', k8sEnv('ADD'), seed);
    expect(r.exitCode).toBe(0);
    expect(r.json).toEqual({
      cniVersion: '0.1.0',
      ip4: { ip: '198.19.0.0/32', routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }] },
      dns: {},
    });
    expect(h.net.ns(POD).links.get('eth0')?.mtu).toBe(1500);
  });

  it('a plain CNI workload gets a cni endpoint, the network profile, and a container-ID veth name', async () => {
    const r = await h.run(
      'calico',
      k8sEnv('ADD', { CNI_ARGS: 'K8S_POD_NAME=web' }),
      conf({ nodename: 'n-1', nodename_file_optional: true }),
    );
    expect(r.exitCode).toBe(0);
    const wep = h.backend.endpoints.get(`default/n--1-cni-${CID}-eth0`)!;
    expect(wep.spec).toMatchObject({
      orchestrator: 'cni',
      containerID: CID,
      profiles: ['k8s-pod-network'],
      interfaceName: 'calic0ffee01234',
    });
    expect(wep.spec.pod).toBeUndefined();
    expect(h.backend.profiles.has('k8s-pod-network')).toBe(true);
    expect(h.net.ns('').links.has('calic0ffee01234')).toBe(true);
  });

  it('FELIX_INTERFACEPREFIX names the host end', async () => {
    const r = await h.run('calico', k8sEnv('ADD', { FELIX_INTERFACEPREFIX: 'tap,cali' }), conf());
    expect(r.exitCode).toBe(0);
    expect(r.json.interfaces[0].name).toBe('tapc440f455693');
  });

  it('refuses while the datastore is not ready (code 11), touching nothing', async () => {
    h.backend.clusterReady = false;
    const r = await h.run('calico', k8sEnv('ADD'), conf());
    expect(r.exitCode).toBe(1);
    expect(r.json).toEqual({
      cniVersion: '1.0.0',
      code: 11,
      msg: 'Calico is currently not ready to process requests',
      details: 'datastoreReady is false',
    });
    expectClean();
  });

  it('needs /var/lib/calico/nodename unless nodename_file_optional', async () => {
    h.files.clear();
    const r = await h.run('calico', k8sEnv('ADD'), conf());
    expect(r.json.code).toBe(11);
    expect(r.json.msg).toContain('/var/lib/calico/nodename does not exist');
    const ok = await h.run('calico', k8sEnv('ADD'), conf({ nodename_file_optional: true }));
    expect(ok.exitCode).toBe(0);
    expect(h.backend.endpoints.has('default/os--hostname-k8s-nginx-eth0')).toBe(true);
  });

  it('uses the MTU Felix wrote when the config has none', async () => {
    h.files.set('/var/lib/calico/mtu', '1410\n');
    const r = await h.run('calico', k8sEnv('ADD'), conf());
    expect(r.json.interfaces[1].mtu).toBe(1410);
    expect(h.net.ns('').links.get(HOST_IF)?.mtu).toBe(1410);
  });

  it('a missing netns fails before IPAM runs (code 8)', async () => {
    const r = await h.run('calico', k8sEnv('ADD', { CNI_NETNS: '/run/netns/nope' }), conf());
    expect(r.json.code).toBe(8);
    expect(h.backend.calls).not.toContain('autoAssign');
    expectClean();
  });

  it('an ADD repeated on a running pod fails without releasing its addresses', async () => {
    expect((await h.run('calico', k8sEnv('ADD'), conf())).exitCode).toBe(0);
    const r = await h.run('calico', k8sEnv('ADD'), conf());
    expect(r.exitCode).toBe(1);
    expect(r.json.msg).toBe(`interface eth0 already exists in ${POD}`);
    expect([...h.backend.allocations.keys()]).toEqual(['198.19.0.0']);
  });

  it('appends to a prevResult in a chain', async () => {
    const prev = {
      cniVersion: '1.0.0',
      interfaces: [{ name: 'lo0' }],
      ips: [{ address: '10.9.0.1/32', interface: 0 }],
    };
    const r = await h.run('calico', k8sEnv('ADD'), conf({ prevResult: prev }));
    expect(r.json.interfaces.map((i: { name: string }) => i.name)).toEqual(['lo0', HOST_IF, 'eth0']);
    expect(r.json.ips).toEqual([
      { interface: 0, address: '10.9.0.1/32' },
      { interface: 2, address: '198.19.0.0/32' },
    ]);
  });

  describe('undoes earlier steps when a later one fails', () => {
    it('IPAM fails: its error is passed on', async () => {
      h.backend.failNext(
        'autoAssign',
        new CniPluginError('ipam-failed', 'no free IPv4 address in the pools'),
      );
      const r = await h.run('calico', k8sEnv('ADD'), conf());
      expect(r.json).toMatchObject({ code: 999, msg: 'calico-ipam: no free IPv4 address in the pools' });
      expectClean();
    });

    it('IPAM returns no address', async () => {
      const r = await h.run(
        'calico',
        k8sEnv('ADD'),
        conf({ ipam: { type: 'calico-ipam', assign_ipv4: 'false', assign_ipv6: 'false' } }),
      );
      expect(r.json).toMatchObject({ code: 7, msg: expect.stringContaining('nothing to assign') });
      expectClean();
    });

    it('every kernel operation, one at a time', async () => {
      const probe = harness();
      await probe.run('calico', k8sEnv('ADD'), conf());
      const total = probe.net.ops.length;
      for (let n = 1; n <= total; n++) {
        h = harness();
        h.net.failAt(n);
        const r = await h.run('calico', k8sEnv('ADD'), conf());
        expect(r.exitCode, `operation ${n}`).toBe(1);
        expect(r.json.msg, `operation ${n}`).toContain(`injected failure at operation ${n}`);
        h.net.failAt(undefined);
        expectClean();
      }
    });

    it('writing the WorkloadEndpoint fails', async () => {
      h.backend.failNext('writeWorkloadEndpoint');
      const r = await h.run('calico', k8sEnv('ADD'), conf());
      expect(r.json).toMatchObject({ code: 999, msg: 'injected failure in writeWorkloadEndpoint' });
      expectClean();
    });

    it('creating the profile fails', async () => {
      h.backend.failNext('ensureNetworkProfile');
      const r = await h.run('calico', k8sEnv('ADD'), conf());
      expect(r.json.msg).toBe('injected failure in ensureNetworkProfile');
      expectClean();
    });

    it('an endpoint that existed before (older sandbox of the pod) is restored', async () => {
      await h.backend.writeWorkloadEndpoint({
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: { name: WEP, namespace: 'default' },
        spec: { containerID: 'older', node: 'node1', orchestrator: 'k8s', pod: 'nginx', endpoint: 'eth0' },
      });
      h.backend.failNext('ensureNetworkProfile');
      await h.run('calico', k8sEnv('ADD'), conf());
      expect(h.backend.endpoints.get(`default/${WEP}`)?.spec.containerID).toBe('older');
      expect([...h.backend.allocations.keys()]).toEqual([]);
    });
  });
});

describe('calico DEL', () => {
  it('removes endpoint, interface, route and allocation; a second DEL succeeds', async () => {
    await h.run('calico', k8sEnv('ADD'), conf());
    const r = await h.run('calico', k8sEnv('DEL'), conf());
    expect(r).toMatchObject({ exitCode: 0, stdout: '' });
    expectClean();
    expect((await h.run('calico', k8sEnv('DEL'), conf())).exitCode).toBe(0);
  });

  it('calico-ipam DEL releases the pre-v3 handle (<namespace>.<pod>) only when the current one holds nothing', async () => {
    const legacy = { address: '198.19.9.9', cidr: '198.19.9.9/26', handleId: 'default.nginx', attrs: {} };
    h.backend.allocations.set(legacy.address, legacy);
    await h.run('calico', k8sEnv('ADD'), conf());
    h.backend.calls.length = 0;
    expect((await h.run('calico-ipam', k8sEnv('DEL'), conf())).exitCode).toBe(0);
    // This container's ADD made k8s-pod-network.<CID>: the old handle is another sandbox's.
    expect(h.backend.calls.filter((c) => c === 'releaseByHandle')).toHaveLength(1);
    expect([...h.backend.allocations.keys()]).toEqual([legacy.address]);
    // The DEL of the sandbox the pre-v3 plugin added finds no current handle and frees the old one.
    expect(
      (await h.run('calico-ipam', k8sEnv('DEL', { CNI_CONTAINERID: 'v2sandbox' }), conf())).exitCode,
    ).toBe(0);
    expect([...h.backend.allocations.keys()]).toEqual([]);
  });

  it('succeeds when the netns is already gone (and without CNI_NETNS)', async () => {
    await h.run('calico', k8sEnv('ADD'), conf());
    h.net.namespaces.delete(POD);
    // The kernel took the veth with the namespace.
    h.net.ns('').links.delete(HOST_IF);
    h.net.ns('').routes = [];
    const r = await h.run('calico', k8sEnv('DEL', { CNI_NETNS: '' }), conf());
    expect(r.exitCode).toBe(0);
    expect([...h.backend.allocations.keys()]).toEqual([]);
    expect([...h.backend.endpoints.keys()]).toEqual([]);
  });

  it('keeps an endpoint that belongs to a newer sandbox of the pod', async () => {
    await h.run('calico', k8sEnv('ADD'), conf());
    const r = await h.run('calico', k8sEnv('DEL', { CNI_CONTAINERID: 'oldsandbox' }), conf());
    expect(r.exitCode).toBe(0);
    expect(h.backend.endpoints.get(`default/${WEP}`)?.spec.containerID).toBe(CID);
    expect([...h.backend.allocations.keys()]).toEqual(['198.19.0.0']);
  });

  it('a datastore read error fails the DEL before anything is removed', async () => {
    await h.run('calico', k8sEnv('ADD'), conf());
    h.backend.failNext('getWorkloadEndpoint');
    const r = await h.run('calico', k8sEnv('DEL'), conf());
    expect(r.exitCode).toBe(1);
    expect(h.net.ns(POD).links.has('eth0')).toBe(true);
    expect([...h.backend.allocations.keys()]).toEqual(['198.19.0.0']);
  });

  it('an endpoint delete failure fails the DEL after the interface step, keeping the allocation', async () => {
    await h.run('calico', k8sEnv('ADD'), conf());
    h.backend.failNext('deleteWorkloadEndpoint', new CniPluginError('try-again', 'etcd unreachable'), 5);
    const r = await h.run('calico', k8sEnv('DEL'), conf());
    expect(r.exitCode).toBe(1);
    expect(r.json).toMatchObject({ msg: 'etcd unreachable' });
    // The interface was removed beside the failed delete; the address waits for the retried DEL.
    expect(h.net.ns(POD).links.has('eth0')).toBe(false);
    expect([...h.backend.allocations.keys()]).toEqual(['198.19.0.0']);
    expect((await h.run('calico', k8sEnv('DEL'), conf())).exitCode).toBe(0);
    expect(h.backend.endpoints.size).toBe(0);
    expect(h.backend.allocations.size).toBe(0);
  });

  it('deletes this container’s endpoint written late, between its first look and the release', async () => {
    await h.run('calico', k8sEnv('ADD'), conf());
    const late = h.backend.endpoints.get(`default/${WEP}`)!;
    // The ADD's create, sent before its process died on a cut link, lands after the DEL's first
    // read: here, just before calico-ipam releases the handle.
    const release = h.backend.releaseByHandle.bind(h.backend);
    h.backend.releaseByHandle = async (handleId) => {
      h.backend.endpoints.set(`default/${WEP}`, structuredClone(late));
      return release(handleId);
    };
    const r = await h.run('calico', k8sEnv('DEL'), conf());
    expect(r.exitCode).toBe(0);
    expectClean();
  });

  it('an ADD’s endpoint create is guarded by its IPAM handle', async () => {
    await h.run('calico', k8sEnv('ADD'), conf());
    const wep = h.backend.endpoints.get(`default/${WEP}`)!;
    expect((await h.run('calico', k8sEnv('DEL'), conf())).exitCode).toBe(0);
    // The same create, arriving after the DEL released the handle: refused, nothing written.
    await expect(
      h.backend.writeWorkloadEndpoint(wep, { ipamHandle: `k8s-pod-network.${CID}` }),
    ).rejects.toMatchObject({ code: 'try-again' });
    expect(h.backend.endpoints.size).toBe(0);
  });

  it('an IPAM release failure is reported, after the interface is gone', async () => {
    await h.run('calico', k8sEnv('ADD'), conf());
    h.backend.failNext('releaseByHandle', new CniPluginError('try-again', 'etcd unreachable'));
    const r = await h.run('calico', k8sEnv('DEL'), conf());
    expect(r.json).toMatchObject({ code: 11, msg: 'calico-ipam: etcd unreachable' });
    expect(h.net.ns(POD).links.has('eth0')).toBe(false);
  });
});

describe('calico CHECK', () => {
  async function addThenCheckConf() {
    const add = await h.run('calico', k8sEnv('ADD'), conf());
    return conf({ prevResult: add.json });
  }

  it('passes right after ADD', async () => {
    const c = await addThenCheckConf();
    const r = await h.run('calico', k8sEnv('CHECK'), c);
    expect(r).toMatchObject({ exitCode: 0, stdout: '' });
  });

  it('fails when the pod’s default route was deleted', async () => {
    const c = await addThenCheckConf();
    h.net.ns(POD).routes = h.net.ns(POD).routes.filter((x) => x.dst !== '0.0.0.0/0');
    const r = await h.run('calico', k8sEnv('CHECK'), c);
    expect(r.exitCode).toBe(1);
    expect(r.json).toMatchObject({
      code: 999,
      msg: `${POD} has no default route (0.0.0.0/0) via 169.254.1.1 dev eth0`,
    });
  });

  it('fails when the host route, the endpoint or the allocation is gone', async () => {
    const c = await addThenCheckConf();
    h.net.ns('').routes = [];
    expect((await h.run('calico', k8sEnv('CHECK'), c)).json.msg).toBe(
      `host has no route 198.19.0.0/32 dev ${HOST_IF}`,
    );
    h = harness();
    const c2 = await addThenCheckConf();
    h.backend.endpoints.clear();
    expect((await h.run('calico', k8sEnv('CHECK'), c2)).json.msg).toBe(
      `WorkloadEndpoint default/${WEP} does not exist`,
    );
    h = harness();
    const c3 = await addThenCheckConf();
    h.backend.allocations.clear();
    expect((await h.run('calico', k8sEnv('CHECK'), c3)).json.msg).toBe(
      `calico-ipam: IPAM handle k8s-pod-network.${CID} does not hold 198.19.0.0`,
    );
  });

  it('needs a prevResult and CNI 0.4.0', async () => {
    expect((await h.run('calico', k8sEnv('CHECK'), conf())).json).toMatchObject({
      code: 7,
      msg: expect.stringContaining('prevResult: missing'),
    });
    expect((await h.run('calico', k8sEnv('CHECK'), conf({ cniVersion: '0.3.1' }))).json.code).toBe(1);
  });
});

describe('STATUS and GC (CNI 1.1)', () => {
  const c11 = (o: Record<string, unknown> = {}) => conf({ cniVersion: '1.1.0', ...o });
  const statusEnv: Env = { CNI_COMMAND: 'STATUS', CNI_PATH: '/opt/cni/bin' };

  it('ready when the datastore is ready and a pool has room', async () => {
    expect((await h.run('calico', statusEnv, c11())).exitCode).toBe(0);
    expect((await h.run('calico-ipam', statusEnv, c11())).exitCode).toBe(0);
  });

  it('code 50 when not ready, unreachable, without an enabled pool, or full', async () => {
    h.backend.clusterReady = 'missing';
    expect((await h.run('calico', statusEnv, c11())).json).toMatchObject({
      code: 50,
      msg: 'Calico is currently not ready to process requests',
    });
    h = harness();
    h.backend.failAlways('readiness', new CniPluginError('try-again', 'etcd: connection refused'));
    expect((await h.run('calico', statusEnv, c11())).json.msg).toContain('etcd: connection refused');
    h = harness();
    h.backend.pools = [{ name: 'p', cidr: '198.19.0.0/30', disabled: true }];
    expect((await h.run('calico', statusEnv, c11())).json).toMatchObject({
      code: 50,
      msg: 'calico-ipam: no enabled IP pool: pods cannot get addresses',
    });
    h = harness();
    h.backend.pools = [{ name: 'p', cidr: '198.19.0.0/32' }];
    expect((await h.run('calico', k8sEnv('ADD'), c11())).exitCode).toBe(0);
    expect((await h.run('calico-ipam', statusEnv, c11())).json).toMatchObject({
      code: 50,
      msg: expect.stringContaining('full'),
    });
  });

  it('GC releases allocations of this network missing from valid-attachments', async () => {
    h.net.addNetns('/run/netns/pod2');
    await h.run('calico', k8sEnv('ADD'), c11());
    await h.run(
      'calico',
      k8sEnv('ADD', {
        CNI_CONTAINERID: 'second',
        CNI_NETNS: '/run/netns/pod2',
        CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=two',
      }),
      c11(),
    );
    await h.backend.assignIp({ ip: '198.19.1.1', handleId: 'other-net.zzz', node: 'node1', attrs: {} });
    await h.backend.assignIp({
      ip: '198.19.1.2',
      handleId: 'ipip-tunnel-addr-node1',
      node: 'node1',
      attrs: {},
    });
    const r = await h.run(
      'calico',
      { CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin' },
      c11({ 'cni.dev/valid-attachments': [{ containerID: CID, ifname: 'eth0' }] }),
    );
    expect(r).toMatchObject({ exitCode: 0, stdout: '' });
    expect([...h.backend.allocations.values()].map((a) => a.handleId).sort()).toEqual([
      'ipip-tunnel-addr-node1',
      `k8s-pod-network.${CID}`,
      'other-net.zzz',
    ]);
  });
});

describe('VERSION, flags and input errors', () => {
  it('VERSION lists the versions, in the requested version', async () => {
    const r = await h.run('calico', { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.4.0"}');
    expect(r.json).toEqual({
      cniVersion: '0.4.0',
      supportedVersions: ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });
    expect((await h.run('calico-ipam', { CNI_COMMAND: 'VERSION' }, '')).json.cniVersion).toBe('1.1.0');
  });

  it('-v prints the version; an unknown flag is error 100', async () => {
    expect(await h.run('calico', {}, '', ['-v'])).toMatchObject({ exitCode: 0, stdout: 'v0.1.0-test\n' });
    const r = await h.run('calico-ipam', {}, '', ['-upgrade']);
    expect(r.json).toMatchObject({ code: 100, msg: 'failed to parse CLI flags' });
  });

  it('-t tests the datastore connection', async () => {
    expect((await h.run('calico', {}, conf(), ['-t'])).exitCode).toBe(0);
    h.backend.clusterReady = false;
    expect((await h.run('calico', {}, conf(), ['-t'])).json).toMatchObject({
      code: 100,
      msg: 'data store connection failed',
    });
  });

  it('environment errors come before config errors', async () => {
    const r = await h.run('calico', { CNI_COMMAND: 'ADD' }, 'not json');
    expect(r.json).toMatchObject({
      code: 4,
      msg: 'required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME] missing',
    });
    expect((await h.run('calico', k8sEnv('ADD'), 'not json')).json.code).toBe(6);
  });

  it('a config without ipam is code 7 for calico, defaults for calico-ipam', async () => {
    const noIpam = JSON.stringify({ cniVersion: '1.0.0', name: 'n', type: 'calico' });
    expect((await h.run('calico', k8sEnv('ADD'), noIpam)).json).toMatchObject({
      code: 7,
      msg: expect.stringContaining('ipam: missing'),
    });
    const r = await h.run('calico-ipam', k8sEnv('ADD'), noIpam);
    expect(r.json).toEqual({ cniVersion: '1.0.0', ips: [{ address: '198.19.0.0/26' }], dns: {} });
  });

  it('calico-ipam honours IP= in CNI_ARGS', async () => {
    const r = await h.run('calico-ipam', k8sEnv('ADD', { CNI_ARGS: 'IP=198.19.3.3' }), conf());
    expect(r.json.ips).toEqual([{ address: '198.19.3.3/26' }]);
    expect(h.backend.allocations.get('198.19.3.3')?.handleId).toBe(`k8s-pod-network.${CID}`);
  });
});

describe('calico ADD in Kubernetes mode: the pod’s cni.projectcalico.org annotations', () => {
  const k8sConf = (o: Record<string, unknown> = {}) => conf({ policy: { type: 'k8s' }, ...o });
  const annotate = (annotations: Record<string, string>) => {
    h.kube.pods.get('default/nginx')!.metadata.annotations = annotations;
  };
  /** What ADD leaves on a failure before or after IPAM: nothing, and the error names the cause. */
  async function expectRefused(c: string, msg: string | RegExp, code = 999) {
    const r = await h.run('calico', k8sEnv('ADD'), c);
    expect(r.exitCode, r.stdout).toBe(1);
    expect(r.json.code).toBe(code);
    if (typeof msg === 'string') expect(r.json.msg).toBe(msg);
    else expect(r.json.msg).toMatch(msg);
    expectClean();
    return r;
  }

  it('ipAddrs: calico-ipam assigns exactly that address (asked with IP= in its CNI_ARGS)', async () => {
    annotate({ 'cni.projectcalico.org/ipAddrs': '["198.19.7.7"]' });
    const r = await h.run('calico', k8sEnv('ADD'), k8sConf());
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json.ips).toEqual([{ interface: 1, address: '198.19.7.7/32' }]);
    expect(h.backend.allocations.get('198.19.7.7')?.handleId).toBe(`k8s-pod-network.${CID}`);
    expect(h.backend.endpoints.get(`default/${WEP}`)?.spec.ipNetworks).toEqual(['198.19.7.7/32']);
    expect(h.backend.autoAssigns).toEqual([]);
  });

  it('ipAddrs: an address already in use fails the ADD, leaving the other pod’s address alone', async () => {
    await h.backend.assignIp({ ip: '198.19.7.7', handleId: 'other', node: 'node1', attrs: {} });
    annotate({ 'cni.projectcalico.org/ipAddrs': '["198.19.7.7"]' });
    const r = await h.run('calico', k8sEnv('ADD'), k8sConf());
    expect(r.exitCode).toBe(1);
    expect(r.json.msg).toBe(
      'pod default/nginx: annotation cni.projectcalico.org/ipAddrs asks for 198.19.7.7: calico-ipam: address 198.19.7.7 is already in use',
    );
    expect([...h.backend.allocations.values()].map((a) => a.handleId)).toEqual(['other']);
    expect(h.net.ns('').links.has(HOST_IF)).toBe(false);
    expect([...h.backend.endpoints.keys()]).toEqual([]);
  });

  it('ipAddrs: a new sandbox of the pod takes the address over from the earlier one, as upstream', async () => {
    annotate({ 'cni.projectcalico.org/ipAddrs': '["198.19.7.7"]' });
    expect((await h.run('calico', k8sEnv('ADD'), k8sConf())).exitCode).toBe(0);
    h.net.addNetns('/run/netns/pod2');
    const cid2 = 'beef0123456789abcdef';
    const r = await h.run(
      'calico',
      k8sEnv('ADD', { CNI_CONTAINERID: cid2, CNI_NETNS: '/run/netns/pod2' }),
      k8sConf(),
    );
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json.ips).toEqual([{ interface: 1, address: '198.19.7.7/32' }]);
    expect(h.backend.allocations.get('198.19.7.7')?.handleId).toBe(`k8s-pod-network.${cid2}`);
    expect(h.backend.endpoints.get(`default/${WEP}`)?.spec.containerID).toBe(cid2);
  });

  it('ipAddrs: an address another pod holds is not taken over', async () => {
    await h.backend.writeWorkloadEndpoint({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: WEP, namespace: 'default' },
      spec: { containerID: 'old0123456789', ipNetworks: ['198.19.7.7/32'] },
    });
    await h.backend.assignIp({
      ip: '198.19.7.7',
      handleId: 'k8s-pod-network.someone-else',
      node: 'node1',
      attrs: {},
    });
    annotate({ 'cni.projectcalico.org/ipAddrs': '["198.19.7.7"]' });
    const r = await h.run('calico', k8sEnv('ADD'), k8sConf());
    expect(r.exitCode).toBe(1);
    expect(h.backend.allocations.get('198.19.7.7')?.handleId).toBe('k8s-pod-network.someone-else');
  });

  it('ipAddrs with two addresses of one family, or not an address, is refused before anything is made', async () => {
    annotate({ 'cni.projectcalico.org/ipAddrs': '["198.19.7.7", "198.19.7.8"]' });
    await expectRefused(
      k8sConf(),
      'pod default/nginx: annotation cni.projectcalico.org/ipAddrs=["198.19.7.7", "198.19.7.8"] may have at most one IPv4 and one IPv6 address',
    );
    annotate({ 'cni.projectcalico.org/ipAddrs': '["pod-ip"]' });
    await expectRefused(k8sConf(), /has "pod-ip", which is not an IP address$/);
    expect(h.backend.calls).not.toContain('assignIp');
  });

  it('ipAddrs and ipAddrsNoIpam together are refused', async () => {
    annotate({
      'cni.projectcalico.org/ipAddrs': '["198.19.7.7"]',
      'cni.projectcalico.org/ipAddrsNoIpam': '["10.9.9.9"]',
    });
    await expectRefused(
      k8sConf({ feature_control: { ip_addrs_no_ipam: true } }),
      'pod default/nginx: annotations cni.projectcalico.org/ipAddrs and cni.projectcalico.org/ipAddrsNoIpam cannot be used together',
    );
  });

  it('ipAddrsNoIpam needs feature_control.ip_addrs_no_ipam; with it, the address bypasses IPAM', async () => {
    annotate({ 'cni.projectcalico.org/ipAddrsNoIpam': '["10.9.9.9"]' });
    await expectRefused(k8sConf(), /does not enable feature_control\.ip_addrs_no_ipam$/);
    const r = await h.run('calico', k8sEnv('ADD'), k8sConf({ feature_control: { ip_addrs_no_ipam: true } }));
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json.ips).toEqual([{ interface: 1, address: '10.9.9.9/32' }]);
    expect(h.backend.allocations.size).toBe(0);
    expect(h.net.ns(POD).addrs.map((a) => a.cidr)).toContain('10.9.9.9/32');
  });

  it('ipv4pools: the pod’s list beats its namespace’s, and is what calico-ipam is given', async () => {
    h.backend.pools.push({ name: 'blue', cidr: '10.20.0.0/16' }, { name: 'green', cidr: '10.30.0.0/16' });
    h.kube.addNamespace({
      metadata: { name: 'default', annotations: { 'cni.projectcalico.org/ipv4pools': '["green"]' } },
    });
    let r = await h.run('calico', k8sEnv('ADD'), k8sConf());
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json.ips[0].address).toBe('10.30.0.0/32');
    await h.run('calico', k8sEnv('DEL'), k8sConf());
    annotate({ 'cni.projectcalico.org/ipv4pools': '["10.20.0.0/16"]' });
    r = await h.run('calico', k8sEnv('ADD'), k8sConf());
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json.ips[0].address).toBe('10.20.0.0/32');
    expect(h.backend.autoAssigns.map((a) => a.ipv4Pools)).toEqual([['green'], ['10.20.0.0/16']]);
  });

  it('a pool whose namespaceSelector does not match the namespace’s labels is not used', async () => {
    h.backend.pools = [
      { name: 'a-prod', cidr: '10.40.0.0/16', namespaceSelector: "env == 'prod'" },
      { name: 'b-dev', cidr: '10.50.0.0/16', namespaceSelector: "env == 'dev'" },
    ];
    h.kube.addNamespace({ metadata: { name: 'default', labels: { env: 'dev' } } });
    const r = await h.run('calico', k8sEnv('ADD'), k8sConf());
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json.ips[0].address).toBe('10.50.0.0/32');
    expect(h.backend.autoAssigns[0]?.namespaceLabels).toEqual({ env: 'dev' });
    // Read once for the calico plugin and its in-process calico-ipam together.
    expect(h.kube.reads.filter((x) => x === 'namespace/default')).toHaveLength(1);
  });

  it('ipv4pools that is not JSON is refused, naming the annotation and its value', async () => {
    annotate({ 'cni.projectcalico.org/ipv4pools': 'blue' });
    await expectRefused(
      k8sConf(),
      /^pod default\/nginx: annotation cni\.projectcalico\.org\/ipv4pools=blue is not valid JSON/,
    );
  });

  it('floatingIPs needs feature_control.floating_ips; with it, the endpoint NATs them to the pod', async () => {
    annotate({ 'cni.projectcalico.org/floatingIPs': '["203.0.113.9"]' });
    await expectRefused(k8sConf(), /does not enable feature_control\.floating_ips$/);
    const r = await h.run('calico', k8sEnv('ADD'), k8sConf({ feature_control: { floating_ips: true } }));
    expect(r.exitCode, r.stdout).toBe(0);
    expect(h.backend.endpoints.get(`default/${WEP}`)?.spec.ipNATs).toEqual([
      { internalIP: '198.19.0.0', externalIP: '203.0.113.9' },
    ]);
  });

  it('an IPv6 floating IP for a pod without IPv6 fails after IPAM and releases the address', async () => {
    annotate({ 'cni.projectcalico.org/floatingIPs': '["2001:db8::9"]' });
    await expectRefused(
      k8sConf({ feature_control: { floating_ips: true } }),
      /has 2001:db8::9, but the pod has no IPv6 address to NAT it to$/,
    );
  });

  it('hwAddr is the pod interface’s MAC; a bad one is refused before the veth is made', async () => {
    annotate({ 'cni.projectcalico.org/hwAddr': '02:AA:bb:cc:dd:01' });
    const r = await h.run('calico', k8sEnv('ADD'), k8sConf());
    expect(r.exitCode, r.stdout).toBe(0);
    expect(h.net.ns(POD).links.get('eth0')?.mac).toBe('02:aa:bb:cc:dd:01');
    expect(h.backend.endpoints.get(`default/${WEP}`)?.spec.mac).toBe('02:aa:bb:cc:dd:01');
    await h.run('calico', k8sEnv('DEL'), k8sConf());
    annotate({ 'cni.projectcalico.org/hwAddr': '01:00:5e:00:00:01' });
    await expectRefused(k8sConf(), /hwAddr=01:00:5e:00:00:01 is not a unicast MAC address/);
  });

  it('a pod the API server does not have fails before the veth or IPAM, naming the pod and server', async () => {
    h.kube.pods.clear();
    await expectRefused(
      k8sConf(),
      'pod default/nginx does not exist in the Kubernetes API server https://fake-apiserver:6443',
    );
    expect(h.backend.calls).not.toContain('autoAssign');
  });

  it('an unreachable API server is code 11 (try again), touching nothing', async () => {
    h.kube.failAlways(
      'getPod',
      new CniPluginError(
        'try-again',
        'cannot read pod default/nginx: the Kubernetes API server https://x:6443 did not answer',
      ),
    );
    await expectRefused(k8sConf(), /did not answer$/, 11);
  });

  it('without policy k8s or the Kubernetes datastore, the API is not read', async () => {
    annotate({ 'cni.projectcalico.org/ipAddrs': '["198.19.7.7"]' });
    const r = await h.run('calico', k8sEnv('ADD'), conf());
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json.ips[0].address).toBe('198.19.0.0/32');
    expect(h.kube.reads).toEqual([]);
  });
});
