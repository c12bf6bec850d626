/**
 * IpamStore's contract (testing-internal/ipam-store-contract.ts) on the real backends: etcd 3.4
 * through both KVStores (the etcd3 package and etcd's gRPC over node:http2), raw access through
 * etcdctl; and the Kubernetes datastore on a real kube-apiserver with the CRDs from deploy/crds,
 * raw access through the API. Memory: ipam-store.test.ts.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createKVStore, EtcdHttp2KVStore, type KVStore } from '@calico-ts/datastore';
import { EtcdKVStore } from '@calico-ts/datastore/etcd3';
import { locateKey } from '@calico-ts/datastore/internal';
import {
  type EtcdServer,
  etcdAvailable,
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ipamContract } from '../testing-internal/ipam-store-contract.js';

const CRDS = join(import.meta.dirname, '../../../../deploy/crds/calico-crds.yaml');

describe.skipIf(!etcdAvailable())('IpamStore on a real etcd', () => {
  let etcd: EtcdServer;
  let grpc: EtcdKVStore;
  let http2: EtcdHttp2KVStore;
  beforeAll(async () => {
    etcd = await startEtcd();
    grpc = new EtcdKVStore({ endpoints: etcd.endpoints });
    http2 = new EtcdHttp2KVStore({ endpoints: etcd.endpoints });
  });
  afterAll(async () => {
    await grpc?.close();
    await http2?.close();
    await etcd?.stop();
  });

  const writeRaw = async (key: string, value: string) => {
    const r = await etcd.etcdctl(['put', key, value]);
    expect(r.code, r.stderr).toBe(0);
  };
  const readRaw = async (key: string) => {
    const r = await etcd.etcdctl(['get', key, '-w', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const kv = (JSON.parse(r.stdout) as { kvs?: { value?: string }[] }).kvs?.[0];
    return kv ? Buffer.from(kv.value ?? '', 'base64').toString() : undefined;
  };

  ipamContract('IpamStore over EtcdKVStore, raw access through etcdctl', {
    store: () => grpc,
    writeRaw,
    readRaw,
  });
  ipamContract('IpamStore over EtcdHttp2KVStore, raw access through etcdctl', {
    store: () => http2,
    writeRaw,
    readRaw,
  });
});

const missing = missingKubePrerequisites({ crds: CRDS });
if (missing.length > 0) {
  describe('IpamStore on the Kubernetes datastore', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

describe.skipIf(missing.length > 0)('IpamStore on a real kube-apiserver', () => {
  let api: KubeApiServer;
  let kv: KVStore;

  /** kubectl against the test's API server; `input` goes to its stdin. Rejects with its stderr. */
  function kubectl(args: string[], input = ''): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        findKubectl()!,
        ['--kubeconfig', api.kubeconfigPath, ...args],
        { maxBuffer: 64 * 1024 * 1024 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
      );
      child.stdin!.end(input);
    });
  }

  beforeAll(async () => {
    // As the datastore's contract suites run it: the watch cache off.
    api = await startKubeApiServer({ extraArgs: ['--watch-cache=false'] });
    await kubectl(['apply', '--server-side', '-f', CRDS]);
    await kubectl(['wait', '--for', 'condition=established', '--timeout', '60s', 'crd', '--all']);
    kv = await createKVStore({
      datastoreType: 'kubernetes',
      etcdEndpoints: [],
      kubeconfig: api.kubeconfigPath,
    });
  }, 120_000);
  afterAll(async () => {
    await kv?.close();
    await api?.stop();
  });

  ipamContract('IpamStore over KubeKVStore, raw access through the API', {
    store: () => kv,
    // Raw records go to the API server as objects through the key mapping; one the mapping
    // refuses is written as it stands (its spec the raw value), as a broken client could.
    writeRaw: async (key, value) => {
      try {
        await kv.put(key, value);
      } catch {
        const loc = locateKey(key);
        // The fields the CRD requires, then whatever the raw value says.
        const required = { allocations: [], unallocated: [], attributes: [], strictAffinity: false };
        const doc = {
          apiVersion: 'crd.projectcalico.org/v1',
          kind: loc.collection.kind,
          metadata: { name: loc.name },
          spec: { ...(loc.collection.kind === 'IPAMBlock' ? required : {}), ...JSON.parse(value) },
        };
        await kubectl(['create', '-f', '-'], JSON.stringify(doc));
      }
    },
    readRaw: async (key) => (await kv.get(key))?.value,
    unknownFields: 'pruned',
  });
});
