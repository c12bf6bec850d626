/**
 * The manifests and the chart against a real kube-apiserver: each applies with
 * `--dry-run=server`, then for real (the CRDs become Established; RBAC, ConfigMaps, the DaemonSet
 * and the Deployment are accepted), `helm install --dry-run=server` takes the chart, and the
 * ClusterRoles grant what the programs need and no more (`kubectl auth can-i` as each account).
 * No controller-manager or scheduler runs: nothing is scheduled, objects are only stored.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  etcdAvailable,
  findKubectl,
  type KubeApiServer,
  kubeApiServerAvailable,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chartDir, findHelm, MANIFESTS } from '../scripts/helm.mjs';
import { manifestPath } from './manifest-docs.js';

const run = promisify(execFile);

function missingPrerequisites(): string[] {
  const missing: string[] = [];
  if (!kubeApiServerAvailable()) missing.push('kube-apiserver (run scripts/setup.sh)');
  if (!etcdAvailable()) missing.push('etcd');
  if (!findKubectl()) missing.push('kubectl');
  if (!findHelm()) missing.push('helm (run scripts/setup.sh)');
  return missing;
}
const missing = missingPrerequisites();
if (missing.length > 0) {
  describe('deploy on a real API server', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const SA = (name: string) => `system:serviceaccount:kube-system:${name}`;

/** `kubectl auth can-i` as a service account: true for yes, false for no. */
async function canI(api: KubeApiServer, as: string, ...args: string[]): Promise<boolean> {
  const r = await run(findKubectl()!, [
    '--kubeconfig',
    api.kubeconfigPath,
    'auth',
    'can-i',
    '--as',
    SA(as),
    ...args,
  ]).then(
    (x) => x.stdout,
    (e: { stdout?: string; code?: number }) => {
      if (e.code !== 1) throw e;
      return e.stdout ?? '';
    },
  );
  return r.trim() === 'yes';
}

describe.skipIf(missing.length > 0).each(MANIFESTS)(
  'deploy/manifests/$file on a real API server',
  (manifest) => {
    const etcd = manifest.values.includes('values-etcd.yaml');
    let api: KubeApiServer;
    const kubectl = (...args: string[]) =>
      run(findKubectl()!, ['--kubeconfig', api.kubeconfigPath, ...args]).then((r) => r.stdout);
    const helm = (...args: string[]) =>
      run(findHelm()!, ['--kubeconfig', api.kubeconfigPath, ...args], {
        env: {
          ...process.env,
          HELM_CACHE_HOME: `${api.dir}/helm-cache`,
          HELM_CONFIG_HOME: `${api.dir}/helm-config`,
        },
      }).then((r) => r.stdout);

    beforeAll(async () => {
      api = await startKubeApiServer();
    }, 120_000);
    afterAll(async () => {
      await api?.stop();
    });

    it('the chart installs with --dry-run=server', async () => {
      const values = manifest.values.flatMap((v) => ['--values', `${chartDir}/${v}`]);
      const out = await helm(
        'install',
        'calico-ts',
        chartDir,
        '--namespace',
        'kube-system',
        '--dry-run=server',
        ...values,
      );
      expect(out).toContain('STATUS: pending-install');
      expect(out).toContain('kind: DaemonSet');
    });

    it('applies with --dry-run=server, then for real', async () => {
      const file = manifestPath(manifest.file);
      const dry = await kubectl('apply', '--dry-run=server', '-f', file);
      expect(dry).toContain('daemonset.apps/calico-node created (server dry run)');
      const out = await kubectl('apply', '-f', file);
      for (const line of [
        'configmap/calico-config created',
        'serviceaccount/calico-cni-plugin created',
        'clusterrole.rbac.authorization.k8s.io/calico-node created',
        'clusterrolebinding.rbac.authorization.k8s.io/calico-cni-plugin created',
        'daemonset.apps/calico-node created',
        'deployment.apps/calico-kube-controllers created',
        'poddisruptionbudget.policy/calico-kube-controllers created',
      ]) {
        expect(out).toContain(line);
      }
      if (etcd) {
        expect(out).toContain('secret/calico-etcd-secrets created');
        expect(out).not.toContain('customresourcedefinition');
      } else {
        await kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all');
      }
      // What the API server keeps is what the manifest says: `kubectl diff` finds nothing (exit 0).
      expect(await kubectl('diff', '-f', file)).toBe('');
      const ds = JSON.parse(
        await kubectl('get', 'daemonset', 'calico-node', '-n', 'kube-system', '-o', 'json'),
      );
      expect(ds.spec.template.spec.priorityClassName).toBe('system-node-critical');
    });

    it(etcd ? 'installs no CRDs' : 'the CRDs are Established and serve Calico resources', async () => {
      const crds = JSON.parse(await kubectl('get', 'crd', '-o', 'json')).items as {
        metadata: { name: string };
        status: { conditions: { type: string; status: string }[] };
      }[];
      const calico = crds.filter((c) => c.metadata.name.endsWith('.crd.projectcalico.org'));
      if (etcd) {
        expect(calico).toEqual([]);
        return;
      }
      expect(calico.length).toBeGreaterThan(20);
      for (const c of calico) {
        expect(c.status.conditions.find((x) => x.type === 'Established')?.status, c.metadata.name).toBe(
          'True',
        );
      }
      expect(await kubectl('get', 'ippools.crd.projectcalico.org')).toBe('');
    });

    it('the CNI plugin’s account may do what the plugin does, and nothing else', async () => {
      const can = (...a: string[]) => canI(api, 'calico-cni-plugin', ...a);
      expect(await can('get', 'pods', '-n', 'default')).toBe(true);
      expect(await can('get', 'namespaces')).toBe(true);
      expect(await can('get', 'secrets', '-n', 'kube-system')).toBe(false);
      expect(await can('list', 'pods', '-A')).toBe(false);
      expect(await can('delete', 'pods', '-n', 'default')).toBe(false);
      expect(await can('create', 'serviceaccounts/token', '-n', 'kube-system')).toBe(false);
      // On the Kubernetes datastore the endpoint is the Pod and IPAM is in CRDs.
      expect(await can('update', 'pods', '-n', 'default')).toBe(!etcd);
      for (const r of ['ipamblocks', 'blockaffinities', 'ipamhandles']) {
        for (const verb of ['get', 'list', 'create', 'update', 'delete']) {
          expect(await can(verb, `${r}.crd.projectcalico.org`), `${verb} ${r}`).toBe(!etcd);
        }
      }
      expect(await can('get', 'ippools.crd.projectcalico.org')).toBe(!etcd);
      expect(await can('create', 'ippools.crd.projectcalico.org')).toBe(false);
      expect(await can('update', 'globalnetworkpolicies.crd.projectcalico.org')).toBe(false);
    });

    it('calico-node may get the plugin’s token and no other account’s', async () => {
      const can = (...a: string[]) => canI(api, 'calico-node', ...a);
      expect(
        await can('create', 'serviceaccounts/calico-cni-plugin', '--subresource=token', '-n', 'kube-system'),
      ).toBe(true);
      expect(
        await can('create', 'serviceaccounts/calico-node', '--subresource=token', '-n', 'kube-system'),
      ).toBe(false);
      expect(await can('create', 'serviceaccounts/default', '--subresource=token', '-n', 'kube-system')).toBe(
        false,
      );
      expect(await can('update', 'nodes')).toBe(!etcd);
      expect(await can('watch', 'globalnetworkpolicies.crd.projectcalico.org')).toBe(!etcd);
      expect(await can('delete', 'ippools.crd.projectcalico.org')).toBe(false);
      expect(await can('create', 'pods', '-n', 'default')).toBe(false);
    });

    it('calico-kube-controllers may read what its controllers watch', async () => {
      const can = (...a: string[]) => canI(api, 'calico-kube-controllers', ...a);
      expect(await can('watch', 'nodes')).toBe(true);
      expect(await can('list', 'networkpolicies.networking.k8s.io', '-A')).toBe(etcd);
      expect(await can('delete', 'ipamblocks.crd.projectcalico.org')).toBe(!etcd);
      expect(await can('get', 'secrets', '-n', 'kube-system')).toBe(false);
    });
  },
);
