import { describe, expect, it } from 'vitest';
import { GoldmaneError } from './errors.js';
import { EMPTY_FILTER, type Filter } from './filter.js';
import type { Flow, FlowKey, PolicyHit } from './flow.js';
import { FlowStore, type ListQuery } from './store.js';

const T0 = 1_700_000_010; // a bucket start (divisible by 15)

function hit(over: Partial<PolicyHit> = {}): PolicyHit {
  return {
    kind: 'CalicoNetworkPolicy',
    namespace: 'shop',
    name: 'allow-web',
    tier: 'default',
    action: 'Allow',
    policyIndex: 0,
    ruleIndex: 0,
    trigger: null,
    ...over,
  };
}

function key(over: Partial<FlowKey> = {}): FlowKey {
  return {
    sourceName: 'web-*',
    sourceNamespace: 'shop',
    sourceType: 'WorkloadEndpoint',
    destName: 'db-*',
    destNamespace: 'shop',
    destType: 'WorkloadEndpoint',
    destPort: 5432,
    destServiceName: '',
    destServiceNamespace: '',
    destServicePortName: '',
    destServicePort: 0,
    proto: 'tcp',
    reporter: 'Dst',
    action: 'Allow',
    policies: { enforcedPolicies: [hit()], pendingPolicies: [] },
    ...over,
  };
}

function flow(start: number, over: Partial<Flow> = {}, k: Partial<FlowKey> = {}): Flow {
  return {
    key: key(k),
    startTime: start,
    endTime: start + 15,
    sourceLabels: ['app=web', 'tier=front'],
    destLabels: ['app=db'],
    packetsIn: 10,
    packetsOut: 5,
    bytesIn: 1000,
    bytesOut: 500,
    numConnectionsStarted: 1,
    numConnectionsCompleted: 0,
    numConnectionsLive: 1,
    ...over,
  };
}

function query(over: Partial<ListQuery> = {}): ListQuery {
  return {
    startTimeGte: 0,
    startTimeLt: 0,
    page: 0,
    pageSize: 0,
    sortBy: [],
    filter: EMPTY_FILTER,
    aggregationInterval: 0,
    ...over,
  };
}

function filter(over: Partial<Filter>): Filter {
  return { ...EMPTY_FILTER, ...over };
}

describe('FlowStore aggregation', () => {
  it('sums two reports of one key in one bucket and intersects their labels', () => {
    const s = new FlowStore();
    s.ingest(flow(T0 + 1), T0 + 5);
    s.ingest(flow(T0 + 3, { sourceLabels: ['app=web'], bytesIn: 24, numConnectionsLive: 2 }), T0 + 5);
    const { flows, meta } = s.list(query(), T0 + 5);
    expect(meta).toEqual({ totalPages: 1, totalResults: 1 });
    expect(flows[0]!.flow).toMatchObject({
      startTime: T0,
      endTime: T0 + 15,
      bytesIn: 1024,
      packetsIn: 20,
      numConnectionsStarted: 2,
      numConnectionsLive: 3,
      sourceLabels: ['app=web'],
      destLabels: ['app=db'],
    });
  });

  it('keeps keys that differ in any field apart, the policy trace included', () => {
    const s = new FlowStore();
    s.ingest(flow(T0), T0);
    s.ingest(flow(T0, {}, { reporter: 'Src' }), T0);
    s.ingest(
      flow(T0, {}, { policies: { enforcedPolicies: [hit({ ruleIndex: 1 })], pendingPolicies: [] } }),
      T0,
    );
    s.ingest(flow(T0), T0);
    expect(s.stats()).toMatchObject({ uniqueFlows: 3, rows: 3, received: 4 });
  });

  it('merges a key over buckets into one flow, or one per aggregation window', () => {
    const s = new FlowStore();
    for (let i = 0; i < 4; i++) s.ingest(flow(T0 + i * 15, { numConnectionsLive: i }), T0 + 60);
    const all = s.list(query(), T0 + 60).flows;
    expect(all).toHaveLength(1);
    expect(all[0]!.flow).toMatchObject({
      startTime: T0,
      endTime: T0 + 60,
      bytesIn: 4000,
      numConnectionsLive: 3,
    });
    const per30 = s.list(query({ aggregationInterval: 30 }), T0 + 60).flows;
    expect(per30.map((r) => [r.flow.startTime, r.flow.bytesIn])).toEqual([
      [T0 + 30, 2000],
      [T0, 2000],
    ]);
    expect(per30[0]!.id).toBe(per30[1]!.id);
  });

  it('lists within the time range, relative times against now', () => {
    const s = new FlowStore();
    s.ingest(flow(T0), T0 + 100);
    s.ingest(flow(T0 + 60, {}, { destName: 'cache-*' }), T0 + 100);
    const recent = s.list(query({ startTimeGte: -50 }), T0 + 100).flows;
    expect(recent.map((r) => r.flow.key.destName)).toEqual(['cache-*']);
    const old = s.list(query({ startTimeGte: T0, startTimeLt: T0 + 15 }), T0 + 100).flows;
    expect(old.map((r) => r.flow.key.destName)).toEqual(['db-*']);
  });
});

describe('FlowStore filters', () => {
  const s = new FlowStore();
  const now = T0 + 10;
  s.ingest(flow(T0), now);
  s.ingest(flow(T0, {}, { destName: 'api-*', destPort: 8080, sourceNamespace: 'ops' }), now);
  s.ingest(
    flow(
      T0,
      {},
      {
        destName: 'admin-*',
        action: 'Deny',
        proto: 'udp',
        policies: {
          enforcedPolicies: [
            hit({
              kind: 'EndOfTier',
              name: '',
              namespace: '',
              tier: 'security',
              action: 'Deny',
              ruleIndex: -1,
              trigger: hit({
                kind: 'GlobalNetworkPolicy',
                name: 'lockdown',
                namespace: '',
                tier: 'security',
              }),
            }),
          ],
          pendingPolicies: [hit({ kind: 'StagedNetworkPolicy', name: 'staged-open', action: 'Allow' })],
        },
      },
    ),
    now,
  );
  const names = (f: Filter) =>
    s
      .list(query({ filter: f, sortBy: ['DestName'] }), now)
      .flows.map((r) => r.flow.key.destName)
      .join(',');

  it('ORs the entries of a field and ANDs the fields', () => {
    expect(
      names(
        filter({
          destNames: [
            { value: 'db-*', type: 'Exact' },
            { value: 'api-*', type: 'Exact' },
          ],
        }),
      ),
    ).toBe('api-*,db-*');
    expect(names(filter({ destNames: [{ value: 'db-*', type: 'Exact' }], destPorts: [8080] }))).toBe('');
    expect(names(filter({ sourceNamespaces: [{ value: 'ps', type: 'Fuzzy' }] }))).toBe('api-*');
    expect(names(filter({ sourceNamespaces: [{ value: 'op', type: 'Exact' }] }))).toBe('');
  });

  it('filters on action, protocol and port', () => {
    expect(names(filter({ actions: ['Deny'] }))).toBe('admin-*');
    expect(names(filter({ protocols: [{ value: 'tcp', type: 'Exact' }] }))).toBe('api-*,db-*');
    expect(names(filter({ destPorts: [5432] }))).toBe('admin-*,db-*');
  });

  it('matches a policy by the trigger of an end-of-tier hit, and by a staged (pending) hit', () => {
    const pm = {
      kind: 'KindUnspecified',
      tier: '',
      namespace: '',
      name: '',
      action: 'ActionUnspecified',
    } as const;
    expect(names(filter({ policies: [{ ...pm, name: 'lockdown' }] }))).toBe('admin-*');
    expect(
      names(filter({ policies: [{ ...pm, kind: 'EndOfTier', tier: 'security', action: 'Deny' }] })),
    ).toBe('admin-*');
    expect(names(filter({ policies: [{ ...pm, name: 'staged-open' }] }))).toBe('admin-*');
    expect(names(filter({ policies: [{ ...pm, name: 'allow-web', action: 'Allow' }] }))).toBe('api-*,db-*');
    expect(names(filter({ policies: [{ ...pm, name: 'allow-web', action: 'Deny' }] }))).toBe('');
  });

  it('gives filter hints: distinct values, sorted, policy names through triggers', () => {
    const h = (type: Parameters<FlowStore['filterHints']>[0]['type'], f = EMPTY_FILTER) =>
      s.filterHints({ type, filter: f, startTimeGte: 0, startTimeLt: 0, page: 0, pageSize: 0 }, now).values;
    expect(h('FilterTypeDestName')).toEqual(['admin-*', 'api-*', 'db-*']);
    expect(h('FilterTypeSourceNamespace')).toEqual(['ops', 'shop']);
    expect(h('FilterTypePolicyName')).toEqual(['allow-web', 'lockdown', 'staged-open']);
    expect(h('FilterTypePolicyTier')).toEqual(['default', 'security']);
    expect(h('FilterTypeDestName', filter({ actions: ['Allow'] }))).toEqual(['api-*', 'db-*']);
    expect(() => h('FilterTypeUnspecified')).toThrow(/^type: /);
  });
});

describe('FlowStore sort and pages', () => {
  it('sorts newest first by default, by a field ascending on request, and pages', () => {
    const s = new FlowStore();
    const now = T0 + 100;
    s.ingest(flow(T0 + 30, {}, { destName: 'b' }), now);
    s.ingest(flow(T0, {}, { destName: 'c' }), now);
    s.ingest(flow(T0 + 15, {}, { destName: 'a' }), now);
    const by = (q: Partial<ListQuery>) => s.list(query(q), now).flows.map((r) => r.flow.key.destName);
    expect(by({})).toEqual(['b', 'a', 'c']);
    expect(by({ sortBy: ['DestName'] })).toEqual(['a', 'b', 'c']);
    expect(by({ sortBy: ['DestName'], pageSize: 2, page: 1 })).toEqual(['c']);
    expect(s.list(query({ pageSize: 2 }), now).meta).toEqual({ totalPages: 2, totalResults: 3 });
  });

  it('refuses a bad request with the field named', () => {
    const s = new FlowStore();
    const bad = (q: Partial<ListQuery>) => {
      try {
        s.list(query(q), T0);
        return 'accepted';
      } catch (e) {
        expect(e).toBeInstanceOf(GoldmaneError);
        expect((e as GoldmaneError).code).toBe('invalid-argument');
        return (e as Error).message.split(':')[0];
      }
    };
    expect(bad({ sortBy: ['Time', 'DestName'] })).toBe('sort_by');
    expect(bad({ aggregationInterval: 20 })).toBe('aggregation_interval');
    expect(bad({ startTimeGte: T0 + 10, startTimeLt: T0 })).toBe('start_time_gte');
    expect(bad({ page: 2 })).toBe('page');
    expect(bad({ aggregationInterval: 45 })).toBe('accepted');
  });
});

describe('FlowStore retention and budget', () => {
  it('refuses flows outside the window and forgets buckets that leave it', () => {
    const s = new FlowStore({ historyBuckets: 4 });
    expect(s.ingest(flow(T0 - 5 * 15), T0)).toBe('too-old');
    expect(s.ingest(flow(T0 + 2 * 15), T0)).toBe('too-new');
    expect(s.ingest(flow(T0 + 15), T0)).toBe('stored'); // the bucket ahead, for clock skew
    expect(s.ingest(flow(T0 - 4 * 15), T0)).toBe('stored');
    expect(s.ingest(flow(T0), T0)).toBe('stored');
    expect(s.stats()).toMatchObject({ rows: 3, uniqueFlows: 1, rejectedTooOld: 1, rejectedTooNew: 1 });
    expect(s.expire(T0 + 15)).toBe(1);
    expect(s.list(query(), T0 + 15).flows[0]!.flow.startTime).toBe(T0);
    expect(s.expire(T0 + 20 * 15)).toBe(2);
    expect(s.stats()).toMatchObject({ rows: 0, uniqueFlows: 0, expired: 3 });
    expect(s.list(query(), T0 + 20 * 15).flows).toEqual([]);
  });

  it('over budget drops the oldest rows first and counts them', () => {
    const s = new FlowStore({ maxFlows: 3 });
    const now = T0 + 60;
    s.ingest(flow(T0, {}, { destName: 'old-1' }), now);
    s.ingest(flow(T0, {}, { destName: 'old-2' }), now);
    s.ingest(flow(T0 + 15, {}, { destName: 'mid' }), now);
    s.ingest(flow(T0 + 30, {}, { destName: 'new' }), now);
    expect(s.stats()).toMatchObject({ rows: 3, dropped: 1 });
    const names = () => s.list(query({ sortBy: ['DestName'] }), now).flows.map((r) => r.flow.key.destName);
    expect(names()).toEqual(['mid', 'new', 'old-2']);
    // An update of a kept row costs nothing.
    s.ingest(flow(T0 + 30, {}, { destName: 'new' }), now);
    expect(s.stats().dropped).toBe(1);
    // A flow older than everything kept is the one dropped.
    expect(s.ingest(flow(T0 - 15, {}, { destName: 'older' }), now)).toBe('dropped');
    expect(s.stats()).toMatchObject({ rows: 3, dropped: 2 });
    expect(names()).toEqual(['mid', 'new', 'old-2']);
  });
});

describe('FlowStore streaming', () => {
  it('hands out each changed row once its bucket has closed, and again after a late update', () => {
    const s = new FlowStore();
    s.ingest(flow(T0 + 1), T0 + 2);
    expect(s.takeClosed(T0 + 10)).toEqual([]);
    const first = s.takeClosed(T0 + 16);
    expect(first.map((r) => [r.flow.startTime, r.flow.bytesIn])).toEqual([[T0, 1000]]);
    expect(s.takeClosed(T0 + 20)).toEqual([]);
    s.ingest(flow(T0 + 2, { bytesIn: 1 }), T0 + 20);
    expect(s.takeClosed(T0 + 20).map((r) => [r.id, r.flow.bytesIn])).toEqual([[first[0]!.id, 1001]]);
  });

  it('backfills the closed buckets since a start time, oldest first, filtered', () => {
    const s = new FlowStore();
    s.ingest(flow(T0), T0 + 40);
    s.ingest(flow(T0 + 15, {}, { action: 'Deny' }), T0 + 40);
    s.ingest(flow(T0 + 30), T0 + 40);
    const all = s.closedSince(T0, EMPTY_FILTER, T0 + 40).map((r) => r.flow.startTime);
    expect(all).toEqual([T0, T0 + 15]);
    const denied = s.closedSince(-3600, filter({ actions: ['Deny'] }), T0 + 40);
    expect(denied.map((r) => r.flow.key.action)).toEqual(['Deny']);
  });
});
