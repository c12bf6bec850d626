/**
 * What Felix follows in the datastore, and how each update enters the calculation graph.
 *
 *   FELIX_SYNCER_KINDS (the graph's kinds, FelixConfiguration, Node, ClusterInformation)
 *     + key-store sources: IPAM blocks (`ipam-blocks`), and on the Kubernetes datastore Services
 *       and EndpointSlices ──► felixSyncerSources ──► Syncer (or Typha's client) ──► SyncerUpdate
 *   SyncerUpdate ──► calcUpdateOf ──► CalcUpdate: a resource as it came, an IPAM block as an
 *                                     `IPAMBlock` named by its key, a Kubernetes object unwrapped
 *
 * Typha follows the same sources for its Felix clients (`felixSyncerSources`). Pure apart from
 * building the sources.
 */
import type { Kind } from '@calico-ts/api';
import {
  type Datastore,
  type KVStore,
  kvSource,
  resourceSource,
  type SyncerOptions,
  type SyncerUpdate,
  type SyncSource,
} from '@calico-ts/datastore';
import {
  decodeBlock,
  ENDPOINT_SLICES_PREFIX,
  IPAM_ROOT,
  SERVICES_PREFIX,
} from '@calico-ts/datastore/internal';
import type { BlockRecord } from '../calc/route-resolver.js';
import type { CalcResource, CalcUpdate } from '../calc/types.js';
import type { FelixConfig } from '../config/params.js';

/** The kinds the calculation graph consumes. */
export const CALC_KINDS: readonly Kind[] = [
  'Tier',
  'Profile',
  'GlobalNetworkPolicy',
  'NetworkPolicy',
  'GlobalNetworkSet',
  'NetworkSet',
  'IPPool',
  'HostEndpoint',
  'WorkloadEndpoint',
];

/** The key-store sources of Felix's syncer (see {@link felixKeySources}). */
export interface FelixKeySources {
  /** IPAM blocks, for the routes to other nodes' blocks; absent: no block routes. */
  readonly ipamBlocks?: IpamBlockSource;
  /**
   * Kubernetes Services and EndpointSlices (sources named `Service` and `EndpointSlice`, items
   * `{ key, value }` with the object as value), on the Kubernetes datastore; absent elsewhere, and
   * then a policy's `services` match matches nothing.
   */
  readonly kubeSources?: readonly SyncSource<{ readonly key: string; readonly value: unknown }>[];
}

/** The IPAM blocks as a syncer source: `kvSource('ipam-blocks', kv, blocks prefix, decodeBlock)`. */
export type IpamBlockSource = SyncSource<{ readonly key: string; readonly value: BlockRecord }>;
/** The source name Felix reads IPAM blocks from. */
export const IPAM_BLOCKS_SOURCE = 'ipam-blocks';

/**
 * The sources beside the Calico kinds that Felix follows on a datastore's key store: the IPAM
 * blocks, and on the Kubernetes datastore the Services and EndpointSlices.
 */
export function felixKeySources(kv: KVStore, backend: Datastore['backend']): FelixKeySources {
  const json = (x: { value: string }) => JSON.parse(x.value) as unknown;
  return {
    ipamBlocks: kvSource(IPAM_BLOCKS_SOURCE, kv, `${IPAM_ROOT}assignment/`, decodeBlock),
    ...(backend === 'kubernetes'
      ? {
          kubeSources: [
            kvSource('Service', kv, SERVICES_PREFIX, json),
            kvSource('EndpointSlice', kv, ENDPOINT_SLICES_PREFIX, json),
          ],
        }
      : {}),
  };
}

/** The Calico kinds Felix's syncer follows: the calculation graph's kinds and its own configuration. */
export const FELIX_SYNCER_KINDS: readonly Kind[] = [
  ...CALC_KINDS,
  'FelixConfiguration',
  'Node',
  'ClusterInformation',
];

/**
 * The sources of Felix's syncer: one resource source per kind of {@link FELIX_SYNCER_KINDS} on
 * `datastore`, then the key-store sources given (see {@link felixKeySources}), in that order. Felix
 * builds its own `Syncer` from them, and Typha follows the same sources for its Felix clients.
 *
 * @param datastore - The datastore the kinds are listed and watched on.
 * @param keySources - The IPAM blocks and Kubernetes objects sources; absent ones are left out.
 * @returns The sources, each with the name Felix's updates carry.
 */
export function felixSyncerSources(datastore: Datastore, keySources: FelixKeySources = {}): SyncSource[] {
  return [
    ...FELIX_SYNCER_KINDS.map((k) => resourceSource(datastore, k) as SyncSource),
    ...(keySources.ipamBlocks ? [keySources.ipamBlocks as SyncSource] : []),
    ...((keySources.kubeSources ?? []) as SyncSource[]),
  ];
}

/**
 * What Felix follows the datastore with: its own `Syncer`, or anything of the same shape that
 * delivers the same updates (a Typha client).
 */
export interface FelixSyncer {
  /** Starts following; updates and in-sync arrive through the callbacks it was built with. */
  start(): void;
  /** Stops following; resolves when nothing more will be delivered. */
  stop(): Promise<void>;
  /** Whether in-sync has been delivered. */
  readonly inSync: boolean;
}

/**
 * Builds Felix's syncer from the options its own `Syncer` would get (sources and callbacks) and
 * the resolved configuration (e.g. TyphaAddr).
 */
export type FelixSyncerFactory = (opts: SyncerOptions, config: FelixConfig) => FelixSyncer;

/**
 * The graph's update for a syncer update, or undefined for one Felix handles itself
 * (FelixConfiguration, ClusterInformation).
 */
export function calcUpdateOf(u: SyncerUpdate): CalcUpdate | undefined {
  if (u.source === IPAM_BLOCKS_SOURCE) {
    const item = u.item as { key: string; value?: BlockRecord };
    const block = {
      kind: 'IPAMBlock' as const,
      metadata: { name: item.key },
      ...(item.value !== undefined ? { spec: item.value } : {}),
    } as CalcResource;
    return u.kind === 'set' ? { kind: 'set', resource: block } : { kind: 'delete', resource: block };
  }
  if (u.source === 'Service' || u.source === 'EndpointSlice') {
    const obj = (u.item as { value: CalcResource }).value;
    return { kind: u.kind, resource: obj };
  }
  const r = u.item as { kind: Kind };
  if (r.kind === 'FelixConfiguration' || r.kind === 'ClusterInformation') return undefined;
  return { kind: u.kind, resource: r as unknown as CalcResource };
}
