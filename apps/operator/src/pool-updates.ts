/**
 * What to do with one of the Installation's pools, given the stored one (pure):
 *
 *   none stored                              create it, recording what was written
 *   stored, never recorded by the operator   keep (a pool made some other way is not the operator's)
 *   stored ≠ recorded                        keep: someone edited it, and their edit stands
 *   recorded = desired                       keep: nothing changed
 *   recorded ≠ desired, same CIDR            update the fields the operator sets, and the record
 *   recorded ≠ desired, CIDR changed         refuse: a pool's CIDR cannot change in place
 *
 * The record is the annotation `operator.tigera.io/ippool-spec`: the JSON of the fields the
 * operator wrote. So an edit of the Installation (encapsulation, NAT, node selector, …) reaches
 * the pool, as it does the DaemonSet, while a pool a user changed by hand is never overwritten.
 */
import type { PoolResource } from './render.js';

export const POOL_SPEC_ANNOTATION = 'operator.tigera.io/ippool-spec';

type Obj = Record<string, unknown>;

export type PoolStep =
  | { readonly action: 'keep'; readonly why: 'same' | 'edited' | 'not-recorded' }
  | { readonly action: 'create'; readonly pool: Obj }
  | { readonly action: 'update'; readonly pool: Obj; readonly changed: string[] }
  | { readonly action: 'refuse'; readonly message: string };

/** JSON with object keys sorted, so equal values give equal text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v as Obj)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Obj)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v ?? null);
}

/** The operator's fields of `spec`: those `desired` sets. */
function pick(spec: Obj, keys: readonly string[]): Obj {
  return Object.fromEntries(keys.map((k) => [k, spec[k]]));
}

function withRecord(meta: Obj, spec: Obj): Obj {
  const annotations = { ...((meta.annotations as Record<string, string> | undefined) ?? {}) };
  annotations[POOL_SPEC_ANNOTATION] = canonical(spec);
  return { ...meta, annotations };
}

export function poolStep(desired: PoolResource, stored: Obj | undefined): PoolStep {
  const spec = desired.spec as Obj;
  const keys = Object.keys(spec);
  if (!stored)
    return {
      action: 'create',
      pool: { ...desired, metadata: withRecord(desired.metadata as unknown as Obj, spec) },
    };
  const meta = (stored.metadata as Obj | undefined) ?? {};
  const recorded = (meta.annotations as Record<string, string> | undefined)?.[POOL_SPEC_ANNOTATION];
  if (recorded === undefined) return { action: 'keep', why: 'not-recorded' };
  const storedSpec = (stored.spec as Obj | undefined) ?? {};
  const recordedKeys = Object.keys(JSON.parse(recorded) as Obj);
  if (canonical(pick(storedSpec, recordedKeys)) !== recorded) return { action: 'keep', why: 'edited' };
  if (canonical(spec) === recorded) return { action: 'keep', why: 'same' };
  if (storedSpec.cidr !== spec.cidr)
    return {
      action: 'refuse',
      message:
        `IPPool ${desired.metadata.name}: the Installation changes its cidr from ${String(storedSpec.cidr)} to ` +
        `${String(spec.cidr)}, and a pool's CIDR cannot change in place: add a pool with a new name for ` +
        'the new range, then remove the old one',
    };
  const was = JSON.parse(recorded) as Obj;
  const changed = keys.filter((k) => canonical(was[k]) !== canonical(spec[k]));
  return {
    action: 'update',
    pool: { ...stored, metadata: withRecord(meta, spec), spec: { ...storedSpec, ...spec } },
    changed,
  };
}
