import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  discoverEtcdEndpoints,
  loadClientConfig,
  loadCniClientConfig,
  readTlsFiles,
} from './load-client-config.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'calico-config-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const V3 = (spec: string) => `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec:\n${spec}`;

describe('loadClientConfig', () => {
  it('reads the file and ignores the environment when the file exists', async () => {
    const file = join(dir, 'calicoctl.cfg');
    await writeFile(file, V3('  etcdEndpoints: http://198.18.0.1:2379\n'));
    const warnings: string[] = [];
    const cfg = await loadClientConfig({
      configFile: file,
      env: { CALICO_DATASTORE_TYPE: 'kubernetes' },
      onWarning: (w) => warnings.push(w),
    });
    expect(cfg).toEqual({ datastoreType: 'etcdv3', etcdEndpoints: ['http://198.18.0.1:2379'] });
    expect(warnings).toEqual([]);
  });

  it('fails naming an explicit file that does not exist', async () => {
    const file = join(dir, 'nope.cfg');
    await expect(loadClientConfig({ configFile: file, env: {} })).rejects.toThrowError(
      expect.objectContaining({ code: 'config', message: `config file ${file} does not exist` }),
    );
  });

  it('fails naming a file that cannot be read', async () => {
    await expect(loadClientConfig({ configFile: dir, env: {} })).rejects.toThrow(
      `cannot read config file ${dir}: is a directory (EISDIR)`,
    );
  });

  it('reports parse errors with the file name', async () => {
    const file = join(dir, 'bad.cfg');
    await writeFile(file, V3('  etcdEndpoint: http://198.18.0.1:2379\n'));
    await expect(loadClientConfig({ configFile: file, env: {} })).rejects.toThrow(
      `${file}: unknown field "spec.etcdEndpoint"`,
    );
  });

  it('passes warnings to onWarning', async () => {
    const file = join(dir, 'old.cfg');
    await writeFile(
      file,
      'apiVersion: v1\nkind: calicoApiConfig\nmetadata:\nspec:\n  datastoreType: "etcdv2"\n',
    );
    const warnings: string[] = [];
    const cfg = await loadClientConfig({ configFile: file, env: {}, onWarning: (w) => warnings.push(w) });
    expect(cfg).toEqual({ datastoreType: 'etcdv3', etcdEndpoints: ['http://127.0.0.1:2379'] });
    expect(warnings).toHaveLength(1);
  });

  it('defaults the kubeconfig to $HOME/.kube/config only when that file exists', async () => {
    // The CNI loader reads no config file, so this exercises the environment path on any host.
    expect(await loadCniClientConfig({}, { env: { HOME: dir } })).toEqual({
      datastoreType: 'kubernetes',
      etcdEndpoints: [],
    });
    await mkdir(join(dir, '.kube'));
    await writeFile(join(dir, '.kube', 'config'), 'apiVersion: v1\n');
    expect(await loadCniClientConfig({}, { env: { HOME: dir } })).toEqual({
      datastoreType: 'kubernetes',
      etcdEndpoints: [],
      kubeconfig: join(dir, '.kube', 'config'),
    });
  });
});

describe('readTlsFiles', () => {
  it('reads key, cert and CA files', async () => {
    await writeFile(join(dir, 'k'), 'KEY');
    await writeFile(join(dir, 'c'), 'CERT');
    await writeFile(join(dir, 'ca'), 'CA');
    const tls = await readTlsFiles({
      datastoreType: 'etcdv3',
      etcdEndpoints: ['https://198.18.0.1:2379'],
      etcdKeyFile: join(dir, 'k'),
      etcdCertFile: join(dir, 'c'),
      etcdCACertFile: join(dir, 'ca'),
    });
    expect({ key: tls?.key?.toString(), cert: tls?.cert?.toString(), ca: tls?.ca?.toString() }).toEqual({
      key: 'KEY',
      cert: 'CERT',
      ca: 'CA',
    });
  });

  it('uses inline PEM, and returns undefined without TLS', async () => {
    const tls = await readTlsFiles({ datastoreType: 'etcdv3', etcdEndpoints: [], etcdCACert: 'PEM' });
    expect(tls?.ca?.toString()).toBe('PEM');
    expect(await readTlsFiles({ datastoreType: 'etcdv3', etcdEndpoints: [] })).toBeUndefined();
  });

  it('names the field and file it cannot read', async () => {
    const missing = join(dir, 'ca.pem');
    await expect(
      readTlsFiles({ datastoreType: 'etcdv3', etcdEndpoints: [], etcdCACertFile: missing }),
    ).rejects.toThrowError(
      expect.objectContaining({
        code: 'config',
        message: `cannot read etcdCACertFile ${missing}: no such file (ENOENT)`,
      }),
    );
  });
});

describe('discoverEtcdEndpoints', () => {
  it('turns SRV records into https and http endpoints', async () => {
    const records: Record<string, { name: string; port: number }[]> = {
      '_etcd-client-ssl._tcp.example.com': [{ name: 'etcd-0.example.com.', port: 2379 }],
      '_etcd-client._tcp.example.com': [{ name: 'etcd-1.example.com', port: 2380 }],
    };
    const resolve = async (name: string) => {
      if (records[name]) return records[name];
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    expect(await discoverEtcdEndpoints('example.com', resolve)).toEqual([
      'https://etcd-0.example.com:2379',
      'http://etcd-1.example.com:2380',
    ]);
    await expect(discoverEtcdEndpoints('example.org', resolve)).rejects.toThrow(
      'etcdDiscoverySrv example.org: no SRV records at _etcd-client-ssl._tcp.example.org or _etcd-client._tcp.example.org',
    );
  });
});
