/**
 * What `ipam show` prints, computed from IPAM records and pools (pure: records in, text out).
 *
 * - utilisation: one row per IP pool (every pool, enabled or not, in name order), and with
 *   `--show-blocks` one row per block after its pool's row. A block belongs to the first pool whose
 *   CIDR overlaps it; blocks of no pool get block rows only. In use = block size minus the free
 *   list, as upstream counts it.
 * - borrowed addresses: allocations whose `node` attribute names another host than the block's.
 * - one address: its handle and attributes.
 * - the IPAM configuration.
 */
import { type Cidr, cidrSize, cidrsOverlap, formatCidr, formatIP, parseCidr } from '@calico-ts/api/net';
import type { AllocationBlock, IPAMConfig } from '@calico-ts/datastore';
import { allocationsOf, hostOfAffinity } from '@calico-ts/ipam/internal';
import { renderBoxTable } from '../output/box-table.js';
import { goG5, goRound0 } from '../output/go-format.js';

export interface PoolRef {
  name: string;
  cidr: string;
}

export interface BlockUsage {
  cidr: string;
  capacity: number;
  inUse: number;
}

export interface PoolUsage {
  /** Undefined for the group of blocks that lie in no pool. */
  pool?: { name: string; cidr: string; capacity: bigint };
  blocks: BlockUsage[];
}

export function poolUtilization(pools: readonly PoolRef[], blocks: readonly AllocationBlock[]): PoolUsage[] {
  const groups: { cidr?: Cidr; usage: PoolUsage }[] = [];
  for (const p of pools) {
    const cidr = parseCidr(p.cidr);
    if (!cidr) continue;
    const c = formatCidr({ ...cidr, address: cidr.network });
    groups.push({ cidr, usage: { pool: { name: p.name, cidr: c, capacity: cidrSize(cidr) }, blocks: [] } });
  }
  const orphans: PoolUsage = { blocks: [] };
  for (const b of blocks) {
    const bc = parseCidr(b.cidr);
    const use: BlockUsage = {
      cidr: b.cidr,
      capacity: b.allocations.length,
      inUse: b.allocations.length - b.unallocated.length,
    };
    const group = bc && groups.find((g) => g.cidr && cidrsOverlap(g.cidr, bc));
    (group ? group.usage : orphans).blocks.push(use);
  }
  const out = groups.map((g) => g.usage);
  if (orphans.blocks.length > 0) out.push(orphans);
  return out;
}

function usageRow(grouping: string, cidr: string, capacity: bigint | number, inUse: number): string[] {
  const cap = Number(capacity);
  return [
    grouping,
    cidr,
    goG5(capacity),
    `${goG5(inUse)} (${goRound0((100 * inUse) / cap)}%)`,
    `${goG5(BigInt(capacity) - BigInt(inUse))} (${goRound0((100 * (cap - inUse)) / cap)}%)`,
  ];
}

export function renderUtilization(usage: readonly PoolUsage[], showBlocks: boolean): string {
  const rows: string[][] = [];
  for (const u of usage) {
    if (u.pool) {
      const inUse = u.blocks.reduce((n, b) => n + b.inUse, 0);
      rows.push(usageRow('IP Pool', u.pool.cidr, u.pool.capacity, inUse));
    }
    if (showBlocks) for (const b of u.blocks) rows.push(usageRow('Block', b.cidr, b.capacity, b.inUse));
  }
  return renderBoxTable(['GROUPING', 'CIDR', 'IPS TOTAL', 'IPS IN USE', 'IPS FREE'], rows);
}

export interface BorrowedIP {
  ip: string;
  borrowingNode: string;
  block: string;
  blockOwner: string;
  type: string;
  allocatedTo: string;
}

/**
 * Allocations made for another node than the block's owner (or from a block with no owner).
 * `unclassified` counts allocations without a `node` attribute (very old ones), which cannot be judged.
 */
export function borrowedIPs(blocks: readonly AllocationBlock[]): {
  borrowed: BorrowedIP[];
  unclassified: number;
} {
  const borrowed: BorrowedIP[] = [];
  let unclassified = 0;
  for (const b of blocks) {
    const owner = b.affinity === null ? '' : (hostOfAffinity(b.affinity) ?? b.affinity);
    for (const a of allocationsOf(b)) {
      const node = a.attrs.node;
      if (node === undefined) {
        unclassified++;
        continue;
      }
      if (node === owner) continue;
      const ns = a.attrs.namespace ?? '';
      let type = '';
      let allocatedTo = '';
      if (a.attrs.pod !== undefined) {
        type = 'pod';
        allocatedTo = `${ns}/${a.attrs.pod}`;
      } else if (a.attrs.type !== undefined) {
        type = a.attrs.type;
      }
      borrowed.push({
        ip: formatIP(a.ip),
        borrowingNode: node,
        block: b.cidr,
        blockOwner: owner,
        type,
        allocatedTo,
      });
    }
  }
  return { borrowed, unclassified };
}

export function renderBorrowed(r: { borrowed: readonly BorrowedIP[]; unclassified: number }): string {
  let text = renderBoxTable(
    ['IP', 'BORROWING-NODE', 'BLOCK', 'BLOCK OWNER', 'TYPE', 'ALLOCATED-TO'],
    r.borrowed.map((b) => [b.ip, b.borrowingNode, b.block, b.blockOwner, b.type, b.allocatedTo]),
  );
  if (r.unclassified !== 0) {
    text += `\nNote: found ${r.unclassified} IP allocations without an explicit node association. Unable to determine if they are borrowed.\n`;
  }
  return text;
}

/** `ipam show --ip`: who holds the address (attributes in key order), or that nobody does. */
export function renderAssignment(
  ip: string,
  assignment: { handleId: string | null; attrs: Record<string, string> } | undefined,
): string {
  if (!assignment) return `${ip} is not assigned\n`;
  let text = `IP ${ip} is in use\nHandle ID: ${assignment.handleId ?? '<none>'}\n`;
  const keys = Object.keys(assignment.attrs).sort();
  if (keys.length === 0) return `${text}No Active Owner attributes defined\n`;
  text += 'Active Owner Attributes:\n';
  for (const k of keys) text += `  ${k}: ${assignment.attrs[k]}\n`;
  return text;
}

/** `ipam show --show-configuration`: upstream's field names, values as Go's `%#v` prints them. */
export function renderIpamConfig(cfg: IPAMConfig): string {
  const rows = [
    ['StrictAffinity', String(cfg.strict_affinity)],
    ['AutoAllocateBlocks', String(cfg.auto_allocate_blocks)],
    ['MaxBlocksPerHost', String(cfg.maxBlocksPerHost)],
  ];
  if (cfg.kubeVirtVMAddressPersistence !== undefined) {
    rows.push(['KubeVirtVMAddressPersistence', JSON.stringify(cfg.kubeVirtVMAddressPersistence)]);
  }
  return renderBoxTable(['PROPERTY', 'VALUE'], rows);
}

/** The configuration in force when none is stored (upstream's defaults). */
export const DEFAULT_IPAM_CONFIG: IPAMConfig = {
  strict_affinity: false,
  auto_allocate_blocks: true,
  maxBlocksPerHost: 0,
};
