import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadClientConfig } from './config/load-client-config.js';
import { createDatastore } from './factory.js';
import { type EtcdServer, etcdAvailable, startEtcd } from './testing/index.js';

// calicoctl.cfg → loadClientConfig → createDatastore → real etcd over mutual TLS; the bytes land
// under upstream's key.
describe.runIf(etcdAvailable())('createDatastore against etcd with TLS', () => {
  let etcd: EtcdServer;
  let dir: string;
  beforeAll(async () => {
    etcd = await startEtcd({ tls: true });
    dir = await mkdtemp(join(tmpdir(), 'calico-factory-int-'));
  });
  afterAll(async () => {
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each(['grpc', 'http2'] as const)(
    'connects with the files a calicoctl.cfg names (%s transport)',
    async (transport) => {
      const tls = etcd.tls!;
      const file = join(dir, 'calicoctl.cfg');
      await writeFile(
        file,
        `apiVersion: projectcalico.org/v3
kind: CalicoAPIConfig
metadata: {}
spec:
  datastoreType: etcdv3
  etcdEndpoints: ${etcd.endpoints.join(',')}
  etcdKeyFile: ${tls.keyFile}
  etcdCertFile: ${tls.certFile}
  etcdCACertFile: ${tls.caFile}
`,
      );
      const ds = await createDatastore(await loadClientConfig({ configFile: file, env: {} }), { transport });
      try {
        expect(ds.backend).toBe('etcdv3');
        await ds.create({
          apiVersion: 'projectcalico.org/v3',
          kind: 'GlobalNetworkSet',
          metadata: { name: `via-tls-${transport}` },
          spec: { nets: ['198.18.7.0/24'] },
        });
        const out = await etcd.etcdctl([
          'get',
          `/calico/resources/v3/projectcalico.org/globalnetworksets/via-tls-${transport}`,
          '--print-value-only',
        ]);
        expect(out.code).toBe(0);
        expect(JSON.parse(out.stdout)).toMatchObject({
          kind: 'GlobalNetworkSet',
          spec: { nets: ['198.18.7.0/24'] },
        });
      } finally {
        await ds.close();
      }
    },
  );
});
