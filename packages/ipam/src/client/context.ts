/**
 * What every operation of the IPAM client works with, passed in by the facade (ipam-client.ts):
 * the typed datastore (pools, nodes), the IPAM records' store (with its cache), the retry policy
 * and the clock. The operations (assign.ts, release.ts, affinities.ts, handles.ts, check.ts) are
 * functions of this context, so each can be read, and tested, on its own.
 */
import type { Datastore } from '@calico-ts/datastore';
import type { IpamStore } from '../store/ipam-store.js';
import type { AffinityContext } from './affinity-ops.js';
import type { RetryOptions } from './retry.js';

export interface ClientContext {
  readonly ds: Datastore;
  readonly store: IpamStore;
  readonly retry: RetryOptions;
  readonly now: () => Date;
  /** Uniform in [0, 1): retry jitter and the start block of single-address blocks. */
  readonly random: () => number;
  /** The block-affinity protocol's view of the same store and clock. */
  readonly affinity: AffinityContext;
}
