/**
 * Assigning addresses (upstream `AutoAssign` and `AssignIP`): the steps that read records, apply
 * a pure step of block/allocation-block.ts, and write back with compare-and-swap.
 *
 *      autoAssign ─► pools (pools.ts) ─► host's affine blocks ─► claim a block ─► borrow
 *                                        └─ block-search.ts ───────┘                │
 *                                           │                                       │
 *                                           └──── assignFromBlock: autoAssignInBlock (pure)
 *                                                 + handle count and block in one CAS write
 *
 * Ordering on a write: `assignFromBlock` writes the handle and the block in one transaction;
 * `assignIP` raises the handle count before the block is written and lowers it again if the block
 * write loses, so a crash can leave a handle counting too much (which `check` reports and
 * `releaseByHandle` repairs) but never an allocation its handle does not know of.
 */
import { cidrContains, formatCidr, parseIP } from '@calico-ts/api/net';
import type { BlockAffinity, Versioned } from '@calico-ts/datastore';
import {
  affinityForHost,
  assignOrdinalInBlock,
  autoAssignInBlock,
  blockCidrOf,
  bumpSequence,
  countFree,
  ipToOrdinal,
  ordinalToIp,
  sanitizeHandle,
  toSecondary,
} from '../block/allocation-block.js';
import { blockCount, blockSearchSeed, randomBelow, seededRandom32 } from '../block/block-cidrs.js';
import { incrementHandle } from '../block/handle.js';
import { type Cidr, enclosingCidr, familyBits, parseStrictCidr } from '../block/ip-math.js';
import type { AllocationBlock } from '../block/types.js';
import { IpamError } from '../errors.js';
import { poolForIp, selectPools, type UsablePool, usablePools } from '../pools.js';
import { type AssignEnv, type EnvRead, ipamConfigValue } from '../store/assign-env.js';
import { BlockClaimConflict, claimAffineBlock, getPendingAffinity } from './affinity-ops.js';
import { type FamilyRequest, findOrClaimBlock, releaseUnselectedBlocks } from './block-search.js';
import type { ClientContext } from './context.js';
import { decrementHandleRecord, incrementHandleRecord } from './handles.js';
import { releaseIPs } from './release.js';
import { asIpamError, isAlreadyExists, isConflict, isNotFound, raceLost, withRetries } from './retry.js';
import {
  type AssignedIP,
  type AssignIPRequest,
  type AutoAssignRequest,
  type AutoAssignResult,
  assigned,
  effectiveMaxBlocks,
} from './types.js';

/**
 * Assign `num4` IPv4 and `num6` IPv6 addresses to `handleId` on `hostname`. All or nothing: when
 * a family cannot be satisfied, what this call assigned is released again before the error.
 */
export async function autoAssign(
  ctx: ClientContext,
  req: AutoAssignRequest,
  /** Where the host's environment comes from (assign-env-loader.ts). */
  loadEnv: (hostname: string) => Promise<EnvRead>,
): Promise<AutoAssignResult> {
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
    const { env, affinities } = await loadEnv(req.hostname);
    const ofFamily = (family: 4 | 6) =>
      affinities.filter((a) => parseStrictCidr(a.value.cidr)?.family === family);
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
      await assignFamily(
        ctx,
        { ...common, family: 4, num: req.num4, requested: req.ipv4Pools },
        env,
        result.ipv4,
        listed4,
      );
    }
    if (req.num6 > 0) {
      await assignFamily(
        ctx,
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
      await releaseIPs(
        ctx,
        assigned.map((a) => ({ ip: a.address, handleId })),
      ).catch(() => undefined);
    }
    throw asIpamError(e, `assigning addresses to ${handleId} on ${req.hostname}`);
  }
}

export async function assignFamily(
  ctx: ClientContext,
  req: FamilyRequest,
  env: AssignEnv,
  out: AssignedIP[],
  /** The host's affinities of this family, read with `env`. */
  listed: Versioned<BlockAffinity>[],
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
  const listedAffinity = new Map(listed.map((a) => [a.value.cidr, a]));
  const hostBlocks = listed
    .map((a) => parseStrictCidr(a.value.cidr))
    .filter((c): c is Cidr => c !== undefined);
  const affine = hostBlocks.filter((c) => pools.some((p) => cidrContains(p.cidr, c)));
  await releaseUnselectedBlocks(ctx, req.host, hostBlocks, env);
  let owned = affine.length;
  const maxBlocks = effectiveMaxBlocks(req.maxBlocksPerHost, env.config.maxBlocksPerHost);
  const remainingAffine = [...affine];
  let fruitless = 0;
  // Affine blocks this request gave up once after losing a race for them (see below).
  const deferred = new Set<string>();

  while (out.length < req.num) {
    const found = await findOrClaimBlock(
      ctx,
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
    // Contention is spread over the host's blocks: a request that loses the race for one block
    // while another affine block may have room goes there, and comes back to this one only when
    // the others are used up, instead of queueing on it with every other writer of the host.
    const text = found.block.value.cidr;
    const elsewhere =
      !found.newlyClaimed &&
      !deferred.has(text) &&
      remainingAffine.some((c) => {
        const known = ctx.store.cache.block(formatCidr(c));
        return !known || countFree(known.value, env.reserved) > 0;
      });
    const got = await assignFromBlockOrYield(
      ctx,
      found.block,
      req.num - out.length,
      req,
      env,
      env.config.strictAffinity,
      elsewhere,
    );
    if (got === CONTENDED) {
      deferred.add(text);
      remainingAffine.push(blockCidrOf(found.block.value));
      continue;
    }
    out.push(...got);
    if (got.length === 0 && ++fruitless >= ctx.retry.maxRetries) {
      throw new IpamError(
        'conflict-retries-exhausted',
        `assigning IPv${req.family} addresses on ${req.host}: blocks kept filling up under concurrent requests`,
      );
    }
  }

  if (out.length < req.num && !env.config.strictAffinity) await borrow(ctx, req, pools, env, out);

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

/** `assignFromBlockOrYield`'s answer when it gave the block up after a lost race. */
const CONTENDED = Symbol('contended');

/** Take up to `num` addresses from one block (CAS, re-reading on conflict). */
export async function assignFromBlock(
  ctx: ClientContext,
  start: Versioned<AllocationBlock>,
  num: number,
  req: FamilyRequest,
  env: AssignEnv,
  affinityCheck: boolean,
): Promise<AssignedIP[]> {
  return (await assignFromBlockOrYield(ctx, start, num, req, env, affinityCheck, false)) as AssignedIP[];
}

/**
 * `assignFromBlock`; with `yieldOnLoss`, a first write that loses the block to another writer
 * answers `CONTENDED` (nothing written) instead of reading the block and trying again.
 */
async function assignFromBlockOrYield(
  ctx: ClientContext,
  start: Versioned<AllocationBlock>,
  num: number,
  req: FamilyRequest,
  env: AssignEnv,
  affinityCheck: boolean,
  yieldOnLoss: boolean,
): Promise<AssignedIP[] | typeof CONTENDED> {
  const cidrText = start.value.cidr;
  // In turn with this process's other writers of the block: each starts from the version the one
  // before it wrote, which the IPAM cache holds, instead of the one it was handed.
  return ctx.store.blockTurns.turn(cidrText, () => {
    const newest = ctx.store.cache.block(cidrText);
    const from = newest && BigInt(newest.revision) > BigInt(start.revision) ? newest : start;
    return assignInTurn(ctx, from, num, req, env, affinityCheck, yieldOnLoss);
  });
}

async function assignInTurn(
  ctx: ClientContext,
  start: Versioned<AllocationBlock>,
  num: number,
  req: FamilyRequest,
  env: AssignEnv,
  affinityCheck: boolean,
  yieldOnLoss: boolean,
): Promise<AssignedIP[] | typeof CONTENDED> {
  let current: Versioned<AllocationBlock> | undefined = start;
  const cidrText = start.value.cidr;
  // The handle is taken to be new (a pod's own) until a write says otherwise: a create that
  // finds it exists, or a write that finds it gone. A lost race on the block alone leaves it new
  // (the transaction took the created handle back), so that retry reads the block only.
  let readHandle = false;
  return withRetries(
    `assigning from block ${cidrText}`,
    ctx.retry,
    async (attempt) => {
      if (attempt > 0) current = await ctx.store.getBlock(cidrText);
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
      // The handle's count and the block's allocation in one transaction.
      const handle = readHandle ? await ctx.store.getHandle(req.handleId) : undefined;
      try {
        await ctx.store.writeHandleAndBlock(
          { ...incrementHandle(handle?.value, cidrText, r.ordinals.length), handleId: req.handleId },
          handle?.revision,
          bumpSequence(r.block),
          current.revision,
        );
      } catch (e) {
        // Which record lost is told by the code: a create fails `already-exists`, a vanished
        // record `not-found`; `conflict` is the block, unless the handle was updated too.
        if (isAlreadyExists(e) || isNotFound(e) || handle) readHandle = true;
        else if (yieldOnLoss && attempt === 0 && isConflict(e)) return CONTENDED;
        throw e;
      }
      const cidr = blockCidrOf(b);
      return r.ordinals.map((o) => assigned(ordinalToIp(cidr, o), cidr));
    },
    // A lost race on the block, or a handle that exists (or vanished) after all: read and retry.
    (e) => isConflict(e) || isAlreadyExists(e) || isNotFound(e),
  );
}

/** Last resort without strict affinity: free addresses in any existing block of the pools. */
export async function borrow(
  ctx: ClientContext,
  req: FamilyRequest,
  pools: UsablePool[],
  env: AssignEnv,
  out: AssignedIP[],
): Promise<void> {
  const existing = (await ctx.store.listBlocks(req.family)).items;
  for (const pool of pools) {
    if (out.length >= req.num) return;
    const n = blockCount(pool.cidr, pool.blockSize);
    if (n === 0n) continue;
    const seed = blockSearchSeed(req.host, pool.cidr, pool.blockSize, Math.floor(ctx.random() * 2 ** 32));
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
      out.push(...(await assignFromBlock(ctx, c.b, req.num - out.length, req, env, false)));
    }
  }
}

/**
 * Assign one given address. The block is claimed for `hostname` if it does not exist yet; with
 * strict affinity the block must be affine to `hostname`.
 */
export async function assignIP(ctx: ClientContext, ip: string, req: AssignIPRequest): Promise<AssignedIP> {
  const addr = parseIP(ip);
  if (!addr) throw new IpamError('invalid', `"${ip}" is not an IP address`);
  if (!req.handleId) throw new IpamError('invalid', 'handleId must not be empty');
  if (!req.hostname) throw new IpamError('invalid', 'hostname must not be empty');
  const handleId = sanitizeHandle(req.handleId);
  try {
    const [pools, config] = await Promise.all([ctx.ds.list('IPPool'), ctx.store.getConfig()]);
    const pool = poolForIp(
      usablePools(pools.items).filter((p) => !p.disabled),
      addr,
    );
    if (!pool) throw new IpamError('invalid', `${ip} is not in any enabled IP pool`);
    const cidr = enclosingCidr(addr, pool.blockSize);
    const text = formatCidr(cidr);
    const mine = affinityForHost(req.hostname);
    return await withRetries(`assigning ${ip}`, ctx.retry, async () => {
      let block = await ctx.store.getBlock(text);
      if (!block) {
        const pa = await getPendingAffinity(ctx.affinity, req.hostname, text);
        try {
          block = await claimAffineBlock(ctx.affinity, req.hostname, cidr, pa);
        } catch (e) {
          if (e instanceof BlockClaimConflict) throw raceLost(`block ${text}`);
          throw e;
        }
      }
      if (ipamConfigValue(config?.value).strictAffinity && block.value.affinity !== mine) {
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
      await incrementHandleRecord(ctx.store, ctx.retry, handleId, text, 1);
      try {
        await ctx.store.updateBlock(bumpSequence(next), block.revision);
      } catch (e) {
        await decrementHandleRecord(ctx.store, ctx.retry, handleId, text, 1);
        throw e;
      }
      return assigned(addr, cidr);
    });
  } catch (e) {
    throw asIpamError(e, `assigning ${ip} to ${handleId}`);
  }
}
