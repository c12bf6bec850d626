/**
 * Test fixture: a typed datastore and IPAM store over one KVStore (memory or etcd), with helpers to
 * create Nodes, pools and reservations and to read IPAM records as the raw JSON in the store.
 */
import type { IPPoolSpec } from '@calico-ts/api';
import { KVDatastore, type KVStore } from '@calico-ts/datastore';
import { parseJsonExact } from '@calico-ts/datastore/internal';
import type { IpamClientOptions } from '../client/types.js';
import { IpamClient } from '../ipam-client.js';
import { IpamStore } from '../store/ipam-store.js';

export interface IpamFixture {
  kv: KVStore;
  ds: KVDatastore;
  store: IpamStore;
  client: IpamClient;
  newClient(opts?: IpamClientOptions): IpamClient;
  node(name: string, labels?: Record<string, string>): Promise<void>;
  pool(name: string, spec: Partial<IPPoolSpec> & { cidr: string }): Promise<void>;
  reservation(name: string, reservedCIDRs: string[]): Promise<void>;
  /** Store the IPAM config exactly as upstream's JSON. */
  ipamConfig(json: Record<string, unknown>): Promise<void>;
  /** The raw JSON value at a key (64-bit integers exact), or undefined. */
  raw(key: string): Promise<Record<string, unknown> | undefined>;
  /** Every key under a prefix. */
  keys(prefix: string): Promise<string[]>;
}

export function ipamFixture(
  kv: KVStore,
  backend: 'memory' | 'etcdv3',
  opts: IpamClientOptions = {},
): IpamFixture {
  const ds = new KVDatastore(kv, { backend });
  const store = new IpamStore(kv);
  const newClient = (o: IpamClientOptions = {}) =>
    new IpamClient(new KVDatastore(kv, { backend }), new IpamStore(kv), {
      sleep: async () => {},
      ...opts,
      ...o,
    });
  return {
    kv,
    ds,
    store,
    client: new IpamClient(ds, store, { sleep: async () => {}, ...opts }),
    newClient,
    async node(name, labels) {
      await ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'Node',
        metadata: labels ? { name, labels } : { name },
        spec: {},
      });
    },
    async pool(name, spec) {
      await ds.create({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name }, spec });
    },
    async reservation(name, reservedCIDRs) {
      await ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPReservation',
        metadata: { name },
        spec: { reservedCIDRs },
      });
    },
    async ipamConfig(json) {
      await kv.put('/calico/ipam/v2/config', JSON.stringify(json));
    },
    async raw(key) {
      const got = await kv.get(key);
      return got ? (parseJsonExact(got.value) as Record<string, unknown>) : undefined;
    },
    async keys(prefix) {
      return (await kv.list(prefix)).kvs.map((x) => x.key);
    },
  };
}
