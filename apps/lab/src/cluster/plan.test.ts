import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { POD_POOL, planLab } from '../plan.js';
import { REPO_ROOT } from '../prereqs.js';
import {
  daemonSetCounts,
  labCustomResources,
  labHelmValues,
  labManifest,
  labOperatorHelmValues,
  nodeReadiness,
  tigeraAvailability,
} from './install.js';
import { cgroupV1Hierarchies, nodeCommand } from './node-host.js';
import {
  CLUSTER_CIDR,
  clusterNodePaths,
  containerdConfigText,
  criImageName,
  KUBERNETES_SERVICE_IP,
  kubeletArgs,
  kubeletConfigText,
  NODE_HOST_PATHS,
  SERVICE_CIDR,
} from './plan.js';
import { helmPath } from './tools.js';
import { clusterPod } from './workloads.js';

const plan = planLab({ name: 'k1', nodes: 2, mode: 'bgp', stateDir: '/run/x/k1', kubelet: 'manifest' });
const n1 = plan.nodes[0]!;
const paths = clusterNodePaths(plan, plan.cluster!, n1);

describe('lab up --kubelet: the plan', () => {
  it('gives each node its own mount-namespace file, cgroup root and a directory per host path', () => {
    const p2 = clusterNodePaths(plan, plan.cluster!, plan.nodes[1]!);
    expect(paths.mntns).toBe('/run/x/k1/mntns/n1');
    expect(paths.cgroupRoot).toBe('/calico-lab-k1-n1');
    expect(p2.cgroupRoot).toBe('/calico-lab-k1-n2');
    expect(paths.hostPaths.map((h) => h.target)).toEqual([...NODE_HOST_PATHS]);
    expect(paths.hostPaths.find((h) => h.target === '/etc/cni/net.d')?.source).toBe(
      '/run/x/k1/nodes/n1/k8s/host/etc-cni-net.d',
    );
    // No two nodes share a source directory, and none is the machine's own path.
    const sources = [...paths.hostPaths, ...p2.hostPaths].map((h) => h.source);
    expect(new Set(sources).size).toBe(sources.length);
    for (const s of sources) expect(s.startsWith('/run/x/k1/nodes/')).toBe(true);
  });

  it('puts pods in the lab pool and services in the API server range, inside 198.18.0.0/15', () => {
    expect(CLUSTER_CIDR).toBe(POD_POOL);
    expect(SERVICE_CIDR).toBe('198.18.128.0/24');
    expect(KUBERNETES_SERVICE_IP).toBe('198.18.128.1');
  });

  it('names images as the CRI looks them up', () => {
    expect(criImageName('calico-ts/node:v0.1.0')).toBe('docker.io/calico-ts/node:v0.1.0');
    expect(criImageName('busybox:1')).toBe('docker.io/library/busybox:1');
    expect(criImageName('quay.io/x/y:1')).toBe('quay.io/x/y:1');
    expect(criImageName('localhost/x:1')).toBe('localhost/x:1');
  });

  it('writes containerd and kubelet configuration for this machine (cgroup v1, no OOM adjust, cgroupfs)', () => {
    const c = containerdConfigText(paths, 'docker.io/calico-ts/pause:v0.1.0');
    expect(c).toContain('sandbox_image = "docker.io/calico-ts/pause:v0.1.0"');
    expect(c).toContain('restrict_oom_score_adj = true');
    expect(c).toContain('SystemdCgroup = false');
    expect(c).toContain(`address = "${paths.containerdSock}"`);
    expect(c).toContain('bin_dir = "/opt/cni/bin"');
    const k = kubeletConfigText({ paths, caFile: '/ca.pem', resolvConf: '/etc/resolv.conf' });
    for (const line of [
      'failCgroupV1: false',
      'cgroupDriver: cgroupfs',
      'cgroupRoot: /calico-lab-k1-n1',
      'failSwapOn: false',
      `containerRuntimeEndpoint: unix://${paths.containerdSock}`,
      'address: 0.0.0.0',
    ])
      expect(k).toContain(line);
    expect(kubeletArgs(paths, n1)).toEqual(
      expect.arrayContaining(['--hostname-override=n1', `--node-ip=${n1.ip}`]),
    );
  });

  it('runs node processes in the node netns and mount namespace, moved into its system cgroup first', () => {
    const argv = nodeCommand(
      'k1-n1',
      paths,
      ['/bin/kubelet', '--v=1'],
      ['/sys/fs/cgroup/pids', '/sys/fs/cgroup/memory'],
    );
    expect(argv.slice(0, 4)).toEqual(['nsenter', '--net=/run/netns/k1-n1', `--mount=${paths.mntns}`, '--']);
    expect(argv[6]).toContain("'/sys/fs/cgroup/pids/calico-lab-k1-n1/system/cgroup.procs'");
    expect(argv[6]).toContain("'/sys/fs/cgroup/memory/calico-lab-k1-n1/system/cgroup.procs'");
    expect(argv.slice(-2)).toEqual(['/bin/kubelet', '--v=1']);
  });

  it('finds the cgroup v1 hierarchies in /proc/mounts, not cgroup2', () => {
    const mounts = [
      'tmpfs /sys/fs/cgroup tmpfs rw 0 0',
      'cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0',
      'cgroup /sys/fs/cgroup/systemd cgroup rw,name=systemd 0 0',
      'cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0',
    ].join('\n');
    expect(cgroupV1Hierarchies(mounts)).toEqual(['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/systemd']);
  });
});

describe('lab up --kubelet: installing the manifest', () => {
  const manifest = readFileSync(join(REPO_ROOT, 'deploy/manifests/calico.yaml'), 'utf8');
  const envOf = (text: string) => {
    const ds = parseAllDocuments(text)
      .map((d) => d.toJS())
      .find((o) => o?.kind === 'DaemonSet' && o.metadata.name === 'calico-node');
    const c = ds.spec.template.spec.containers.find((x: { name: string }) => x.name === 'calico-node');
    return Object.fromEntries(c.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
  };

  it('sets the pool to the lab range and the encapsulation to the mode, and changes nothing else', () => {
    const bgp = labManifest(manifest, 'bgp');
    expect(envOf(bgp)).toMatchObject({
      CALICO_IPV4POOL_CIDR: '198.19.0.0/16',
      CALICO_IPV4POOL_IPIP: 'Never',
      CALICO_IPV4POOL_VXLAN: 'Never',
    });
    expect(envOf(labManifest(manifest, 'vxlan')).CALICO_IPV4POOL_VXLAN).toBe('Always');
    const before = parseAllDocuments(manifest).map((d) => d.toJS());
    const after = parseAllDocuments(bgp).map((d) => d.toJS());
    expect(after.length).toBe(before.length);
    const strip = (o: unknown) =>
      JSON.stringify(o).replace(/"CALICO_IPV4POOL_(CIDR|IPIP|VXLAN)","value":"[^"]*"/g, '');
    expect(after.map(strip)).toEqual(before.map(strip));
  });

  it('points calico-etcd.yaml at the lab etcd, and refuses a manifest without etcd_endpoints when asked', () => {
    const etcdManifest = readFileSync(join(REPO_ROOT, 'deploy/manifests/calico-etcd.yaml'), 'utf8');
    const out = labManifest(etcdManifest, 'bgp', 'http://198.18.0.2:2379');
    const cm = parseAllDocuments(out)
      .map((d) => d.toJS())
      .find((o) => o?.kind === 'ConfigMap' && o.metadata.name === 'calico-config');
    expect(cm.data.etcd_endpoints).toBe('http://198.18.0.2:2379');
    expect(envOf(out).CALICO_IPV4POOL_CIDR).toBe('198.19.0.0/16');
    expect(() => labManifest(manifest, 'bgp', 'http://198.18.0.2:2379')).toThrow(
      /no calico-config ConfigMap with etcd_endpoints/,
    );
  });

  it('gives helm the same pool and encapsulation', () => {
    expect(labHelmValues('bgp')).toEqual([
      'ipv4Pool.cidr=198.19.0.0/16',
      'ipv4Pool.encapsulation=None',
      'ipv4Pool.encapsulationMode=Always',
    ]);
    expect(labHelmValues('vxlan')).toContain('ipv4Pool.encapsulation=VXLAN');
  });

  it('refuses a manifest without the calico-node DaemonSet', () => {
    expect(() => labManifest('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n', 'bgp')).toThrow(
      /no calico-node DaemonSet/,
    );
  });

  it('reads the DaemonSet counts and Node readiness kubectl shows', () => {
    expect(
      daemonSetCounts({ status: { desiredNumberScheduled: 3, currentNumberScheduled: 3, numberReady: 2 } }),
    ).toEqual({ desired: 3, current: 3, ready: 2, upToDate: 0 });
    expect(daemonSetCounts({})).toEqual({ desired: 0, current: 0, ready: 0, upToDate: 0 });
    const m = nodeReadiness({
      items: [
        { metadata: { name: 'n1' }, status: { conditions: [{ type: 'Ready', status: 'False' }] } },
        { metadata: { name: 'n2' } },
      ],
    });
    expect([...m]).toEqual([
      ['n1', 'False'],
      ['n2', 'Unknown'],
    ]);
  });
});

describe('lab pod create on a --kubelet lab', () => {
  it('makes a Pod bound to its node, httpd on each port, named ports kept', () => {
    const pod = clusterPod({
      namespace: 'blue',
      name: 'web',
      node: 'n2',
      labels: { app: 'web' },
      ports: [{ port: 80 }, { port: 8080, name: 'http' }],
    }) as {
      metadata: { labels: Record<string, string> };
      spec: { nodeName: string; containers: { image: string; args: string[]; ports: unknown[] }[] };
    };
    expect(pod.spec.nodeName).toBe('n2');
    expect(pod.metadata.labels).toEqual({ app: 'web' });
    const c = pod.spec.containers[0]!;
    expect(c.image).toBe('calico-ts/httpd:v0.1.0');
    expect(c.args.at(-1)).toContain('for p in 80 8080;');
    expect(c.ports).toEqual([
      { containerPort: 80, protocol: 'TCP' },
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
    ]);
    // No --ports: port 80; no --node: the scheduler picks.
    const plain = clusterPod({ namespace: 'a', name: 'b', labels: {}, ports: [] }) as {
      spec: { nodeName?: string; containers: { ports: unknown[] }[] };
    };
    expect(plain.spec.nodeName).toBeUndefined();
    expect(plain.spec.containers[0]!.ports).toEqual([{ containerPort: 80, protocol: 'TCP' }]);
  });
});

describe('lab up --kubelet --install operator: the custom resources', () => {
  const text = readFileSync(join(REPO_ROOT, 'deploy/manifests/custom-resources.yaml'), 'utf8');
  const docs = (t: string) => parseAllDocuments(t).map((d) => d.toJS());

  it('sets the pool CIDR to the lab range, keeps upstream’s VXLANCrossSubnet with bgp, and changes nothing else', () => {
    const bgp = docs(labCustomResources(text, 'bgp'));
    const pool = bgp[0].spec.calicoNetwork.ipPools[0];
    expect(pool).toMatchObject({ cidr: '198.19.0.0/16', encapsulation: 'VXLANCrossSubnet' });
    const strip = (o: unknown) => JSON.stringify(o).replace(/"cidr":"[^"]*"/, '');
    expect(bgp.map(strip)).toEqual(docs(text).map(strip));
  });

  it('with --mode vxlan the pool is VXLAN, and nothing else differs', () => {
    const vx = docs(labCustomResources(text, 'vxlan'));
    expect(vx[0].spec.calicoNetwork.ipPools[0].encapsulation).toBe('VXLAN');
    const strip = (o: unknown) => JSON.stringify(o).replace(/"cidr":"[^"]*"|"encapsulation":"[^"]*"/g, '');
    expect(vx.map(strip)).toEqual(docs(text).map(strip));
  });

  it('refuses custom resources without an Installation pool, and reads TigeraStatus Available', () => {
    expect(() =>
      labCustomResources(
        'apiVersion: operator.tigera.io/v1\nkind: APIServer\nmetadata: {name: default}\n',
        'bgp',
      ),
    ).toThrow(/no Installation with spec.calicoNetwork.ipPools/);
    const m = tigeraAvailability({
      items: [
        { metadata: { name: 'calico' }, status: { conditions: [{ type: 'Available', status: 'True' }] } },
        { metadata: { name: 'apiserver' } },
      ],
    });
    expect([...m]).toEqual([
      ['calico', 'True'],
      ['apiserver', 'Unknown'],
    ]);
  });
});

describe("lab up --kubelet --install operator-helm: the chart with the lab's Installation", () => {
  const text = readFileSync(join(REPO_ROOT, 'deploy/manifests/custom-resources.yaml'), 'utf8');
  const helm = helmPath('/var/cache/calico-ts/bin');
  const template = (values: string[]) =>
    parseAllDocuments(
      execFileSync(
        helm,
        [
          'template',
          'calico',
          join(REPO_ROOT, 'deploy/helm/tigera-operator'),
          '--namespace',
          'tigera-operator',
          ...values.flatMap((v) => ['--set', v]),
        ],
        { encoding: 'utf8', env: { ...process.env, HELM_CACHE_HOME: '/tmp/calico-ts-helm-cache' } },
      ),
    )
      .map((d) => d.toJS())
      .filter((o) => o !== null);

  it('sets the pool field by field, the CIDR the lab range', () => {
    expect(labOperatorHelmValues(text, 'bgp')).toEqual([
      'installation.calicoNetwork.ipPools[0].name=default-ipv4-ippool',
      'installation.calicoNetwork.ipPools[0].blockSize=26',
      'installation.calicoNetwork.ipPools[0].cidr=198.19.0.0/16',
      'installation.calicoNetwork.ipPools[0].encapsulation=VXLANCrossSubnet',
      'installation.calicoNetwork.ipPools[0].natOutgoing=Enabled',
      'installation.calicoNetwork.ipPools[0].nodeSelector=all()',
    ]);
    expect(labOperatorHelmValues(text, 'vxlan')).toContain(
      'installation.calicoNetwork.ipPools[0].encapsulation=VXLAN',
    );
    expect(() =>
      labOperatorHelmValues(text.replace('calicoNetwork:', 'mtu: 1400\n  calicoNetwork:'), 'bgp'),
    ).toThrow(/holds more than spec.calicoNetwork.ipPools/);
  });

  it.skipIf(!existsSync(helm)).each(['bgp', 'vxlan'] as const)(
    "with --mode %s the chart renders the Installation of the lab's custom-resources.yaml, and nothing else differs from the defaults",
    (mode) => {
      const lab = template(labOperatorHelmValues(text, mode));
      const want = parseAllDocuments(labCustomResources(text, mode)).map((d) => d.toJS());
      const inst = lab.find((o) => o.kind === 'Installation');
      expect(inst.spec).toEqual(want[0].spec);
      const others = (objs: { kind: string }[]) => objs.filter((o) => o.kind !== 'Installation');
      expect(others(lab)).toEqual(others(template([])));
    },
  );
});
