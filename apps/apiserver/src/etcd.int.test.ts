/**
 * calico-apiserver on the etcd datastore (DATASTORE_TYPE=etcdv3, ETCD_ENDPOINTS), as the program
 * opens it from its environment: a real etcd on loopback, kube-apiserver's reviews answered by a
 * fake (the aggregator path is apiserver.int.test.ts). What is written lands under upstream's keys.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NOOP_LOGGER } from '@calico-ts/api/log';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApiServer, startApiServer } from './server.js';
import { issue, makeCa } from './testing-internal/certs.js';
import { type Client, client, type Identity } from './testing-internal/client.js';

const missing = etcdAvailable() ? [] : ['etcd'];
if (missing.length > 0) {
  describe('calico-apiserver on etcd', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const V3 = '/apis/projectcalico.org/v3';

describe.skipIf(missing.length > 0)('calico-apiserver on etcd', () => {
  let dir: string;
  let etcd: EtcdServer;
  let server: RunningApiServer;
  let c: Client;
  let admin: Identity;
  const key = async (k: string) => {
    const r = await etcd.etcdctl(['get', k, '--print-value-only']);
    return r.stdout.trim() === '' ? undefined : JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-apiserver-etcd-'));
    etcd = await startEtcd();
    const [servingCa, frontProxyCa] = await Promise.all([
      makeCa(dir, 'serving-ca'),
      makeCa(dir, 'front-proxy-ca'),
    ]);
    const serving = await issue(dir, servingCa, 'serving', {
      subject: '/CN=x',
      serverNames: ['DNS:localhost', 'IP:127.0.0.1'],
    });
    const proxy = await issue(dir, frontProxyCa, 'proxy', { subject: '/CN=front-proxy-client' });
    admin = { cert: proxy.cert, key: proxy.key, headers: { 'X-Remote-User': 'admin' } };
    server = await startApiServer({
      securePort: 0,
      bindAddress: '127.0.0.1',
      tlsCertFile: serving.certFile,
      tlsKeyFile: serving.keyFile,
      env: { DATASTORE_TYPE: 'etcdv3', ETCD_ENDPOINTS: etcd.clientUrl },
      log: NOOP_LOGGER,
      delegation: {
        authenticationData: async () => ({
          'requestheader-client-ca-file': frontProxyCa.cert,
          'requestheader-allowed-names': '[]',
          'requestheader-username-headers': '["X-Remote-User"]',
        }),
        reviewToken: async () => undefined,
        reviewAccess: async (spec) => ({ allowed: spec.user === 'admin' }),
      },
    });
    c = client(server.port, servingCa.cert);
  });

  afterAll(async () => {
    await server?.close();
    await etcd?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('is ready once etcd answers, and serves every kind (Nodes and Profiles writable on etcd)', async () => {
    expect((await c.call('GET', '/readyz')).text).toBe('ok');
    const list = (await c.call('GET', V3, { as: admin })).json;
    const verbs = (name: string) => list.resources.find((r: { name: string }) => r.name === name).verbs;
    expect(verbs('nodes')).toContain('create');
    expect(verbs('profiles')).toContain('delete');
  });

  it('writes under upstream’s etcd keys, and deletes an IPPool with its affinities released', async () => {
    const pool = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'p1' },
      spec: { cidr: '198.19.0.0/24' },
    };
    expect((await c.call('POST', `${V3}/ippools`, { as: admin, body: pool })).status).toBe(201);
    expect((await key('/calico/resources/v3/projectcalico.org/ippools/p1')).spec).toMatchObject({
      cidr: '198.19.0.0/24',
      blockSize: 26,
    });
    const np = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'db' },
      spec: { selector: "app == 'db'" },
    };
    expect(
      (await c.call('POST', `${V3}/namespaces/prod/networkpolicies`, { as: admin, body: np })).status,
    ).toBe(201);
    expect(await key('/calico/resources/v3/projectcalico.org/networkpolicies/prod/db')).toMatchObject({
      metadata: { name: 'db', namespace: 'prod' },
    });
    const overlap = { ...pool, metadata: { name: 'p2' }, spec: { cidr: '198.19.0.128/25' } };
    const refused = await c.call('POST', `${V3}/ippools`, { as: admin, body: overlap });
    expect([refused.status, refused.json.reason]).toEqual([422, 'Invalid']);
    expect(refused.json.details.causes[0].field).toBe('spec.cidr');
    expect((await c.call('DELETE', `${V3}/ippools/p1`, { as: admin })).status).toBe(200);
    expect(await key('/calico/resources/v3/projectcalico.org/ippools/p1')).toBeUndefined();
  });
});
