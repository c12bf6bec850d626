import { describe, expect, it } from 'vitest';
import {
  calicoNodeContainer,
  calicoNodeReadinessProbe,
  cniNetworkConfigTemplate,
  installCniContainer,
  KUBECONFIG_IN_CONTAINER,
  kubeControllersContainer,
  labImages,
  logLineText,
  podmanRunArgs,
} from './containers.js';
import { planLab } from './plan.js';
import { cniConflist, nodeCniBinDir } from './program-config.js';

const images = labImages((name) => `calico-ts/${name}:v9`);
const plan = (mode: 'bgp' | 'vxlan', datastore: 'kubernetes' | 'etcdv3' = 'kubernetes') =>
  planLab({ name: 'e2i1', nodes: 2, mode, datastore, stateDir: '/s', images });

/** `-e K=V` pairs of a spec's flags, as an object. */
function envOf(flags: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  flags.forEach((f, i) => {
    if (f === '-e') {
      const kv = flags[i + 1]!;
      out[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
    }
  });
  return out;
}
const mountsOf = (flags: readonly string[]) => flags.filter((_, i) => flags[i - 1] === '-v');

describe('lab containers (--images)', () => {
  it('a plan without images keeps the one lab-wide CNI directory; with images each node has its own', () => {
    const without = planLab({ name: 'e2i1', nodes: 1, mode: 'bgp', stateDir: '/s' });
    expect(without.images).toBeUndefined();
    expect(nodeCniBinDir(without, without.nodes[0]!)).toBe('/s/cni-bin');
    const p = plan('bgp');
    expect(p.images).toEqual({
      node: 'calico-ts/node:v9',
      cni: 'calico-ts/cni:v9',
      kubeControllers: 'calico-ts/kube-controllers:v9',
    });
    expect(nodeCniBinDir(p, p.nodes[1]!)).toBe('/s/nodes/n2/cni-bin');
  });

  it("calico-node: privileged, the node's namespace as host network, the DaemonSet's mounts at the node's directories", () => {
    const p = plan('bgp');
    const spec = calicoNodeContainer(p, p.nodes[0]!);
    expect(spec).toMatchObject({
      name: 'calico-lab-e2i1-n1',
      image: 'calico-ts/node:v9',
      netns: 'e2i1-n1',
      detach: true,
      log: '/s/nodes/n1/calico-node.log',
    });
    expect(spec.flags).toContain('--privileged');
    expect(mountsOf(spec.flags)).toEqual([
      '/lib/modules:/lib/modules:ro',
      '/s/nodes/n1/xtables.lock:/run/xtables.lock',
      '/s/nodes/n1/run:/var/run/calico',
      '/s/nodes/n1/lib:/var/lib/calico',
      '/s/nodes/n1/log:/var/log/calico',
      `/s/kubeconfig:${KUBECONFIG_IN_CONTAINER}:ro`,
    ]);
    const env = envOf(spec.flags);
    expect(env).toMatchObject({
      NODENAME: 'n1',
      CALICO_NETWORKING_BACKEND: 'bird',
      DATASTORE_TYPE: 'kubernetes',
      KUBECONFIG: KUBECONFIG_IN_CONTAINER,
      IP_AUTODETECTION_METHOD: 'interface=eth0',
    });
    // The image's own defaults, which the mounts serve: nothing of the host's paths.
    for (const k of [
      'PATH',
      'FELIX_CONFIGFILE',
      'CALICO_VAR_RUN_DIR',
      'CALICO_VAR_LIB_DIR',
      'CALICO_BIRD_CONFIG_DIR',
    ])
      expect(env[k], k).toBeUndefined();
    expect(mountsOf(calicoNodeContainer(p, p.nodes[0]!, { libModules: false }).flags)).not.toContain(
      '/lib/modules:/lib/modules:ro',
    );
  });

  it('calico-node on etcd: the etcd endpoints, and the kubeconfig only for BGP password Secrets', () => {
    const p = plan('vxlan', 'etcdv3');
    const spec = calicoNodeContainer(p, p.nodes[1]!);
    expect(envOf(spec.flags)).toMatchObject({
      DATASTORE_TYPE: 'etcdv3',
      ETCD_ENDPOINTS: 'http://198.18.0.2:2379',
      CALICO_NETWORKING_BACKEND: 'vxlan',
      // On etcd the Kubernetes API serves calico-node only the Secrets BGP passwords name.
      KUBECONFIG: KUBECONFIG_IN_CONTAINER,
      NAMESPACE: 'kube-system',
    });
    expect(mountsOf(spec.flags)).toContain(`${p.kube.kubeconfig}:${KUBECONFIG_IN_CONTAINER}:ro`);
  });

  it("install-cni: once, no network, the node's CNI directories, a template that renders to the lab's conflist", () => {
    const p = plan('vxlan');
    const node = p.nodes[1]!;
    const spec = installCniContainer(p, node);
    expect(spec).toMatchObject({
      name: 'calico-lab-e2i1-install-cni-n2',
      image: 'calico-ts/cni:v9',
      detach: false,
    });
    expect(spec.netns).toBeUndefined();
    expect(mountsOf(spec.flags)).toEqual([
      '/s/nodes/n2/cni-bin:/host/opt/cni/bin',
      '/s/nodes/n2/net.d:/host/etc/cni/net.d',
    ]);
    const env = envOf(spec.flags);
    expect(env).toMatchObject({ SLEEP: 'false', KUBERNETES_NODE_NAME: 'n2', CNI_MTU: '1450' });
    // What install-cni does with the placeholders, by hand: the lab's own conflist plus the node name.
    const rendered = JSON.parse(
      env.CNI_NETWORK_CONFIG!.replaceAll('__KUBERNETES_NODE_NAME__', 'n2').replaceAll('__CNI_MTU__', '1450'),
    );
    const own = cniConflist(p, node);
    expect(rendered).toEqual({
      ...own,
      plugins: [{ ...(own.plugins as object[])[0], nodename: 'n2' }],
    });
    expect(cniNetworkConfigTemplate(p, node)).toContain('"mtu": __CNI_MTU__');
  });

  it("kube-controllers: the etcd namespace's network, its status directory as /status, the Deployment's env", () => {
    const p = plan('bgp', 'etcdv3');
    const spec = kubeControllersContainer(p);
    expect(spec).toMatchObject({
      name: 'calico-lab-e2i1-kube-controllers',
      netns: 'e2i1-etcd',
      log: '/s/kube-controllers.log',
    });
    expect(mountsOf(spec.flags)).toEqual([
      '/s/kube-controllers:/status',
      `/s/kubeconfig:${KUBECONFIG_IN_CONTAINER}:ro`,
    ]);
    const env = envOf(spec.flags);
    expect(env).toMatchObject({
      ENABLED_CONTROLLERS: 'policy,namespace,serviceaccount,workloadendpoint,node',
      KUBECONFIG: KUBECONFIG_IN_CONTAINER,
      DATASTORE_TYPE: 'etcdv3',
    });
    expect(env.STATUS_FILE).toBeUndefined();
  });

  it('podman run argv: the host flags, detached or removed, host network or none, labels naming the lab', () => {
    const p = plan('bgp');
    const argv = podmanRunArgs(calicoNodeContainer(p, p.nodes[0]!), ['run', '--runtime', 'runc']);
    expect(argv.slice(0, 7)).toEqual(['run', '--runtime', 'runc', '-d', '--network', 'host', '--log-driver']);
    expect(argv).toContain('org.calico-ts.lab=e2i1');
    expect(argv).toContain('org.calico-ts.lab.state-dir=/s');
    expect(argv.at(-1)).toBe('calico-ts/node:v9');
    const once = podmanRunArgs(installCniContainer(p, p.nodes[0]!), ['run']);
    expect(once.slice(0, 4)).toEqual(['run', '--rm', '--network', 'none']);
  });

  it("the readiness probe is the DaemonSet's, BIRD's half only with BGP", () => {
    expect(calicoNodeReadinessProbe(plan('bgp'))).toEqual([
      '/usr/bin/calico-node',
      '-felix-ready',
      '-bird-ready',
    ]);
    expect(calicoNodeReadinessProbe(plan('vxlan'))).toEqual(['/usr/bin/calico-node', '-felix-ready']);
  });

  it("reads a log line of podman's k8s-file driver as the program wrote it", () => {
    expect(logLineText('2026-11-27T03:30:14.203433057+00:00 stdout F {"level":"info"}')).toBe(
      '{"level":"info"}',
    );
    expect(logLineText('plain line')).toBe('plain line');
  });
});
