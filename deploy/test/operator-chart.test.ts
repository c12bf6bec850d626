/**
 * deploy/helm/tigera-operator, upstream's operator chart in this project: with default values it
 * renders exactly the objects of tigera-operator.yaml and custom-resources.yaml (Helm's labels
 * aside; the namespace comes from `--create-namespace`), `helm lint --strict` passes, the EKS and
 * AKS values of upstream's Helm guide give the Installation they say (and the operator takes it:
 * Calico for policy only beside the Amazon VPC CNI, the Calico CNI with one VXLAN pool on AKS), and
 * values.schema.json refuses what the Installation CRD refuses.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveInstallation } from '@calico-ts/operator';
import { describe, expect, it } from 'vitest';
import { findHelm, operatorChartDir, operatorChartTemplate, root } from '../scripts/helm.mjs';
import { find, type KubeObject, parseObjects, podSpec, readManifest } from './manifest-docs.js';

const run = promisify(execFile);
const helm = findHelm();
const EKS = join(root, 'deploy/test/values/eks.yaml');
const AKS = join(root, 'deploy/test/values/aks.yaml');

if (!helm) {
  describe('the tigera-operator chart', () => {
    it.skipIf(process.env.CI !== 'true')('has helm', () => {
      throw new Error('missing prerequisite: helm (run scripts/setup.sh)');
    });
  });
}

async function helmRun(...args: string[]): Promise<{ code: number; out: string }> {
  return run(helm!, args).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
}

const HELM_LABELS = ['app.kubernetes.io/managed-by', 'helm.sh/chart'];

/** An object without Helm's labels (and without `labels` when nothing else is left). */
function withoutHelmLabels(o: KubeObject): KubeObject {
  const meta = { ...(o.metadata as KubeObject['metadata'] & { labels?: Record<string, string> }) };
  if (meta.labels) {
    const labels = Object.fromEntries(Object.entries(meta.labels).filter(([k]) => !HELM_LABELS.includes(k)));
    if (Object.keys(labels).length > 0) meta.labels = labels;
    else delete meta.labels;
  }
  return { ...o, metadata: meta };
}

const key = (o: KubeObject) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const byKey = (objs: KubeObject[]) =>
  Object.fromEntries(
    objs
      .map((o): [string, KubeObject] => [key(o), withoutHelmLabels(o)])
      .sort(([a], [b]) => a.localeCompare(b)),
  );

function rendered(values: string[] = [], args: string[] = []): KubeObject[] {
  return parseObjects(operatorChartTemplate(helm!, values, args));
}
const installationOf = (objs: KubeObject[]) => find(objs, 'Installation', 'default');

describe.skipIf(!helm)('deploy/helm/tigera-operator', () => {
  it.each([[[]], [[EKS]], [[AKS]]])('passes helm lint --strict with values %j', async (values) => {
    const r = await helmRun(
      'lint',
      '--strict',
      operatorChartDir,
      '--namespace',
      'tigera-operator',
      ...values.flatMap((v) => ['--values', v]),
    );
    expect(r.out).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(r.out).not.toMatch(/\[(WARNING|ERROR)\]/);
    expect(r.code).toBe(0);
  });

  it('renders with default values the objects of tigera-operator.yaml and custom-resources.yaml', () => {
    const manifests = [...readManifest('tigera-operator.yaml'), ...readManifest('custom-resources.yaml')];
    // helm install --create-namespace makes the namespace; the chart cannot also hold it.
    const expected = manifests.filter((o) => o.kind !== 'Namespace');
    expect(manifests.find((o) => o.kind === 'Namespace')?.metadata.name).toBe('tigera-operator');
    const chart = rendered();
    expect(Object.keys(byKey(chart))).toEqual(Object.keys(byKey(expected)));
    expect(byKey(chart)).toEqual(byKey(expected));
    // Helm's labels are on what the templates make.
    const labels = (find(chart, 'Deployment', 'tigera-operator').metadata as unknown as { labels: object })
      .labels;
    expect(labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'Helm', 'k8s-app': 'tigera-operator' });
  });

  it('EKS values (`installation: {kubernetesProvider: EKS}`) give that spec; the operator installs Calico for policy only', () => {
    const inst = installationOf(rendered([EKS]));
    // No pool is added: with a provider and no cni.type the CNI is not Calico (AmazonVPC on EKS).
    expect(inst.spec).toEqual({ kubernetesProvider: 'EKS' });
    const r = resolveInstallation(inst);
    if (!r.ok) throw new Error(r.errors.join('; '));
    expect(r.config.platform).toEqual({ provider: 'EKS', cni: 'AmazonVPC', ipam: 'AmazonVPC' });
    expect(r.config.pools).toEqual([]);
    expect(r.config.bgp).toBe(false);
  });

  it('AKS values give their spec as written: Calico CNI, BGP Disabled, one VXLAN pool; the operator takes it', () => {
    const inst = installationOf(rendered([AKS]));
    expect(inst.spec).toEqual({
      kubernetesProvider: 'AKS',
      cni: { type: 'Calico' },
      calicoNetwork: { bgp: 'Disabled', ipPools: [{ cidr: '10.244.0.0/16', encapsulation: 'VXLAN' }] },
    });
    const r = resolveInstallation(inst);
    if (!r.ok) throw new Error(r.errors.join('; '));
    expect(r.config.platform).toEqual({ provider: 'AKS', cni: 'Calico', ipam: 'Calico' });
    expect(r.config.bgp).toBe(false);
    expect(r.config.pools.map((p) => [p.cidr, p.encapsulation, p.blockSize])).toEqual([
      ['10.244.0.0/16', 'VXLAN', 26],
    ]);
  });

  it('keeps the default pool beside other calicoNetwork settings, and drops it when pools are given', () => {
    const mtu = installationOf(rendered([], ['--set', 'installation.calicoNetwork.mtu=1400']));
    expect(mtu.spec).toEqual({
      calicoNetwork: {
        mtu: 1400,
        ipPools: (
          installationOf(readManifest('custom-resources.yaml')).spec as {
            calicoNetwork: { ipPools: unknown };
          }
        ).calicoNetwork.ipPools,
      },
    });
    const lab = installationOf(
      rendered([], ['--set', 'installation.calicoNetwork.ipPools[0].cidr=198.19.0.0/16']),
    );
    expect(lab.spec).toEqual({ calicoNetwork: { ipPools: [{ cidr: '198.19.0.0/16' }] } });
  });

  it('leaves out the Installation and the APIServer when disabled', () => {
    const objs = rendered([], ['--set', 'installation.enabled=false', '--set', 'apiServer.enabled=false']);
    expect(objs.filter((o) => o.apiVersion === 'operator.tigera.io/v1')).toEqual([]);
    expect(objs.find((o) => o.kind === 'Deployment')).toBeDefined();
  });

  it('takes upstream’s operator values: registry, image, version, resources, nodeSelector, tolerations', () => {
    const dep = find(
      rendered(
        [],
        [
          '--set',
          'tigeraOperator.registry=registry.example.com/',
          '--set',
          'tigeraOperator.version=v9',
          '--set',
          'resources.requests.cpu=100m',
          '--set',
          'nodeSelector.pool=infra',
          '--set',
          'tolerations=null',
        ],
      ),
      'Deployment',
      'tigera-operator',
    );
    const pod = podSpec(dep) as ReturnType<typeof podSpec> & Record<string, unknown>;
    expect(pod.containers[0]!.image).toBe('registry.example.com/calico-ts/operator:v9');
    expect((pod.containers[0] as unknown as { resources: unknown }).resources).toEqual({
      requests: { cpu: '100m' },
    });
    expect(pod.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux', pool: 'infra' });
    expect(pod.tolerations).toBeUndefined();
  });

  it('creates the imagePullSecrets it is given and uses them for the operator and the Installation', () => {
    const objs = rendered(
      [],
      [
        '--set-json',
        'imagePullSecrets={"my-registry":"{\\"auths\\":{}}"}',
        '--set',
        'installation.imagePullSecrets[0].name=existing',
      ],
    );
    const secret = find(objs, 'Secret', 'my-registry') as KubeObject & {
      type: string;
      data: Record<string, string>;
    };
    expect(secret.metadata.namespace).toBe('tigera-operator');
    expect(secret.type).toBe('kubernetes.io/dockerconfigjson');
    expect(Buffer.from(secret.data['.dockerconfigjson']!, 'base64').toString()).toBe('{"auths":{}}');
    const pod = podSpec(find(objs, 'Deployment', 'tigera-operator')) as unknown as {
      imagePullSecrets: unknown;
    };
    expect(pod.imagePullSecrets).toEqual([{ name: 'my-registry' }]);
    expect((installationOf(objs).spec as { imagePullSecrets: unknown }).imagePullSecrets).toEqual([
      { name: 'existing' },
      { name: 'my-registry' },
    ]);
  });

  it('refuses another namespace, saying which one to use', async () => {
    const r = await helmRun('template', 'calico', operatorChartDir, '--namespace', 'kube-system');
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('install into the tigera-operator namespace');
    expect(r.out).toContain('"kube-system"');
  });

  it.each([
    ['installation.calicoNetwork.ipPools[0].encapsulation=GRE', 'encapsulation'],
    ['installation.calicoNetwork.bgp=Maybe', 'bgp'],
    ['installation.kubernetesProvider=Nomad', 'kubernetesProvider'],
    ['installation.cni.type=Flannel', 'type'],
    ['installation.calicoNetwork.linuxDataplane=eBPF', 'linuxDataplane'],
    ['installation.calicoNetwork.ipPools[0].blockSize=big', 'blockSize'],
    ['tigeraOperator.registry=a b', 'registry'],
    ['nosuchvalue=1', 'nosuchvalue'],
  ])('refuses --set %s, naming %s', async (set, field) => {
    const r = await helmRun(
      'template',
      'calico',
      operatorChartDir,
      '--namespace',
      'tigera-operator',
      '--set',
      set,
    );
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("values don't meet the specifications of the schema");
    expect(r.out).toContain(field);
  });
});
