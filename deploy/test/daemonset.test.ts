/**
 * The calico-node DaemonSet and the kube-controllers Deployment of each checked-in manifest, held
 * against what the programs in the images read: every variable set is one the program reads (names
 * found in the programs' sources), the values parse as the programs parse them, the probes are
 * flags calico-node accepts, and the mounts are where install-cni and calico-node look.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs, parseNodeEnv } from '@calico-ts/calico-node';
import { configFromEnv } from '@calico-ts/datastore';
import { resolveWith } from '@calico-ts/felix';
import { describe, expect, it } from 'vitest';
import { crdsSource, MANIFESTS, root } from '../scripts/helm.mjs';
import {
  type Container,
  find,
  type KubeObject,
  type PodSpec,
  parseObjects,
  podSpec,
  readManifest,
  resolveEnv,
} from './manifest-docs.js';
import {
  calicoNodeEnvNames,
  envNamesIn,
  installCniEnvNames,
  installCniPlaceholders,
  kubeControllersEnvNames,
} from './program-env.js';

/** What `pnpm images` puts in each image (images/src/definitions.mjs: data only). */
interface ImageDefinition {
  files?: { from: string; to: string }[];
  links?: { path: string; target: string }[];
  entrypoint: string[];
}
const images = (await import(pathToFileURL(join(root, 'images/src/definitions.mjs')).href)) as {
  IMAGES: Record<string, ImageDefinition>;
  imageRef: (name: string) => string;
};
/** Every path an image has: copied files and links. */
const pathsIn = (name: string) => {
  const def = images.IMAGES[name]!;
  return new Set([...(def.files ?? []).map((f) => f.to), ...(def.links ?? []).map((l) => l.path)]);
};

const nodeReads = calicoNodeEnvNames();
const installReads = installCniEnvNames();
const controllersReads = kubeControllersEnvNames();

const mountsOf = (spec: PodSpec, c: Container) =>
  Object.fromEntries(
    (c.volumeMounts ?? []).map((m) => {
      const v = spec.volumes?.find((x) => x.name === m.name);
      if (!v) throw new Error(`${c.name}: mount ${m.mountPath} names no volume ${m.name}`);
      return [m.mountPath, v.hostPath?.path ?? (v.secret ? `secret:${v.secret.secretName}` : '?')];
    }),
  );

const unread = (c: Container, reads: Set<string>) =>
  (c.env ?? []).map((e) => e.name).filter((n) => !reads.has(n));

describe('the programs’ variables, found in their sources', () => {
  it('include what each program is known to read, so the lists below are not empty guesses', () => {
    for (const n of [
      'NODENAME',
      'CALICO_NETWORKING_BACKEND',
      'IP',
      'CALICO_IPV4POOL_IPIP',
      'DATASTORE_TYPE',
    ]) {
      expect(nodeReads).toContain(n);
    }
    expect(nodeReads).toContain('FELIX_IPINIPMTU');
    for (const n of [
      'CNI_NETWORK_CONFIG',
      'CNI_CONF_NAME',
      'CNI_MTU',
      'SLEEP',
      'KUBERNETES_NODE_NAME',
      'ETCD_ENDPOINTS',
    ]) {
      expect(installReads).toContain(n);
    }
    expect(controllersReads).toContain('ENABLED_CONTROLLERS');
    // Upstream's manifests set these; nothing here reads them, so the manifests must not.
    for (const n of ['WAIT_FOR_DATASTORE', 'CALICO_DISABLE_FILE_LOGGING', 'FELIX_NOSUCHPARAM']) {
      expect(nodeReads).not.toContain(n);
    }
    expect(envNamesIn(`${import.meta.dirname}`)).not.toContain('CALICO_NETWORKING_BACKEND');
  });
});

describe.each(MANIFESTS)('$file', (manifest) => {
  const objects: KubeObject[] = readManifest(manifest.file);
  const etcd = manifest.values.includes('values-etcd.yaml');
  // Policy only beside another CNI: no BIRD, no pool, no CNI plugin of Calico's on the nodes.
  const policyOnly = manifest.values.includes('values-policy-only.yaml');
  const ds = find(objects, 'DaemonSet', 'calico-node');
  const spec = podSpec(ds);
  const node = spec.containers.find((c) => c.name === 'calico-node')!;
  const install = spec.initContainers?.find((c) => c.name === 'install-cni');
  const sidecar = spec.containers.find((c) => c.name === 'cni-refresh');

  it('runs calico-node on every node, in the host network, as a critical pod', () => {
    expect(spec.hostNetwork).toBe(true);
    expect(spec.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(spec.priorityClassName).toBe('system-node-critical');
    expect(spec.serviceAccountName).toBe('calico-node');
    expect(node.image).toBe('calico-ts/node:v0.1.0');
    // Upstream's EKS manifest also marks it with the critical-pod annotation.
    const annotations = (ds.spec as { template: { metadata: { annotations?: Record<string, string> } } })
      .template.metadata.annotations;
    if (policyOnly) expect(annotations).toEqual({ 'scheduler.alpha.kubernetes.io/critical-pod': '' });
    else expect(annotations).toBeUndefined();
  });

  it('sets only variables calico-node reads, with values it accepts', () => {
    expect(unread(node, nodeReads)).toEqual([]);
    const env = resolveEnv(objects, node, 'node-1');
    const parsed = parseNodeEnv(env, 'host-1');
    expect(parsed.nodeName).toBe('node-1');
    if (policyOnly) {
      // No BIRD, no address of its own, no pool, no plugin service; Felix matches the other CNI's
      // interfaces (the prefix as Felix resolves it from its environment).
      expect(parsed.networkingBackend).toBe('none');
      expect(parsed.ip).toEqual({ kind: 'none' });
      expect(parsed.pool.enabled).toBe(false);
      expect(parsed.cniServiceSocket).toBeUndefined();
      const felix = resolveWith({ env, file: {}, hostname: 'node-1' }).config;
      expect(felix.InterfacePrefix).toEqual(['eni']);
    } else {
      expect(parsed.networkingBackend).toBe('bird');
      expect(parsed.ip).toEqual({ kind: 'autodetect' });
      expect(parsed.pool).toMatchObject({
        enabled: true,
        cidr: '192.168.0.0/16',
        ipipMode: 'Always',
        vxlanMode: 'Never',
      });
      expect(env.FELIX_INTERFACEPREFIX).toBeUndefined();
      expect(parsed.cniServiceSocket).toBe('/var/run/calico/cni-plugin.sock');
    }
    const client = configFromEnv(env).config;
    expect(client.datastoreType).toBe(etcd ? 'etcdv3' : 'kubernetes');
    if (etcd) expect(client.etcdEndpoints).toEqual(['http://<ETCD_IP>:<ETCD_PORT>']);
    for (const [name, value] of Object.entries(env)) {
      if (name.endsWith('MTU')) expect(value).toMatch(/^\d+$/);
    }
  });

  it('probes calico-node with flags it accepts, BIRD included with the bird backend only', () => {
    const live = node.livenessProbe?.exec?.command ?? [];
    const ready = node.readinessProbe?.exec?.command ?? [];
    expect(live[0]).toBe('/usr/bin/calico-node');
    expect(ready[0]).toBe('/usr/bin/calico-node');
    expect(parseArgs(live.slice(1))).toEqual({
      kind: 'probe',
      probes: policyOnly ? ['felix-live'] : ['felix-live', 'bird-live'],
      thresholdMs: 30_000,
    });
    expect(parseArgs(ready.slice(1))).toEqual({
      kind: 'probe',
      probes: policyOnly ? ['felix-ready'] : ['felix-ready', 'bird-ready'],
      thresholdMs: 30_000,
    });
  });

  it('runs each image as pnpm images builds it: names, entrypoints, probe programs, CNI plugins', () => {
    expect(node.image).toBe(images.imageRef('node'));
    expect(pathsIn('node')).toContain(node.livenessProbe!.exec!.command[0]);
    expect(pathsIn('node')).toContain(node.readinessProbe!.exec!.command[0]);
    const kc = podSpec(find(objects, 'Deployment', 'calico-kube-controllers')).containers[0]!;
    expect(kc.image).toBe(images.imageRef('kube-controllers'));
    expect(kc.command).toBeUndefined();
    expect(pathsIn('kube-controllers')).toContain(kc.livenessProbe!.exec!.command[0]);
    if (policyOnly) return;
    expect(install!.image).toBe(images.imageRef('cni'));
    expect(install!.command).toEqual(images.IMAGES.cni!.entrypoint);
    const config = find(objects, 'ConfigMap', 'calico-config').data as Record<string, string>;
    const conflist = JSON.parse(config.cni_network_config!.replace(/__[A-Z0-9_]+__/g, '0'));
    const types = conflist.plugins.flatMap((p: { type: string; ipam?: { type: string } }) =>
      p.ipam ? [p.type, p.ipam.type] : [p.type],
    );
    expect(types).toContain('calico-ipam');
    for (const t of types) expect(pathsIn('cni')).toContain(`/opt/cni/bin/${t}`);
  });

  it('gives calico-node the host directories it uses', () => {
    const mounts = mountsOf(spec, node);
    expect(mounts).toMatchObject({
      '/lib/modules': '/lib/modules',
      '/run/xtables.lock': '/run/xtables.lock',
      '/var/run/calico': '/var/run/calico',
      '/var/lib/calico': '/var/lib/calico',
      '/var/log/calico': '/var/log/calico',
    });
    expect(node.volumeMounts?.find((m) => m.mountPath === '/lib/modules')?.readOnly).toBe(true);
    if (etcd) expect(mounts['/calico-secrets']).toBe('secret:calico-etcd-secrets');
    else expect(mounts['/calico-secrets']).toBeUndefined();
  });

  if (policyOnly) {
    it('installs no CNI plugin: no install-cni, no sidecar, no host CNI directories, no network config', () => {
      expect(spec.initContainers).toBeUndefined();
      expect(spec.containers.map((c) => c.name)).toEqual(['calico-node']);
      const hostPaths = (spec.volumes ?? []).map((v) => v.hostPath?.path);
      expect(hostPaths).not.toContain('/opt/cni/bin');
      expect(hostPaths).not.toContain('/etc/cni/net.d');
      const config = find(objects, 'ConfigMap', 'calico-config').data as Record<string, string>;
      expect(config.calico_backend).toBe('none');
      expect(config.cni_network_config).toBeUndefined();
    });
  } else {
    it('runs install-cni first, into the host’s CNI directories, with variables it reads', () => {
      expect(install).toBeDefined();
      expect(install!.image).toBe('calico-ts/cni:v0.1.0');
      expect(install!.command).toEqual(['/opt/cni/bin/install']);
      expect(mountsOf(spec, install!)).toMatchObject({
        '/host/opt/cni/bin': '/opt/cni/bin',
        '/host/etc/cni/net.d': '/etc/cni/net.d',
      });
      expect(unread(install!, installReads)).toEqual([]);
      const env = resolveEnv(objects, install!, 'node-1');
      expect(env).toMatchObject({
        SLEEP: 'false',
        KUBERNETES_NODE_NAME: 'node-1',
        CNI_CONF_NAME: '10-calico.conflist',
      });
      if (etcd) expect(mountsOf(spec, install!)['/calico-secrets']).toBe('secret:calico-etcd-secrets');
      // The sidecar keeps the token and TLS files current: the same installer, staying.
      expect(sidecar).toBeDefined();
      expect(unread(sidecar!, installReads)).toEqual([]);
      expect(resolveEnv(objects, sidecar!, 'node-1').SLEEP).toBe('true');
    });

    it('has a CNI network config that install-cni fills in to a calico conflist', () => {
      const config = find(objects, 'ConfigMap', 'calico-config').data as Record<string, string>;
      const template = config.cni_network_config!;
      const known = installCniPlaceholders();
      const used = [...template.matchAll(/__[A-Z0-9_]+__/g)].map((m) => m[0]);
      expect(used.filter((p) => !known.has(p))).toEqual([]);
      const filled = template.replace(/__[A-Z0-9_]+__/g, (p) =>
        p === '__CNI_MTU__' ? '0' : `/x${p.toLowerCase()}`,
      );
      const conf = JSON.parse(filled);
      expect(conf.plugins.map((p: { type: string }) => p.type)).toEqual(['calico', 'portmap', 'bandwidth']);
      const calico = conf.plugins[0];
      expect(calico).toMatchObject({ ipam: { type: 'calico-ipam' }, policy: { type: 'k8s' }, mtu: 0 });
      expect(calico.kubernetes.kubeconfig).toBe('/x__kubeconfig_filepath__');
      if (etcd) {
        expect(calico.etcd_endpoints).toBe('/x__etcd_endpoints__');
        expect(calico.datastore_type).toBeUndefined();
      } else {
        expect(calico.datastore_type).toBe('kubernetes');
      }
    });
  }

  it('points every etcd TLS path at the mounted Secret, or leaves it empty', () => {
    const config = find(objects, 'ConfigMap', 'calico-config').data as Record<string, string>;
    if (!etcd) {
      expect(Object.keys(config).filter((k) => k.startsWith('etcd'))).toEqual([]);
      return;
    }
    expect(config).toMatchObject({
      etcd_endpoints: 'http://<ETCD_IP>:<ETCD_PORT>',
      etcd_ca: '',
      etcd_cert: '',
      etcd_key: '',
    });
    expect(find(objects, 'Secret', 'calico-etcd-secrets')).toBeDefined();
  });

  it('runs calico-kube-controllers once, with the controllers of its datastore and probes it answers', () => {
    const dep = find(objects, 'Deployment', 'calico-kube-controllers');
    const s = dep.spec as { replicas: number; strategy: { type: string } };
    expect(s.replicas).toBe(1);
    expect(s.strategy.type).toBe('Recreate');
    const kc = podSpec(dep).containers[0]!;
    expect(kc.image).toBe('calico-ts/kube-controllers:v0.1.0');
    expect(unread(kc, controllersReads)).toEqual([]);
    const env = resolveEnv(objects, kc, 'node-1');
    expect(env.ENABLED_CONTROLLERS).toBe(
      etcd ? 'policy,namespace,serviceaccount,workloadendpoint,node' : 'node',
    );
    expect(configFromEnv(env).config.datastoreType).toBe(etcd ? 'etcdv3' : 'kubernetes');
    expect(kc.livenessProbe?.exec?.command).toEqual(['/usr/bin/check-status', '-l']);
    expect(kc.readinessProbe?.exec?.command).toEqual(['/usr/bin/check-status', '-r']);
  });

  it(
    policyOnly
      ? 'has the service accounts the workloads run as, and none for a CNI plugin it does not install'
      : 'has the service accounts the workloads run as and the plugin’s token is made for',
    () => {
      const accounts = [
        'calico-node',
        'calico-kube-controllers',
        ...(policyOnly ? [] : ['calico-cni-plugin']),
      ];
      for (const name of accounts) {
        expect(find(objects, 'ServiceAccount', name).metadata.namespace).toBe('kube-system');
        expect(find(objects, 'ClusterRoleBinding', name)).toBeDefined();
      }
      if (policyOnly) {
        expect(objects.filter((o) => o.metadata.name === 'calico-cni-plugin').map((o) => o.kind)).toEqual([]);
      }
    },
  );

  it(etcd ? 'carries no CRDs' : 'carries every CRD of deploy/crds', () => {
    const names = (list: readonly KubeObject[]) =>
      list.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name);
    const generated = names(parseObjects(readFileSync(crdsSource, 'utf8')));
    expect(generated.length).toBeGreaterThan(20);
    expect(names(objects)).toEqual(etcd ? [] : generated);
  });
});
