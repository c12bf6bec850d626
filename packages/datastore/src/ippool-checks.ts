/**
 * IPPool rules that depend on what is already stored, not on the pool alone (upstream clientv3
 * `ippool.go`, `validateAndSetDefaults`): single-resource rules live in `@calico-ts/api`.
 *
 * - create: the CIDR must not overlap the CIDR of any other stored pool (pools of the same name are
 *   skipped, so creating an existing pool fails `already-exists`, as upstream);
 * - update: the CIDR may not change (a stored CIDR written in another textual form of the same
 *   network may be rewritten in canonical form), nor the block size, nor may a `LoadBalancer` pool
 *   be given another use. Encapsulation modes, NAT, `disabled`, selectors may change.
 *
 * Pure functions over already validated and defaulted pools; the rule texts are upstream's reasons
 * (scripts grep for them) and the field is the one upstream reports (`IPPool.Spec.CIDR` → `spec.cidr`).
 */

import type { FieldError, IPPool } from '@calico-ts/api';
import { cidrsOverlap, formatCidr, parseCidr } from '@calico-ts/api/net';

/** Problems with creating `pool` next to the stored `existing` pools. */
export function ipPoolCreateProblems(pool: IPPool, existing: readonly IPPool[]): FieldError[] {
  const cidr = parseCidr(pool.spec.cidr);
  if (!cidr) return [];
  const problems: FieldError[] = [];
  for (const other of existing) {
    if (other.metadata.name === pool.metadata.name) continue;
    const otherCidr = parseCidr(other.spec.cidr);
    // As upstream, a stored pool whose CIDR does not parse is ignored here.
    if (otherCidr && cidrsOverlap(cidr, otherCidr)) {
      problems.push({
        path: 'spec.cidr',
        rule: `IPPool(${pool.metadata.name}) CIDR overlaps with IPPool(${other.metadata.name}) CIDR ${other.spec.cidr}`,
      });
    }
  }
  return problems;
}

/** Problems with replacing the `stored` pool by `next` (both of the same name). */
export function ipPoolUpdateProblems(next: IPPool, stored: IPPool): FieldError[] {
  const problems: FieldError[] = [];
  if (!cidrChangeAllowed(stored.spec.cidr, next.spec.cidr)) {
    problems.push({
      path: 'spec.cidr',
      rule: `IPPool CIDR cannot be modified (stored ${stored.spec.cidr}, given ${next.spec.cidr})`,
    });
  }
  if ((stored.spec.blockSize ?? 0) !== (next.spec.blockSize ?? 0)) {
    problems.push({
      path: 'spec.blockSize',
      rule: `IPPool BlockSize cannot be modified (stored ${stored.spec.blockSize}, given ${next.spec.blockSize})`,
    });
  }
  const wasLoadBalancer = (stored.spec.allowedUses ?? []).includes('LoadBalancer');
  if (wasLoadBalancer && (next.spec.allowedUses ?? []).some((u) => u !== 'LoadBalancer')) {
    problems.push({
      path: 'spec.allowedUses',
      // Upstream's text, spelling included ("LoadBalacer").
      rule: 'IPPool allowed use cannot be changed from LoadBalacer to Workload or Tunnel',
    });
  }
  return problems;
}

/**
 * The same text, or the same network where the new text is its canonical form (a pool stored in a
 * non-canonical form by another writer may be normalised; nothing else).
 */
function cidrChangeAllowed(storedText: string, nextText: string): boolean {
  if (storedText === nextText) return true;
  const a = parseCidr(storedText);
  const b = parseCidr(nextText);
  if (!a || !b) return false;
  return (
    a.family === b.family && a.prefix === b.prefix && a.network === b.network && nextText === formatCidr(b)
  );
}
