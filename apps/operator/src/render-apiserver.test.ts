import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { baseFromManifest } from './base.js';
import { apiServerCertificate, certificateObjects } from './certs.js';
import { resolveInstallation } from './installation.js';
import type { KubeObject } from './kube-object.js';
import { render } from './render.js';
import { apiServerDnsNames } from './render-apiserver.js';
import { apiServiceProblem } from './status.js';
import { makeCa } from './x509.js';

const MANIFEST = readFileSync(new URL('../../../deploy/manifests/calico.yaml', import.meta.url), 'utf8');
const base = baseFromManifest(MANIFEST);
const now = new Date();
const ca = makeCa('test-ca', 3650, now);
const certificates = certificateObjects(ca, undefined, undefined, now);
const serving = apiServerCertificate(ca, undefined, apiServerDnsNames(), now);
const config = (() => {
  const r = resolveInstallation({ metadata: { name: 'default' }, spec: { registry: 'reg.example/' } });
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.config;
})();
const find = (objs: readonly KubeObject[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  // biome-ignore lint/suspicious/noExplicitAny: a test reads the rendered object's fields freely
  return o as KubeObject & Record<string, any>;
};
const secretPem = (key: string) =>
  Buffer.from((serving.secret.data as Record<string, string>)[key]!, 'base64').toString();

describe('calico-apiserver render', () => {
  const withApi = (nodeCount: number) =>
    render(base, config, {
      nodeCount,
      certificates,
      installationUid: 'uid-1',
      apiServer: { caPem: ca.certPem, certsHash: serving.hash, secret: serving.secret },
    }).objects;

  it('is rendered only with an APIServer', () => {
    const without = render(base, config, { nodeCount: 3, certificates }).objects;
    expect(without.some((o) => o.kind === 'APIService')).toBe(false);
    expect(without.some((o) => o.metadata.name === 'calico-apiserver')).toBe(false);
    expect(withApi(3).some((o) => o.kind === 'APIService')).toBe(true);
  });

  it('registers v3.projectcalico.org for Service calico-system/calico-api, trusting the operator CA', () => {
    const objs = withApi(3);
    const svc = find(objs, 'APIService', 'v3.projectcalico.org');
    expect(svc.spec).toMatchObject({
      group: 'projectcalico.org',
      version: 'v3',
      service: { name: 'calico-api', namespace: 'calico-system', port: 443 },
    });
    expect(Buffer.from(svc.spec.caBundle, 'base64').toString()).toBe(ca.certPem);
    const service = find(objs, 'Service', 'calico-api');
    expect(service.spec.ports).toEqual([{ name: 'apiserver', port: 443, protocol: 'TCP', targetPort: 5443 }]);
    // Every object is the operator's, owned by the Installation.
    for (const o of objs.filter((x) => x.metadata.name.startsWith('calico-api')))
      expect(o.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('tigera-operator');
  });

  it('runs upstream’s command line with the serving certificate, on the host network, at most 2 replicas', () => {
    const d = find(withApi(3), 'Deployment', 'calico-apiserver');
    const pod = d.spec.template.spec;
    expect(d.spec.replicas).toBe(2);
    expect(find(withApi(1), 'Deployment', 'calico-apiserver').spec.replicas).toBe(1);
    expect(pod.hostNetwork).toBe(true);
    expect(pod.serviceAccountName).toBe('calico-apiserver');
    const c = pod.containers[0];
    expect(c.image).toBe('reg.example/calico-ts/apiserver:v0.1.0');
    expect(c.args).toEqual([
      '--secure-port=5443',
      '--tls-private-key-file=/calico-apiserver-certs/tls.key',
      '--tls-cert-file=/calico-apiserver-certs/tls.crt',
    ]);
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 5443, scheme: 'HTTPS' });
    expect(pod.volumes).toContainEqual({
      name: 'calico-apiserver-certs',
      secret: { secretName: 'calico-apiserver-certs' },
    });
    expect(d.spec.template.metadata.annotations['hash.operator.tigera.io/calico-apiserver-certs']).toBe(
      serving.hash,
    );
  });

  it('delegates authentication and authorization to the main API server', () => {
    const objs = withApi(3);
    expect(find(objs, 'ClusterRoleBinding', 'calico-apiserver-delegate-auth').roleRef.name).toBe(
      'system:auth-delegator',
    );
    const reader = find(objs, 'RoleBinding', 'calico-apiserver-auth-reader');
    expect(reader.metadata.namespace).toBe('kube-system');
    expect(reader.roleRef).toMatchObject({ kind: 'Role', name: 'extension-apiserver-authentication-reader' });
    // No role grants users anything in projectcalico.org: Kubernetes RBAC decides alone.
    for (const o of objs.filter((x) => x.kind === 'ClusterRole'))
      for (const r of (o.rules as { apiGroups?: string[] }[]) ?? [])
        expect(r.apiGroups ?? []).not.toContain('projectcalico.org');
  });

  it('serves a certificate for the Service’s names, signed by the CA, reused while good', () => {
    const cert = new X509Certificate(secretPem('tls.crt'));
    for (const n of ['calico-api.calico-system.svc', 'calico-api.calico-system.svc.cluster.local'])
      expect(cert.subjectAltName).toContain(`DNS:${n}`);
    expect(cert.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
    const pair = { certPem: secretPem('tls.crt'), keyPem: secretPem('tls.key') };
    expect(apiServerCertificate(ca, pair, apiServerDnsNames(), now).hash).toBe(serving.hash);
    const other = makeCa('other-ca', 3650, now);
    expect(apiServerCertificate(other, pair, apiServerDnsNames(), now).hash).not.toBe(serving.hash);
  });
});

describe('apiServiceProblem', () => {
  it('says why the aggregator does not serve it', () => {
    expect(apiServiceProblem('v3.projectcalico.org', undefined)).toBe(
      'APIService v3.projectcalico.org does not exist yet',
    );
    expect(
      apiServiceProblem('v3.projectcalico.org', {
        status: {
          conditions: [
            {
              type: 'Available',
              status: 'False',
              reason: 'FailedDiscoveryCheck',
              message: 'failing or missing response from https://198.18.0.11:5443',
            },
          ],
        },
      }),
    ).toBe(
      'APIService v3.projectcalico.org is not available: FailedDiscoveryCheck: failing or missing response from https://198.18.0.11:5443',
    );
    expect(
      apiServiceProblem('v3.projectcalico.org', {
        status: { conditions: [{ type: 'Available', status: 'True' }] },
      }),
    ).toBeUndefined();
  });
});
