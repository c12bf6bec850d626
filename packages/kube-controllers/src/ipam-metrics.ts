/**
 * The IPAM gauges upstream's node controller publishes (`kube-controllers/pkg/controllers/node/
 * ipam.go`), recomputed from scratch from the blocks on every scan. Pure.
 *
 *   blocks + pools + GC candidates ──► ipam_allocations_in_use{ippool,node}
 *                                      ipam_allocations_borrowed{ippool,node}
 *                                      ipam_allocations_gc_candidates{ippool,node}
 *                                      ipam_blocks{ippool,node}          (node = block affinity)
 *                                      ipam_ippool_size{ippool}
 *                                      legacy: ipam_blocks_per_node, ipam_allocations_per_node,
 *                                              ipam_allocations_borrowed_per_node {node}
 *
 * An allocation's node is its `node` attribute; it is borrowed when that differs from the block's
 * affinity. A block or address in no pool is counted under `ippool="no_ippool"`, as upstream does.
 * `ipamGauges` declares these series (and the GC reclamation counter) in a registry.
 */
import { cidrContains, parseCidr } from '@calico-ts/api/net';
import type { AllocationBlock } from '@calico-ts/datastore';
import type { Labels, MetricsRegistry } from './metrics.js';

export const NO_POOL = 'no_ippool';

export interface PoolRef {
  readonly name: string;
  readonly cidr: string;
}

export type Rows = [Labels, number][];

export interface IpamMetricsSnapshot {
  readonly inUse: Rows;
  readonly borrowed: Rows;
  readonly gcCandidates: Rows;
  readonly blocks: Rows;
  readonly poolSize: Rows;
  readonly blocksPerNode: Rows;
  readonly allocationsPerNode: Rows;
  readonly borrowedPerNode: Rows;
}

/** The pool whose CIDR holds `cidrOrIp`, or `no_ippool`. */
export function poolOf(pools: readonly PoolRef[], cidrOrIp: string): string {
  return pools.find((p) => cidrContains(p.cidr, cidrOrIp))?.name ?? NO_POOL;
}

function affinityNode(b: AllocationBlock): string {
  return b.affinity?.startsWith('host:') ? b.affinity.slice('host:'.length) : '';
}

class Tally {
  readonly #m = new Map<string, [Labels, number]>();
  add(labels: Labels, by = 1): void {
    const k = JSON.stringify(labels);
    const row = this.#m.get(k);
    if (row) row[1] += by;
    else this.#m.set(k, [labels, by]);
  }
  rows(): Rows {
    return [...this.#m.values()];
  }
}

export function ipamMetrics(
  blocks: readonly AllocationBlock[],
  pools: readonly PoolRef[],
  candidates: readonly { readonly ip: string; readonly node: string }[],
): IpamMetricsSnapshot {
  const inUse = new Tally();
  const borrowed = new Tally();
  const gc = new Tally();
  const blockCount = new Tally();
  const blocksPerNode = new Tally();
  const perNode = new Tally();
  const borrowedPerNode = new Tally();
  for (const b of blocks) {
    const ippool = poolOf(pools, b.cidr);
    const owner = affinityNode(b);
    blockCount.add({ ippool, node: owner });
    gc.add({ ippool, node: owner }, 0);
    if (owner !== '') blocksPerNode.add({ node: owner });
    for (const idx of b.allocations) {
      if (idx === null || idx === undefined) continue;
      const node = b.attributes[idx]?.secondary?.node ?? '';
      inUse.add({ ippool, node });
      gc.add({ ippool, node }, 0);
      perNode.add({ node });
      if (node !== owner) {
        borrowed.add({ ippool, node });
        borrowedPerNode.add({ node });
      }
    }
  }
  for (const c of candidates) gc.add({ ippool: poolOf(pools, c.ip), node: c.node });
  const poolSize: Rows = pools.map((p) => {
    const c = parseCidr(p.cidr);
    const bits = c ? (c.family === 4 ? 32 : 128) - c.prefix : 0;
    return [{ ippool: p.name }, 2 ** bits];
  });
  return {
    inUse: inUse.rows(),
    borrowed: borrowed.rows(),
    gcCandidates: gc.rows(),
    blocks: blockCount.rows(),
    poolSize,
    blocksPerNode: blocksPerNode.rows(),
    allocationsPerNode: perNode.rows(),
    borrowedPerNode: borrowedPerNode.rows(),
  };
}

/** The node controller's IPAM gauges and GC counter in `reg` (upstream's names and help). */
export function ipamGauges(reg: MetricsRegistry) {
  const pn = ['ippool', 'node'];
  return {
    inUse: reg.gauge(
      'ipam_allocations_in_use',
      'Calico IP allocations currently in use by a workload or interface.',
      pn,
    ),
    borrowed: reg.gauge(
      'ipam_allocations_borrowed',
      'Calico IP allocations in use whose block is affine to another node.',
      pn,
    ),
    gcCandidates: reg.gauge(
      'ipam_allocations_gc_candidates',
      'Allocations the garbage collector currently holds as possible leaks; returns to zero under normal operation.',
      pn,
    ),
    gcReclamations: reg.counter(
      'ipam_allocations_gc_reclamations',
      'Allocations reclaimed by the garbage collector.',
      pn,
    ),
    blocks: reg.gauge('ipam_blocks', 'IPAM blocks, by pool and the node they are affine to.', pn),
    poolSize: reg.gauge('ipam_ippool_size', 'Addresses in the IP pool CIDR.', ['ippool']),
    blocksPerNode: reg.gauge(
      'ipam_blocks_per_node',
      'IPAM blocks by the node they are affine to (prefer ipam_blocks).',
      ['node'],
    ),
    allocationsPerNode: reg.gauge(
      'ipam_allocations_per_node',
      'Calico IP allocations by node (prefer ipam_allocations_in_use).',
      ['node'],
    ),
    borrowedPerNode: reg.gauge(
      'ipam_allocations_borrowed_per_node',
      'Borrowed Calico IP allocations by node (prefer ipam_allocations_borrowed).',
      ['node'],
    ),
  };
}
