/**
 * The chart and what is made from it: the checked-in manifests are exactly `helm template` of the
 * chart (default values, values-etcd.yaml), the chart's CRDs are deploy/crds' generated file,
 * `helm lint --strict` passes, and the values schema refuses values the chart cannot render.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  chartCrds,
  chartDir,
  crdsSource,
  findHelm,
  helmTemplate,
  MANIFESTS,
  renderManifest,
} from '../scripts/helm.mjs';
import { find, manifestPath, parseObjects, podSpec } from './manifest-docs.js';

const run = promisify(execFile);
const helm = findHelm();

if (!helm) {
  describe('the chart', () => {
    it.skipIf(process.env.CI !== 'true')('has helm', () => {
      throw new Error('missing prerequisite: helm (run scripts/setup.sh)');
    });
  });
}

/** helm's exit code and all it printed. */
async function helmRun(...args: string[]): Promise<{ code: number; out: string }> {
  return run(helm!, args).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
}

describe.skipIf(!helm)('the chart', () => {
  it('carries deploy/crds/calico-crds.yaml as `pnpm crds` generated it', () => {
    expect(readFileSync(chartCrds, 'utf8')).toBe(readFileSync(crdsSource, 'utf8'));
  });

  it.each(MANIFESTS)('renders deploy/manifests/$file exactly', (m) => {
    expect(readFileSync(manifestPath(m.file), 'utf8')).toBe(renderManifest(helm!, m));
  });

  it.each([[[]], [['values-etcd.yaml']], [['values-policy-only.yaml']]])(
    'passes helm lint --strict with values %j',
    async (values) => {
      const r = await helmRun(
        'lint',
        '--strict',
        chartDir,
        ...values.flatMap((v) => ['--values', join(chartDir, v)]),
      );
      expect(r.out).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(r.out).not.toMatch(/\[(WARNING|ERROR)\]/);
      expect(r.code).toBe(0);
    },
  );

  it.each([
    ['datastore=consul', 'datastore'],
    ['ipv4Pool.encapsulation=GRE', 'encapsulation'],
    ['ipv4Pool.cidr=10.0.0.0', 'cidr'],
    ['mtu=-1', 'mtu'],
    ['images.registry=registry.example.com', 'registry'],
    ['networkingBackend=flannel', 'networkingBackend'],
    ['kubeControllers.enabledControllers=policy\\,ipam', 'enabledControllers'],
    ['nosuchvalue=1', 'nosuchvalue'],
    ['node.bgpPasswordSecrets={Not_A_Name}', 'bgpPasswordSecrets'],
  ])('refuses --set %s, naming %s', async (set, field) => {
    const r = await helmRun('template', 'x', chartDir, '--set', set);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("values don't meet the specifications of the schema");
    expect(r.out).toContain(field);
  });

  it.each([[[]], [['values-etcd.yaml']]])(
    'with values %j: BGP password Secrets readable by calico-node only when named, in its own namespace',
    (values) => {
      const rules = (objects: ReturnType<typeof parseObjects>, kind: string, name: string) =>
        (find(objects, kind, name) as unknown as { rules: { resources: string[] }[] }).rules;
      const plain = parseObjects(helmTemplate(helm!, values));
      // No Secret through the ClusterRole, and no Role unless asked for.
      expect(
        rules(plain, 'ClusterRole', 'calico-node').filter((r) => r.resources.includes('secrets')),
      ).toEqual([]);
      expect(plain.filter((o) => o.kind === 'Role')).toEqual([]);
      const env = podSpec(find(plain, 'DaemonSet', 'calico-node')).containers.find(
        (c) => c.name === 'calico-node',
      )!.env as { name: string; valueFrom?: unknown }[];
      expect(env.find((e) => e.name === 'NAMESPACE')).toEqual({
        name: 'NAMESPACE',
        valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } },
      });

      const named = parseObjects(
        helmTemplate(helm!, values, ['--set', 'node.bgpPasswordSecrets={bgp-secrets,tor-passwords}']),
      );
      const role = find(named, 'Role', 'calico-node-bgp-passwords') as unknown as Record<string, unknown>;
      expect(role).toMatchObject({
        metadata: { name: 'calico-node-bgp-passwords', namespace: 'kube-system' },
        rules: [
          {
            apiGroups: [''],
            resources: ['secrets'],
            resourceNames: ['bgp-secrets', 'tor-passwords'],
            verbs: ['get', 'list', 'watch'],
          },
        ],
      });
      expect(find(named, 'RoleBinding', 'calico-node-bgp-passwords')).toMatchObject({
        metadata: { namespace: 'kube-system' },
        roleRef: { kind: 'Role', name: 'calico-node-bgp-passwords' },
        subjects: [{ kind: 'ServiceAccount', name: 'calico-node', namespace: 'kube-system' }],
      });
    },
  );

  it('renders the values it is given: VXLAN, a pool, an MTU, a registry, etcd TLS', () => {
    const objects = parseObjects(
      helmTemplate(
        helm!,
        ['values-etcd.yaml'],
        [
          '--set',
          'networkingBackend=vxlan,ipv4Pool.encapsulation=VXLAN,ipv4Pool.encapsulationMode=CrossSubnet',
          '--set',
          'ipv4Pool.cidr=10.244.0.0/16,mtu=1450,images.registry=registry.example.com/,images.tag=v9',
          '--set',
          'etcd.endpoints=https://10.0.0.1:2379,etcd.tls.ca=CA,etcd.tls.cert=CERT,etcd.tls.key=KEY',
        ],
      ),
    );
    const config = find(objects, 'ConfigMap', 'calico-config').data as Record<string, string>;
    expect(config).toMatchObject({
      calico_backend: 'vxlan',
      veth_mtu: '1450',
      etcd_endpoints: 'https://10.0.0.1:2379',
      etcd_ca: '/calico-secrets/etcd-ca',
      etcd_cert: '/calico-secrets/etcd-cert',
      etcd_key: '/calico-secrets/etcd-key',
    });
    expect(find(objects, 'Secret', 'calico-etcd-secrets').data).toEqual({
      'etcd-ca': Buffer.from('CA').toString('base64'),
      'etcd-cert': Buffer.from('CERT').toString('base64'),
      'etcd-key': Buffer.from('KEY').toString('base64'),
    });
    const node = podSpec(find(objects, 'DaemonSet', 'calico-node')).containers[0]!;
    expect(node.image).toBe('registry.example.com/calico-ts/node:v9');
    const env = Object.fromEntries(
      (node.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value]),
    );
    expect(env).toMatchObject({
      CALICO_IPV4POOL_CIDR: '10.244.0.0/16',
      CALICO_IPV4POOL_VXLAN: 'CrossSubnet',
      CALICO_IPV4POOL_IPIP: 'Never',
      CLUSTER_TYPE: 'k8s',
    });
    // Without BIRD the probes leave out the BIRD checks.
    expect(node.livenessProbe?.exec?.command).toEqual(['/usr/bin/calico-node', '-felix-live']);
    expect(node.readinessProbe?.exec?.command).toEqual(['/usr/bin/calico-node', '-felix-ready']);
  });

  it('in policy-only mode runs no CNI installer, no BIRD, no pool, and finds endpoints by prefix', () => {
    const objects = parseObjects(helmTemplate(helm!, [], ['--set', 'policyOnly.enabled=true']));
    const spec = podSpec(find(objects, 'DaemonSet', 'calico-node'));
    expect(spec.initContainers).toBeUndefined();
    expect(spec.containers.map((c) => c.name)).toEqual(['calico-node']);
    const env = Object.fromEntries((spec.containers[0]!.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({ IP: 'none', NO_DEFAULT_POOLS: 'true', FELIX_INTERFACEPREFIX: 'eni' });
    expect((find(objects, 'ConfigMap', 'calico-config').data as Record<string, string>).calico_backend).toBe(
      'none',
    );
    // No CNI plugin: no account for it, no role, and calico-node may not mint tokens.
    expect(JSON.stringify(objects)).not.toContain('calico-cni-plugin');
    expect(JSON.stringify(find(objects, 'ClusterRole', 'calico-node'))).not.toContain(
      'serviceaccounts/token',
    );
  });
});
