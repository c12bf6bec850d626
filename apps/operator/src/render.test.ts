import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { baseFromManifest } from './base.js';
import { certificateObjects } from './certs.js';
import { resolveInstallation } from './installation.js';
import type { KubeObject } from './kube-object.js';
import { CNI_CONFIG_HASH_ANNOTATION, render } from './render.js';
import { makeCa } from './x509.js';

const MANIFEST = readFileSync(new URL('../../../deploy/manifests/calico.yaml', import.meta.url), 'utf8');
const base = baseFromManifest(MANIFEST);
const manifestObjects = parseAllDocuments(MANIFEST).map((d) => d.toJS() as KubeObject);
const certificates = certificateObjects(makeCa('test-ca'), undefined, undefined, new Date());
const facts = (nodeCount: number, installationUid?: string) => ({
  nodeCount,
  certificates,
  ...(installationUid ? { installationUid } : {}),
});

function installation(spec: Record<string, unknown>) {
  const r = resolveInstallation({ metadata: { name: 'default' }, spec });
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.config;
}

const UPSTREAM_DEFAULT = {
  calicoNetwork: {
    ipPools: [
      {
        name: 'default-ipv4-ippool',
        blockSize: 26,
        cidr: '192.168.0.0/16',
        encapsulation: 'VXLANCrossSubnet',
        natOutgoing: 'Enabled',
        nodeSelector: 'all()',
      },
    ],
  },
};

type Container = {
  name: string;
  image: string;
  env: { name: string; value?: string; valueFrom?: unknown }[];
} & Record<string, unknown>;
const podSpec = (o: KubeObject) =>
  (
    o as unknown as {
      spec: { template: { spec: { containers: Container[]; initContainers?: Container[] } } };
    }
  ).spec.template.spec;
const find = (objs: readonly KubeObject[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  return o;
};
const env = (c: Container, name: string) => c.env.find((e) => e.name === name);

describe('render', () => {
  const { objects, pools } = render(base, installation(UPSTREAM_DEFAULT), facts(3, 'u-1'));

  it('puts every object in calico-system, marked as the operator’s and owned by the Installation', () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
      expect.arrayContaining([
        'Namespace/calico-system',
        'ServiceAccount/calico-node',
        'ServiceAccount/calico-cni-plugin',
        'ServiceAccount/calico-kube-controllers',
        'ServiceAccount/calico-typha',
        'ClusterRole/calico-node',
        'ClusterRoleBinding/calico-node',
        'ClusterRole/calico-typha',
        'ConfigMap/cni-config',
        'DaemonSet/calico-node',
        'Deployment/calico-typha',
        'Service/calico-typha',
        'Deployment/calico-kube-controllers',
      ]),
    );
    for (const o of objects) {
      if (o.kind !== 'Namespace' && !o.kind.startsWith('Cluster'))
        expect(o.metadata.namespace).toBe('calico-system');
      expect(o.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('tigera-operator');
      expect(o.metadata.ownerReferences?.[0]).toMatchObject({
        kind: 'Installation',
        name: 'default',
        uid: 'u-1',
      });
    }
    const binding = find(objects, 'ClusterRoleBinding', 'calico-node') as KubeObject & {
      subjects: unknown[];
    };
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'calico-node', namespace: 'calico-system' },
    ]);
  });

  it('keeps the manifest’s containers, probes and mounts, and reads no calico-config', () => {
    const ds = podSpec(find(objects, 'DaemonSet', 'calico-node'));
    const orig = podSpec(find(manifestObjects, 'DaemonSet', 'calico-node'));
    const node = ds.containers.find((c) => c.name === 'calico-node')!;
    const origNode = orig.containers.find((c) => c.name === 'calico-node')!;
    expect(ds.containers.map((c) => c.name)).toEqual(orig.containers.map((c) => c.name));
    expect(ds.initContainers?.map((c) => c.name)).toEqual(['install-cni']);
    // The manifest's mounts, then the CA bundle and calico-node's Typha client certificate.
    expect(node.volumeMounts).toEqual([
      ...(origNode.volumeMounts as unknown[]),
      { name: 'tigera-ca-bundle', mountPath: '/etc/pki/tls/certs', readOnly: true },
      { name: 'node-certs', mountPath: '/node-certs', readOnly: true },
    ]);
    expect(node.livenessProbe).toEqual(origNode.livenessProbe);
    expect(node.securityContext).toEqual(origNode.securityContext);
    expect(JSON.stringify(ds)).not.toContain('calico-config');
    const install = ds.initContainers![0]!;
    expect(env(install, 'CNI_NETWORK_CONFIG')?.valueFrom).toEqual({
      configMapKeyRef: { name: 'cni-config', key: 'config' },
    });
    expect(install.image).toBe('calico-ts/cni:v0.1.0');
    expect(node.image).toBe('calico-ts/node:v0.1.0');
  });

  it('sets calico-node up for the operator: its pools, Typha, BGP', () => {
    const node = podSpec(find(objects, 'DaemonSet', 'calico-node')).containers.find(
      (c) => c.name === 'calico-node',
    )!;
    expect(node.env.filter((e) => e.name.startsWith('CALICO_IPV4POOL_'))).toEqual([]);
    expect(env(node, 'NO_DEFAULT_POOLS')?.value).toBe('true');
    expect(env(node, 'CALICO_NETWORKING_BACKEND')?.value).toBe('bird');
    expect(env(node, 'CLUSTER_TYPE')?.value).toBe('k8s,operator,bgp');
    expect(env(node, 'FELIX_TYPHAK8SSERVICENAME')?.value).toBe('calico-typha');
    expect(env(node, 'FELIX_TYPHAK8SNAMESPACE')?.value).toBe('calico-system');
    expect(env(node, 'FELIX_VXLANMTU')?.value).toBe('0');
  });

  it('makes the Installation’s pool as upstream converts it', () => {
    expect(pools).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: {
          name: 'default-ipv4-ippool',
          labels: { 'app.kubernetes.io/managed-by': 'tigera-operator' },
        },
        spec: {
          cidr: '192.168.0.0/16',
          ipipMode: 'Never',
          vxlanMode: 'CrossSubnet',
          natOutgoing: true,
          blockSize: 26,
          nodeSelector: 'all()',
          allowedUses: ['Workload', 'Tunnel'],
        },
      },
    ]);
  });

  it('scales Typha with the nodes and runs it on the host network, port 5473', () => {
    const replicas = (n: number) =>
      (
        find(render(base, installation({}), facts(n)).objects, 'Deployment', 'calico-typha') as unknown as {
          spec: { replicas: number };
        }
      ).spec.replicas;
    expect([1, 2, 3, 4, 5, 200, 400, 1000].map(replicas)).toEqual([1, 1, 2, 2, 3, 3, 4, 7]);
    const typha = podSpec(find(objects, 'Deployment', 'calico-typha'));
    expect((typha as unknown as { hostNetwork: boolean }).hostNetwork).toBe(true);
    expect(typha.containers[0]!.ports).toEqual([
      { containerPort: 5473, name: 'calico-typha', protocol: 'TCP' },
    ]);
    expect(typha.containers[0]!.image).toBe('calico-ts/typha:v0.1.0');
  });

  it('BGP Disabled with VXLAN: the vxlan backend and no BIRD in the probes', () => {
    const cfg = installation({
      calicoNetwork: {
        bgp: 'Disabled',
        mtu: 1400,
        ipPools: [{ cidr: '198.19.0.0/16', encapsulation: 'VXLAN' }],
      },
    });
    const { objects: objs, pools: ps } = render(base, cfg, facts(3));
    const ds = podSpec(find(objs, 'DaemonSet', 'calico-node'));
    const node = ds.containers.find((c) => c.name === 'calico-node')!;
    expect(env(node, 'CALICO_NETWORKING_BACKEND')?.value).toBe('vxlan');
    expect(env(node, 'CLUSTER_TYPE')?.value).toBe('k8s,operator');
    for (const v of ['FELIX_VXLANMTU', 'FELIX_IPINIPMTU', 'FELIX_WIREGUARDMTU'])
      expect(env(node, v)?.value).toBe('1400');
    expect(env(ds.initContainers![0]!, 'CNI_MTU')?.value).toBe('1400');
    const probes = JSON.stringify([node.livenessProbe, node.readinessProbe]);
    expect(probes).toContain('-felix-live');
    expect(probes).not.toContain('-bird');
    expect(ps[0]!.spec).toMatchObject({ cidr: '198.19.0.0/16', vxlanMode: 'Always', ipipMode: 'Never' });
  });

  it('names images from registry, imagePath and imagePrefix, and passes the pull secrets', () => {
    const cfg = installation({
      registry: 'registry.example.test',
      imagePath: 'mirror/calico',
      imagePrefix: 'x-',
      imagePullSecrets: [{ name: 'pull' }],
    });
    const objs = render(base, cfg, facts(1)).objects;
    const images = objs.flatMap((o) =>
      o.kind === 'DaemonSet' || o.kind === 'Deployment'
        ? [...(podSpec(o).initContainers ?? []), ...podSpec(o).containers].map((c) => c.image)
        : [],
    );
    expect(new Set(images)).toEqual(
      new Set([
        'registry.example.test/mirror/calico/x-cni:v0.1.0',
        'registry.example.test/mirror/calico/x-node:v0.1.0',
        'registry.example.test/mirror/calico/x-typha:v0.1.0',
        'registry.example.test/mirror/calico/x-kube-controllers:v0.1.0',
      ]),
    );
    const ds = podSpec(find(objs, 'DaemonSet', 'calico-node')) as unknown as { imagePullSecrets: unknown };
    expect(ds.imagePullSecrets).toEqual([{ name: 'pull' }]);
  });

  it('hostPorts Disabled drops portmap from the CNI configuration, and the DaemonSet rolls', () => {
    const on = render(base, installation({}), facts(1)).objects;
    const off = render(base, installation({ calicoNetwork: { hostPorts: 'Disabled' } }), facts(1)).objects;
    const text = (objs: readonly KubeObject[]) =>
      (find(objs, 'ConfigMap', 'cni-config') as unknown as { data: { config: string } }).data.config;
    expect(text(on)).toContain('"portmap"');
    expect(text(off)).not.toContain('portmap');
    expect(text(off)).toContain('"bandwidth"');
    const hash = (objs: readonly KubeObject[]) =>
      (
        find(objs, 'DaemonSet', 'calico-node') as unknown as {
          spec: { template: { metadata: { annotations: Record<string, string> } } };
        }
      ).spec.template.metadata.annotations[CNI_CONFIG_HASH_ANNOTATION];
    expect(hash(on)).toMatch(/^[0-9a-f]{40}$/);
    expect(hash(off)).not.toBe(hash(on));
  });

  it('Felix and Typha authenticate each other with the operator’s certificates, as upstream', () => {
    const node = podSpec(find(objects, 'DaemonSet', 'calico-node')).containers.find(
      (c) => c.name === 'calico-node',
    )!;
    expect(
      Object.fromEntries(
        node.env.filter((e) => e.name.startsWith('FELIX_TYPHA')).map((e) => [e.name, e.value]),
      ),
    ).toEqual({
      FELIX_TYPHAK8SSERVICENAME: 'calico-typha',
      FELIX_TYPHAK8SNAMESPACE: 'calico-system',
      FELIX_TYPHACAFILE: '/etc/pki/tls/certs/tigera-ca-bundle.crt',
      FELIX_TYPHACERTFILE: '/node-certs/tls.crt',
      FELIX_TYPHAKEYFILE: '/node-certs/tls.key',
      FELIX_TYPHACN: 'typha-server',
    });
    const typha = podSpec(find(objects, 'Deployment', 'calico-typha')).containers[0]!;
    expect(env(typha, 'TYPHA_CLIENTCN')?.value).toBe('typha-client');
    expect(env(typha, 'TYPHA_SERVERCERTFILE')?.value).toBe('/typha-certs/tls.crt');
    expect(typha.volumeMounts).toEqual([
      { name: 'tigera-ca-bundle', mountPath: '/etc/pki/tls/certs', readOnly: true },
      { name: 'typha-certs', mountPath: '/typha-certs', readOnly: true },
    ]);
    for (const [kind, name] of [
      ['ConfigMap', 'tigera-ca-bundle'],
      ['Secret', 'typha-certs'],
      ['Secret', 'node-certs'],
    ] as const)
      expect(find(objects, kind, name).metadata.namespace).toBe('calico-system');
  });

  it('Typha reads what calico-node reads and may write nothing', () => {
    const role = find(objects, 'ClusterRole', 'calico-typha') as KubeObject & {
      rules: { verbs: string[] }[];
    };
    const verbs = new Set(role.rules.flatMap((r) => r.verbs));
    expect(verbs).toEqual(new Set(['get', 'list', 'watch']));
    expect(JSON.stringify(role.rules)).toContain('ippools');
  });
});
