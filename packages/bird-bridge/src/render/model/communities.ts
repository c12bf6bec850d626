/**
 * BGP communities attached to advertised prefixes, from `prefixAdvertisements`: this node's
 * BGPConfiguration's when it has any, else the default's. A community is an `aa:nn` or `aa:nn:mm`
 * literal or the name of one in the same BGPConfiguration's `communities`; unknown names are
 * dropped, and a prefix left with none gets no rule. Pure.
 */
import type { ModelContext } from './context.js';
import { familyOf, uniqueSorted } from './node-facts.js';
import type { CommunityRule } from './types.js';

export function communityRules(ctx: ModelContext): CommunityRule[] {
  const source = ctx.mine.prefixAdvertisements !== undefined ? ctx.mine : ctx.global;
  const rules: CommunityRule[] = [];
  for (const pa of source.prefixAdvertisements ?? []) {
    if (!pa.cidr || familyOf(pa.cidr) !== ctx.family) continue;
    const values = (pa.communities ?? [])
      .map((c) => (/^\d+:\d+(:\d+)?$/.test(c) ? c : source.communities?.find((d) => d.name === c)?.value))
      .filter((v) => v !== undefined);
    const set = uniqueSorted(values);
    if (set.length > 0) rules.push({ cidr: pa.cidr, communities: set });
  }
  return rules;
}
