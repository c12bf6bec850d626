/**
 * What an assignment on one host starts from, its "environment": the host's Node (its labels feed
 * pool nodeSelectors), every IPPool and IPReservation, the IPAM config and the host's block
 * affinities. Read in one request (`assignEnvReads`), decoded (`decodeAssignEnv`), and derived
 * into what the allocator uses (`deriveAssignEnv`: pools parsed, reservations merged, config
 * defaulted). Pure: the reads are descriptions, the store runs them (ipam-store.ts), and the IPAM
 * cache (ipam-cache.ts) keeps one decoding and one derivation per version of a mirrored host.
 */
import type { Resource } from '@calico-ts/api';
import type { BlockAffinity, IPAMConfig, KV, KVRead, Versioned } from '@calico-ts/datastore';
import {
  affinityPrefix,
  checkKeySegment,
  decodeAffinity,
  decodeConfig,
  decodeResource,
  IPAM_CONFIG_KEY,
  isAffinityKey,
  parseResourceKey,
  resourceKey,
  resourcePrefix,
} from '@calico-ts/datastore/internal';
import { ReservedAddresses } from '../block/reservations.js';
import { IpamError } from '../errors.js';
import { type UsablePool, usablePools } from '../pools.js';

/** `IpamStore.readAssignEnv`'s records. */
export interface AssignEnvRecords {
  node?: Resource;
  pools: Resource[];
  reservations: Resource[];
  config?: Versioned<IPAMConfig>;
  affinities: Versioned<BlockAffinity>[];
}

/** The IPAM config as the allocator reads it. */
export interface IpamConfigValue {
  strictAffinity: boolean;
  autoAllocateBlocks: boolean;
  /** 0 = no configured limit (the client then applies its safety limit of 20). */
  maxBlocksPerHost: number;
}

/** What applies when no IPAM config is stored. */
export const DEFAULT_IPAM_CONFIG: IpamConfigValue = {
  strictAffinity: false,
  autoAllocateBlocks: true,
  maxBlocksPerHost: 0,
};

/** The stored config as the allocator reads it; the defaults when none is stored. */
export function ipamConfigValue(c: IPAMConfig | undefined): IpamConfigValue {
  if (!c) return DEFAULT_IPAM_CONFIG;
  return {
    strictAffinity: c.strict_affinity,
    autoAllocateBlocks: c.auto_allocate_blocks,
    maxBlocksPerHost: c.maxBlocksPerHost,
  };
}

/** An assignment environment, derived: what the allocator's steps read. */
export interface AssignEnv {
  nodeLabels: Record<string, string>;
  pools: UsablePool[];
  reserved: ReservedAddresses;
  config: IpamConfigValue;
}

/** An assignment's starting point: its environment and the host's affinities (both families). */
export interface EnvRead {
  env: AssignEnv;
  affinities: Versioned<BlockAffinity>[];
}

/** What `readAssignEnv(host)` reads, in one request. */
export function assignEnvReads(host: string): KVRead[] {
  checkKeySegment('host', host);
  return [
    { key: resourceKey('Node', host) },
    { key: resourcePrefix('IPPool'), prefix: true },
    { key: resourcePrefix('IPReservation'), prefix: true },
    { key: IPAM_CONFIG_KEY },
    { key: affinityPrefix(host), prefix: true },
  ];
}

/** `assignEnvReads`' results as records; pools and reservations that do not decode are left out. */
export function decodeAssignEnv(results: KV[][]): AssignEnvRecords {
  const [nodes, pools, reservations, configs, affinities] = results as [KV[], KV[], KV[], KV[], KV[]];
  const resources = (kvs: KV[], kind: string): Resource[] => {
    const out: Resource[] = [];
    for (const kv of kvs) {
      const parts = parseResourceKey(kv.key);
      if (!parts || parts.kind !== kind) continue;
      try {
        out.push(decodeResource(kv, parts));
      } catch {
        // left out, as a list leaves it out
      }
    }
    return out;
  };
  const node = nodes[0];
  const config = configs[0];
  return {
    ...(node ? { node: decodeResource(node, parseResourceKey(node.key)!) } : {}),
    pools: resources(pools, 'IPPool'),
    reservations: resources(reservations, 'IPReservation'),
    ...(config ? { config: { value: decodeConfig(config), revision: config.modRevision } } : {}),
    affinities: decodeAll(
      affinities.filter((kv) => isAffinityKey(kv.key)),
      decodeAffinity,
    ),
  };
}

/** The records as the allocator uses them. Throws `not-found` when the host has no Node. */
export function deriveAssignEnv(host: string, r: AssignEnvRecords): EnvRead {
  if (!r.node) {
    throw new IpamError(
      'not-found',
      `Calico Node "${host}" does not exist; IPAM needs it to match IP pool nodeSelectors`,
    );
  }
  const reservedText = r.reservations.flatMap(
    (x) => (x.spec as { reservedCIDRs?: string[] }).reservedCIDRs ?? [],
  );
  return {
    env: {
      nodeLabels: r.node.metadata.labels ?? {},
      pools: usablePools(r.pools as Parameters<typeof usablePools>[0]),
      reserved: ReservedAddresses.fromText(reservedText).reserved,
      config: ipamConfigValue(r.config?.value),
    },
    affinities: r.affinities,
  };
}

/** Each decodable entry with its revision. As upstream's list, entries that do not decode are left out. */
export function decodeAll<T>(kvs: KV[], decode: (kv: KV) => T): Versioned<T>[] {
  const out: Versioned<T>[] = [];
  for (const kv of kvs) {
    try {
      out.push({ value: decode(kv), revision: kv.modRevision });
    } catch {
      // Skipped, as upstream's list does; a get of the same record reports the problem.
    }
  }
  return out;
}
