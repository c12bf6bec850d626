/**
 * References a write must not leave dangling, as upstream's clientv3 checks them before it stores
 * a resource: a BGPPeer's `spec.filters` must each name a stored BGPFilter (its Create and Update
 * look them up and refuse with `error with field BGPPeer.Spec.Filters = '[NAME]' (BGPFilter(s)
 * not found)`). A policy's tier is checked on create beside the IPPool rules in `kv-datastore.ts`.
 *
 * Calculation over a lookup the caller gives: no I/O of its own.
 */
import type { FieldError, Kind, Resource } from '@calico-ts/api';

/** Whether an object of `kind` named `name` (cluster-scoped) is stored. */
export type ExistsLookup = (kind: Kind, name: string) => Promise<boolean>;

/** The broken references of `v`, as field errors; empty when every one resolves. */
export async function referenceProblems(v: Resource, exists: ExistsLookup): Promise<FieldError[]> {
  if (v.kind !== 'BGPPeer') return [];
  const missing: string[] = [];
  for (const name of v.spec.filters ?? []) if (!(await exists('BGPFilter', name))) missing.push(name);
  if (missing.length === 0) return [];
  return [
    {
      path: 'spec.filters',
      rule: `error with field BGPPeer.Spec.Filters = '[${missing.join(' ')}]' (BGPFilter(s) not found)`,
    },
  ];
}
