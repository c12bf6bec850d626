/**
 * The operator against a real kube-apiserver (no kubelet: nothing is scheduled, objects are only
 * stored), as the `tigera-operator` ServiceAccount of deploy/manifests/tigera-operator.yaml, so its
 * RBAC is what is tested: the CRDs refuse what the operator could not act on, one reconcile makes
 * calico-system and the pool, TigeraStatus says what it waits for, a pool a user edited is not
 * overwritten, an MTU change reaches the DaemonSet, an invalid Installation changes nothing and
 * says why, an object it made and no longer wants is deleted, and deleting the Installation
 * removes calico-system.
 */

import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { NOOP_LOGGER } from '@calico-ts/api/log';
import { createKVStore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import { connectionFromKubeconfig, KubeHttp } from '@calico-ts/datastore/kube';
import {
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseFromManifest } from './base.js';
import { KubeApi } from './kube-api.js';
import { Reconciler } from './reconciler.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../../..');
const OPERATOR_YAML = join(ROOT, 'deploy/manifests/tigera-operator.yaml');
const CUSTOM = readFileSync(join(ROOT, 'deploy/manifests/custom-resources.yaml'), 'utf8').replace(
  '192.168.0.0/16',
  '198.19.0.0/16',
);

const missing = missingKubePrerequisites();
if (missing.length > 0) {
  describe('operator on a real API server', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

describe.skipIf(missing.length > 0)('operator on a real API server', () => {
  let api: KubeApiServer;
  let http: KubeHttp;
  let kv: KVStore;
  let reconciler: Reconciler;
  const kubectl = (...args: string[]) =>
    run(findKubectl()!, ['--kubeconfig', api.kubeconfigPath, ...args]).then((r) => r.stdout);
  const refused = (...args: string[]) =>
    run(findKubectl()!, ['--kubeconfig', api.kubeconfigPath, ...args]).then(
      () => '',
      (e: { stderr?: string }) => e.stderr ?? '',
    );
  const json = async (...args: string[]) => JSON.parse(await kubectl(...args, '-o', 'json'));
  const createFrom = async (text: string) => {
    const file = join(api.dir, 'custom-resources.yaml');
    await writeFile(file, text);
    return kubectl('create', '-f', file);
  };

  beforeAll(async () => {
    api = await startKubeApiServer();
    await kubectl('create', '-f', OPERATOR_YAML);
    await kubectl(
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/installations.operator.tigera.io',
      'crd/tigerastatuses.operator.tigera.io',
      'crd/ippools.crd.projectcalico.org',
    );
    // The operator's own ServiceAccount token, as its pod has it.
    const token = (await kubectl('create', 'token', 'tigera-operator', '-n', 'tigera-operator')).trim();
    const kubeconfig = join(api.dir, 'operator.kubeconfig');
    await writeFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 't',
            cluster: {
              server: api.url,
              'certificate-authority-data': Buffer.from(api.caPem).toString('base64'),
            },
          },
        ],
        users: [{ name: 'op', user: { token } }],
        contexts: [{ name: 'op', context: { cluster: 't', user: 'op' } }],
        'current-context': 'op',
      }),
      { mode: 0o600 },
    );
    http = new KubeHttp(await connectionFromKubeconfig(kubeconfig));
    kv = await createKVStore({ datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig });
    const base = baseFromManifest(readFileSync(join(ROOT, 'deploy/manifests/calico.yaml'), 'utf8'));
    reconciler = new Reconciler(
      new KubeApi(http),
      new KVDatastore(kv, { backend: 'kubernetes' }),
      base,
      NOOP_LOGGER,
    );
  }, 120_000);
  afterAll(async () => {
    http?.close();
    await kv?.close();
    await api?.stop();
  });

  it('the CRDs refuse an unknown encapsulation and an Installation not named default', async () => {
    const bad = CUSTOM.replace('VXLANCrossSubnet', 'GRE').split('---')[0]!;
    const file = join(api.dir, 'bad.yaml');
    await writeFile(file, bad);
    expect(await refused('create', '-f', file)).toMatch(
      /spec.calicoNetwork.ipPools\[0\].encapsulation: Unsupported value: "GRE": supported values: "IPIP", "IPIPCrossSubnet", "VXLAN", "VXLANCrossSubnet", "None"/,
    );
    await writeFile(file, CUSTOM.split('---')[0]!.replace('name: default', 'name: other'));
    expect(await refused('create', '-f', file)).toMatch(/Installation must be named default/);
  });

  it('one reconcile makes calico-system and the pool; TigeraStatus says what it waits for', async () => {
    await createFrom(CUSTOM);
    await reconciler.tick();
    const ds = await json('get', 'daemonset', 'calico-node', '-n', 'calico-system');
    expect(ds.metadata.labels['app.kubernetes.io/managed-by']).toBe('tigera-operator');
    expect(ds.metadata.ownerReferences[0]).toMatchObject({ kind: 'Installation', name: 'default' });
    const typha = await json('get', 'deployment', 'calico-typha', '-n', 'calico-system');
    expect(typha.spec.replicas).toBe(1); // no Nodes registered: upstream's rule gives one
    await json('get', 'deployment', 'calico-kube-controllers', '-n', 'calico-system');
    await json('get', 'configmap', 'cni-config', '-n', 'calico-system');
    // The Felix ↔ Typha certificates, the CA kept beside the operator.
    const ca = await json('get', 'secret', 'tigera-ca-private', '-n', 'tigera-operator');
    const bundle = await json('get', 'configmap', 'tigera-ca-bundle', '-n', 'calico-system');
    expect(bundle.data['tigera-ca-bundle.crt']).toBe(Buffer.from(ca.data['tls.crt'], 'base64').toString());
    for (const s of ['typha-certs', 'node-certs'])
      expect((await json('get', 'secret', s, '-n', 'calico-system')).type).toBe('kubernetes.io/tls');
    const pool = await json('get', 'ippools.crd.projectcalico.org', 'default-ipv4-ippool');
    expect(pool.spec).toMatchObject({
      cidr: '198.19.0.0/16',
      vxlanMode: 'CrossSubnet',
      ipipMode: 'Never',
      natOutgoing: true,
      blockSize: 26,
    });
    const calico = await json('get', 'tigerastatus', 'calico');
    const cond = (t: string) => calico.status.conditions.find((c: { type: string }) => c.type === t);
    expect(cond('Available').status).toBe('False');
    expect(cond('Progressing')).toMatchObject({ status: 'True', reason: 'ResourceNotReady' });
    expect(cond('Progressing').message).toContain('DaemonSet "calico-system/calico-node"');
    // The APIServer resource: calico-apiserver, its Service, RBAC and the APIService registered
    // with the aggregator, trusting the operator's CA.
    const apiDeploy = await json('get', 'deployment', 'calico-apiserver', '-n', 'calico-system');
    expect(apiDeploy.spec.template.spec.containers[0].args).toContain('--secure-port=5443');
    const apiService = await json('get', 'apiservice', 'v3.projectcalico.org');
    expect(apiService.spec.service).toMatchObject({
      name: 'calico-api',
      namespace: 'calico-system',
      port: 443,
    });
    expect(Buffer.from(apiService.spec.caBundle, 'base64').toString()).toBe(
      Buffer.from(ca.data['tls.crt'], 'base64').toString(),
    );
    const serving = await json('get', 'secret', 'calico-apiserver-certs', '-n', 'calico-system');
    const cert = new X509Certificate(Buffer.from(serving.data['tls.crt'], 'base64'));
    expect(cert.subjectAltName).toContain('DNS:calico-api.calico-system.svc');
    expect(cert.checkIssued(new X509Certificate(Buffer.from(ca.data['tls.crt'], 'base64')))).toBe(true);
    await json('get', 'rolebinding', 'calico-apiserver-auth-reader', '-n', 'kube-system');
    const apiserver = await json('get', 'tigerastatus', 'apiserver');
    const apiCond = (t: string) => apiserver.status.conditions.find((c: { type: string }) => c.type === t);
    expect(apiCond('Available').status).toBe('False');
    expect(apiCond('Progressing')).toMatchObject({ status: 'True', reason: 'ResourceNotReady' });
    expect(apiCond('Progressing').message).toContain('calico-system/calico-apiserver');
    const table = await kubectl('get', 'tigerastatus');
    expect(table.split('\n')[0]!.split(/\s+/)).toEqual([
      'NAME',
      'AVAILABLE',
      'PROGRESSING',
      'DEGRADED',
      'SINCE',
    ]);
    expect(table).toMatch(/^calico\s+False\s+True\s+False\s+\S+/m);
    expect(table).toMatch(/^ippools\s+True\s+False\s+False\s+\S+/m);
  });

  /** Sets the Installation's pool encapsulation (`kubectl patch`) and runs one reconcile. */
  async function setPoolEncapsulation(encapsulation: string): Promise<void> {
    const pools = structuredClone((await json('get', 'installation', 'default')).spec.calicoNetwork.ipPools);
    pools[0].encapsulation = encapsulation;
    await kubectl(
      'patch',
      'installation',
      'default',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { calicoNetwork: { ipPools: pools } } }),
    );
    await reconciler.tick();
  }

  it('carries an encapsulation edit of the Installation into the pool it made', async () => {
    await setPoolEncapsulation('VXLAN');
    const pool = await json('get', 'ippools.crd.projectcalico.org', 'default-ipv4-ippool');
    expect(pool.spec).toMatchObject({ cidr: '198.19.0.0/16', vxlanMode: 'Always', ipipMode: 'Never' });
    await setPoolEncapsulation('VXLANCrossSubnet');
    expect((await json('get', 'ippools.crd.projectcalico.org', 'default-ipv4-ippool')).spec.vxlanMode).toBe(
      'CrossSubnet',
    );
  });

  it('leaves a pool a user edited as edited', async () => {
    await kubectl(
      'patch',
      'ippools.crd.projectcalico.org',
      'default-ipv4-ippool',
      '--type=merge',
      '-p',
      '{"spec":{"natOutgoing":false}}',
    );
    await reconciler.tick();
    expect((await json('get', 'ippools.crd.projectcalico.org', 'default-ipv4-ippool')).spec.natOutgoing).toBe(
      false,
    );
    // Nor does a later Installation edit overwrite the user's pool.
    await setPoolEncapsulation('VXLAN');
    expect((await json('get', 'ippools.crd.projectcalico.org', 'default-ipv4-ippool')).spec).toMatchObject({
      natOutgoing: false,
      vxlanMode: 'CrossSubnet',
    });
    await setPoolEncapsulation('VXLANCrossSubnet');
  });

  it('rolls an MTU change into the DaemonSet', async () => {
    await kubectl(
      'patch',
      'installation',
      'default',
      '--type=merge',
      '-p',
      '{"spec":{"calicoNetwork":{"mtu":1400}}}',
    );
    await reconciler.tick();
    const ds = await json('get', 'daemonset', 'calico-node', '-n', 'calico-system');
    const node = ds.spec.template.spec.containers.find((c: { name: string }) => c.name === 'calico-node');
    expect(node.env.find((e: { name: string }) => e.name === 'FELIX_VXLANMTU').value).toBe('1400');
  });

  it('an invalid Installation changes nothing and TigeraStatus says why', async () => {
    const before = (await json('get', 'daemonset', 'calico-node', '-n', 'calico-system')).metadata
      .resourceVersion;
    await kubectl(
      'patch',
      'installation',
      'default',
      '--type=merge',
      '-p',
      '{"spec":{"calicoNetwork":{"bgp":"Disabled","ipPools":[{"cidr":"198.19.0.0/16","encapsulation":"IPIP"}]}}}',
    );
    await reconciler.tick();
    const degraded = (await json('get', 'tigerastatus', 'calico')).status.conditions.find(
      (c: { type: string }) => c.type === 'Degraded',
    );
    expect(degraded).toMatchObject({ status: 'True', reason: 'InvalidConfigurationError' });
    expect(degraded.message).toContain(
      'spec.calicoNetwork.ipPools[0].encapsulation: IPIP encapsulation requires that BGP is enabled',
    );
    expect(
      (await json('get', 'daemonset', 'calico-node', '-n', 'calico-system')).metadata.resourceVersion,
    ).toBe(before);
    await kubectl(
      'patch',
      'installation',
      'default',
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/spec/calicoNetwork/bgp"}]',
    );
  });

  it('deleting the APIServer removes calico-apiserver, its APIService and RBAC, and its status', async () => {
    const apiServer = await json('get', 'apiserver', 'default');
    await kubectl('delete', 'apiserver', 'default');
    await reconciler.tick();
    expect(await refused('get', 'deployment', 'calico-apiserver', '-n', 'calico-system')).toMatch(/NotFound/);
    expect(await refused('get', 'apiservice', 'v3.projectcalico.org')).toMatch(/NotFound/);
    expect(await refused('get', 'rolebinding', 'calico-apiserver-auth-reader', '-n', 'kube-system')).toMatch(
      /NotFound/,
    );
    expect(await refused('get', 'clusterrole', 'calico-crds')).toMatch(/NotFound/);
    expect(await refused('get', 'tigerastatus', 'apiserver')).toMatch(/NotFound/);
    // calico-node is untouched.
    await json('get', 'daemonset', 'calico-node', '-n', 'calico-system');
    await createFrom(
      `apiVersion: operator.tigera.io/v1\nkind: APIServer\nmetadata: {name: default}\nspec: ${JSON.stringify(apiServer.spec ?? {})}\n`,
    );
    await reconciler.tick();
    await json('get', 'apiservice', 'v3.projectcalico.org');
  });

  it('deletes what it made and no longer wants, and nothing it did not make', async () => {
    await kubectl('create', 'configmap', 'leftover', '-n', 'calico-system');
    await kubectl(
      'label',
      'configmap',
      'leftover',
      '-n',
      'calico-system',
      'app.kubernetes.io/managed-by=tigera-operator',
    );
    await kubectl('create', 'configmap', 'users', '-n', 'calico-system');
    await reconciler.tick();
    expect(await refused('get', 'configmap', 'leftover', '-n', 'calico-system')).toMatch(/NotFound/);
    await json('get', 'configmap', 'users', '-n', 'calico-system');
  });

  it('deleting the Installation removes calico-system in order: the CNI plugin’s RBAC last, once no pod is left; the pool stays', async () => {
    const inst = await json('get', 'installation', 'default');
    expect(inst.metadata.finalizers).toContain('tigera.io/operator-cleanup');
    // A pod still in calico-system (never scheduled: this cluster has no scheduler) holds the
    // teardown before what its CNI DEL would need.
    await createFrom(
      'apiVersion: v1\nkind: Pod\nmetadata: {name: lingering, namespace: calico-system}\nspec: {containers: [{name: c, image: calico-ts/httpd:v0.1.0}]}\n',
    );
    await kubectl('delete', 'installation', 'default', '--wait=false');
    await reconciler.tick();
    expect(await refused('get', 'daemonset', 'calico-node', '-n', 'calico-system')).toMatch(/NotFound/);
    await json('get', 'clusterrole', 'calico-cni-plugin');
    await json('get', 'serviceaccount', 'calico-cni-plugin', '-n', 'calico-system');
    const waiting = await json('get', 'tigerastatus', 'calico');
    expect(waiting.status.conditions).toContainEqual(
      expect.objectContaining({ type: 'Progressing', status: 'True', reason: 'Terminating' }),
    );
    await json('get', 'installation', 'default');
    await kubectl('delete', 'pod', 'lingering', '-n', 'calico-system');
    await reconciler.tick();
    expect(await refused('get', 'installation', 'default')).toMatch(/NotFound/);
    expect(await refused('get', 'clusterrole', 'calico-cni-plugin')).toMatch(/NotFound/);
    expect(await refused('get', 'clusterrole', 'calico-node')).toMatch(/NotFound/);
    expect(await refused('get', 'tigerastatus', 'calico')).toMatch(/NotFound/);
    expect(await refused('get', 'apiservice', 'v3.projectcalico.org')).toMatch(/NotFound/);
    // Without kube-controller-manager a deleted namespace stays Terminating; it is deleted all the same.
    const phase = await kubectl('get', 'namespace', 'calico-system', '-o', 'jsonpath={.status.phase}').catch(
      (e: { stderr?: string }) => e.stderr ?? '',
    );
    expect(phase).toMatch(/NotFound|Terminating/);
    await json('get', 'ippools.crd.projectcalico.org', 'default-ipv4-ippool');
  });
});
