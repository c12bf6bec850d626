/**
 * What a mirroring controller must write: the difference between the resources Kubernetes implies
 * (desired) and the ones the Calico datastore holds under the controller's names (current).
 *
 *   desired (from Kubernetes)  ┐
 *                              ├──► creates: desired, not held
 *   current (Calico datastore) ┘     updates: held, but labels, annotations or spec differ
 *                                     deletes: held under the controller's names, not desired
 *
 * Only `metadata.labels`, `metadata.annotations` and `spec` are compared: uid, timestamps and
 * revisions belong to each store. Pure calculation: no I/O.
 */
import type { Resource } from '@calico-ts/api';

export interface MirrorPlan<R extends Resource> {
  /** Resources to create, as desired (no resourceVersion). */
  readonly creates: R[];
  /** Resources to update: the desired content on the held metadata (uid, resourceVersion kept). */
  readonly updates: R[];
  /** Held resources to delete. */
  readonly deletes: R[];
}

export function resourceKeyOf(r: Resource): string {
  return r.metadata.namespace ? `${r.metadata.namespace}/${r.metadata.name}` : r.metadata.name;
}

/** JSON with object keys sorted, so key order never makes two equal values differ. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );
}

function content(r: Resource): string {
  const m = r.metadata;
  const labels = m.labels && Object.keys(m.labels).length > 0 ? m.labels : undefined;
  const annotations = m.annotations && Object.keys(m.annotations).length > 0 ? m.annotations : undefined;
  return canonical({ labels, annotations, spec: (r as { spec?: unknown }).spec ?? {} });
}

/** The writes that make `current` equal `desired` (see the module comment). */
export function planMirror<R extends Resource>(desired: readonly R[], current: readonly R[]): MirrorPlan<R> {
  const held = new Map(current.map((r) => [resourceKeyOf(r), r]));
  const wanted = new Set<string>();
  const creates: R[] = [];
  const updates: R[] = [];
  for (const d of desired) {
    const key = resourceKeyOf(d);
    wanted.add(key);
    const h = held.get(key);
    if (!h) {
      const { resourceVersion: _rv, uid: _uid, creationTimestamp: _ts, ...meta } = d.metadata;
      creates.push({ ...d, metadata: meta } as R);
    } else if (content(h) !== content(d)) {
      const meta = { ...h.metadata, labels: d.metadata.labels, annotations: d.metadata.annotations };
      if (meta.labels === undefined) delete meta.labels;
      if (meta.annotations === undefined) delete meta.annotations;
      updates.push({ ...h, metadata: meta, spec: (d as { spec?: unknown }).spec } as R);
    }
  }
  const deletes = current.filter((r) => !wanted.has(resourceKeyOf(r)));
  return { creates, updates, deletes };
}
