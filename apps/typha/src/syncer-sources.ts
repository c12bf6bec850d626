/**
 * What each syncer type is made of, by source name, and the one set of datastore sources Typha
 * follows for all of them: the union, so a kind both Felix and bird-bridge want (Node, IPPool) is
 * listed and watched once.
 *
 * The names are the ones the agents' own syncers use, so a Typha client hands its consumer the
 * same `{ source, item }` updates: Felix's are `CALC_KINDS` + FelixConfiguration, Node,
 * ClusterInformation, `ipam-blocks` (+ `Service`, `EndpointSlice` on the Kubernetes datastore).
 * bird-bridge follows `affinities` of its own node; through Typha it gets every node's
 * (`block-affinities`) and keeps its own (see `affinityFilter`).
 */
import type { Kind } from '@calico-ts/api';
import {
  type Datastore,
  type KVStore,
  kvSource,
  resourceSource,
  type SyncSource,
} from '@calico-ts/datastore';
import { decodeAffinity, IPAM_ROOT } from '@calico-ts/datastore/internal';
import { FELIX_SYNCER_KINDS, felixKeySources, felixSyncerSources } from '@calico-ts/felix';
import type { SyncerType } from './protocol.js';

/** The Calico kinds of Felix's syncer (its calculation graph's kinds and its configuration). */
export const FELIX_KINDS: readonly Kind[] = FELIX_SYNCER_KINDS;
/** The Calico kinds of bird-bridge's syncer. */
export const BGP_KINDS: readonly Kind[] = ['Node', 'BGPConfiguration', 'BGPPeer', 'BGPFilter', 'IPPool'];
/** Felix's IPAM block source (decoded blocks, `{ key, value }`). */
export const IPAM_BLOCKS = 'ipam-blocks';
/** Every node's block affinities (decoded, `{ key, value }`), for bird-bridge. */
export const BLOCK_AFFINITIES = 'block-affinities';
/** Kubernetes Services and EndpointSlices, on the Kubernetes datastore only. */
export const KUBE_OBJECT_SOURCES = ['Service', 'EndpointSlice'] as const;

/** The source names a syncer type delivers, on a datastore of `backend`. */
export function sourcesOf(type: SyncerType, backend: Datastore['backend']): readonly string[] {
  switch (type) {
    case 'felix':
      return [...FELIX_KINDS, IPAM_BLOCKS, ...(backend === 'kubernetes' ? KUBE_OBJECT_SOURCES : [])];
    case 'bgp':
      return [...BGP_KINDS, BLOCK_AFFINITIES];
  }
}

/**
 * The datastore sources behind every syncer type: each source once. Felix's are the ones its own
 * daemon follows (`felixSyncerSources`); bird-bridge adds the kinds Felix does not follow and every
 * node's block affinities.
 */
export function typhaSources(ds: Datastore, kv: KVStore): SyncSource[] {
  const felix = felixSyncerSources(ds, felixKeySources(kv, ds.backend));
  const followed = new Set(felix.map((s) => s.name));
  return [
    ...felix,
    ...BGP_KINDS.filter((k) => !followed.has(k)).map((k) => resourceSource(ds, k) as SyncSource),
    kvSource(BLOCK_AFFINITIES, kv, `${IPAM_ROOT}host/`, decodeAffinity) as SyncSource,
  ];
}

/**
 * For a bird-bridge client: keeps the `block-affinities` items of `node` only, renamed to the
 * source name its own syncer uses (`affinities`); everything else passes unchanged.
 */
export function affinityFilter(node: string): (source: string, key: string) => string | undefined {
  const prefix = `${IPAM_ROOT}host/${node}/`;
  return (source, key) => {
    if (source !== BLOCK_AFFINITIES) return source;
    return key.startsWith(prefix) ? 'affinities' : undefined;
  };
}
