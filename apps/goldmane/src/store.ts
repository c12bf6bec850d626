/**
 * The flow store: flows kept in time buckets, within a retention window and a budget. Pure: the
 * time is an argument of every call, nothing here reads a clock or does I/O.
 *
 *   ingest(flow, now) ──► entry per FlowKey (id) ──► row per bucket (counters summed, labels
 *        │                                            intersected) ──► dirty until streamed
 *        ├── start older than the window, or past the future bucket: rejected (counted)
 *        └── a new row over maxFlows: the oldest row goes (counted as dropped)
 *   expire(now)      buckets that left the window go (their rows counted as expired)
 *   list(query, now) rows in [gte, lt) merged per key (and per aggregation window) ─► filter,
 *                    sort, page
 *   takeClosed(now)  the dirty rows of buckets that have ended: what a stream sends next
 *
 * Buckets are `interval` seconds wide, aligned to the epoch. Like upstream's, the window is
 * `historyBuckets` closed buckets, the bucket now filling and one bucket ahead for clock skew:
 * 240 + 2 buckets of 15 s by default, an hour of history. A "flow" of the budget is one key in one
 * bucket: that is what costs memory. Over the budget, the rows of the oldest bucket go first, in the
 * order they arrived; a flow older than every kept row is itself the one dropped.
 */
import { invalidArgument } from './errors.js';
import { type Filter, hitsOf, keyMatches } from './filter.js';
import {
  ENDPOINT_TYPES,
  type FilterType,
  type Flow,
  type FlowKey,
  type FlowResult,
  flowKeyString,
  type SortBy,
} from './flow.js';

/** The store's limits. */
export interface FlowStoreOptions {
  /** Bucket width in seconds (upstream's AGGREGATION_WINDOW, 15). */
  readonly intervalSeconds: number;
  /** Closed buckets kept (upstream 240: an hour at 15 s). */
  readonly historyBuckets: number;
  /** The most rows (a key in a bucket) kept. */
  readonly maxFlows: number;
}

/** Upstream's defaults, and our budget. */
export const DEFAULT_STORE_OPTIONS: FlowStoreOptions = Object.freeze({
  intervalSeconds: 15,
  historyBuckets: 240,
  maxFlows: 100_000,
});

/** A time range as the API gives it: 0 = open end, < 0 relative to now. */
export interface TimeRange {
  /** Start time >= this. */
  readonly startTimeGte: number;
  /** Start time < this. */
  readonly startTimeLt: number;
}

/** A list request (upstream's FlowListRequest). */
export interface ListQuery extends TimeRange {
  /** Zero-based page. */
  readonly page: number;
  /** Page size; 0 = all. */
  readonly pageSize: number;
  /** At most one order; empty = Time. */
  readonly sortBy: readonly SortBy[];
  /** Criteria. */
  readonly filter: Filter;
  /** 0 = one flow per key over the range; else a multiple of the interval. */
  readonly aggregationInterval: number;
}

/** A filter hints request. */
export interface HintsQuery extends TimeRange {
  /** Which field. */
  readonly type: FilterType;
  /** Criteria on the flows the values come from. */
  readonly filter: Filter;
  /** Zero-based page. */
  readonly page: number;
  /** Page size; 0 = all. */
  readonly pageSize: number;
}

/** Paging facts of an answer. */
export interface ListMeta {
  /** Pages at this page size (1 when unpaged and not empty). */
  readonly totalPages: number;
  /** Results before paging. */
  readonly totalResults: number;
}

/** What happened to an ingested flow. */
export type IngestOutcome = 'stored' | 'too-old' | 'too-new' | 'dropped';

/** The store's counters, for metrics. */
export interface FlowStoreStats {
  /** Flows ingested, whatever became of them. */
  readonly received: number;
  /** Rows dropped because the budget was full. */
  readonly dropped: number;
  /** Flows refused: start before the window. */
  readonly rejectedTooOld: number;
  /** Flows refused: start past the future bucket. */
  readonly rejectedTooNew: number;
  /** Rows that aged out of the window. */
  readonly expired: number;
  /** Rows now. */
  readonly rows: number;
  /** Distinct keys now. */
  readonly uniqueFlows: number;
}

interface Counters {
  packetsIn: number;
  packetsOut: number;
  bytesIn: number;
  bytesOut: number;
  numConnectionsStarted: number;
  numConnectionsCompleted: number;
  numConnectionsLive: number;
}

interface Row extends Counters {
  readonly entry: Entry;
  readonly bucket: number;
  sourceLabels: string[];
  destLabels: string[];
}

interface Entry {
  readonly id: number;
  readonly key: FlowKey;
  readonly keyString: string;
  readonly rows: Map<number, Row>;
}

const STAT_FIELDS = [
  'packetsIn',
  'packetsOut',
  'bytesIn',
  'bytesOut',
  'numConnectionsStarted',
  'numConnectionsCompleted',
] as const;

function intersect(a: readonly string[], b: readonly string[]): string[] {
  const keep = new Set(b);
  return a.filter((l) => keep.has(l));
}

function pageOf<T>(all: readonly T[], page: number, pageSize: number): { items: T[]; meta: ListMeta } {
  const totalResults = all.length;
  if (pageSize === 0)
    return { items: [...all], meta: { totalPages: totalResults > 0 ? 1 : 0, totalResults } };
  const items = all.slice(page * pageSize, (page + 1) * pageSize);
  return { items, meta: { totalPages: Math.ceil(totalResults / pageSize), totalResults } };
}

function sortValue(k: FlowKey, by: SortBy): string | number {
  switch (by) {
    case 'DestName':
      return k.destName;
    case 'DestNamespace':
      return k.destNamespace;
    case 'SourceName':
      return k.sourceName;
    case 'SourceNamespace':
      return k.sourceNamespace;
    case 'DestType':
      return ENDPOINT_TYPES.indexOf(k.destType);
    case 'SourceType':
      return ENDPOINT_TYPES.indexOf(k.sourceType);
    case 'Time':
      return 0;
  }
}

/** Newest first; by a field ascending, then newest first; then by id. */
function compareResults(by: SortBy): (a: FlowResult, b: FlowResult) => number {
  return (a, b) => {
    const va = sortValue(a.flow.key, by);
    const vb = sortValue(b.flow.key, by);
    if (va !== vb) return va < vb ? -1 : 1;
    if (a.flow.startTime !== b.flow.startTime) return b.flow.startTime - a.flow.startTime;
    return a.id - b.id;
  };
}

function hintValues(type: FilterType, k: FlowKey): string[] {
  switch (type) {
    case 'FilterTypeDestName':
      return [k.destName];
    case 'FilterTypeSourceName':
      return [k.sourceName];
    case 'FilterTypeDestNamespace':
      return [k.destNamespace];
    case 'FilterTypeSourceNamespace':
      return [k.sourceNamespace];
    case 'FilterTypePolicyTier':
      return hitsOf(k).map((h) => (h.kind === 'EndOfTier' && h.trigger ? h.trigger.tier : h.tier));
    case 'FilterTypePolicyName':
      return hitsOf(k).map((h) => (h.kind === 'EndOfTier' && h.trigger ? h.trigger.name : h.name));
    case 'FilterTypeUnspecified':
      throw invalidArgument('type', 'a filter type is required (FilterTypeDestName … FilterTypePolicyName)');
  }
}

/** The flow store; see the module comment. Not thread-safe: one caller at a time (Node's loop). */
export class FlowStore {
  readonly #opts: FlowStoreOptions;
  readonly #entries = new Map<string, Entry>();
  /** Bucket start → its rows, in arrival order. */
  readonly #buckets = new Map<number, Set<Row>>();
  /** The keys of #buckets, ascending. */
  readonly #starts: number[] = [];
  readonly #dirty = new Set<Row>();
  #rows = 0;
  #nextId = 1;
  #received = 0;
  #dropped = 0;
  #tooOld = 0;
  #tooNew = 0;
  #expired = 0;

  constructor(opts: Partial<FlowStoreOptions> = {}) {
    const o = { ...DEFAULT_STORE_OPTIONS, ...opts };
    for (const [name, v] of Object.entries(o)) {
      if (!Number.isInteger(v) || v < 1)
        throw new RangeError(`FlowStore: ${name} must be a positive integer`);
    }
    this.#opts = o;
  }

  /** The store's limits. */
  get options(): FlowStoreOptions {
    return this.#opts;
  }

  /** The start of the bucket holding `t`. */
  bucketOf(t: number): number {
    const i = this.#opts.intervalSeconds;
    return Math.floor(t / i) * i;
  }

  /** The oldest bucket start the window keeps at `now`. */
  beginningOfHistory(now: number): number {
    return this.bucketOf(now) - this.#opts.historyBuckets * this.#opts.intervalSeconds;
  }

  /** Counters and sizes. */
  stats(): FlowStoreStats {
    return {
      received: this.#received,
      dropped: this.#dropped,
      rejectedTooOld: this.#tooOld,
      rejectedTooNew: this.#tooNew,
      expired: this.#expired,
      rows: this.#rows,
      uniqueFlows: this.#entries.size,
    };
  }

  /** Adds a flow (already validated) to the bucket of its start time. */
  ingest(flow: Flow, now: number): IngestOutcome {
    this.#received++;
    const bucket = this.bucketOf(flow.startTime);
    if (bucket < this.beginningOfHistory(now)) {
      this.#tooOld++;
      return 'too-old';
    }
    if (bucket > this.bucketOf(now) + this.#opts.intervalSeconds) {
      this.#tooNew++;
      return 'too-new';
    }
    const keyString = flowKeyString(flow.key);
    let entry = this.#entries.get(keyString);
    let row = entry?.rows.get(bucket);
    if (row) {
      for (const f of STAT_FIELDS) row[f] += flow[f];
      row.numConnectionsLive += flow.numConnectionsLive;
      row.sourceLabels = intersect(row.sourceLabels, flow.sourceLabels);
      row.destLabels = intersect(row.destLabels, flow.destLabels);
      this.#dirty.add(row);
      return 'stored';
    }
    if (this.#rows >= this.#opts.maxFlows) {
      const oldest = this.#starts[0];
      if (oldest === undefined || bucket < oldest) {
        this.#dropped++;
        return 'dropped';
      }
      this.#evictOne(oldest);
      entry = this.#entries.get(keyString);
    }
    if (!entry) {
      entry = { id: this.#nextId++, key: flow.key, keyString, rows: new Map() };
      this.#entries.set(keyString, entry);
    }
    row = {
      entry,
      bucket,
      packetsIn: flow.packetsIn,
      packetsOut: flow.packetsOut,
      bytesIn: flow.bytesIn,
      bytesOut: flow.bytesOut,
      numConnectionsStarted: flow.numConnectionsStarted,
      numConnectionsCompleted: flow.numConnectionsCompleted,
      numConnectionsLive: flow.numConnectionsLive,
      sourceLabels: [...flow.sourceLabels],
      destLabels: [...flow.destLabels],
    };
    entry.rows.set(bucket, row);
    this.#bucketRows(bucket).add(row);
    this.#rows++;
    this.#dirty.add(row);
    return 'stored';
  }

  #bucketRows(bucket: number): Set<Row> {
    let rows = this.#buckets.get(bucket);
    if (!rows) {
      rows = new Set();
      this.#buckets.set(bucket, rows);
      let i = this.#starts.length;
      while (i > 0 && this.#starts[i - 1]! > bucket) i--;
      this.#starts.splice(i, 0, bucket);
    }
    return rows;
  }

  #removeRow(row: Row): void {
    const rows = this.#buckets.get(row.bucket)!;
    rows.delete(row);
    if (rows.size === 0) {
      this.#buckets.delete(row.bucket);
      this.#starts.splice(this.#starts.indexOf(row.bucket), 1);
    }
    row.entry.rows.delete(row.bucket);
    if (row.entry.rows.size === 0) this.#entries.delete(row.entry.keyString);
    this.#dirty.delete(row);
    this.#rows--;
  }

  #evictOne(bucket: number): void {
    const first = this.#buckets.get(bucket)!.values().next().value as Row;
    this.#removeRow(first);
    this.#dropped++;
  }

  /** Drops the buckets that left the window at `now`; returns how many rows went. */
  expire(now: number): number {
    const begin = this.beginningOfHistory(now);
    let n = 0;
    while (this.#starts.length > 0 && this.#starts[0]! < begin) {
      for (const row of [...this.#buckets.get(this.#starts[0]!)!]) {
        this.#removeRow(row);
        n++;
      }
    }
    this.#expired += n;
    return n;
  }

  #resolve(r: TimeRange, now: number, zeroStart: number): { gte: number; lt: number } {
    const gte = r.startTimeGte < 0 ? now + r.startTimeGte : r.startTimeGte === 0 ? zeroStart : r.startTimeGte;
    const lt = r.startTimeLt < 0 ? now + r.startTimeLt : r.startTimeLt === 0 ? now + 1 : r.startTimeLt;
    if (gte >= lt) {
      throw invalidArgument(
        'start_time_gte',
        `${gte} must be before start_time_lt (${lt}) once relative times are resolved against now (${now})`,
      );
    }
    return { gte, lt };
  }

  #rowsIn(gte: number, lt: number, filter: Filter): Row[] {
    const out: Row[] = [];
    for (const start of this.#starts) {
      if (start < gte || start >= lt) continue;
      for (const row of this.#buckets.get(start)!) {
        if (keyMatches(filter, row.entry.key)) out.push(row);
      }
    }
    return out;
  }

  #toResult(rows: readonly Row[]): FlowResult {
    // Rows come oldest first; live connections are those of the latest row.
    const first = rows[0]!;
    const last = rows[rows.length - 1]!;
    const sum: Counters = {
      packetsIn: 0,
      packetsOut: 0,
      bytesIn: 0,
      bytesOut: 0,
      numConnectionsStarted: 0,
      numConnectionsCompleted: 0,
      numConnectionsLive: last.numConnectionsLive,
    };
    let sourceLabels = first.sourceLabels;
    let destLabels = first.destLabels;
    for (const r of rows) {
      for (const f of STAT_FIELDS) sum[f] += r[f];
      sourceLabels = intersect(sourceLabels, r.sourceLabels);
      destLabels = intersect(destLabels, r.destLabels);
    }
    return {
      id: first.entry.id,
      flow: {
        key: first.entry.key,
        startTime: first.bucket,
        endTime: last.bucket + this.#opts.intervalSeconds,
        sourceLabels: [...sourceLabels].sort(),
        destLabels: [...destLabels].sort(),
        ...sum,
      },
    };
  }

  /** One page of flows (upstream's List); throws invalid-argument naming the field. */
  list(q: ListQuery, now: number): { flows: FlowResult[]; meta: ListMeta } {
    if (q.sortBy.length > 1) throw invalidArgument('sort_by', 'at most one sort order is supported');
    checkPaging(q);
    const agg = q.aggregationInterval;
    if (!Number.isInteger(agg) || agg < 0 || agg % this.#opts.intervalSeconds !== 0) {
      throw invalidArgument(
        'aggregation_interval',
        `${agg} is not 0 or a multiple of the aggregation window (${this.#opts.intervalSeconds} s)`,
      );
    }
    const { gte, lt } = this.#resolve(q, now, this.beginningOfHistory(now));
    const groups = new Map<string, Row[]>();
    for (const row of this.#rowsIn(gte, lt, q.filter)) {
      const window = agg === 0 ? 0 : Math.floor(row.bucket / agg) * agg;
      const g = `${row.entry.id}/${window}`;
      const rows = groups.get(g);
      if (rows) rows.push(row);
      else groups.set(g, [row]);
    }
    const results = [...groups.values()].map((rows) => this.#toResult(rows));
    results.sort(compareResults(q.sortBy[0] ?? 'Time'));
    const { items, meta } = pageOf(results, q.page, q.pageSize);
    return { flows: items, meta };
  }

  /** The distinct values of a field over the matching flows, ascending (upstream's FilterHints). */
  filterHints(q: HintsQuery, now: number): { values: string[]; meta: ListMeta } {
    checkPaging(q);
    if (q.type === 'FilterTypeUnspecified') hintValues(q.type, EMPTY_KEY);
    const { gte, lt } = this.#resolve(q, now, this.beginningOfHistory(now));
    const values = new Set<string>();
    const seen = new Set<Entry>();
    for (const row of this.#rowsIn(gte, lt, q.filter)) {
      if (seen.has(row.entry)) continue;
      seen.add(row.entry);
      for (const v of hintValues(q.type, row.entry.key)) if (v !== '') values.add(v);
    }
    const { items, meta } = pageOf([...values].sort(), q.page, q.pageSize);
    return { values: items, meta };
  }

  /** The closed buckets' rows from `startTimeGte` on, oldest first: a new stream's backfill. */
  closedSince(startTimeGte: number, filter: Filter, now: number): FlowResult[] {
    const gte = startTimeGte < 0 ? now + startTimeGte : startTimeGte;
    const closedBefore = this.bucketOf(now);
    if (gte >= closedBefore) return [];
    return this.#rowsIn(gte, closedBefore, filter).map((r) => this.#toResult([r]));
  }

  /** The rows changed since the last call whose bucket has ended by `now`, oldest first. */
  takeClosed(now: number): FlowResult[] {
    const current = this.bucketOf(now);
    const out: Row[] = [];
    for (const row of this.#dirty) {
      if (row.bucket < current) out.push(row);
    }
    for (const row of out) this.#dirty.delete(row);
    out.sort((a, b) => a.bucket - b.bucket || a.entry.id - b.entry.id);
    return out.map((r) => this.#toResult([r]));
  }
}

function checkPaging(q: { page: number; pageSize: number }): void {
  if (!Number.isInteger(q.pageSize) || q.pageSize < 0) {
    throw invalidArgument('page_size', `${q.pageSize} is not a non-negative integer`);
  }
  if (!Number.isInteger(q.page) || q.page < 0) {
    throw invalidArgument('page', `${q.page} is not a non-negative integer`);
  }
  if (q.page > 0 && q.pageSize === 0) throw invalidArgument('page', 'a page needs page_size');
}

const EMPTY_KEY: FlowKey = {
  sourceName: '',
  sourceNamespace: '',
  sourceType: 'EndpointTypeUnspecified',
  destName: '',
  destNamespace: '',
  destType: 'EndpointTypeUnspecified',
  destPort: 0,
  destServiceName: '',
  destServiceNamespace: '',
  destServicePortName: '',
  destServicePort: 0,
  proto: '',
  reporter: 'ReporterUnspecified',
  action: 'ActionUnspecified',
  policies: { enforcedPolicies: [], pendingPolicies: [] },
};
