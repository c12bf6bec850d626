/**
 * `IpamRecords` over `@calico-ts/datastore`'s `IpamStore` (upstream's etcd keys and JSON). Only host
 * affinities are used; fields this version does not know travel in `extra` both ways.
 */
import { parseCidr } from '@calico-ts/api/net';
import type { BlockAffinity, IPAMConfig, IpamStore } from '@calico-ts/datastore';
import type { IpamHandle } from '../block/types.js';
import type {
  AffinityEntry,
  AssignEnvRead,
  IpamConfigValue,
  IpamRecords,
  Versioned,
} from './ipam-records.js';

export function adaptIpamStore(store: IpamStore): IpamRecords {
  const handle = (h: {
    block: Record<string, number>;
    deleted: boolean;
    extra?: Record<string, unknown>;
  }): IpamHandle =>
    h.extra ? { block: h.block, deleted: h.deleted, extra: h.extra } : { block: h.block, deleted: h.deleted };
  const versionedHandle = (v: Versioned<Parameters<typeof handle>[0]>): Versioned<IpamHandle> => ({
    value: handle(v.value),
    revision: v.revision,
  });
  const affinity = (a: { state: string; deleted: boolean; extra?: Record<string, unknown> }) =>
    a.extra ? { state: a.state, deleted: a.deleted, extra: a.extra } : { state: a.state, deleted: a.deleted };

  const affinityEntry = (a: Versioned<BlockAffinity>): AffinityEntry => ({
    host: a.value.host,
    cidr: a.value.cidr,
    value: affinity(a.value),
    revision: a.revision,
  });
  const config = (c: Versioned<IPAMConfig>): IpamConfigValue => ({
    strictAffinity: c.value.strict_affinity,
    autoAllocateBlocks: c.value.auto_allocate_blocks,
    maxBlocksPerHost: c.value.maxBlocksPerHost,
  });

  // A mirrored host's records are the same object until something changes: adapted once.
  const adapted = new WeakMap<object, AssignEnvRead>();
  return {
    readAssignEnv: async (host) => {
      const r = await store.readAssignEnv(host);
      let out = adapted.get(r);
      if (!out) {
        out = {
          ...(r.node ? { node: r.node } : {}),
          pools: r.pools,
          reservations: r.reservations,
          ...(r.config ? { config: config(r.config) } : {}),
          affinities: r.affinities.map(affinityEntry),
        };
        adapted.set(r, out);
      }
      return out;
    },
    mirrorAssignEnv: (host) => store.mirrorAssignEnv(host),
    getBlock: (cidr) => store.getBlock(cidr),
    listBlocks: async (family) => (await store.listBlocks(family)).items,
    listBlockCidrs: (family) => store.listBlockCidrs(family),
    getBlocks: (cidrs) => store.getBlocks(cidrs),
    createBlock: (block) => store.createBlock(block),
    updateBlock: (block, revision) => store.updateBlock(block, revision),
    deleteBlock: (cidr, revision) => store.deleteBlock(cidr, revision),

    getAffinity: async (host, cidr) => {
      const a = await store.getAffinity(host, cidr);
      return a && { value: affinity(a.value), revision: a.revision };
    },
    listAffinities: async (opts = {}) => {
      const list = await store.listAffinities(opts.host);
      return list.items
        .filter((a) => opts.family === undefined || parseCidr(a.value.cidr)?.family === opts.family)
        .map(affinityEntry);
    },
    createAffinity: async (host, cidr, value) => {
      const a = await store.createAffinity({ host, cidr, ...value });
      return { value: affinity(a.value), revision: a.revision };
    },
    updateAffinity: async (host, cidr, value, revision) => {
      const a = await store.updateAffinity({ host, cidr, ...value }, revision);
      return { value: affinity(a.value), revision: a.revision };
    },
    deleteAffinity: (host, cidr, revision) => store.deleteAffinity(host, cidr, revision),

    getHandle: async (handleId) => {
      const h = await store.getHandle(handleId);
      return h && versionedHandle(h);
    },
    listHandles: async () => {
      const list = await store.listHandles();
      return new Map(list.items.map((h) => [h.value.handleId, versionedHandle(h)]));
    },
    createHandle: async (handleId, h) => versionedHandle(await store.createHandle({ handleId, ...h })),
    updateHandle: async (handleId, h, revision) =>
      versionedHandle(await store.updateHandle({ handleId, ...h }, revision)),
    deleteHandle: (handleId, revision) => store.deleteHandle(handleId, revision),
    writeHandleAndBlock: async (handleId, h, handleRevision, block, blockRevision) => {
      const r = await store.writeHandleAndBlock({ handleId, ...h }, handleRevision, block, blockRevision);
      return { handle: versionedHandle(r.handle), block: r.block };
    },

    getConfig: async () => {
      const c = await store.getConfig();
      return c && config(c);
    },
  };
}
