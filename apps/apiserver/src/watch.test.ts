import { NOOP_LOGGER } from '@calico-ts/api/log';
import type { Datastore, WatchEvent } from '@calico-ts/datastore';
import { describe, expect, it } from 'vitest';
import { servedResources } from './resources.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { type KubeWatchEvent, watchObjects } from './watch.js';

const tiers = servedResources('memory').find((r) => r.kind === 'Tier')!;
const tier = (name: string, rv: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Tier',
  metadata: { name, resourceVersion: rv, labels },
  spec: {},
});

/** A datastore that lists `items` and then replays `events` (only what a watch reads). */
function replaying(
  items: unknown[],
  events: WatchEvent<'Tier'>[],
): Datastore & { watchedFrom: (string | undefined)[] } {
  const watchedFrom: (string | undefined)[] = [];
  return {
    watchedFrom,
    list: async () => ({ items, revision: '10' }),
    watch: (_kind: string, opts: { revision?: string }) => {
      watchedFrom.push(opts.revision);
      return (async function* () {
        yield* events;
      })();
    },
  } as unknown as Datastore & { watchedFrom: (string | undefined)[] };
}

async function collect(
  ds: Datastore,
  q: { labels?: string; resourceVersion?: string },
): Promise<KubeWatchEvent[]> {
  const out: KubeWatchEvent[] = [];
  for await (const e of watchObjects(
    ds,
    tiers,
    {
      labels: parseLabelSelector(q.labels),
      fields: parseFieldSelector(undefined),
      filtered: q.labels !== undefined,
      ...(q.resourceVersion ? { resourceVersion: q.resourceVersion } : {}),
      signal: new AbortController().signal,
    },
    NOOP_LOGGER,
  ))
    out.push(e);
  return out;
}

const brief = (events: KubeWatchEvent[]) =>
  events.map((e) => [
    e.type,
    (e.object as { metadata?: { name?: string } }).metadata?.name ?? (e.object as { code?: number }).code,
  ]);

describe('watchObjects', () => {
  it('starts with the current objects and goes on after the list’s revision', async () => {
    const ds = replaying(
      [tier('a', '9')],
      [{ kind: 'added', resource: tier('b', '11') as never, revision: '11' }],
    );
    expect(brief(await collect(ds, {}))).toEqual([
      ['ADDED', 'a'],
      ['ADDED', 'b'],
    ]);
    expect(ds.watchedFrom).toEqual(['10']);
  });

  it('from a revision, reports only changes, and a modification without its previous state as MODIFIED', async () => {
    const ds = replaying(
      [tier('a', '9')],
      [{ kind: 'modified', resource: tier('a', '12') as never, revision: '12' }],
    );
    expect(brief(await collect(ds, { resourceVersion: '11' }))).toEqual([['MODIFIED', 'a']]);
    expect(ds.watchedFrom).toEqual(['11']);
  });

  it('ends with ERROR 410 Expired when the datastore lost the revision', async () => {
    const ds = replaying([], [{ kind: 'resync', items: [], revision: '50', reason: 'compacted' }]);
    const events = await collect(ds, { resourceVersion: '3' });
    expect(events).toEqual([
      {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'too old resource version: 3',
          reason: 'Expired',
          code: 410,
        },
      },
    ]);
  });

  it('with a selector, an object leaving it is DELETED, one entering ADDED, a deletion outside it nothing', async () => {
    const ds = replaying(
      [tier('a', '9', { c: 'red' })],
      [
        {
          kind: 'modified',
          resource: tier('a', '11', { c: 'blue' }) as never,
          previous: tier('a', '9', { c: 'red' }) as never,
          revision: '11',
        },
        { kind: 'modified', resource: tier('b', '12', { c: 'red' }) as never, revision: '12' },
        { kind: 'deleted', resource: tier('a', '13', { c: 'blue' }) as never, revision: '13' },
      ],
    );
    expect(brief(await collect(ds, { labels: 'c=red', resourceVersion: '10' }))).toEqual([
      ['DELETED', 'a'],
      ['ADDED', 'b'],
    ]);
  });
});
