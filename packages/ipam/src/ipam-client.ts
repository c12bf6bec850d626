/**
 * Block-affinity IP address management on the datastore (upstream `libcalico-go/lib/ipam`).
 *
 * API: `autoAssign` (n addresses per family for one handle), `assignIP` (one given address),
 * `releaseIPs`, `releaseByHandle`, `getAssignmentAttributes`, affinity management
 * (`claimAffinity`, `releaseAffinity`, `releaseHostAffinities`), and the consistency tools `check`
 * and `gc`.
 *
 * Design: pools are split into blocks (a /26 or /122 by default); a host claims blocks (an affinity
 * record plus the block's `affinity: host:<node>`) and hands out addresses from its own blocks
 * first, claiming a new block when they are full, and, unless `strictAffinity`, borrowing from other
 * hosts' blocks as a last resort. The calculation lives in `block/` (pure); this class only reads
 * records, applies a pure step, and writes back with compare-and-swap.
 *
 *      autoAssign ─► pools (pools.ts) ─► host's affine blocks ─► claim a block ─► borrow
 *                                           │                      │                │
 *                                           └──── assignFromBlock: autoAssignInBlock (pure)
 *                                                 + handle count ++ + block CAS write
 *
 * Ordering on a write: the handle count is raised before the block is written, and lowered again
 * if the block write loses, so a crash can leave a handle counting too much (which `check` reports
 * and `releaseByHandle` repairs) but never an allocation its handle does not know of.
 *
 * Concurrency: any number of clients, in any number of processes, may run at once. Every change is
 * a compare-and-swap; a lost race re-reads and redoes the pure step, at most `maxRetries` times
 * (default 100, as upstream), then fails with `conflict-retries-exhausted`. Requests of one handle
 * must not race each other (the CNI plugin serialises per container).
 */

import type { IPPoolAllowedUse } from '@calico-ts/api';
import {
  cidrContains,
  formatCidr,
  formatIP,
  type IPAddress,
  type IPFamily,
  parseIP,
} from '@calico-ts/api/net';
import type { Datastore, IpamStore } from '@calico-ts/datastore';
import {
  affinityForHost,
  allocationAt,
  allocationsOf,
  assignOrdinalInBlock,
  autoAssignInBlock,
  blockCidrOf,
  bumpSequence,
  countFree,
  ipToOrdinal,
  isBlockEmpty,
  ordinalToIp,
  type ReleaseRequest,
  releaseHandleInBlock,
  releaseInBlock,
  sanitizeHandle,
  toSecondary,
  WINDOWS_RESERVED_HANDLE,
} from './block/allocation-block.js';
import {
  blockCount,
  blockSearchSeed,
  blocksFromSeed,
  blocksWithin,
  randomBelow,
  seededRandom32,
} from './block/block-cidrs.js';
import { incrementHandle } from './block/handle.js';
import { type Cidr, enclosingCidr, familyBits, parseNetwork, parseStrictCidr } from './block/ip-math.js';
import { ReservedAddresses } from './block/reservations.js';
import type { AllocationBlock, AssignmentAttrs } from './block/types.js';
import { buildCheckReport, type CheckReport } from './check/check-report.js';
import { type GcObservation, type GcState, planGc } from './check/gc-plan.js';
import {
  type AffinityContext,
  AffinityMissing,
  BlockChanged,
  BlockClaimConflict,
  BlockNotEmpty,
  claimAffineBlock,
  getBlockFromAffinity,
  getPendingAffinity,
  releaseBlockAffinity,
  StaleAffinity,
} from './client/affinity-ops.js';
import { decrementHandleRecord, incrementHandleRecord } from './client/handle-ops.js';
import {
  asIpamError,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type RetryOptions,
  raceLost,
  withRetries,
} from './client/retry.js';
import { IpamError } from './errors.js';
import { poolForIp, poolSelectsNode, selectPools, type UsablePool, usablePools } from './pools.js';
import {
  type AffinityEntry,
  type AffinityValue,
  type AssignEnvRead,
  DEFAULT_IPAM_CONFIG,
  type IpamConfigValue,
  type IpamRecords,
  type Versioned,
} from './store/ipam-records.js';
import { adaptIpamStore } from './store/ipam-store-adapter.js';

/** Upstream's safety limit when neither the request nor the IPAM config sets `maxBlocksPerHost`. */
export const DEFAULT_MAX_BLOCKS_PER_HOST = 20;
/** An empty block claimed less than this long ago is not reclaimed from its host (upstream: 1 min). */
export const EMPTY_BLOCK_MIN_RECLAIM_AGE_MS = 60_000;

export interface IpamClientOptions {
  /** Compare-and-swap attempts per step before giving up. Default 100. */
  maxRetries?: number;
  now?: () => Date;
  /** Uniform in [0, 1); used for retry jitter and the start block of single-address blocks. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** One assigned address with its block's prefix length, e.g. `198.19.0.5/26`. */
export interface AssignedIP {
  family: IPFamily;
  address: string;
  prefixLength: number;
  /** `address/prefixLength`, as a CNI IPAM result carries it. */
  cidr: string;
  /** The block it came from, e.g. `198.19.0.0/26`. */
  block: string;
}

export interface AutoAssignRequest {
  num4: number;
  num6: number;
  handleId: string;
  attrs: AssignmentAttrs;
  /** The Calico Node name the addresses are for (its labels feed pool nodeSelectors). */
  hostname: string;
  /** Pool names or CIDRs to use instead of selector-based choice. */
  ipv4Pools?: readonly string[];
  ipv6Pools?: readonly string[];
  /** Labels of the pod's namespace, for pool namespaceSelectors. */
  namespaceLabels?: Record<string, string>;
  /** Per-request block limit; the stricter of this and the IPAM config's applies. */
  maxBlocksPerHost?: number;
  /** What the addresses are for. Default `Workload`. */
  use?: IPPoolAllowedUse;
}

export interface AutoAssignResult {
  ipv4: AssignedIP[];
  ipv6: AssignedIP[];
}

export interface AssignIPRequest {
  handleId: string;
  attrs: AssignmentAttrs;
  hostname: string;
}

export interface ReleaseSpec {
  ip: string;
  /** Release only if the address still belongs to this handle. */
  handleId?: string;
  /** Release only if the allocation still has this sequence number. */
  sequenceNumber?: bigint;
}

export interface ReleaseIPsResult {
  released: string[];
  /** Addresses that were not assigned (already free, or in no block). */
  notAssigned: string[];
  /** Addresses left alone because a handle or sequence-number precondition did not hold. */
  mismatched: string[];
}

export interface AssignmentAttributes {
  handleId: string | null;
  attrs: Record<string, string>;
  block: string;
  sequenceNumber: bigint;
}

export interface AffinityReleaseResult {
  /** Blocks whose affinity was released (deleted when empty). */
  released: string[];
  /** Blocks left alone: not empty when emptiness was required. */
  notEmpty: string[];
}

export interface GcOptions {
  /** Whether the owner an allocation's attributes describe (pod, node, tunnel) still exists. */
  isOwnerAlive: (
    attrs: Record<string, string>,
    allocation: { ip: string; handleId: string | null },
  ) => Promise<boolean>;
  gracePeriodMs: number;
  /** Time of this scan (ms since the epoch, or a Date). Default: the client's clock. */
  now?: number | Date;
  /** First-seen times from earlier scans, kept in memory by the caller; updated in place. */
  state: GcState;
}

export interface GcResult {
  released: string[];
  /** Candidates still inside their grace period, with when they become releasable (ms). */
  pending: { ip: string; handleId: string | null; releaseAt: number }[];
}

interface AssignEnv {
  nodeLabels: Record<string, string>;
  pools: UsablePool[];
  reserved: ReservedAddresses;
  config: IpamConfigValue;
}

interface FamilyRequest {
  family: IPFamily;
  num: number;
  host: string;
  handleId: string;
  secondary: Record<string, string>;
  requested: readonly string[] | undefined;
  namespaceLabels: Record<string, string> | undefined;
  maxBlocksPerHost: number;
  use: IPPoolAllowedUse;
}

type FoundBlock =
  | { kind: 'block'; block: Versioned<AllocationBlock>; newlyClaimed: boolean }
  | { kind: 'no-free-blocks' }
  | { kind: 'block-limit' };

/** How long a prefetch stays usable. */
const PREFETCH_TTL_MS = 1000;
/** Blocks read by CIDR in one request at most (etcd's default limit is 128 operations a Txn). */
const MAX_BLOCKS_READ_TOGETHER = 64;

interface Prefetched {
  at: number;
  read: Promise<EnvRead>;
}

/** An assignment's starting point: its environment and the host's affinities (both families). */
interface EnvRead {
  env: AssignEnv;
  affinities: AffinityEntry[];
}

export class IpamClient {
  private readonly retry: RetryOptions;
  private readonly now: () => Date;
  private readonly random: () => number;
  private readonly affinityCtx: AffinityContext;
  private readonly records: IpamRecords;
  /**
   * The newest version of each block this client has read or written. An allocation's first try
   * at one of its host's blocks starts from it instead of reading the block again: in a long-lived
   * client (the CNI plugin service) this client is usually the only writer of its host's blocks.
   * It is only a starting point: a version someone else has replaced fails the compare-and-swap,
   * and the retry reads the block afresh.
   */
  private readonly knownBlocks = new Map<string, Versioned<AllocationBlock>>();
  /** Reads started by `prefetchAssignEnv`, per host, oldest first; each serves one `autoAssign`. */
  private readonly prefetched = new Map<string, Prefetched[]>();
  /** Hosts whose assignment environment is mirrored (`mirrorHost`): opening or open. */
  private readonly mirrored = new Map<string, Promise<void>>();
  private readonly mirrorStops = new Map<string, { close(): void }>();
  /** `loadEnv`'s result per records object read (mirrored reads repeat the same object). */
  private readonly derivedEnv = new WeakMap<AssignEnvRead, EnvRead>();

  constructor(
    private readonly ds: Datastore,
    store: IpamStore,
    opts: IpamClientOptions = {},
  ) {
    const records = withBlockCache(adaptIpamStore(store), this.knownBlocks);
    this.records = records;
    const maxRetries = opts.maxRetries ?? 100;
    if (!Number.isInteger(maxRetries) || maxRetries < 1) {
      throw new IpamError('invalid', `maxRetries must be a positive integer, got ${maxRetries}`);
    }
    this.now = opts.now ?? (() => new Date());
    this.random = opts.random ?? Math.random;
    this.retry = {
      maxRetries,
      random: this.random,
      sleep: opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
    };
    this.affinityCtx = {
      records,
      nowNs: () => BigInt(this.now().getTime()) * 1_000_000n,
      nowText: () =>
        this.now()
          .toISOString()
          .replace(/\.\d+Z$/, 'Z'),
    };
  }

  // ---- assignment --------------------------------------------------------------------------

  /**
   * Starts the read the next `autoAssign` for `hostname` begins with (its Node, the pools,
   * reservations, IPAM config and its affinities, one request), for a caller that will ask for addresses in
   * a moment but has other work first (the CNI plugin creates the pod's interface meanwhile). Each
   * prefetch serves one `autoAssign` started within a second; otherwise it is dropped unused.
   */
  prefetchAssignEnv(hostname: string): void {
    // A mirrored host's environment is in memory, and fresher when the assignment asks for it.
    if (this.mirrored.has(hostname)) return;
    const now = Date.now();
    const queue = (this.prefetched.get(hostname) ?? []).filter((p) => now - p.at < PREFETCH_TTL_MS);
    const p: Prefetched = { at: now, read: this.loadEnv(hostname) };
    // Failures surface to the autoAssign that uses them; an unused one must not be unhandled.
    p.read.catch(() => undefined);
    queue.push(p);
    this.prefetched.set(hostname, queue);
  }

  /**
   * Keeps what an assignment on `hostname` starts from (its Node, the pools, reservations, IPAM
   * config and its affinities) in memory, followed by watches, until `close()`: each `autoAssign`
   * for it then needs no read before its write. For a long-lived client that assigns on one host
   * again and again (the CNI plugin service); while a watch is down, assignments read as before.
   * Resolves once the mirror has its first read; a second call for the same host does nothing.
   */
  async mirrorHost(hostname: string): Promise<void> {
    let m = this.mirrored.get(hostname);
    if (!m) {
      const opening = this.records.mirrorAssignEnv(hostname).then((mirror) => {
        // Closed (or replaced) while it opened: stopped at once.
        if (this.mirrored.get(hostname) === opening) this.mirrorStops.set(hostname, mirror);
        else mirror.close();
      });
      m = opening;
      this.mirrored.set(hostname, m);
      m.catch(() => {
        if (this.mirrored.get(hostname) === opening) this.mirrored.delete(hostname);
      });
    }
    await m;
  }

  /** Stops every mirror `mirrorHost` started. The datastore stays open (it is the caller's). */
  close(): void {
    for (const mirror of this.mirrorStops.values()) mirror.close();
    this.mirrorStops.clear();
    this.mirrored.clear();
  }

  private takePrefetched(hostname: string): Prefetched | undefined {
    const queue = this.prefetched.get(hostname);
    if (!queue) return undefined;
    const now = Date.now();
    let fresh: Prefetched | undefined;
    while (queue.length > 0) {
      const p = queue.shift() as Prefetched;
      if (now - p.at < PREFETCH_TTL_MS) {
        fresh = p;
        break;
      }
    }
    if (queue.length === 0) this.prefetched.delete(hostname);
    return fresh;
  }

  /**
   * Assign `num4` IPv4 and `num6` IPv6 addresses to `handleId` on `hostname`. All or nothing: when
   * a family cannot be satisfied, what this call assigned is released again before the error.
   */
  async autoAssign(req: AutoAssignRequest): Promise<AutoAssignResult> {
    for (const [k, v] of [
      ['num4', req.num4],
      ['num6', req.num6],
    ] as const) {
      if (!Number.isInteger(v) || v < 0)
        throw new IpamError('invalid', `${k} must be a non-negative integer, got ${v}`);
    }
    if (!req.handleId) throw new IpamError('invalid', 'handleId must not be empty');
    if (!req.hostname) throw new IpamError('invalid', 'hostname must not be empty');
    const handleId = sanitizeHandle(req.handleId);
    const result: AutoAssignResult = { ipv4: [], ipv6: [] };
    if (req.num4 === 0 && req.num6 === 0) return result;
    try {
      // The host's Node, the pools, reservations, config and its affinities: one request.
      const { env, affinities } = await (this.takePrefetched(req.hostname)?.read ??
        this.loadEnv(req.hostname));
      const ofFamily = (family: 4 | 6) =>
        affinities.filter((a) => parseStrictCidr(a.cidr)?.family === family);
      const listed4 = ofFamily(4);
      const listed6 = ofFamily(6);
      const common = {
        host: req.hostname,
        handleId,
        secondary: toSecondary(req.attrs),
        namespaceLabels: req.namespaceLabels,
        maxBlocksPerHost: req.maxBlocksPerHost ?? 0,
        use: req.use ?? 'Workload',
      };
      if (req.num4 > 0) {
        await this.assignFamily(
          { ...common, family: 4, num: req.num4, requested: req.ipv4Pools },
          env,
          result.ipv4,
          listed4,
        );
      }
      if (req.num6 > 0) {
        await this.assignFamily(
          { ...common, family: 6, num: req.num6, requested: req.ipv6Pools },
          env,
          result.ipv6,
          listed6,
        );
      }
      return result;
    } catch (e) {
      const assigned = [...result.ipv4, ...result.ipv6];
      if (assigned.length > 0) {
        await this.releaseIPs(assigned.map((a) => ({ ip: a.address, handleId }))).catch(() => undefined);
      }
      throw asIpamError(e, `assigning addresses to ${handleId} on ${req.hostname}`);
    }
  }

  private async loadEnv(hostname: string): Promise<EnvRead> {
    const r = await this.records.readAssignEnv(hostname);
    // A mirrored host answers with the same records until something changes: derived once.
    let env = this.derivedEnv.get(r);
    if (!env) {
      env = this.deriveEnv(hostname, r);
      this.derivedEnv.set(r, env);
    }
    return env;
  }

  private deriveEnv(hostname: string, r: AssignEnvRead): EnvRead {
    if (!r.node) {
      throw new IpamError(
        'not-found',
        `Calico Node "${hostname}" does not exist; IPAM needs it to match IP pool nodeSelectors`,
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
        config: r.config ?? DEFAULT_IPAM_CONFIG,
      },
      affinities: r.affinities,
    };
  }

  private async config(): Promise<IpamConfigValue> {
    return (await this.records.getConfig()) ?? DEFAULT_IPAM_CONFIG;
  }

  private async assignFamily(
    req: FamilyRequest,
    env: AssignEnv,
    out: AssignedIP[],
    /** The host's affinities of this family, read with `env`. */
    listed: AffinityEntry[],
  ): Promise<void> {
    const pools = selectPools(env.pools, {
      family: req.family,
      requested: req.requested,
      nodeLabels: env.nodeLabels,
      namespaceLabels: req.namespaceLabels,
      use: req.use,
    });
    // What the list returned is used as is for the first try at each block (one read fewer per
    // allocation); a retry after a lost race reads the affinity again.
    const listedAffinity = new Map(listed.map((a) => [a.cidr, { value: a.value, revision: a.revision }]));
    const hostBlocks = listed.map((a) => parseStrictCidr(a.cidr)).filter((c): c is Cidr => c !== undefined);
    const affine = hostBlocks.filter((c) => pools.some((p) => cidrContains(p.cidr, c)));
    await this.releaseUnselectedBlocks(req.host, hostBlocks, env);
    let owned = affine.length;
    const maxBlocks = effectiveMaxBlocks(req.maxBlocksPerHost, env.config.maxBlocksPerHost);
    const remainingAffine = [...affine];
    let fruitless = 0;

    while (out.length < req.num) {
      const found = await this.findOrClaimBlock(
        req,
        pools,
        env,
        remainingAffine,
        owned < maxBlocks,
        listedAffinity,
      );
      if (found.kind === 'no-free-blocks') break;
      if (found.kind === 'block-limit') {
        throw new IpamError(
          'block-limit',
          `host ${req.host} needs another IPv${req.family} block but already has ${owned}, the limit (maxBlocksPerHost ${maxBlocks})`,
        );
      }
      if (found.newlyClaimed) owned++;
      const got = await this.assignFromBlock(
        found.block,
        req.num - out.length,
        req,
        env,
        env.config.strictAffinity,
      );
      out.push(...got);
      if (got.length === 0 && ++fruitless >= this.retry.maxRetries) {
        throw new IpamError(
          'conflict-retries-exhausted',
          `assigning IPv${req.family} addresses on ${req.host}: blocks kept filling up under concurrent requests`,
        );
      }
    }

    if (out.length < req.num && !env.config.strictAffinity) await this.borrow(req, pools, env, out);

    if (out.length < req.num) {
      const names = pools.map((p) => `${p.name} (${formatCidr(p.cidr)})`).join(', ');
      const why = env.config.strictAffinity
        ? '; strict affinity is on, so blocks of other hosts are not used'
        : !env.config.autoAllocateBlocks
          ? '; automatic block allocation is off'
          : '';
      throw new IpamError(
        'pool-exhausted',
        `no free IPv${req.family} address left in IP pool(s) ${names} for host ${req.host}: assigned ${out.length} of ${req.num}${why}`,
      );
    }
  }

  /**
   * Give up this host's empty blocks in enabled pools whose nodeSelector no longer matches it (its
   * labels changed), so other hosts can use them. Best effort, as upstream: failures are ignored.
   */
  private async releaseUnselectedBlocks(host: string, blocks: Cidr[], env: AssignEnv): Promise<void> {
    for (const c of blocks) {
      const pool = env.pools.find((p) => !p.disabled && cidrContains(p.cidr, c));
      if (!pool || poolSelectsNode(pool, env.nodeLabels)) continue;
      await releaseBlockAffinity(this.affinityCtx, host, formatCidr(c), { requireEmpty: true }).catch(
        () => undefined,
      );
    }
  }

  /** A block of this host with a free address: an affine one, else a newly claimed one. */
  private async findOrClaimBlock(
    req: FamilyRequest,
    pools: UsablePool[],
    env: AssignEnv,
    remainingAffine: Cidr[],
    allowNewClaim: boolean,
    listedAffinity: Map<string, Versioned<AffinityValue>>,
  ): Promise<FoundBlock> {
    while (remainingAffine.length > 0) {
      const cidr = remainingAffine.shift() as Cidr;
      if (env.reserved.matchesWholeCidr(cidr)) continue;
      const text = formatCidr(cidr);
      const block = await withRetries(
        `loading affine block ${text} of ${req.host}`,
        this.retry,
        async (i) => {
          const aff =
            (i === 0 ? listedAffinity.get(text) : undefined) ??
            (await this.records.getAffinity(req.host, text));
          if (!aff) return undefined;
          const known = i === 0 ? this.knownBlocks.get(text) : undefined;
          if (
            known &&
            aff.value.state === 'confirmed' &&
            known.value.affinity === affinityForHost(req.host)
          ) {
            return known;
          }
          try {
            return await getBlockFromAffinity(this.affinityCtx, req.host, cidr, aff);
          } catch (e) {
            if (e instanceof StaleAffinity || e instanceof BlockClaimConflict) return undefined;
            throw e;
          }
        },
      );
      if (block && countFree(block.value, env.reserved) > 0)
        return { kind: 'block', block, newlyClaimed: false };
    }

    if (!allowNewClaim) return { kind: 'block-limit' };
    if (!env.config.autoAllocateBlocks) return { kind: 'no-free-blocks' };

    return withRetries(`claiming a new IPv${req.family} block for ${req.host}`, this.retry, async () => {
      const subnet = await this.findUsableBlock(req, pools, env);
      if (!subnet) return { kind: 'no-free-blocks' } as const;
      const text = formatCidr(subnet);
      try {
        const block = await withRetries(`claiming block ${text} for ${req.host}`, this.retry, async () => {
          const pa = await getPendingAffinity(this.affinityCtx, req.host, text);
          return getBlockFromAffinity(this.affinityCtx, req.host, subnet, pa);
        });
        if (countFree(block.value, env.reserved) === 0) throw raceLost(`block ${text}`);
        return { kind: 'block', block, newlyClaimed: true } as const;
      } catch (e) {
        // Someone else got the block: look for another.
        if (e instanceof BlockClaimConflict || e instanceof StaleAffinity) throw raceLost(`block ${text}`);
        throw e;
      }
    });
  }

  /**
   * A block CIDR this host can claim (no block yet), or one of its own with room; failing that, an
   * empty block claimed by another host long enough ago, whose affinity is then released.
   */
  private async findUsableBlock(
    req: FamilyRequest,
    pools: UsablePool[],
    env: AssignEnv,
  ): Promise<Cidr | undefined> {
    // The walk order decides. Most walks end at a CIDR with no block after passing few or none, so
    // the block keys are listed alone and only the blocks passed on the way are read.
    const existing = new Set(await this.records.listBlockCidrs(req.family));
    const passed: Cidr[] = [];
    let unclaimed: Cidr | undefined;
    walk: for (const pool of pools) {
      const seed = blockSearchSeed(req.host, pool.cidr, pool.blockSize, Math.floor(this.random() * 2 ** 32));
      for (const subnet of blocksFromSeed(pool.cidr, pool.blockSize, seed)) {
        if (env.reserved.matchesWholeCidr(subnet)) continue;
        if (!existing.has(formatCidr(subnet))) {
          unclaimed = subnet;
          break walk;
        }
        passed.push(subnet);
      }
    }
    const read =
      unclaimed && passed.length <= MAX_BLOCKS_READ_TOGETHER
        ? await this.records.getBlocks(passed.map(formatCidr))
        : passed.length > 0
          ? await this.records.listBlocks(req.family)
          : [];
    const blocks = new Map(read.map((b) => [b.value.cidr, b.value]));
    const mine = affinityForHost(req.host);
    const empties: AllocationBlock[] = [];
    for (const subnet of passed) {
      const b = blocks.get(formatCidr(subnet));
      if (!b) return subnet;
      const free = countFree(b, env.reserved);
      if (b.affinity === mine && free > 0) return subnet;
      if (b.affinity?.startsWith('host:') && b.affinity !== mine && free > 0 && isBlockEmpty(b))
        empties.push(b);
    }
    if (unclaimed) return unclaimed;
    const now = this.now().getTime();
    for (const b of empties) {
      const claimed = b.affinity_claim_time ? Date.parse(b.affinity_claim_time) : 0;
      if (now - (Number.isNaN(claimed) ? 0 : claimed) < EMPTY_BLOCK_MIN_RECLAIM_AGE_MS) continue;
      const owner = (b.affinity as string).slice('host:'.length);
      try {
        await releaseBlockAffinity(this.affinityCtx, owner, b.cidr, {
          requireEmpty: true,
          requiredSequenceNumber: b.sequenceNumber,
        });
        return blockCidrOf(b);
      } catch (e) {
        if (
          e instanceof BlockChanged ||
          e instanceof BlockNotEmpty ||
          e instanceof BlockClaimConflict ||
          e instanceof AffinityMissing ||
          isConflict(e) ||
          isNotFound(e)
        ) {
          continue;
        }
        throw e;
      }
    }
    return undefined;
  }

  /** Take up to `num` addresses from one block (CAS, re-reading on conflict). */
  private async assignFromBlock(
    start: Versioned<AllocationBlock>,
    num: number,
    req: FamilyRequest,
    env: AssignEnv,
    affinityCheck: boolean,
  ): Promise<AssignedIP[]> {
    let current: Versioned<AllocationBlock> | undefined = start;
    const cidrText = start.value.cidr;
    return withRetries(
      `assigning from block ${cidrText}`,
      this.retry,
      async (attempt) => {
        if (attempt > 0) current = await this.records.getBlock(cidrText);
        if (!current) return [];
        const b = current.value;
        if (affinityCheck && b.affinity !== affinityForHost(req.host)) {
          throw new IpamError(
            'affinity-mismatch',
            `block ${cidrText} is ${b.affinity ? `affine to ${b.affinity}` : 'not affine to any host'}, and strict affinity forbids ${req.host} to use it`,
          );
        }
        const r = autoAssignInBlock(b, num, req.handleId, req.secondary, env.reserved);
        if (r.ordinals.length === 0) return [];
        // The handle's count and the block's allocation in one transaction. The first try takes the
        // handle to be new (a pod's own); when it is not, or the block moved on, the retry reads both.
        const handle = attempt === 0 ? undefined : await this.records.getHandle(req.handleId);
        await this.records.writeHandleAndBlock(
          req.handleId,
          incrementHandle(handle?.value, cidrText, r.ordinals.length),
          handle?.revision,
          bumpSequence(r.block),
          current.revision,
        );
        const cidr = blockCidrOf(b);
        return r.ordinals.map((o) => assigned(ordinalToIp(cidr, o), cidr));
      },
      // A lost race on the block, or a handle that exists (or vanished) after all: read and retry.
      (e) => isConflict(e) || isAlreadyExists(e) || isNotFound(e),
    );
  }

  /** Last resort without strict affinity: free addresses in any existing block of the pools. */
  private async borrow(
    req: FamilyRequest,
    pools: UsablePool[],
    env: AssignEnv,
    out: AssignedIP[],
  ): Promise<void> {
    const existing = await this.records.listBlocks(req.family);
    for (const pool of pools) {
      if (out.length >= req.num) return;
      const n = blockCount(pool.cidr, pool.blockSize);
      if (n === 0n) continue;
      const seed = blockSearchSeed(req.host, pool.cidr, pool.blockSize, Math.floor(this.random() * 2 ** 32));
      const startIdx = randomBelow(seededRandom32(seed), n);
      const size = 1n << BigInt(familyBits(pool.cidr.family) - pool.blockSize);
      const candidates = existing
        .map((b) => ({ b, cidr: parseStrictCidr(b.value.cidr) }))
        .filter(
          (x): x is { b: Versioned<AllocationBlock>; cidr: Cidr } =>
            x.cidr !== undefined &&
            x.cidr.prefix === pool.blockSize &&
            cidrContains(pool.cidr, x.cidr) &&
            countFree(x.b.value, env.reserved) > 0,
        )
        .map((x) => ({ ...x, order: ((x.cidr.network - pool.cidr.network) / size - startIdx + n) % n }))
        .sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
      for (const c of candidates) {
        if (out.length >= req.num) return;
        out.push(...(await this.assignFromBlock(c.b, req.num - out.length, req, env, false)));
      }
    }
  }

  /**
   * Assign one given address. The block is claimed for `hostname` if it does not exist yet; with
   * strict affinity the block must be affine to `hostname`.
   */
  async assignIP(ip: string, req: AssignIPRequest): Promise<AssignedIP> {
    const addr = parseIP(ip);
    if (!addr) throw new IpamError('invalid', `"${ip}" is not an IP address`);
    if (!req.handleId) throw new IpamError('invalid', 'handleId must not be empty');
    if (!req.hostname) throw new IpamError('invalid', 'hostname must not be empty');
    const handleId = sanitizeHandle(req.handleId);
    try {
      const [pools, config] = await Promise.all([this.ds.list('IPPool'), this.config()]);
      const pool = poolForIp(
        usablePools(pools.items).filter((p) => !p.disabled),
        addr,
      );
      if (!pool) throw new IpamError('invalid', `${ip} is not in any enabled IP pool`);
      const cidr = enclosingCidr(addr, pool.blockSize);
      const text = formatCidr(cidr);
      const mine = affinityForHost(req.hostname);
      return await withRetries(`assigning ${ip}`, this.retry, async () => {
        let block = await this.records.getBlock(text);
        if (!block) {
          const pa = await getPendingAffinity(this.affinityCtx, req.hostname, text);
          try {
            block = await claimAffineBlock(this.affinityCtx, req.hostname, cidr, pa);
          } catch (e) {
            if (e instanceof BlockClaimConflict) throw raceLost(`block ${text}`);
            throw e;
          }
        }
        if (config.strictAffinity && block.value.affinity !== mine) {
          throw new IpamError(
            'affinity-mismatch',
            `${ip} is in block ${text}, which is not affine to ${req.hostname}, and strict affinity is on`,
          );
        }
        const next = assignOrdinalInBlock(
          block.value,
          ipToOrdinal(cidr, addr) as number,
          handleId,
          toSecondary(req.attrs),
        );
        await incrementHandleRecord(this.records, this.retry, handleId, text, 1);
        try {
          await this.records.updateBlock(bumpSequence(next), block.revision);
        } catch (e) {
          await decrementHandleRecord(this.records, this.retry, handleId, text, 1);
          throw e;
        }
        return assigned(addr, cidr);
      });
    } catch (e) {
      throw asIpamError(e, `assigning ${ip} to ${handleId}`);
    }
  }

  // ---- release -----------------------------------------------------------------------------

  /** Release addresses (text, or with preconditions). Addresses not assigned are reported, not an error. */
  async releaseIPs(ips: readonly (string | ReleaseSpec)[]): Promise<ReleaseIPsResult> {
    const specs = ips.map((x) => (typeof x === 'string' ? { ip: x } : x));
    const result: ReleaseIPsResult = { released: [], notAssigned: [], mismatched: [] };
    try {
      const pools = usablePools((await this.ds.list('IPPool')).items);
      let allBlocks: Cidr[] | undefined;
      const byBlock = new Map<string, { cidr: Cidr; reqs: (ReleaseRequest & { text: string })[] }>();
      for (const s of specs) {
        const addr = parseIP(s.ip);
        if (!addr) throw new IpamError('invalid', `"${s.ip}" is not an IP address`);
        let cidr: Cidr | undefined;
        const pool = poolForIp(pools, addr);
        if (pool) {
          cidr = enclosingCidr(addr, pool.blockSize);
        } else {
          allBlocks ??= (await this.records.listBlocks()).map((b) => blockCidrOf(b.value));
          cidr = allBlocks.find((c) => cidrContains(c, addr));
        }
        if (!cidr) {
          result.notAssigned.push(s.ip);
          continue;
        }
        const key = formatCidr(cidr);
        const entry = byBlock.get(key) ?? { cidr, reqs: [] };
        entry.reqs.push({
          ordinal: ipToOrdinal(cidr, addr) as number,
          text: s.ip,
          ...(s.handleId !== undefined ? { handleId: sanitizeHandle(s.handleId) } : {}),
          ...(s.sequenceNumber !== undefined ? { sequenceNumber: s.sequenceNumber } : {}),
        });
        byBlock.set(key, entry);
      }
      await Promise.all(
        [...byBlock.values()].map(async ({ cidr, reqs }) => {
          const r = await this.releaseFromBlock(cidr, reqs);
          const textOf = (o: number) =>
            reqs.find((q) => q.ordinal === o)?.text ?? formatIP(ordinalToIp(cidr, o));
          result.released.push(...r.released.map(textOf));
          result.notAssigned.push(...r.notAllocated.map(textOf));
          result.mismatched.push(...r.mismatched.map(textOf));
        }),
      );
      return result;
    } catch (e) {
      throw asIpamError(e, 'releasing addresses');
    }
  }

  private async releaseFromBlock(
    cidr: Cidr,
    reqs: ReleaseRequest[],
  ): Promise<{ released: number[]; notAllocated: number[]; mismatched: number[] }> {
    const text = formatCidr(cidr);
    const done = await withRetries(`releasing addresses in block ${text}`, this.retry, async () => {
      const block = await this.records.getBlock(text);
      if (!block) {
        return { released: [], notAllocated: reqs.map((r) => r.ordinal), mismatched: [], counts: new Map() };
      }
      const r = releaseInBlock(block.value, reqs);
      if (r.released.length > 0) await this.writeReleased(r.block, block.revision);
      return { ...r, counts: r.countByHandle };
    });
    for (const [handleId, n] of done.counts) {
      await decrementHandleRecord(this.records, this.retry, handleId, text, n);
    }
    return done;
  }

  /** A block after a release: deleted when empty and no host owns it, else written back. */
  private async writeReleased(block: AllocationBlock, revision: string): Promise<void> {
    if (block.affinity === null && isBlockEmpty(block)) {
      await this.records.deleteBlock(block.cidr, revision);
    } else {
      await this.records.updateBlock(bumpSequence(block), revision);
    }
  }

  /**
   * Release every address of a handle and delete the handle. Releasing an unknown or already
   * released handle does nothing. Returns the released addresses.
   */
  async releaseByHandle(handleId: string): Promise<{ released: string[] }> {
    const { released } = await this.releaseHandle(handleId);
    return { released };
  }

  /**
   * As `releaseByHandle`, also saying whether the handle existed (it may hold no address: a
   * handle left behind by an interrupted release is still deleted).
   */
  async releaseHandle(handleId: string): Promise<{ released: string[]; existed: boolean }> {
    const id = sanitizeHandle(handleId);
    const released: string[] = [];
    try {
      const handle = await this.records.getHandle(id);
      if (!handle) return { released, existed: false };
      if (Object.keys(handle.value.block).length === 0) {
        await this.records.deleteHandle(id, handle.revision).catch((e: unknown) => {
          if (!isConflict(e) && !isNotFound(e)) throw e;
        });
        return { released, existed: true };
      }
      // The handle as read here serves the first update of it: releasing in a block does not
      // write the handle. After that update its revision has moved, so later ones read it again.
      let known: typeof handle | undefined = handle;
      for (const text of Object.keys(handle.value.block)) {
        const cidr = parseStrictCidr(text);
        const ords = cidr
          ? await withRetries(`releasing handle ${id} in block ${text}`, this.retry, async () => {
              const block = await this.records.getBlock(text);
              if (!block) return [];
              const r = releaseHandleInBlock(block.value, id);
              if (r.released.length > 0) await this.writeReleased(r.block, block.revision);
              return r.released;
            })
          : [];
        if (cidr) released.push(...ords.map((o) => formatIP(ordinalToIp(cidr, o))));
        // The block no longer holds anything of this handle: drop its entry whatever the count said.
        await this.dropHandleBlock(id, text, known);
        known = undefined;
      }
      return { released, existed: true };
    } catch (e) {
      throw asIpamError(e, `releasing handle ${id}`);
    }
  }

  /**
   * Removes `blockText` from the handle's blocks (deleting the handle when none is left). `known`,
   * the handle as last read, saves the first read; a compare-and-swap conflict reads it afresh.
   */
  private async dropHandleBlock(
    handleId: string,
    blockText: string,
    known?: Awaited<ReturnType<IpamRecords['getHandle']>>,
  ): Promise<void> {
    let first = known;
    await withRetries(
      `updating handle ${handleId}`,
      this.retry,
      async () => {
        const cur = first ?? (await this.records.getHandle(handleId));
        first = undefined;
        if (!cur || cur.value.block[blockText] === undefined) return;
        const block = { ...cur.value.block };
        delete block[blockText];
        if (Object.keys(block).length === 0) await this.records.deleteHandle(handleId, cur.revision);
        else await this.records.updateHandle(handleId, { ...cur.value, block }, cur.revision);
      },
      (e) => isConflict(e) || isNotFound(e),
    );
  }

  /** Who holds `ip`. Throws `not-found` when it is not assigned. */
  async getAssignmentAttributes(ip: string): Promise<AssignmentAttributes> {
    const addr = parseIP(ip);
    if (!addr) throw new IpamError('invalid', `"${ip}" is not an IP address`);
    try {
      const found = await this.findBlockOf(addr);
      const a =
        found &&
        allocationAt(
          found.value,
          blockCidrOf(found.value),
          ipToOrdinal(blockCidrOf(found.value), addr) as number,
        );
      if (!found || !a) throw new IpamError('not-found', `${ip} is not assigned`);
      return {
        handleId: a.handleId,
        attrs: a.attrs,
        block: found.value.cidr,
        sequenceNumber: a.sequenceNumber,
      };
    } catch (e) {
      throw asIpamError(e, `reading the assignment of ${ip}`);
    }
  }

  private async findBlockOf(addr: IPAddress): Promise<Versioned<AllocationBlock> | undefined> {
    const pool = poolForIp(usablePools((await this.ds.list('IPPool')).items), addr);
    if (pool) return this.records.getBlock(formatCidr(enclosingCidr(addr, pool.blockSize)));
    return (await this.records.listBlocks(addr.family)).find((b) => cidrContains(b.value.cidr, addr));
  }

  // ---- affinities --------------------------------------------------------------------------

  /**
   * Claim every block inside `cidr` (which must lie in an enabled pool and be at least a block) for
   * `host`. Blocks that exist already for another host are listed in `failed`.
   */
  async claimAffinity(host: string, cidr: string): Promise<{ claimed: string[]; failed: string[] }> {
    const claimed: string[] = [];
    const failed: string[] = [];
    try {
      const { range, pool } = await this.poolRange(cidr);
      for (const block of blocksWithin(range, pool.blockSize)) {
        const text = formatCidr(block);
        const ok = await withRetries(`claiming block ${text} for ${host}`, this.retry, async () => {
          const pa = await getPendingAffinity(this.affinityCtx, host, text);
          try {
            await claimAffineBlock(this.affinityCtx, host, block, pa);
            return true;
          } catch (e) {
            if (e instanceof BlockClaimConflict) return false;
            throw e;
          }
        });
        (ok ? claimed : failed).push(text);
      }
      return { claimed, failed };
    } catch (e) {
      throw asIpamError(e, `claiming ${cidr} for ${host}`);
    }
  }

  /** Release `host`'s affinity for every block inside `cidr`; blocks of other hosts are left alone. */
  async releaseAffinity(
    host: string,
    cidr: string,
    opts: { mustBeEmpty?: boolean } = {},
  ): Promise<AffinityReleaseResult> {
    try {
      const { range, pool } = await this.poolRange(cidr);
      return await this.releaseAffinities(
        host,
        [...blocksWithin(range, pool.blockSize)].map(formatCidr),
        opts,
      );
    } catch (e) {
      throw asIpamError(e, `releasing ${host}'s affinity for ${cidr}`);
    }
  }

  /** Release every block affinity `host` holds (both families), e.g. when the node goes away. */
  async releaseHostAffinities(
    host: string,
    opts: { mustBeEmpty?: boolean } = {},
  ): Promise<AffinityReleaseResult> {
    try {
      const affs = await this.records.listAffinities({ host });
      return await this.releaseAffinities(
        host,
        affs.map((a) => a.cidr),
        opts,
      );
    } catch (e) {
      throw asIpamError(e, `releasing the affinities of ${host}`);
    }
  }

  /**
   * Release every host's affinity for the blocks inside `cidr`, enabled pool or not (upstream's
   * `ReleasePoolAffinities`, used when a pool is deleted after it was disabled). Empty blocks are
   * deleted; blocks in use keep their addresses and lose their affinity.
   */
  async releasePoolAffinities(cidr: string): Promise<AffinityReleaseResult> {
    const range = parseNetwork(cidr);
    if (!range) throw new IpamError('invalid', `"${cidr}" is not a CIDR`);
    try {
      const byHost = new Map<string, string[]>();
      for (const a of await this.records.listAffinities({ family: range.family })) {
        const c = parseStrictCidr(a.cidr);
        if (!c || !cidrContains(range, c)) continue;
        const list = byHost.get(a.host);
        if (list) list.push(a.cidr);
        else byHost.set(a.host, [a.cidr]);
      }
      const out: AffinityReleaseResult = { released: [], notEmpty: [] };
      for (const [host, cidrs] of byHost) {
        const r = await this.releaseAffinities(host, cidrs, {});
        out.released.push(...r.released);
        out.notEmpty.push(...r.notEmpty);
      }
      return out;
    } catch (e) {
      throw asIpamError(e, `releasing the block affinities in ${cidr}`);
    }
  }

  private async releaseAffinities(
    host: string,
    cidrs: string[],
    opts: { mustBeEmpty?: boolean },
  ): Promise<AffinityReleaseResult> {
    const out: AffinityReleaseResult = { released: [], notEmpty: [] };
    for (const text of cidrs) {
      const r = await withRetries(`releasing ${host}'s affinity for ${text}`, this.retry, async () => {
        try {
          await releaseBlockAffinity(this.affinityCtx, host, text, {
            requireEmpty: opts.mustBeEmpty === true,
          });
          return 'released' as const;
        } catch (e) {
          if (e instanceof BlockNotEmpty) return 'not-empty' as const;
          if (e instanceof AffinityMissing || e instanceof BlockClaimConflict) return 'skip' as const;
          throw e;
        }
      });
      if (r === 'released') out.released.push(text);
      else if (r === 'not-empty') out.notEmpty.push(text);
    }
    return out;
  }

  private async poolRange(cidr: string): Promise<{ range: Cidr; pool: UsablePool }> {
    const range = parseNetwork(cidr);
    if (!range) throw new IpamError('invalid', `"${cidr}" is not a CIDR`);
    const pools = usablePools((await this.ds.list('IPPool')).items).filter((p) => !p.disabled);
    const pool = pools.find((p) => cidrContains(p.cidr, range));
    if (!pool) throw new IpamError('invalid', `${formatCidr(range)} is not inside any enabled IP pool`);
    if (range.prefix > pool.blockSize) {
      throw new IpamError(
        'invalid',
        `${formatCidr(range)} is smaller than a block of pool ${pool.name} (/${pool.blockSize})`,
      );
    }
    return { range, pool };
  }

  // ---- consistency ---------------------------------------------------------------------------

  /** Consistency report over all IPAM records (see check/check-report.ts). Read-only. */
  async check(): Promise<CheckReport> {
    try {
      const [blocks, handles, affinities, nodes] = await Promise.all([
        this.records.listBlocks(),
        this.records.listHandles(),
        this.records.listAffinities(),
        this.ds.list('Node'),
      ]);
      return buildCheckReport({
        blocks: blocks.map((b) => b.value),
        handles: new Map([...handles].map(([id, h]) => [id, h.value])),
        affinities: affinities.map((a) => ({ host: a.host, cidr: a.cidr, state: a.value.state })),
        nodes: new Set(nodes.items.map((n) => n.metadata.name)),
      });
    } catch (e) {
      throw asIpamError(e, 'checking IPAM records');
    }
  }

  /**
   * One leak-collection scan: ask `isOwnerAlive` about every allocation, and release those whose
   * owner has been gone for `gracePeriodMs`. The release is conditional on the allocation's handle
   * and sequence number, so an address re-assigned meanwhile is never freed.
   */
  async gc(opts: GcOptions): Promise<GcResult> {
    try {
      const now =
        opts.now === undefined
          ? this.now().getTime()
          : typeof opts.now === 'number'
            ? opts.now
            : opts.now.getTime();
      const observations: GcObservation[] = [];
      for (const { value: block } of await this.records.listBlocks()) {
        for (const a of allocationsOf(block)) {
          if (a.handleId?.toLowerCase() === WINDOWS_RESERVED_HANDLE) continue;
          const ip = formatIP(a.ip);
          const ownerAlive = await opts.isOwnerAlive(a.attrs, { ip, handleId: a.handleId });
          observations.push({
            ip,
            block: block.cidr,
            handleId: a.handleId,
            sequenceNumber: a.sequenceNumber,
            attrs: a.attrs,
            ownerAlive,
          });
        }
      }
      const plan = planGc(observations, opts.state.firstSeen, now, opts.gracePeriodMs);
      opts.state.firstSeen = plan.firstSeen;
      const released =
        plan.release.length === 0
          ? []
          : (
              await this.releaseIPs(
                plan.release.map((o) => ({
                  ip: o.ip,
                  sequenceNumber: o.sequenceNumber,
                  ...(o.handleId !== null ? { handleId: o.handleId } : {}),
                })),
              )
            ).released;
      return {
        released,
        pending: plan.pending.map((p) => ({ ip: p.ip, handleId: p.handleId, releaseAt: p.releaseAt })),
      };
    } catch (e) {
      throw asIpamError(e, 'collecting leaked addresses');
    }
  }
}

function assigned(ip: IPAddress, block: Cidr): AssignedIP {
  const address = formatIP(ip);
  return {
    family: ip.family,
    address,
    prefixLength: block.prefix,
    cidr: `${address}/${block.prefix}`,
    block: formatCidr(block),
  };
}

/** The stricter of the request's and the config's limit; 0 everywhere means the safety limit. */
export function effectiveMaxBlocks(perRequest: number, configured: number): number {
  let max = perRequest;
  if (configured > 0 && (max === 0 || max > configured)) max = configured;
  return max > 0 ? max : DEFAULT_MAX_BLOCKS_PER_HOST;
}

/**
 * `records`, keeping `known` up to date with every block version read or written through it, and
 * forgetting a block whose write failed or that was deleted.
 */
function withBlockCache(records: IpamRecords, known: Map<string, Versioned<AllocationBlock>>): IpamRecords {
  const remember = (b: Versioned<AllocationBlock> | undefined, cidr: string) => {
    if (b) known.set(b.value.cidr, b);
    else known.delete(cidr);
    return b;
  };
  return {
    ...records,
    getBlock: async (cidr) => remember(await records.getBlock(cidr), cidr),
    getBlocks: async (cidrs) => {
      const read = await records.getBlocks(cidrs);
      for (const b of read) remember(b, b.value.cidr);
      return read;
    },
    createBlock: async (block) => remember(await records.createBlock(block), block.cidr)!,
    updateBlock: async (block, revision) => {
      try {
        return remember(await records.updateBlock(block, revision), block.cidr)!;
      } catch (e) {
        known.delete(block.cidr);
        throw e;
      }
    },
    deleteBlock: async (cidr, revision) => {
      known.delete(cidr);
      await records.deleteBlock(cidr, revision);
    },
    writeHandleAndBlock: async (handleId, handle, handleRevision, block, blockRevision) => {
      try {
        const r = await records.writeHandleAndBlock(handleId, handle, handleRevision, block, blockRevision);
        remember(r.block, block.cidr);
        return r;
      } catch (e) {
        known.delete(block.cidr);
        throw e;
      }
    },
  };
}
