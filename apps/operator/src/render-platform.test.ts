import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { baseFromManifest } from './base.js';
import { certificateObjects } from './certs.js';
import { resolveInstallation } from './installation.js';
import type { KubeObject } from './kube-object.js';
import { CNI_CONFIG_HASH_ANNOTATION, render } from './render.js';
import { makeCa } from './x509.js';

const MANIFEST = readFileSync(new URL('../../../deploy/manifests/calico.yaml', import.meta.url), 'utf8');
const base = baseFromManifest(MANIFEST);
const certificates = certificateObjects(makeCa('test-ca'), undefined, undefined, new Date());

type Container = {
  name: string;
  image: string;
  env: { name: string; value?: string }[];
  volumeMounts?: { name: string }[];
  readinessProbe?: { exec?: { command: string[] } };
  livenessProbe?: { exec?: { command: string[] } };
};
type PodSpec = {
  containers: Container[];
  initContainers?: Container[];
  volumes: { name: string; hostPath?: { path: string } }[];
  affinity?: Record<string, unknown>;
};

function rendered(spec: Record<string, unknown>) {
  const r = resolveInstallation({ metadata: { name: 'default' }, spec });
  if (!r.ok) throw new Error(r.errors.join('; '));
  return render(base, r.config, { nodeCount: 3, certificates });
}
const find = (objs: readonly KubeObject[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  return o;
};
const pod = (objs: readonly KubeObject[], kind: string, name: string) =>
  (find(objs, kind, name) as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
const nodeDs = (objs: readonly KubeObject[]) => pod(objs, 'DaemonSet', 'calico-node');
const calicoNode = (objs: readonly KubeObject[]) =>
  nodeDs(objs).containers.find((c) => c.name === 'calico-node')!;
const envOf = (c: Container) => Object.fromEntries(c.env.map((e) => [e.name, e.value]));
const annotations = (objs: readonly KubeObject[]) =>
  (
    find(objs, 'DaemonSet', 'calico-node') as unknown as {
      spec: { template: { metadata: { annotations: Record<string, string> } } };
    }
  ).spec.template.metadata.annotations;

/** Calico for policy only: no piece of the Calico CNI anywhere in what is rendered. */
function expectNoCniPieces(objs: readonly KubeObject[]): void {
  const ds = nodeDs(objs);
  expect(objs.some((o) => o.kind === 'ConfigMap' && o.metadata.name === 'cni-config')).toBe(false);
  expect(ds.initContainers).toBeUndefined();
  expect(ds.containers.map((c) => c.name)).toEqual(['calico-node']);
  expect(ds.volumes.map((v) => v.name)).not.toContain('cni-bin-dir');
  expect(ds.volumes.map((v) => v.name)).not.toContain('cni-net-dir');
  expect(JSON.stringify(ds)).not.toContain('calico-ts/cni:');
  expect(JSON.stringify(ds)).not.toContain('/etc/cni/net.d');
  expect(annotations(objs)[CNI_CONFIG_HASH_ANNOTATION]).toBeUndefined();
  const node = calicoNode(objs);
  expect(JSON.stringify([node.livenessProbe, node.readinessProbe])).not.toContain('-bird');
  expect(envOf(node)).toMatchObject({ CALICO_NETWORKING_BACKEND: 'none', NO_DEFAULT_POOLS: 'true' });
}

/** Upstream's variables for what this build has no dataplane for: not set (render-platform.ts). */
const UNREAD_UPSTREAM = [
  'FELIX_IPTABLESMANGLEALLOWACTION',
  'FELIX_IPTABLESFILTERALLOWACTION',
  'FELIX_ROUTESOURCE',
  'FELIX_BPFEXTTOSERVICECONNMARK',
  'FELIX_WIREGUARDHOSTENCRYPTIONENABLED',
  'CALICO_MANAGE_CNI',
  'USE_POD_CIDR',
];

const required = (...matchExpressions: unknown[]) => ({
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions }] },
  },
});

describe('render for a provider', () => {
  it('EKS (the Helm guide’s values): Calico for policy only beside the Amazon VPC CNI', () => {
    const { objects, pools } = rendered({ kubernetesProvider: 'EKS' });
    expectNoCniPieces(objects);
    const env = envOf(calicoNode(objects));
    expect(env).toMatchObject({
      CLUSTER_TYPE: 'k8s,operator,ecs',
      FELIX_INTERFACEPREFIX: 'eni',
      IP: 'none',
      FELIX_TYPHAK8SSERVICENAME: 'calico-typha',
    });
    expect(env.IP_AUTODETECTION_METHOD).toBeUndefined();
    for (const v of UNREAD_UPSTREAM) expect(env[v], v).toBeUndefined();
    expect(Object.keys(env).filter((k) => k.startsWith('CALICO_IPV4POOL_'))).toEqual([]);
    expect(pools).toEqual([]);
    expect(nodeDs(objects).affinity).toEqual(
      required({ key: 'eks.amazonaws.com/compute-type', operator: 'NotIn', values: ['fargate'] }),
    );
    // calico-node keeps its own mounts and the Typha client certificate.
    expect(calicoNode(objects).volumeMounts?.map((m) => m.name)).toEqual(
      expect.arrayContaining(['var-run-calico', 'var-lib-calico', 'tigera-ca-bundle', 'node-certs']),
    );
    // Typha names the pods' endpoints with the CNI's prefix, as Felix polices them.
    const typha = pod(objects, 'Deployment', 'calico-typha');
    expect(envOf(typha.containers[0]!).FELIX_INTERFACEPREFIX).toBe('eni');
    expect(typha.affinity).not.toHaveProperty('nodeAffinity');
    expect(find(objects, 'Deployment', 'calico-kube-controllers')).toBeDefined();
    expect(find(objects, 'Namespace', 'calico-system').metadata.labels).not.toHaveProperty('control-plane');
  });

  it('AKS (the Helm guide’s values): the Calico CNI, VXLAN without BIRD, AKS’s affinities and label', () => {
    const { objects, pools } = rendered({
      kubernetesProvider: 'AKS',
      cni: { type: 'Calico' },
      calicoNetwork: { bgp: 'Disabled', ipPools: [{ cidr: '198.19.0.0/16', encapsulation: 'VXLAN' }] },
    });
    const ds = nodeDs(objects);
    expect(ds.initContainers?.map((c) => c.name)).toEqual(['install-cni']);
    expect(ds.containers.map((c) => c.name)).toEqual(['calico-node', 'cni-refresh']);
    expect(ds.volumes.find((v) => v.name === 'cni-bin-dir')?.hostPath?.path).toBe('/opt/cni/bin');
    expect(find(objects, 'ConfigMap', 'cni-config')).toBeDefined();
    const node = calicoNode(objects);
    const env = envOf(node);
    expect(env).toMatchObject({
      CLUSTER_TYPE: 'k8s,operator,aks',
      CALICO_NETWORKING_BACKEND: 'vxlan',
      IP_AUTODETECTION_METHOD: 'first-found',
    });
    for (const v of ['FELIX_INTERFACEPREFIX', ...UNREAD_UPSTREAM]) expect(env[v], v).toBeUndefined();
    expect(
      envOf(pod(objects, 'Deployment', 'calico-typha').containers[0]!).FELIX_INTERFACEPREFIX,
    ).toBeUndefined();
    expect(JSON.stringify([node.livenessProbe, node.readinessProbe])).not.toContain('-bird');
    expect(ds.affinity).toEqual(required({ key: 'type', operator: 'NotIn', values: ['virtual-kubelet'] }));
    const typha = pod(objects, 'Deployment', 'calico-typha');
    expect(typha.affinity?.nodeAffinity).toEqual(
      required(
        { key: 'type', operator: 'NotIn', values: ['virtual-node'] },
        { key: 'kubernetes.azure.com/cluster', operator: 'Exists' },
      ).nodeAffinity,
    );
    expect(typha.affinity).toHaveProperty('podAntiAffinity');
    expect(find(objects, 'Namespace', 'calico-system').metadata.labels).toMatchObject({
      'control-plane': 'true',
      'pod-security.kubernetes.io/enforce': 'privileged',
    });
    expect(pools.map((p) => p.spec)).toEqual([
      {
        cidr: '198.19.0.0/16',
        ipipMode: 'Never',
        vxlanMode: 'Always',
        natOutgoing: true,
        blockSize: 26,
        nodeSelector: 'all()',
        allowedUses: ['Workload', 'Tunnel'],
      },
    ]);
    const manual = rendered({ kubernetesProvider: 'AKS', azure: { policyMode: 'Manual' } }).objects;
    expect(find(manual, 'Namespace', 'calico-system').metadata.labels).not.toHaveProperty('control-plane');
  });

  it('AKS with the Azure CNI: policy only on azv… interfaces', () => {
    const { objects, pools } = rendered({ kubernetesProvider: 'AKS' });
    expectNoCniPieces(objects);
    expect(envOf(calicoNode(objects))).toMatchObject({
      CLUSTER_TYPE: 'k8s,operator,aks',
      FELIX_INTERFACEPREFIX: 'azv',
      IP: 'none',
    });
    expect(envOf(pod(objects, 'Deployment', 'calico-typha').containers[0]!).FELIX_INTERFACEPREFIX).toBe(
      'azv',
    );
    expect(pools).toEqual([]);
  });

  it('GKE with its CNI: policy only on gke… interfaces, host-local pod CIDRs', () => {
    const { objects } = rendered({ kubernetesProvider: 'GKE' });
    expectNoCniPieces(objects);
    const env = envOf(calicoNode(objects));
    expect(env).toMatchObject({ CLUSTER_TYPE: 'k8s,operator,gke', FELIX_INTERFACEPREFIX: 'gke' });
    for (const v of UNREAD_UPSTREAM) expect(env[v], v).toBeUndefined();
    expect(envOf(pod(objects, 'Deployment', 'calico-typha').containers[0]!).FELIX_INTERFACEPREFIX).toBe(
      'gke',
    );
    expect(nodeDs(objects).affinity).toBeUndefined();
  });

  it('GKE with the Calico CNI: the plugins go to GKE’s /home/kubernetes/bin, BGP on', () => {
    const { objects } = rendered({ kubernetesProvider: 'GKE', cni: { type: 'Calico' } });
    const ds = nodeDs(objects);
    expect(ds.volumes.find((v) => v.name === 'cni-bin-dir')?.hostPath?.path).toBe('/home/kubernetes/bin');
    expect(envOf(calicoNode(objects))).toMatchObject({
      CLUSTER_TYPE: 'k8s,operator,gke,bgp',
      CALICO_NETWORKING_BACKEND: 'bird',
    });
  });

  it('RKE2, TKG and Kind render exactly what no provider renders', () => {
    const plain = rendered({});
    for (const kubernetesProvider of ['RKE2', 'TKG', 'Kind'])
      expect(rendered({ kubernetesProvider }), kubernetesProvider).toEqual(plain);
  });

  it('no provider: the Calico CNI, no provider in CLUSTER_TYPE, no affinity, no interface prefix', () => {
    const { objects } = rendered({});
    const env = envOf(calicoNode(objects));
    expect(env.CLUSTER_TYPE).toBe('k8s,operator,bgp');
    expect(env.FELIX_INTERFACEPREFIX).toBeUndefined();
    expect(env.IP).toBe('autodetect');
    expect(nodeDs(objects).affinity).toBeUndefined();
    expect(annotations(objects)[CNI_CONFIG_HASH_ANNOTATION]).toMatch(/^[0-9a-f]{40}$/);
  });
});
