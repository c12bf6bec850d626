import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCniPluginError } from '../errors.js';
import { kubeApiSettings, kubeConnection } from './kube-api.js';

let dir: string;
let kubeconfig: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cni-kube-api-'));
  kubeconfig = join(dir, 'calico-kubeconfig');
  // As install-cni writes it: the service address, a CA and a service account token.
  await writeFile(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: local',
      '  cluster:',
      '    server: https://10.96.0.1:443/',
      `    certificate-authority-data: ${Buffer.from('CA-PEM').toString('base64')}`,
      'users:',
      '- name: calico',
      '  user:',
      '    token: sa-token',
      'contexts:',
      '- name: calico-context',
      '  context: {cluster: local, user: calico}',
      'current-context: calico-context',
      '',
    ].join('\n'),
  );
  await writeFile(join(dir, 'ca.pem'), 'OTHER-CA');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('kubeConnection', () => {
  it('the network config’s kubeconfig: its server, CA and token', async () => {
    const c = await kubeConnection(kubeApiSettings({ kubeconfig }, {}), {});
    expect(c.server).toBe('https://10.96.0.1:443');
    expect(String(c.tls.ca)).toBe('CA-PEM');
    expect(await c.authorization?.()).toBe('Bearer sa-token');
  });

  it('KUBECONFIG when the network config names none; the network config’s own wins over it', async () => {
    expect(kubeApiSettings({}, { KUBECONFIG: kubeconfig })).toEqual({ envKubeconfig: kubeconfig });
    expect(kubeApiSettings({ kubeconfig: '/a' }, { KUBECONFIG: kubeconfig })).toEqual({ kubeconfig: '/a' });
    const c = await kubeConnection(kubeApiSettings({}, { KUBECONFIG: kubeconfig }), {});
    expect(c.server).toBe('https://10.96.0.1:443');
  });

  it('k8s_api_root, k8s_auth_token and k8s_certificate_authority replace the kubeconfig’s', async () => {
    const c = await kubeConnection(
      {
        kubeconfig,
        apiRoot: 'https://api.example:6443',
        authToken: 'explicit',
        certificateAuthority: join(dir, 'ca.pem'),
      },
      {},
    );
    expect(c.server).toBe('https://api.example:6443');
    expect(String(c.tls.ca)).toBe('OTHER-CA');
    expect(await c.authorization?.()).toBe('Bearer explicit');
  });

  it('neither a kubeconfig, an API root nor a pod’s service account: code 7 saying what to set', async () => {
    const e = await kubeConnection({}, {}).catch((x: unknown) => x);
    expect(isCniPluginError(e, 'invalid-config')).toBe(true);
    expect((e as Error).message).toMatch(/KUBERNETES_SERVICE_HOST is not set.*kubernetes\.kubeconfig/);
  });

  it('a kubeconfig that does not exist: code 7 naming the file', async () => {
    const e = await kubeConnection({ kubeconfig: join(dir, 'missing') }, {}).catch((x: unknown) => x);
    expect(isCniPluginError(e, 'invalid-config')).toBe(true);
    expect((e as Error).message).toContain(join(dir, 'missing'));
  });
});
