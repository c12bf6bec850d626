/**
 * Block-affinity IP address management on the datastore (upstream `libcalico-go/lib/ipam`): the
 * facade. Each operation lives in its own module under client/, as a function of one
 * `ClientContext`; this class builds the context and keeps the public API.
 *
 *   assign        client/assign.ts, block-search.ts   autoAssign, assignIP
 *   release       client/release.ts                   releaseIPs, releaseByHandle, releaseHandle
 *   affinities    client/affinities.ts, affinity-ops  claimAffinity, releaseAffinity, releaseHostAffinities,
 *                                                     releasePoolAffinities
 *   handles       client/handles.ts, attributes.ts    handle counts; getAssignmentAttributes
 *   check         client/check.ts                     check, gc
 *   environment   client/assign-env-loader.ts         prefetchAssignEnv, mirrorHost, close
 *
 * Design: pools are split into blocks (a /26 or /122 by default); a host claims blocks (an affinity
 * record plus the block's `affinity: host:<node>`) and hands out addresses from its own blocks
 * first, claiming a new block when they are full, and, unless `strictAffinity`, borrowing from other
 * hosts' blocks as a last resort. The calculation lives in `block/` (pure); the operations only
 * read records, apply a pure step, and write back with compare-and-swap. What is kept between
 * requests is in one place, the store's cache (store/ipam-cache.ts).
 *
 * Concurrency: any number of clients, in any number of processes, may run at once. Every change is
 * a compare-and-swap; a lost race re-reads and redoes the pure step, at most `maxRetries` times
 * (default 100, as upstream), then fails with `conflict-retries-exhausted`. Requests of one handle
 * must not race each other (the CNI plugin serialises per container).
 */
import type { Datastore } from '@calico-ts/datastore';
import type { CheckReport } from './check/check-report.js';
import * as affinities from './client/affinities.js';
import * as assign from './client/assign.js';
import { AssignEnvLoader } from './client/assign-env-loader.js';
import { getAssignmentAttributes } from './client/attributes.js';
import * as consistency from './client/check.js';
import type { ClientContext } from './client/context.js';
import * as release from './client/release.js';
import type {
  AffinityReleaseResult,
  AssignedIP,
  AssignIPRequest,
  AssignmentAttributes,
  AutoAssignRequest,
  AutoAssignResult,
  GcOptions,
  GcResult,
  IpamClientOptions,
  ReleaseIPsResult,
  ReleaseSpec,
} from './client/types.js';
import { IpamError } from './errors.js';
import type { IpamStore } from './store/ipam-store.js';

export class IpamClient {
  readonly #ctx: ClientContext;
  readonly #envs: AssignEnvLoader;

  constructor(ds: Datastore, store: IpamStore, opts: IpamClientOptions = {}) {
    const maxRetries = opts.maxRetries ?? 100;
    if (!Number.isInteger(maxRetries) || maxRetries < 1) {
      throw new IpamError('invalid', `maxRetries must be a positive integer, got ${maxRetries}`);
    }
    const now = opts.now ?? (() => new Date());
    const random = opts.random ?? Math.random;
    this.#ctx = {
      ds,
      store,
      now,
      random,
      retry: {
        maxRetries,
        random,
        sleep: opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
      },
      affinity: {
        store,
        nowNs: () => BigInt(now().getTime()) * 1_000_000n,
        nowText: () =>
          now()
            .toISOString()
            .replace(/\.\d+Z$/, 'Z'),
      },
    };
    this.#envs = new AssignEnvLoader(store);
  }

  // ---- the assignment environment ----------------------------------------------------------

  /**
   * Starts the read the next `autoAssign` for `hostname` begins with (its Node, the pools,
   * reservations, IPAM config and its affinities, one request), for a caller that will ask for addresses in
   * a moment but has other work first (the CNI plugin creates the pod's interface meanwhile). Each
   * prefetch serves one `autoAssign` started within a second; otherwise it is dropped unused.
   */
  prefetchAssignEnv(hostname: string): void {
    this.#envs.prefetch(hostname);
  }

  /**
   * Keeps what an assignment on `hostname` starts from (its Node, the pools, reservations, IPAM
   * config and its affinities) in memory, followed by watches, until `close()`: each `autoAssign`
   * for it then needs no read before its write. For a long-lived client that assigns on one host
   * again and again (the CNI plugin service); while a watch is down, assignments read as before.
   * Resolves once the mirror has its first read; a second call for the same host does nothing.
   */
  mirrorHost(hostname: string): Promise<void> {
    return this.#envs.mirrorHost(hostname);
  }

  /** Stops every mirror `mirrorHost` started. The datastore stays open (it is the caller's). */
  close(): void {
    this.#envs.close();
  }

  // ---- assignment --------------------------------------------------------------------------

  /**
   * Assign `num4` IPv4 and `num6` IPv6 addresses to `handleId` on `hostname`. All or nothing: when
   * a family cannot be satisfied, what this call assigned is released again before the error.
   */
  autoAssign(req: AutoAssignRequest): Promise<AutoAssignResult> {
    return assign.autoAssign(this.#ctx, req, (host) => this.#envs.load(host));
  }

  /**
   * Assign one given address. The block is claimed for `hostname` if it does not exist yet; with
   * strict affinity the block must be affine to `hostname`.
   */
  assignIP(ip: string, req: AssignIPRequest): Promise<AssignedIP> {
    return assign.assignIP(this.#ctx, ip, req);
  }

  // ---- release -----------------------------------------------------------------------------

  /** Release addresses (text, or with preconditions). Addresses not assigned are reported, not an error. */
  releaseIPs(ips: readonly (string | ReleaseSpec)[]): Promise<ReleaseIPsResult> {
    return release.releaseIPs(this.#ctx, ips);
  }

  /**
   * Release every address of a handle and delete the handle. Releasing an unknown or already
   * released handle does nothing. Returns the released addresses.
   */
  async releaseByHandle(handleId: string): Promise<{ released: string[] }> {
    const { released } = await release.releaseHandle(this.#ctx, handleId);
    return { released };
  }

  /**
   * As `releaseByHandle`, also saying whether the handle existed (it may hold no address: a
   * handle left behind by an interrupted release is still deleted).
   */
  releaseHandle(handleId: string): Promise<{ released: string[]; existed: boolean }> {
    return release.releaseHandle(this.#ctx, handleId);
  }

  // ---- handles -----------------------------------------------------------------------------

  /** Who holds `ip`. Throws `not-found` when it is not assigned. */
  getAssignmentAttributes(ip: string): Promise<AssignmentAttributes> {
    return getAssignmentAttributes(this.#ctx, ip);
  }

  // ---- affinities --------------------------------------------------------------------------

  /**
   * Claim every block inside `cidr` (which must lie in an enabled pool and be at least a block) for
   * `host`. Blocks that exist already for another host are listed in `failed`.
   */
  claimAffinity(host: string, cidr: string): Promise<{ claimed: string[]; failed: string[] }> {
    return affinities.claimAffinity(this.#ctx, host, cidr);
  }

  /** Release `host`'s affinity for every block inside `cidr`; blocks of other hosts are left alone. */
  releaseAffinity(
    host: string,
    cidr: string,
    opts: { mustBeEmpty?: boolean } = {},
  ): Promise<AffinityReleaseResult> {
    return affinities.releaseAffinity(this.#ctx, host, cidr, opts);
  }

  /** Release every block affinity `host` holds (both families), e.g. when the node goes away. */
  releaseHostAffinities(host: string, opts: { mustBeEmpty?: boolean } = {}): Promise<AffinityReleaseResult> {
    return affinities.releaseHostAffinities(this.#ctx, host, opts);
  }

  /**
   * Release every host's affinity for the blocks inside `cidr`, enabled pool or not (upstream's
   * `ReleasePoolAffinities`, used when a pool is deleted after it was disabled). Empty blocks are
   * deleted; blocks in use keep their addresses and lose their affinity.
   */
  releasePoolAffinities(cidr: string): Promise<AffinityReleaseResult> {
    return affinities.releasePoolAffinities(this.#ctx, cidr);
  }

  // ---- consistency -------------------------------------------------------------------------

  /** Consistency report over all IPAM records (see check/check-report.ts). Read-only. */
  check(): Promise<CheckReport> {
    return consistency.check(this.#ctx);
  }

  /**
   * One leak-collection scan: ask `isOwnerAlive` about every allocation, and release those whose
   * owner has been gone for `gracePeriodMs`. The release is conditional on the allocation's handle
   * and sequence number, so an address re-assigned meanwhile is never freed.
   */
  gc(opts: GcOptions): Promise<GcResult> {
    return consistency.gc(this.#ctx, opts);
  }
}
