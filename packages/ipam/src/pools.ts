/**
 * Which IP pools a request may draw from (upstream `determinePools` + `filterPoolsByUse`), pure.
 *
 * - Requested pools (by name or CIDR) must exist and be enabled; their selectors are then ignored.
 * - Otherwise: every enabled pool of the family with assignment mode Automatic whose nodeSelector
 *   matches the Node's labels and whose namespaceSelector matches the namespace's labels.
 * - Either way only pools whose allowedUses include the request's use (Workload for pods).
 * - Pools are considered in name order, as upstream lists them.
 */

import { type IPPool, type IPPoolAllowedUse, selectorMatches } from '@calico-ts/api';
import { defaultIPPool } from '@calico-ts/api/internal';
import { formatCidr } from '@calico-ts/api/net';
import { type Cidr, cidrContainsIp, type IPAddress, type IPFamily, parseNetwork } from './block/ip-math.js';
import { IpamError } from './errors.js';

export interface UsablePool {
  name: string;
  cidr: Cidr;
  blockSize: number;
  disabled: boolean;
  pool: IPPool;
}

export interface PoolRequest {
  family: IPFamily;
  /** Pool names or CIDRs the caller insists on (CNI `ipv4_pools`, pod annotations). */
  requested?: readonly string[];
  nodeLabels: Record<string, string>;
  namespaceLabels?: Record<string, string>;
  use: IPPoolAllowedUse;
}

/** Parse every pool once (defaults applied); pools with an unparsable CIDR are left out. */
export function usablePools(pools: readonly IPPool[]): UsablePool[] {
  const out: UsablePool[] = [];
  for (const raw of pools) {
    const pool = defaultIPPool(raw);
    const cidr = parseNetwork(pool.spec.cidr);
    if (!cidr) continue;
    out.push({
      name: pool.metadata.name,
      cidr,
      blockSize: pool.spec.blockSize ?? (cidr.family === 4 ? 26 : 122),
      disabled: pool.spec.disabled === true,
      pool,
    });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function describe(p: UsablePool): string {
  return `${p.name} (${formatCidr(p.cidr)})`;
}

/** The pools a request may use, best first. Throws `no-pools` with the reason when there are none. */
export function selectPools(all: readonly UsablePool[], req: PoolRequest): UsablePool[] {
  const enabled = all.filter((p) => !p.disabled && p.cidr.family === req.family);
  const requested = req.requested ?? [];
  let candidates: UsablePool[];
  if (requested.length > 0) {
    candidates = requested.map((r) => {
      const asCidr = parseNetwork(r);
      const found = enabled.find(
        (p) => p.name === r || (asCidr !== undefined && formatCidr(p.cidr) === formatCidr(asCidr)),
      );
      if (!found) {
        const other = all.find((p) => p.name === r || (asCidr && formatCidr(p.cidr) === formatCidr(asCidr)));
        const why = !other
          ? 'does not exist'
          : other.disabled
            ? 'is disabled'
            : `is not an IPv${req.family} pool`;
        throw new IpamError('no-pools', `requested IP pool "${r}" ${why}`);
      }
      return found;
    });
  } else {
    candidates = enabled.filter(
      (p) =>
        (p.pool.spec.assignmentMode ?? 'Automatic') === 'Automatic' &&
        matches(p.pool.spec.nodeSelector, req.nodeLabels, p, 'nodeSelector') &&
        matches(p.pool.spec.namespaceSelector, req.namespaceLabels ?? {}, p, 'namespaceSelector'),
    );
    if (candidates.length === 0) {
      throw new IpamError(
        'no-pools',
        enabled.length === 0
          ? `no enabled IPv${req.family} IP pool exists`
          : `no enabled IPv${req.family} IP pool selects this node and namespace (checked ${enabled.map(describe).join(', ')})`,
      );
    }
  }
  const byUse = candidates.filter((p) =>
    (p.pool.spec.allowedUses ?? ['Workload', 'Tunnel']).includes(req.use),
  );
  if (byUse.length === 0) {
    throw new IpamError(
      'no-pools',
      `no IPv${req.family} IP pool allows use ${req.use} (candidates: ${candidates.map(describe).join(', ')})`,
    );
  }
  return byUse;
}

function matches(
  sel: string | undefined,
  labels: Record<string, string>,
  p: UsablePool,
  field: string,
): boolean {
  if (sel === undefined || sel.trim() === '') return true;
  try {
    return selectorMatches(sel, labels);
  } catch (e) {
    throw new IpamError('invalid', `IP pool ${describe(p)} has an invalid ${field} "${sel}"`, { cause: e });
  }
}

/** Whether the pool's nodeSelector matches a node with these labels. */
export function poolSelectsNode(p: UsablePool, nodeLabels: Record<string, string>): boolean {
  return matches(p.pool.spec.nodeSelector, nodeLabels, p, 'nodeSelector');
}

/** The pool holding `ip` (first by name), or undefined. */
export function poolForIp(pools: readonly UsablePool[], ip: IPAddress): UsablePool | undefined {
  return pools.find((p) => cidrContainsIp(p.cidr, ip));
}
