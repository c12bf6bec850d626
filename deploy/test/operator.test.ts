/**
 * deploy/manifests/tigera-operator.yaml and custom-resources.yaml: the operator's manifest is what
 * its script writes from the operator's own CRDs (so it cannot drift), has upstream's shape (the
 * CRDs' group, names, scope and printer columns, the operator Deployment on the host network with
 * upstream's tolerations), and what the operator renders from custom-resources.yaml sets only
 * variables the programs read.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  baseFromManifest,
  certificateObjects,
  makeCa,
  operatorCrds,
  render,
  resolveInstallation,
} from '@calico-ts/operator';
import { describe, expect, it } from 'vitest';
import { root } from '../scripts/helm.mjs';
import { find, type KubeObject, podSpec, readManifest } from './manifest-docs.js';
import {
  calicoNodeEnvNames,
  envNamesIn,
  installCniEnvNames,
  kubeControllersEnvNames,
} from './program-env.js';

const operator = readManifest('tigera-operator.yaml');
const custom = readManifest('custom-resources.yaml');

describe('deploy/manifests/tigera-operator.yaml', () => {
  it('is what scripts/manifest.mjs writes from the operator’s definitions', () => {
    expect(() =>
      execFileSync(process.execPath, [join(root, 'apps/operator/scripts/manifest.mjs'), '--check'], {
        stdio: 'pipe',
      }),
    ).not.toThrow();
  });

  it('defines Installation, APIServer and TigeraStatus as upstream: operator.tigera.io/v1, cluster-scoped', () => {
    const crds = operator.filter((o) => o.kind === 'CustomResourceDefinition');
    const ours = crds.filter((c) => (c.spec as { group: string }).group === 'operator.tigera.io');
    expect(ours.map((c) => c.metadata.name)).toEqual([
      'installations.operator.tigera.io',
      'apiservers.operator.tigera.io',
      'tigerastatuses.operator.tigera.io',
    ]);
    for (const c of ours) expect((c.spec as { scope: string }).scope).toBe('Cluster');
    expect(ours).toEqual(operatorCrds());
    // The Calico CRDs come with it, as upstream's tigera-operator.yaml carries them.
    expect(crds.map((c) => c.metadata.name)).toContain('ippools.crd.projectcalico.org');
  });

  it('prints TigeraStatus as upstream: NAME AVAILABLE PROGRESSING DEGRADED SINCE', () => {
    const ts = find(operator, 'CustomResourceDefinition', 'tigerastatuses.operator.tigera.io');
    const cols = (
      ts.spec as { versions: { additionalPrinterColumns: { name: string; jsonPath: string }[] }[] }
    ).versions[0]!.additionalPrinterColumns;
    expect(cols.map((c) => [c.name, c.jsonPath])).toEqual([
      ['Available', ".status.conditions[?(@.type=='Available')].status"],
      ['Progressing', ".status.conditions[?(@.type=='Progressing')].status"],
      ['Degraded', ".status.conditions[?(@.type=='Degraded')].status"],
      ['Since', ".status.conditions[?(@.type=='Available')].lastTransitionTime"],
    ]);
  });

  it('types the encapsulation with upstream’s values, so the API server refuses another', () => {
    const inst = find(operator, 'CustomResourceDefinition', 'installations.operator.tigera.io');
    const text = JSON.stringify(inst);
    expect(text).toContain('"enum":["IPIP","IPIPCrossSubnet","VXLAN","VXLANCrossSubnet","None"]');
    expect(text).toContain("self.metadata.name == 'default'");
  });

  it('runs the operator as upstream: host network, every NoSchedule/NoExecute taint tolerated', () => {
    const dep = find(operator, 'Deployment', 'tigera-operator');
    expect(dep.metadata.namespace).toBe('tigera-operator');
    const pod = podSpec(dep) as ReturnType<typeof podSpec> & Record<string, unknown>;
    expect(pod.hostNetwork).toBe(true);
    expect(pod.serviceAccountName).toBe('tigera-operator');
    expect(pod.tolerations).toEqual([
      { effect: 'NoExecute', operator: 'Exists' },
      { effect: 'NoSchedule', operator: 'Exists' },
    ]);
    expect(pod.containers[0]!.image).toBe('calico-ts/operator:v0.1.0');
    expect(pod.containers[0]!.command).toEqual(['operator']);
    const images = await_images() as Record<string, { entrypoint: string[]; links?: { path: string }[] }>;
    expect(images.operator!.links?.map((l) => l.path)).toContain('/usr/bin/operator');
  });
});

function await_images(): unknown {
  // definitions.mjs is data only; read its IMAGES through a child so this file stays synchronous.
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { IMAGES } from ${JSON.stringify(join(root, 'images/src/definitions.mjs'))}; process.stdout.write(JSON.stringify(IMAGES));`,
    ],
    { encoding: 'utf8' },
  );
  return JSON.parse(out);
}

/**
 * Typha's `TYPHA_<PARAM>` names (config.ts reads each as `get(env, 'Param')`, or int/bool/seconds)
 * and the other variables its sources read (FELIX_INTERFACEPREFIX, as upstream's Typha reads it).
 */
function typhaEnvNames(): Set<string> {
  const code = readFileSync(join(root, 'apps/typha/src/config.ts'), 'utf8');
  return new Set([
    ...[...code.matchAll(/\b(?:get|int|bool|seconds)\(env, '([A-Za-z]+)'/g)].map(
      (m) => `TYPHA_${m[1]!.toUpperCase()}`,
    ),
    ...[...envNamesIn(join(root, 'apps/typha/src'))].filter((n) => !n.startsWith('TYPHA_')),
  ]);
}

describe('deploy/manifests/custom-resources.yaml', () => {
  it('is upstream’s default: an Installation and an APIServer named default', () => {
    expect(custom.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata.name}`)).toEqual([
      'operator.tigera.io/v1 Installation default',
      'operator.tigera.io/v1 APIServer default',
    ]);
    const pools = (custom[0]!.spec as { calicoNetwork: { ipPools: unknown[] } }).calicoNetwork.ipPools;
    expect(pools).toEqual([
      {
        name: 'default-ipv4-ippool',
        blockSize: 26,
        cidr: '192.168.0.0/16',
        encapsulation: 'VXLANCrossSubnet',
        natOutgoing: 'Enabled',
        nodeSelector: 'all()',
      },
    ]);
  });

  it.each([
    ['custom-resources.yaml', undefined],
    ['EKS (policy only)', { kubernetesProvider: 'EKS' }],
    [
      'AKS, Calico CNI',
      {
        kubernetesProvider: 'AKS',
        cni: { type: 'Calico' },
        calicoNetwork: { bgp: 'Disabled', ipPools: [{ cidr: '198.19.0.0/16', encapsulation: 'VXLAN' }] },
      },
    ],
    ['AKS, Azure CNI', { kubernetesProvider: 'AKS' }],
    ['GKE, GKE CNI', { kubernetesProvider: 'GKE' }],
    ['GKE, Calico CNI', { kubernetesProvider: 'GKE', cni: { type: 'Calico' } }],
  ] as const)('renders workloads that set only variables their programs read: %s', (_, spec) => {
    const r = resolveInstallation(spec ? { metadata: { name: 'default' }, spec } : custom[0]);
    if (!r.ok) throw new Error(r.errors.join('; '));
    const base = baseFromManifest(readFileSync(join(root, 'deploy/manifests/calico.yaml'), 'utf8'));
    const objs = render(base, r.config, {
      nodeCount: 3,
      certificates: certificateObjects(makeCa('ca'), undefined, undefined, new Date()),
    }).objects as unknown as KubeObject[];
    const names = (o: KubeObject, container: string) => {
      const p = podSpec(o);
      const c = [...(p.initContainers ?? []), ...p.containers].find((x) => x.name === container)!;
      return (c.env ?? []).map((e) => e.name);
    };
    const ds = find(objs, 'DaemonSet', 'calico-node');
    const unread = (set: Set<string>, list: string[]) => list.filter((n) => !set.has(n));
    expect(unread(calicoNodeEnvNames(), names(ds, 'calico-node'))).toEqual([]);
    if (podSpec(ds).initContainers?.some((c) => c.name === 'install-cni'))
      expect(unread(installCniEnvNames(), names(ds, 'install-cni'))).toEqual([]);
    expect(
      unread(
        kubeControllersEnvNames(),
        names(find(objs, 'Deployment', 'calico-kube-controllers'), 'calico-kube-controllers'),
      ),
    ).toEqual([]);
    expect(unread(typhaEnvNames(), names(find(objs, 'Deployment', 'calico-typha'), 'calico-typha'))).toEqual(
      [],
    );
  });
});
