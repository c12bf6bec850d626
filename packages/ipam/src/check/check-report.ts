/**
 * `check()`: consistency of the IPAM records, computed from one snapshot (pure; reading the
 * snapshot is the client's job).
 *
 * What is reported:
 * - leaked addresses: an allocation whose handle record is missing (or that has no handle at all);
 *   nothing can release it by handle, so it stays taken forever;
 * - handles without allocations: a handle record none of whose counted blocks holds an address of it;
 * - handle count mismatches: a handle that does hold addresses, but whose per-block count differs from
 *   what the blocks hold;
 * - blocks whose affinity names a host that has no Node;
 * - affinity records that name a missing Node, or whose block is missing or affine to someone else.
 */
import {
  allocationsOf,
  hostOfAffinity,
  sanitizeHandle,
  WINDOWS_RESERVED_HANDLE,
} from '../block/allocation-block.js';
import { ipText } from '../block/ip-math.js';
import type { AllocationBlock, IpamHandle } from '../block/types.js';

export interface AffinityRecord {
  host: string;
  /** Block CIDR text. */
  cidr: string;
  state: string;
}

export interface IpamSnapshot {
  blocks: readonly AllocationBlock[];
  handles: ReadonlyMap<string, IpamHandle>;
  affinities: readonly AffinityRecord[];
  /** Names of the Nodes that exist. */
  nodes: ReadonlySet<string>;
}

export interface LeakedAddress {
  ip: string;
  block: string;
  handleId: string | null;
  attrs: Record<string, string>;
}

export interface HandleCountMismatch {
  handleId: string;
  block: string;
  recorded: number;
  actual: number;
}

export interface CheckReport {
  summary: { blocks: number; allocations: number; handles: number; affinities: number };
  leakedAddresses: LeakedAddress[];
  handlesWithoutAllocations: { handleId: string; recorded: Record<string, number> }[];
  handleCountMismatches: HandleCountMismatch[];
  blocksWithMissingNode: { block: string; node: string }[];
  danglingAffinities: {
    host: string;
    cidr: string;
    reason: 'node-missing' | 'block-missing' | 'block-affine-elsewhere';
  }[];
  /** True when every list above is empty. */
  ok: boolean;
}

export function buildCheckReport(s: IpamSnapshot): CheckReport {
  const leakedAddresses: LeakedAddress[] = [];
  const blocksWithMissingNode: CheckReport['blocksWithMissingNode'] = [];
  /** handle → block → number of addresses the blocks really hold. */
  const actual = new Map<string, Map<string, number>>();
  const blockByCidr = new Map<string, AllocationBlock>();
  let allocations = 0;

  for (const block of s.blocks) {
    blockByCidr.set(block.cidr, block);
    const host = hostOfAffinity(block.affinity);
    if (host !== undefined && !s.nodes.has(host))
      blocksWithMissingNode.push({ block: block.cidr, node: host });
    for (const a of allocationsOf(block)) {
      allocations++;
      const ip = ipText(a.ip);
      if (a.handleId === null) {
        leakedAddresses.push({ ip, block: block.cidr, handleId: null, attrs: a.attrs });
        continue;
      }
      if (a.handleId.toLowerCase() === WINDOWS_RESERVED_HANDLE) continue;
      if (!s.handles.has(a.handleId)) {
        leakedAddresses.push({ ip, block: block.cidr, handleId: a.handleId, attrs: a.attrs });
        continue;
      }
      const perBlock = actual.get(a.handleId) ?? new Map<string, number>();
      perBlock.set(block.cidr, (perBlock.get(block.cidr) ?? 0) + 1);
      actual.set(a.handleId, perBlock);
    }
  }

  const handlesWithoutAllocations: CheckReport['handlesWithoutAllocations'] = [];
  const handleCountMismatches: HandleCountMismatch[] = [];
  for (const [rawId, handle] of s.handles) {
    const handleId = sanitizeHandle(rawId);
    const held = actual.get(handleId);
    if (!held) {
      handlesWithoutAllocations.push({ handleId, recorded: { ...handle.block } });
      continue;
    }
    const cidrs = new Set([...Object.keys(handle.block), ...held.keys()]);
    for (const block of [...cidrs].sort()) {
      const recorded = handle.block[block] ?? 0;
      const real = held.get(block) ?? 0;
      if (recorded !== real) handleCountMismatches.push({ handleId, block, recorded, actual: real });
    }
  }

  const danglingAffinities: CheckReport['danglingAffinities'] = [];
  for (const aff of s.affinities) {
    const block = blockByCidr.get(aff.cidr);
    if (!s.nodes.has(aff.host))
      danglingAffinities.push({ host: aff.host, cidr: aff.cidr, reason: 'node-missing' });
    else if (!block) {
      // A pending affinity is the first step of a claim in progress; only a settled one dangles.
      if (aff.state !== 'pending') {
        danglingAffinities.push({ host: aff.host, cidr: aff.cidr, reason: 'block-missing' });
      }
    } else if (hostOfAffinity(block.affinity) !== aff.host) {
      danglingAffinities.push({ host: aff.host, cidr: aff.cidr, reason: 'block-affine-elsewhere' });
    }
  }

  const byText =
    <T>(key: (t: T) => string) =>
    (a: T, b: T) =>
      key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
  leakedAddresses.sort(byText((l) => `${l.block}|${l.ip.padStart(40, '0')}`));
  handlesWithoutAllocations.sort(byText((h) => h.handleId));
  handleCountMismatches.sort(byText((m) => `${m.handleId}|${m.block}`));
  blocksWithMissingNode.sort(byText((b) => b.block));
  danglingAffinities.sort(byText((d) => `${d.host}|${d.cidr}`));

  return {
    summary: {
      blocks: s.blocks.length,
      allocations,
      handles: s.handles.size,
      affinities: s.affinities.length,
    },
    leakedAddresses,
    handlesWithoutAllocations,
    handleCountMismatches,
    blocksWithMissingNode,
    danglingAffinities,
    ok:
      leakedAddresses.length +
        handlesWithoutAllocations.length +
        handleCountMismatches.length +
        blocksWithMissingNode.length +
        danglingAffinities.length ===
      0,
  };
}
