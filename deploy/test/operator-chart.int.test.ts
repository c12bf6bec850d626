/**
 * The tigera-operator chart against a real kube-apiserver: `helm install calico
 * deploy/helm/tigera-operator --namespace tigera-operator --create-namespace` creates the CRDs
 * (Established), the operator's RBAC and Deployment and the Installation and APIServer `default`;
 * with the AKS values the stored Installation is what the values say; and the API server's CRD
 * schema and helm's values schema refuse the same bad encapsulation. No controller runs: objects
 * are only stored (the operator's behaviour is apps/operator's tests and the lab's).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  etcdAvailable,
  findKubectl,
  type KubeApiServer,
  kubeApiServerAvailable,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findHelm, operatorChartDir, root } from '../scripts/helm.mjs';

const run = promisify(execFile);
const AKS = join(root, 'deploy/test/values/aks.yaml');

const missing = [
  ...(kubeApiServerAvailable() ? [] : ['kube-apiserver (run scripts/setup.sh)']),
  ...(etcdAvailable() ? [] : ['etcd']),
  ...(findKubectl() ? [] : ['kubectl']),
  ...(findHelm() ? [] : ['helm (run scripts/setup.sh)']),
];
if (missing.length > 0) {
  describe('the tigera-operator chart on a real API server', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

describe.skipIf(missing.length > 0)('the tigera-operator chart on a real API server', () => {
  let api: KubeApiServer;
  const kubectl = (...args: string[]) =>
    run(findKubectl()!, ['--kubeconfig', api.kubeconfigPath, ...args]).then((r) => r.stdout);
  const helm = (...args: string[]) =>
    run(findHelm()!, ['--kubeconfig', api.kubeconfigPath, ...args], {
      env: {
        ...process.env,
        HELM_CACHE_HOME: `${api.dir}/helm-cache`,
        HELM_CONFIG_HOME: `${api.dir}/helm-config`,
        HELM_DATA_HOME: `${api.dir}/helm-data`,
      },
    }).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
    );
  const install = (...values: string[]) =>
    helm(
      'install',
      'calico',
      operatorChartDir,
      '--namespace',
      'tigera-operator',
      '--create-namespace',
      '--wait=false',
      ...values,
    );

  beforeAll(async () => {
    api = await startKubeApiServer();
  }, 120_000);
  afterAll(async () => {
    await api?.stop();
  });

  it('refuses a GRE pool before anything is written (values schema), as the CRD would', async () => {
    const r = await install(
      '--dry-run=server',
      '--set',
      'installation.calicoNetwork.ipPools[0].encapsulation=GRE',
    );
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("values don't meet the specifications of the schema");
    expect(r.out).toContain('encapsulation');
    expect(await kubectl('get', 'namespaces', '-o', 'name')).not.toContain('namespace/tigera-operator');
  });

  it('installs the CRDs, the operator and the Installation and APIServer default', async () => {
    const r = await install();
    expect(r.out).toContain('STATUS: deployed');
    expect(r.code).toBe(0);
    await kubectl(
      'wait',
      '--for=condition=Established',
      '--timeout=30s',
      'crd/installations.operator.tigera.io',
      'crd/ippools.crd.projectcalico.org',
    );
    expect(await kubectl('get', 'deployment', '-n', 'tigera-operator', 'tigera-operator', '-o', 'name')).toBe(
      'deployment.apps/tigera-operator\n',
    );
    expect(
      await kubectl(
        'auth',
        'can-i',
        '--as',
        'system:serviceaccount:tigera-operator:tigera-operator',
        'create',
        'daemonsets',
        '-n',
        'calico-system',
      ),
    ).toBe('yes\n');
    const inst = JSON.parse(await kubectl('get', 'installation', 'default', '-o', 'json'));
    expect(inst.spec.calicoNetwork.ipPools).toEqual([
      {
        name: 'default-ipv4-ippool',
        blockSize: 26,
        cidr: '192.168.0.0/16',
        encapsulation: 'VXLANCrossSubnet',
        natOutgoing: 'Enabled',
        nodeSelector: 'all()',
      },
    ]);
    expect(inst.metadata.labels['app.kubernetes.io/managed-by']).toBe('Helm');
    expect(await kubectl('get', 'apiserver', 'default', '-o', 'name')).toBe(
      'apiserver.operator.tigera.io/default\n',
    );
  });

  it('upgrades to the AKS values: the stored Installation is theirs', async () => {
    const r = await helm(
      'upgrade',
      'calico',
      operatorChartDir,
      '--namespace',
      'tigera-operator',
      '--values',
      AKS,
    );
    expect(r.out).toContain('STATUS: deployed');
    const inst = JSON.parse(await kubectl('get', 'installation', 'default', '-o', 'json'));
    expect(inst.spec).toEqual({
      kubernetesProvider: 'AKS',
      cni: { type: 'Calico' },
      calicoNetwork: { bgp: 'Disabled', ipPools: [{ cidr: '10.244.0.0/16', encapsulation: 'VXLAN' }] },
    });
  });

  it('uninstalls the Installation, the APIServer and the operator; the CRDs stay, as Helm leaves crds/', async () => {
    const r = await helm('uninstall', 'calico', '--namespace', 'tigera-operator');
    expect(r.code).toBe(0);
    expect(await kubectl('get', 'installations,apiservers', '-o', 'name')).toBe('');
    expect(await kubectl('get', 'crd', 'installations.operator.tigera.io', '-o', 'name')).toContain(
      'installations',
    );
  });
});
