/**
 * The policy sorter (upstream `felix/calc/policy_sorter.go`): the tiers' order and default
 * actions, and the order of the policies that apply to one endpoint.
 *
 *   Tier ──► onTier ──► tiers (order, defaultAction; well-known tiers without a resource)
 *   an endpoint's policies ──► buildTiers ──► EndpointTier[]: valid tiers first, by order (unset
 *                                             last), then name; in each, the policies by order,
 *                                             then `name/namespace/kind`; per direction
 *
 * Pure.
 */
import { type Tier, WELL_KNOWN_TIERS } from '@calico-ts/api';
import type { KindUpdate } from './dispatcher.js';
import { byString } from './emitter.js';
import { type PolicyInfo, tieBreakKey } from './policy-info.js';
import type { EndpointTier, TierDefaultAction } from './types.js';

interface TierInfo {
  readonly order?: number;
  readonly defaultAction: TierDefaultAction;
}

export class PolicySorter {
  private readonly tiers = new Map<string, TierInfo>();

  onTier(u: KindUpdate): void {
    const name = u.resource.metadata.name;
    const tier = u.kind === 'set' ? (u.resource as Tier) : undefined;
    if (tier) {
      const info: TierInfo =
        tier.spec.order === undefined
          ? { defaultAction: tier.spec.defaultAction ?? WELL_KNOWN_TIERS[name]?.defaultAction ?? 'Deny' }
          : {
              order: tier.spec.order,
              defaultAction: tier.spec.defaultAction ?? WELL_KNOWN_TIERS[name]?.defaultAction ?? 'Deny',
            };
      this.tiers.set(name, info);
    } else {
      this.tiers.delete(name);
    }
  }

  tierInfo(name: string): { valid: boolean; order?: number; defaultAction: TierDefaultAction } {
    const t = this.tiers.get(name);
    if (t) return { valid: true, ...t };
    const known = WELL_KNOWN_TIERS[name];
    if (known) return { valid: true, order: known.order, defaultAction: known.defaultAction };
    return { valid: false, defaultAction: 'Deny' };
  }

  buildTiers(pols: readonly PolicyInfo[]): EndpointTier[] {
    const byTier = new Map<string, PolicyInfo[]>();
    for (const p of pols) {
      const list = byTier.get(p.tier);
      if (list) list.push(p);
      else byTier.set(p.tier, [p]);
    }
    const names = [...byTier.keys()].map((n) => ({ name: n, ...this.tierInfo(n) }));
    // Valid tiers first; then by order, unset last; then by name (upstream TierLess).
    names.sort((a, b) => {
      if (a.valid !== b.valid) return a.valid ? -1 : 1;
      if (a.order !== b.order) {
        if (a.order === undefined) return 1;
        if (b.order === undefined) return -1;
        return a.order - b.order;
      }
      return byString(a.name, b.name);
    });
    const out: EndpointTier[] = [];
    for (const t of names) {
      const list = byTier.get(t.name)!;
      // By order (unset = +Inf), then the text `name/namespace/kind` (upstream PolKVLess).
      list.sort((a, b) => {
        if (a.order !== b.order) return a.order < b.order ? -1 : 1;
        return byString(tieBreakKey(a), tieBreakKey(b));
      });
      const ingressPolicies = list.filter((p) => p.ingress).map((p) => p.id);
      const egressPolicies = list.filter((p) => p.egress).map((p) => p.id);
      if (ingressPolicies.length === 0 && egressPolicies.length === 0) continue;
      out.push({ name: t.name, defaultAction: t.defaultAction, ingressPolicies, egressPolicies });
    }
    return out;
  }
}
