import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDatastore, createKVStore } from './factory.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'calico-factory-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('createDatastore', () => {
  it('builds a working memory datastore', async () => {
    const ds = await createDatastore({ datastoreType: 'memory', etcdEndpoints: [] });
    try {
      expect(ds.backend).toBe('memory');
      const created = await ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'GlobalNetworkSet',
        metadata: { name: 'blocked' },
        spec: { nets: ['198.18.5.0/24'] },
      });
      expect(created.metadata.resourceVersion).toMatch(/^\d+$/);
      const got = await ds.get('GlobalNetworkSet', 'blocked');
      expect(got.spec).toEqual({ nets: ['198.18.5.0/24'] });
    } finally {
      await ds.close();
    }
  });

  it('says what is missing for the Kubernetes datastore outside a pod without a kubeconfig', async () => {
    const saved = process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_HOST;
    try {
      await expect(createDatastore({ datastoreType: 'kubernetes', etcdEndpoints: [] })).rejects.toThrowError(
        expect.objectContaining({
          code: 'config',
          message:
            'no kubeconfig given and not running in a pod (KUBERNETES_SERVICE_HOST is not set): set KUBECONFIG or kubeconfig in the configuration',
        }),
      );
      await expect(
        createKVStore({
          datastoreType: 'kubernetes',
          etcdEndpoints: [],
          kubeconfig: '/nonexistent/kubeconfig',
        }),
      ).rejects.toThrowError(
        expect.objectContaining({
          code: 'config',
          message: expect.stringMatching(/^cannot read kubeconfig \/nonexistent\/kubeconfig: /),
        }),
      );
      await expect(
        createKVStore({
          datastoreType: 'kubernetes',
          etcdEndpoints: [],
          calicoAPIGroup: 'projectcalico.org/v3',
        }),
      ).rejects.toThrowError(expect.objectContaining({ code: 'unsupported' }));
    } finally {
      if (saved !== undefined) process.env.KUBERNETES_SERVICE_HOST = saved;
    }
  });

  it('rejects an invalid configuration before connecting', async () => {
    await expect(createDatastore({ datastoreType: 'etcd' as never, etcdEndpoints: [] })).rejects.toThrowError(
      expect.objectContaining({
        code: 'config',
        message:
          'client config: datastoreType "etcd" is not supported; use one of etcdv3, kubernetes, memory',
      }),
    );
    await expect(
      createDatastore({
        datastoreType: 'etcdv3',
        etcdEndpoints: ['http://198.18.0.1:2379'],
        etcdKeyFile: '/k',
      }),
    ).rejects.toThrow(
      'client config: etcdKeyFile is set but etcdCertFile is not; a client key needs its certificate',
    );
  });

  it('names a TLS file it cannot read', async () => {
    const ca = join(dir, 'ca.pem');
    await expect(
      createDatastore({
        datastoreType: 'etcdv3',
        etcdEndpoints: ['https://198.18.0.1:2379'],
        etcdCACertFile: ca,
      }),
    ).rejects.toThrowError(
      expect.objectContaining({
        code: 'config',
        message: `cannot read etcdCACertFile ${ca}: no such file (ENOENT)`,
      }),
    );
  });
});
