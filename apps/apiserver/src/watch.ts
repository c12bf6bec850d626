/**
 * A Kubernetes watch over the datastore's watch:
 *
 *   resourceVersion unset or "0" ──► list ──► ADDED per object ──┐
 *   resourceVersion N ──────────────────────────────────────────┴─► Datastore.watch(after rev)
 *        ──► added/modified/deleted ──► selectors ──► ADDED / MODIFIED / DELETED
 *        ──► resync (the revision was compacted) ──► ERROR 410 Expired, end (the client lists again)
 *
 * With a selector, an object that stops matching is reported DELETED and one that starts matching
 * ADDED, as Kubernetes' watch cache does; which objects match is tracked from the first list (or,
 * watching from a revision, from a list at the start). A datastore entry that does not decode is
 * logged and skipped; a lost and regained datastore connection is invisible to the client (the
 * datastore's watch resumes where it was).
 *
 * Thread-safety: one generator per request.
 */

import type { Kind } from '@calico-ts/api';
import type { Logger } from '@calico-ts/api/log';
import type { Datastore, WatchEvent } from '@calico-ts/datastore';
import { classify } from './classify.js';
import { ApiServerError, type Status, statusOf } from './errors.js';
import type { ServedResource } from './resources.js';
import type { FieldPredicate, LabelPredicate } from './selectors.js';

type Obj = Record<string, unknown>;

export interface WatchQuery {
  readonly namespace?: string;
  readonly labels: LabelPredicate;
  readonly fields: FieldPredicate;
  /** Whether `labels` or `fields` select anything less than everything. */
  readonly filtered: boolean;
  /** Changes after this revision; unset or `0`: the current objects first. */
  readonly resourceVersion?: string;
  readonly signal: AbortSignal;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'ERROR';

export interface KubeWatchEvent {
  readonly type: WatchEventType;
  readonly object: Obj | Status;
}

function keyOf(o: Obj): string {
  const m = (o.metadata ?? {}) as Obj;
  return `${String(m.namespace ?? '')}/${String(m.name ?? '')}`;
}

function selected(o: Obj, q: WatchQuery): boolean {
  const m = (o.metadata ?? {}) as Obj;
  const ns = typeof m.namespace === 'string' ? m.namespace : undefined;
  return q.fields(String(m.name ?? ''), ns) && q.labels((m.labels ?? {}) as Record<string, string>);
}

function expired(message: string): KubeWatchEvent {
  return { type: 'ERROR', object: statusOf(new ApiServerError('expired', message)) };
}

/** The events of a watch of `r`, until the signal aborts or the revision is gone. */
export async function* watchObjects(
  ds: Datastore,
  r: ServedResource,
  q: WatchQuery,
  log: Logger,
): AsyncGenerator<KubeWatchEvent> {
  const visible = new Set<string>();
  const fromNow = q.resourceVersion === undefined || q.resourceVersion === '' || q.resourceVersion === '0';
  let from = q.resourceVersion;
  if (fromNow || q.filtered) {
    try {
      const listed = await ds.list(r.kind, q.namespace ? { namespace: q.namespace } : {});
      for (const item of listed.items as unknown as Obj[]) {
        if (!selected(item, q)) continue;
        visible.add(keyOf(item));
        if (fromNow) yield { type: 'ADDED', object: item };
      }
      if (fromNow) from = listed.revision;
    } catch (e) {
      yield { type: 'ERROR', object: statusOf(classify(e, { resource: r, verb: 'watch' })) };
      return;
    }
  }
  const events = ds.watch(r.kind as Kind, {
    ...(from !== undefined ? { revision: from } : {}),
    signal: q.signal,
    ...(q.namespace ? { namespace: q.namespace } : {}),
  });
  try {
    for await (const ev of events) {
      const out = translate(ev, q, visible, log);
      if (out === 'end') {
        yield expired(`too old resource version: ${from}`);
        return;
      }
      if (out) yield out;
    }
  } catch (e) {
    if (q.signal.aborted) return;
    yield { type: 'ERROR', object: statusOf(classify(e, { resource: r, verb: 'watch' })) };
  }
}

/** Whether an object matched before a change: its previous state, else what was tracked. */
function matchedBefore(previous: Obj | undefined, key: string, q: WatchQuery, visible: Set<string>): boolean {
  if (!q.filtered) return true;
  return previous ? selected(previous, q) : visible.has(key);
}

function translate(
  ev: WatchEvent<Kind>,
  q: WatchQuery,
  visible: Set<string>,
  log: Logger,
): KubeWatchEvent | 'end' | undefined {
  switch (ev.kind) {
    case 'added':
    case 'modified': {
      const o = ev.resource as unknown as Obj;
      const key = keyOf(o);
      const before =
        ev.kind === 'modified' && matchedBefore(ev.previous as unknown as Obj | undefined, key, q, visible);
      const now = selected(o, q);
      if (now) visible.add(key);
      else visible.delete(key);
      if (now) return { type: before ? 'MODIFIED' : 'ADDED', object: o };
      return before ? { type: 'DELETED', object: o } : undefined;
    }
    case 'deleted': {
      const o = ev.resource as unknown as Obj;
      const key = keyOf(o);
      const before = !q.filtered || selected(o, q) || visible.has(key);
      visible.delete(key);
      return before ? { type: 'DELETED', object: o } : undefined;
    }
    case 'resync':
      return 'end';
    case 'error':
      log.warn({ key: ev.key, error: ev.error.message }, 'watch: a datastore entry does not decode; skipped');
      return undefined;
    case 'disconnected':
    case 'reconnected':
      return undefined;
  }
}
