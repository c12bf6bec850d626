/**
 * IpamStore against records as upstream writes them, one test body for every backend: memory in
 * store/ipam-store.test.ts, etcd over both clients and Kubernetes in store/ipam-store.int.test.ts.
 * `writeRaw` and `readRaw` go around the store (with etcd: the real etcdctl), so the bytes are the
 * ones an upstream component would have written or would read.
 */
import { isDatastoreError, type KVStore } from '@calico-ts/datastore';
import { upstreamBlockJson } from '@calico-ts/datastore/testing';
import { describe, expect, it } from 'vitest';
import { IpamStore } from '../store/ipam-store.js';

/** The error code a promise rejects with, or `resolved`. */
async function codeOf(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'resolved',
    (e: unknown) => (isDatastoreError(e) ? e.code : `non-datastore error: ${String(e)}`),
  );
}

export interface IpamContractEnv {
  store(): KVStore;
  writeRaw(key: string, value: string): Promise<void>;
  readRaw(key: string): Promise<string | undefined>;
  /**
   * What the backend does with record fields it has no schema for: etcd and memory keep the bytes;
   * the Kubernetes API server prunes what the CRD does not declare (as it does for upstream).
   */
  unknownFields?: 'kept' | 'pruned';
}

let n = 0;
function unique(base: string): string {
  n++;
  return `${base}-${process.pid.toString(36)}-${Date.now().toString(36)}-${n}`;
}

/** A distinct 198.19.x.0/26 block per call, so tests on a shared store never collide. */
let blockCounter = 0;
function freshBlockCidr(): string {
  blockCounter++;
  const base = (process.pid % 64) * 4 * 256 + blockCounter * 64;
  return `198.19.${Math.floor(base / 256) % 256}.${base % 256}/26`;
}

export function ipamContract(name: string, env: IpamContractEnv): void {
  describe(`IpamStore contract: ${name}`, () => {
    it('reads an upstream-written block exactly and writes it back byte for byte', async () => {
      const ipam = new IpamStore(env.store());
      const cidr = freshBlockCidr();
      const node = unique('node');
      const key = `/calico/ipam/v2/assignment/ipv4/block/${cidr.replace('/', '-')}`;
      const raw = upstreamBlockJson(cidr, node);
      await env.writeRaw(key, raw);
      const got = await ipam.getBlock(cidr);
      expect(got).toBeDefined();
      const b = got!.value;
      expect(b.cidr).toBe(cidr);
      expect(b.affinity).toBe(`host:${node}`);
      expect(b.allocations.slice(0, 4)).toEqual([0, null, 1, null]);
      expect(b.allocations).toHaveLength(64);
      expect(b.attributes[1]).toEqual({
        handle_id: `vxlan-tunnel-addr-${node}`,
        secondary: { node, type: 'vxlanTunnelAddress' },
      });
      expect(b.sequenceNumber).toBe(1767323045123456789n);
      expect(b.sequenceNumberForAllocation).toEqual({ '0': 1767323045123456789n, '2': 1767323045123456790n });
      // Unchanged read-modify-write keeps every byte.
      const same = await ipam.updateBlock(b, got!.revision);
      expect(await env.readRaw(key)).toBe(raw);
      // A real change: release ordinal 2 as upstream does.
      const next = {
        ...same.value,
        allocations: same.value.allocations.map((a, i) => (i === 2 ? null : a)),
        unallocated: [...same.value.unallocated, 2],
        sequenceNumber: same.value.sequenceNumber + 1n,
        sequenceNumberForAllocation: { '0': 1767323045123456789n },
      };
      await ipam.updateBlock(next, same.revision);
      const text = await env.readRaw(key);
      expect(JSON.parse(text!.replace(/(\d{16,})/g, '"$1"'))).toMatchObject({
        allocations: expect.arrayContaining([0]),
        sequenceNumber: '1767323045123456790',
        sequenceNumberForAllocation: { '0': '1767323045123456789' },
      });
      expect(text).toContain('"unallocated":[1,3,');
      expect(text).toMatch(/,63,2\],"attributes"/);
      // The old revision is stale now.
      expect(await codeOf(ipam.updateBlock(b, got!.revision))).toBe('conflict');
      expect(await codeOf(ipam.deleteBlock(cidr, got!.revision))).toBe('conflict');
    });

    it('keeps fields it does not know through a read-modify-write', async () => {
      const ipam = new IpamStore(env.store());
      const cidr = freshBlockCidr();
      const key = `/calico/ipam/v2/assignment/ipv4/block/${cidr.replace('/', '-')}`;
      const raw =
        `{"cidr":"${cidr}","affinity":null,"allocations":[null],"unallocated":[0],` +
        '"attributes":[{"handle_id":null,"secondary":null,"futureAttr":{"x":1}}],"sequenceNumber":5,' +
        '"sequenceNumberForAllocation":null,"deleted":false,"hostAffinity":"old-node","futureField":[1,2]}';
      await env.writeRaw(key, raw);
      const got = (await ipam.getBlock(cidr))!;
      if (env.unknownFields === 'pruned') {
        // Pruned on write by the server; every known field is intact.
        expect(got.value.extra).toBeUndefined();
        expect(got.value).toMatchObject({ cidr, allocations: [null], unallocated: [0], sequenceNumber: 5n });
        await ipam.updateBlock({ ...got.value, deleted: true }, got.revision);
        expect(await env.readRaw(key)).toBe(
          `{"cidr":"${cidr}","affinity":null,"allocations":[null],"unallocated":[0],` +
            '"attributes":[{"handle_id":null,"secondary":null}],"sequenceNumber":5,' +
            '"sequenceNumberForAllocation":null,"deleted":true}',
        );
        return;
      }
      expect(got.value.extra).toEqual({ hostAffinity: 'old-node', futureField: [1, 2] });
      expect(got.value.attributes[0]!.extra).toEqual({ futureAttr: { x: 1 } });
      await ipam.updateBlock({ ...got.value, deleted: true }, got.revision);
      expect(await env.readRaw(key)).toBe(raw.replace('"deleted":false', '"deleted":true'));
    });

    it('creates new blocks in upstream shape and refuses a second create', async () => {
      const ipam = new IpamStore(env.store());
      const cidr = freshBlockCidr();
      const created = await ipam.createBlock({
        cidr,
        affinity: 'host:n1',
        allocations: Array(64).fill(null),
        unallocated: Array.from({ length: 64 }, (_, i) => i),
        attributes: [],
        sequenceNumber: 1767323045000000000n,
        sequenceNumberForAllocation: null,
        deleted: false,
      });
      expect(await env.readRaw(`/calico/ipam/v2/assignment/ipv4/block/${cidr.replace('/', '-')}`)).toBe(
        `{"cidr":"${cidr}","affinity":"host:n1","allocations":[${Array(64).fill('null').join(',')}],` +
          `"unallocated":[${Array.from({ length: 64 }, (_, i) => i).join(',')}],"attributes":[],` +
          '"sequenceNumber":1767323045000000000,"sequenceNumberForAllocation":null,"deleted":false}',
      );
      expect(await codeOf(ipam.createBlock(created.value))).toBe('already-exists');
      const v4 = await ipam.listBlocks(4);
      expect(v4.items.map((i) => i.value.cidr)).toContain(cidr);
      expect((await ipam.listBlocks(6)).items.map((i) => i.value.cidr)).not.toContain(cidr);
      expect(await ipam.listBlockCidrs(4)).toContain(cidr);
      expect(await ipam.listBlockCidrs(6)).not.toContain(cidr);
      expect(await ipam.getBlocks([cidr, '198.18.255.192/26'])).toEqual([created]);
      await ipam.deleteBlock(cidr, created.revision);
      expect(await ipam.getBlock(cidr)).toBeUndefined();
      expect(await codeOf(ipam.deleteBlock(cidr))).toBe('not-found');
    });

    it('block affinities: upstream JSON, the legacy empty value, CAS, per-host listing', async () => {
      const ipam = new IpamStore(env.store());
      const host = unique('node');
      // Listed in key order, which is text order (".128-26" before ".64-26"): c1 is the one sorting first.
      const [c1, c2] = [freshBlockCidr(), freshBlockCidr()].sort() as [string, string];
      const k1 = `/calico/ipam/v2/host/${host}/ipv4/block/${c1.replace('/', '-')}`;
      const k2 = `/calico/ipam/v2/host/${host}/ipv4/block/${c2.replace('/', '-')}`;
      await env.writeRaw(k1, '{"state":"pending","deleted":false}');
      await env.writeRaw(k2, '');
      const list = await ipam.listAffinities(host);
      expect(list.items.map((i) => i.value)).toEqual([
        { host, cidr: c1, type: 'host', state: 'pending', deleted: false },
        { host, cidr: c2, type: 'host', state: 'confirmed', deleted: false },
      ]);
      const a1 = list.items[0]!;
      const confirmed = await ipam.updateAffinity({ ...a1.value, state: 'confirmed' }, a1.revision);
      expect(await env.readRaw(k1)).toBe('{"state":"confirmed","deleted":false}');
      expect(await codeOf(ipam.updateAffinity({ ...a1.value, state: 'pendingDeletion' }, a1.revision))).toBe(
        'conflict',
      );
      expect((await ipam.listAffinities()).items.map((i) => i.value.host)).toContain(host);
      const c3 = freshBlockCidr();
      await ipam.createAffinity({ host, cidr: c3, state: 'pending', deleted: false });
      expect(await env.readRaw(`/calico/ipam/v2/host/${host}/ipv4/block/${c3.replace('/', '-')}`)).toBe(
        '{"state":"pending","deleted":false}',
      );
      await ipam.deleteAffinity(host, c1, confirmed.revision);
      expect(await ipam.getAffinity(host, c1)).toBeUndefined();
      expect((await ipam.listAffinities(host)).items).toHaveLength(2);
    });

    it('handles and the IPAM config round-trip upstream JSON', async () => {
      const ipam = new IpamStore(env.store());
      const id = unique('k8s-pod-network.0123abcd');
      const hk = `/calico/ipam/v2/handle/${id}`;
      await env.writeRaw(hk, '{"block":{"198.19.0.0/26":1,"198.19.0.128/26":2},"deleted":false}');
      const h = (await ipam.getHandle(id))!;
      expect(h.value).toEqual({
        handleId: id,
        block: { '198.19.0.0/26': 1, '198.19.0.128/26': 2 },
        deleted: false,
      });
      await ipam.updateHandle(
        { ...h.value, block: { ...h.value.block, '198.19.0.0/26': 2, '198.19.0.64/26': 1 } },
        h.revision,
      );
      expect(await env.readRaw(hk)).toBe(
        '{"block":{"198.19.0.0/26":2,"198.19.0.128/26":2,"198.19.0.64/26":1},"deleted":false}',
      );
      expect((await ipam.listHandles()).items.map((i) => i.value.handleId)).toContain(id);
      await ipam.deleteHandle(id);
      expect(await ipam.getHandle(id)).toBeUndefined();

      const current = await ipam.getConfig();
      if (current) await ipam.deleteConfig(current.revision);
      const raw =
        '{"strict_affinity":false,"auto_allocate_blocks":true,"maxBlocksPerHost":0,"kubeVirtVMAddressPersistence":"Enabled"}';
      await env.writeRaw('/calico/ipam/v2/config', raw);
      const cfg = (await ipam.getConfig())!;
      expect(cfg.value).toEqual({
        strict_affinity: false,
        auto_allocate_blocks: true,
        maxBlocksPerHost: 0,
        kubeVirtVMAddressPersistence: 'Enabled',
      });
      expect(await codeOf(ipam.setConfig(cfg.value))).toBe('already-exists');
      await ipam.setConfig({ ...cfg.value, strict_affinity: true }, cfg.revision);
      expect(await env.readRaw('/calico/ipam/v2/config')).toBe(
        raw.replace('"strict_affinity":false', '"strict_affinity":true'),
      );
    });

    it('mirrorAssignEnv: readAssignEnv from memory, following other writers and at once its own', async () => {
      const ipam = new IpamStore(env.store());
      const other = new IpamStore(env.store());
      const host = unique('node');
      const direct = async () => {
        const fresh = await new IpamStore(env.store()).readAssignEnv(host);
        return fresh.affinities.map((a) => `${a.value.cidr} ${a.value.state}`);
      };
      const mirrored = async () =>
        (await ipam.readAssignEnv(host)).affinities.map((a) => `${a.value.cidr} ${a.value.state}`);
      const c1 = freshBlockCidr();
      await other.createAffinity({ host, cidr: c1, state: 'confirmed', deleted: false });
      const mirror = await ipam.mirrorAssignEnv(host);
      try {
        expect(await mirrored()).toEqual([`${c1} confirmed`]);
        // Its own write shows at once; another store's once the watch reports it.
        const c2 = freshBlockCidr();
        const mine = await ipam.createAffinity({ host, cidr: c2, state: 'pending', deleted: false });
        expect(await mirrored()).toContain(`${c2} pending`);
        const a1 = (await other.getAffinity(host, c1))!;
        await other.deleteAffinity(host, c1, a1.revision);
        await ipam.deleteAffinity(host, c2, mine.revision);
        expect(await mirrored()).not.toContain(`${c2} pending`);
        const deadline = Date.now() + 5000;
        while ((await mirrored()).length > 0 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 10));
        expect(await mirrored()).toEqual(await direct());
        expect(await direct()).toEqual([]);
      } finally {
        mirror.close();
      }
    });

    it('rejects malformed records and keys with `invalid`', async () => {
      const ipam = new IpamStore(env.store());
      const cidr = freshBlockCidr();
      await env.writeRaw(
        `/calico/ipam/v2/assignment/ipv4/block/${cidr.replace('/', '-')}`,
        '{"cidr":"nope"}',
      );
      expect(await codeOf(ipam.getBlock(cidr))).toBe('invalid');
      expect(await codeOf(ipam.getBlock('not-a-cidr'))).toBe('invalid');
      expect(await codeOf(ipam.getHandle('a/b'))).toBe('invalid');
    });
  });
}
