/**
 * KubeSecretProvider against a real kube-apiserver: a followed Secret is read before `follow`
 * resolves, its edits, deletion and re-creation reach the listeners and `value`, other namespaces
 * and unfollowed names are not seen, a watch survives an API server restart, a service account
 * with the chart's Role (get/list/watch on named Secrets only) reads exactly those, and no log line
 * ever holds a secret value (also while the API server is down).
 */

import { loggerOf } from '@calico-ts/api/log';
import { connectionFromKubeconfig, KubeHttp } from '@calico-ts/datastore/kube';
import { type KubeApiServer, kubeApiServerAvailable, startKubeApiServer } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeSecretProvider, kubeSecretProviderFor } from './kube-secrets.js';

const available = kubeApiServerAvailable();
if (!available) {
  describe('KubeSecretProvider on a real kube-apiserver', () => {
    it.skip('needs kube-apiserver (scripts/setup.sh), etcd and openssl', () => {});
  });
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.skipIf(!available)('KubeSecretProvider on a real kube-apiserver', () => {
  let api: KubeApiServer;
  let admin: KubeHttp;
  const ns = `bgp-${Math.random().toString(16).slice(2, 8)}`;
  const lines: string[] = [];
  const log = loggerOf((level, m, o) => lines.push(JSON.stringify({ level, m, ...o })));
  const providers: KubeSecretProvider[] = [];
  const open = async (namespace: string | null = ns) => {
    const p = await kubeSecretProviderFor(
      { datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: api.kubeconfigPath },
      namespace === null ? {} : { NAMESPACE: namespace },
      log,
      { retryMs: 100 },
    );
    if (!p) throw new Error('no provider');
    providers.push(p);
    return p;
  };
  const secretPath = (namespace: string, name?: string) =>
    `/api/v1/namespaces/${namespace}/secrets${name ? `/${name}` : ''}`;
  const putSecret = async (namespace: string, name: string, data: Record<string, string>) => {
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace },
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
    };
    try {
      await admin.request('PUT', secretPath(namespace, name), body);
    } catch {
      await admin.request('POST', secretPath(namespace), body);
    }
  };
  const VALUES = ['first-pw', 'second-pw', 'third-pw', 'other-ns-pw', 'after-restart-pw'];

  beforeAll(async () => {
    api = await startKubeApiServer();
    admin = new KubeHttp(await connectionFromKubeconfig(api.kubeconfigPath));
    for (const n of [ns, `${ns}-other`]) {
      await admin.request('POST', '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: n },
      });
    }
  }, 120_000);

  afterAll(async () => {
    for (const p of providers) await p.close();
    admin?.close();
    await api?.stop();
    // Whatever happened above, no value reached a log line.
    for (const v of VALUES)
      expect(
        lines.filter((l) => l.includes(v)),
        v,
      ).toEqual([]);
  });

  it('reads a secret before follow resolves, then follows its edits, deletion and re-creation', async () => {
    await putSecret(ns, 'bgp-a', { tor: 'first-pw', other: 'x' });
    const p = await open();
    let changes = 0;
    p.subscribe(() => changes++);
    await p.follow(['bgp-a']);
    expect([p.value('bgp-a', 'tor'), p.value('bgp-a', 'missing'), changes]).toEqual([
      'first-pw',
      undefined,
      0,
    ]);

    await putSecret(ns, 'bgp-a', { tor: 'second-pw' });
    await until('edit seen', () => p.value('bgp-a', 'tor') === 'second-pw');
    expect(changes).toBe(1);
    // An edit that leaves the data as it was is no change.
    await admin.request(
      'PATCH',
      secretPath(ns, 'bgp-a'),
      { metadata: { labels: { a: 'b' } } },
      { contentType: 'application/merge-patch+json' },
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(changes).toBe(1);

    await admin.request('DELETE', secretPath(ns, 'bgp-a'));
    await until('deletion seen', () => p.value('bgp-a', 'tor') === undefined);
    expect(changes).toBe(2);
    await putSecret(ns, 'bgp-a', { tor: 'third-pw' });
    await until('re-creation seen', () => p.value('bgp-a', 'tor') === 'third-pw');
    expect(changes).toBe(3);
    expect(lines.some((l) => l.includes('"keys":["tor"]') && l.includes(`${ns}/bgp-a`))).toBe(true);
  }, 30_000);

  it('a missing secret gives no value and is logged; creating it later brings the value', async () => {
    const p = await open();
    let changes = 0;
    p.subscribe(() => changes++);
    const t = Date.now();
    await p.follow(['bgp-late']);
    expect(Date.now() - t).toBeLessThan(3000);
    expect(p.value('bgp-late', 'tor')).toBeUndefined();
    expect(lines.some((l) => l.includes(`${ns}/bgp-late`) && l.includes('not found'))).toBe(true);
    await putSecret(ns, 'bgp-late', { tor: 'first-pw' });
    await until('created later', () => p.value('bgp-late', 'tor') === 'first-pw');
    expect(changes).toBe(1);
  }, 30_000);

  it('reads only its own namespace (NAMESPACE) and only followed names', async () => {
    await putSecret(`${ns}-other`, 'bgp-b', { tor: 'other-ns-pw' });
    await putSecret(ns, 'bgp-b', { tor: 'first-pw' });
    const p = await open();
    await p.follow(['bgp-b']);
    expect(p.value('bgp-b', 'tor')).toBe('first-pw');
    const q = await open(`${ns}-other`);
    await q.follow(['bgp-b']);
    expect(q.value('bgp-b', 'tor')).toBe('other-ns-pw');
    // Without NAMESPACE: kube-system, where there is no such secret.
    const r = await open(null);
    expect(r.namespace).toBe('kube-system');
    await r.follow(['bgp-b']);
    expect(r.value('bgp-b', 'tor')).toBeUndefined();

    let changes = 0;
    p.subscribe(() => changes++);
    await p.follow([]);
    expect(p.followed()).toEqual([]);
    expect(p.value('bgp-b', 'tor')).toBeUndefined();
    await putSecret(ns, 'bgp-b', { tor: 'second-pw' });
    await new Promise((r2) => setTimeout(r2, 300));
    expect(changes).toBe(0);
  }, 30_000);

  it('as a service account with a Role naming one Secret: reads that one, is refused the others (logged)', async () => {
    await putSecret(ns, 'bgp-allowed', { tor: 'first-pw' });
    await putSecret(ns, 'bgp-denied', { tor: 'second-pw' });
    const sa = 'calico-node';
    await admin.request('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: sa },
    });
    // The Role the chart makes from node.bgpPasswordSecrets.
    await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'calico-node-bgp-passwords' },
      rules: [
        {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: ['bgp-allowed'],
          verbs: ['get', 'list', 'watch'],
        },
      ],
    });
    await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'calico-node-bgp-passwords' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'calico-node-bgp-passwords' },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: ns }],
    });
    const tr = await admin.request<{ status: { token: string } }>(
      'POST',
      `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`,
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } },
    );
    const http = new KubeHttp({
      server: api.url,
      tls: { ca: api.caPem, rejectUnauthorized: true },
      authorization: async () => `Bearer ${tr.status.token}`,
    });
    const p = new KubeSecretProvider({ http, namespace: ns, log, retryMs: 100 });
    providers.push(p);
    let changes = 0;
    p.subscribe(() => changes++);
    await p.follow(['bgp-allowed', 'bgp-denied']);
    expect([p.value('bgp-allowed', 'tor'), p.value('bgp-denied', 'tor')]).toEqual(['first-pw', undefined]);
    expect(
      lines.some(
        (l) => l.includes(`${ns}/bgp-denied`) && l.includes('unauthorized') && l.includes('forbidden'),
      ),
    ).toBe(true);
    // The watch is allowed too: an edit of the named Secret arrives.
    await putSecret(ns, 'bgp-allowed', { tor: 'third-pw' });
    await until('edit seen through the Role', () => p.value('bgp-allowed', 'tor') === 'third-pw');
    expect(changes).toBe(1);
  }, 30_000);

  it('keeps following across an API server restart, and logs the outage without values', async () => {
    await putSecret(ns, 'bgp-c', { tor: 'first-pw' });
    const p = await open();
    await p.follow(['bgp-c']);
    expect(p.value('bgp-c', 'tor')).toBe('first-pw');
    const before = lines.length;
    await api.restart();
    await putSecret(ns, 'bgp-c', { tor: 'after-restart-pw' });
    await until('change after restart', () => p.value('bgp-c', 'tor') === 'after-restart-pw', 30_000);
    // The outage was logged, by code, and the value held meanwhile was kept (no "not found").
    const outage = lines.slice(before).filter((l) => l.includes(`${ns}/bgp-c`));
    expect(outage.some((l) => l.includes('the API server is unavailable'))).toBe(true);
    expect(outage.some((l) => l.includes('not found'))).toBe(false);
  }, 90_000);
});
