/**
 * The kube-apiserver test server, driven the way later tests drive it: the machine's kubectl with
 * the admin kubeconfig writes a namespace and a ConfigMap, reads them back, finds them again after
 * a restart, and `stop()` leaves neither a process nor a file behind. Needs the kube-apiserver
 * binary scripts/setup.sh builds, etcd, openssl and kubectl.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findKubectl, type KubeApiServer, missingKubePrerequisites, startKubeApiServer } from './index.js';

const missing = missingKubePrerequisites();
if (missing.length > 0) {
  describe('kube-apiserver test server', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(missing.length > 0)('kube-apiserver test server', () => {
  let server: KubeApiServer;
  const kubectlBin = findKubectl()!;

  beforeAll(async () => {
    server = await startKubeApiServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  function kubectl(...args: string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(kubectlBin, ['--kubeconfig', server.kubeconfigPath, ...args], (error, stdout, stderr) => {
        if (error) reject(new Error(`kubectl ${args.join(' ')} failed: ${stderr || error.message}`));
        else resolve(stdout);
      });
    });
  }

  /** GET a path with the server's CA and, optionally, no client certificate. */
  function get(path: string, asAdmin: boolean): Promise<number> {
    return new Promise((resolve, reject) => {
      const tls = asAdmin ? { cert: server.clientCertPem, key: server.clientKeyPem } : {};
      const req = httpsRequest(`${server.url}${path}`, { ca: server.caPem, ...tls }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('serves on loopback with TLS the CA verifies, and answers /readyz', async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(await get('/readyz', true)).toBe(200);
    expect((await kubectl('get', '--raw', '/readyz')).trim()).toBe('ok');
  });

  it('knows the kubeconfig user as a member of system:masters, and RBAC refuses an anonymous list', async () => {
    const review = JSON.parse(await kubectl('auth', 'whoami', '-o', 'json')) as {
      status: { userInfo: { username: string; groups: string[] } };
    };
    expect(review.status.userInfo.username).toBe('calico-ts-admin');
    expect(review.status.userInfo.groups).toContain('system:masters');
    expect(await get('/api/v1/namespaces', false)).toBe(403);
    expect(await get('/api/v1/namespaces', true)).toBe(200);
  });

  it('stores a namespace and a ConfigMap written with kubectl, and keeps them across a restart', async () => {
    await kubectl('create', 'namespace', 'calico-ts-int');
    await kubectl(
      'create',
      'configmap',
      'settings',
      '--namespace=calico-ts-int',
      '--from-literal=pool=198.19.0.0/16',
      '--from-literal=mode=vxlan',
    );
    const read = async () => ({
      ns: JSON.parse(await kubectl('get', 'namespace', 'calico-ts-int', '-o', 'json')),
      cm: JSON.parse(
        await kubectl('get', 'configmap', 'settings', '--namespace=calico-ts-int', '-o', 'json'),
      ),
    });
    const before = await read();
    expect(before.ns.status.phase).toBe('Active');
    expect(before.cm.data).toEqual({ pool: '198.19.0.0/16', mode: 'vxlan' });

    const url = server.url;
    const pid = server.pid;
    await server.restart();
    expect(server.url).toBe(url);
    expect(server.pid).not.toBe(pid);
    expect(alive(pid!)).toBe(false);

    const after = await read();
    expect(after.cm.data).toEqual(before.cm.data);
    expect(after.cm.metadata.uid).toBe(before.cm.metadata.uid);
    expect(after.cm.metadata.resourceVersion).toBe(before.cm.metadata.resourceVersion);
    expect(after.ns.metadata.uid).toBe(before.ns.metadata.uid);
  });

  it('admits a pod with no controller-manager to make a default ServiceAccount', async () => {
    await kubectl('create', 'namespace', 'calico-ts-pods');
    await kubectl(
      'run',
      'web',
      '--namespace=calico-ts-pods',
      '--image=registry.invalid/pause',
      '--restart=Never',
    );
    const pod = JSON.parse(await kubectl('get', 'pod', 'web', '--namespace=calico-ts-pods', '-o', 'json'));
    // Stored and never scheduled: there is no scheduler and no node.
    expect(pod.status.phase).toBe('Pending');
    expect(pod.spec.nodeName).toBeUndefined();
  });

  it('publishes the aggregation layer for extension API servers: the front-proxy CA, its allowed name and headers', async () => {
    const cm = JSON.parse(
      await kubectl(
        'get',
        'configmap',
        'extension-apiserver-authentication',
        '-n',
        'kube-system',
        '-o',
        'json',
      ),
    ) as { data: Record<string, string> };
    const frontProxyCa = await readFile(join(server.dir, 'front-proxy-ca.pem'), 'utf8');
    expect(cm.data['requestheader-client-ca-file']?.trim()).toBe(frontProxyCa.trim());
    expect(cm.data['client-ca-file']?.trim()).toBe(server.caPem.trim());
    expect(JSON.parse(cm.data['requestheader-allowed-names']!)).toEqual(['front-proxy-client']);
    expect(JSON.parse(cm.data['requestheader-username-headers']!)).toEqual(['X-Remote-User']);
    expect(JSON.parse(cm.data['requestheader-group-headers']!)).toEqual(['X-Remote-Group']);
    expect(JSON.parse(cm.data['requestheader-extra-headers-prefix']!)).toEqual(['X-Remote-Extra-']);
    // The certificate it proxies with: issued by that CA, for the allowed name.
    const client = new X509Certificate(await readFile(join(server.dir, 'front-proxy-client.pem')));
    expect(client.subject).toBe('CN=front-proxy-client');
    expect(client.verify(new X509Certificate(frontProxyCa).publicKey)).toBe(true);
  });

  it('stop() leaves no process and no temp dir behind, and is idempotent', async () => {
    const pids = [server.pid!, server.etcd.pid!];
    const dirs = [server.dir, server.etcd.dataDir];
    expect(pids.every(alive)).toBe(true);
    expect(dirs.every((d) => existsSync(d))).toBe(true);
    await server.stop();
    expect(pids.filter(alive)).toEqual([]);
    expect(dirs.filter((d) => existsSync(d))).toEqual([]);
    await server.stop();
    await expect(server.restart()).rejects.toThrow(/restart after stop/);
  });
});
