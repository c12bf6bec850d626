import { DatastoreError } from '../errors.js';
import type {
  KV,
  KVEvent,
  KVList,
  KVRead,
  KVStore,
  KVWatchMessage,
  KVWatchOptions,
  KVWrite,
} from './kv-store.js';
import { PushStream } from './push-stream.js';
import { compareKeys, parseRevision } from './revision.js';
import { failedWrite } from './transaction.js';

export interface MemoryKVStoreOptions {
  /**
   * How many past revisions a watch can replay. Older history is compacted away, as etcd's
   * auto-compaction does, and a watch from before it starts with a `resync`. Default 10,000.
   */
  historyLimit?: number;
}

export interface MemoryKVDump {
  revision: string;
  compactRevision: string;
  /** Every key and value, sorted by key. */
  kvs: Record<string, string>;
}

interface Entry {
  kv: KV;
}

interface MemoryWatcher {
  prefix: string;
  /** Next revision this watcher reports. */
  next: number;
  stream: PushStream<KVWatchMessage>;
}

/**
 * An in-memory KVStore with etcd v3's semantics, for tests and embedded use.
 *
 * - One store-wide revision counter starting at 1 (an empty etcd's revision); every write bumps it
 *   and stamps the key's `modRevision`; `createRevision` is the revision of the write that created
 *   the key since its last deletion.
 * - `update` and conditional `delete` are compare-and-swap on `modRevision`.
 * - Watches replay history from any retained revision, in revision order, then follow live writes.
 *   History is bounded (`historyLimit`) and can be cut with `compact(revision)`; a watch from a
 *   compacted revision first yields `resync` with the current state, then continues after it.
 *
 * Thread-safety: JavaScript runs each operation to completion, so every operation is atomic.
 */
export class MemoryKVStore implements KVStore {
  private rev = 1;
  /** Revisions below this one are gone from history. */
  private compactRev = 0;
  private readonly data = new Map<string, Entry>();
  private readonly history: { revision: number; events: KVEvent[] }[] = [];
  private historyHead = 0;
  private readonly watchers = new Set<MemoryWatcher>();
  private readonly historyLimit: number;
  private closed = false;

  constructor(options: MemoryKVStoreOptions = {}) {
    const limit = options.historyLimit ?? 10_000;
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new DatastoreError('config', `historyLimit must be a positive integer, got ${limit}`);
    }
    this.historyLimit = limit;
  }

  async get(key: string): Promise<KV | undefined> {
    this.checkOpen();
    return this.data.get(key)?.kv;
  }

  async list(prefix: string): Promise<KVList> {
    this.checkOpen();
    return this.listNow(prefix);
  }

  async create(key: string, value: string): Promise<KV> {
    this.checkOpen();
    if (this.data.has(key)) throw new DatastoreError('already-exists', `key ${key} already exists`);
    return this.write(key, value, undefined);
  }

  async update(key: string, value: string, modRevision: string): Promise<KV> {
    this.checkOpen();
    const want = parseRevision(modRevision, 'modRevision');
    const cur = this.data.get(key);
    if (!cur) throw new DatastoreError('not-found', `key ${key} does not exist`);
    if (Number(cur.kv.modRevision) !== want) {
      throw new DatastoreError(
        'conflict',
        `key ${key} is at revision ${cur.kv.modRevision}, not ${modRevision}`,
      );
    }
    return this.write(key, value, cur.kv);
  }

  async readAll(reads: readonly KVRead[]): Promise<{ results: KV[][]; revision: string }> {
    this.checkOpen();
    const results = reads.map((r) => {
      const one = r.prefix ? undefined : this.data.get(r.key)?.kv;
      const kvs = r.prefix ? this.listNow(r.key).kvs : one ? [one] : [];
      return r.keysOnly ? kvs.map((kv) => ({ ...kv, value: '' })) : kvs;
    });
    return { results, revision: String(this.rev) };
  }

  async writeAll(writes: readonly KVWrite[]): Promise<KV[]> {
    this.checkOpen();
    const keys = new Set<string>();
    for (const w of writes) {
      if (keys.has(w.key))
        throw new DatastoreError('invalid', `key ${w.key} is written twice in one transaction`);
      keys.add(w.key);
      if (typeof w.value !== 'string')
        throw new DatastoreError('invalid', `value for ${w.key} must be a string`);
    }
    const broken = failedWrite(
      writes,
      writes.map((w) => this.data.get(w.key)?.kv.modRevision),
    );
    if (broken) throw broken;
    if (writes.length === 0) return [];
    // One revision for the whole transaction, and one history entry, as etcd does.
    this.rev++;
    const r = String(this.rev);
    const events: KVEvent[] = [];
    const out = writes.map((w) => {
      const prev = this.data.get(w.key)?.kv;
      const kv: KV = Object.freeze({
        key: w.key,
        value: w.value,
        modRevision: r,
        createRevision: prev ? prev.createRevision : r,
      });
      this.data.set(w.key, { kv });
      events.push(prev ? { kind: 'put', kv, prev } : { kind: 'put', kv });
      return kv;
    });
    this.recordAll(events);
    return out;
  }

  async put(key: string, value: string): Promise<KV> {
    this.checkOpen();
    return this.write(key, value, this.data.get(key)?.kv);
  }

  async delete(key: string, modRevision?: string): Promise<KV> {
    this.checkOpen();
    const want = modRevision === undefined ? undefined : parseRevision(modRevision, 'modRevision');
    const cur = this.data.get(key);
    if (!cur) throw new DatastoreError('not-found', `key ${key} does not exist`);
    if (want !== undefined && Number(cur.kv.modRevision) !== want) {
      throw new DatastoreError(
        'conflict',
        `key ${key} is at revision ${cur.kv.modRevision}, not ${modRevision}`,
      );
    }
    this.rev++;
    this.data.delete(key);
    this.record({ kind: 'delete', key, modRevision: String(this.rev), prev: cur.kv });
    return cur.kv;
  }

  watch(prefix: string, options: KVWatchOptions = {}): AsyncIterable<KVWatchMessage> {
    this.checkOpen();
    const from = options.fromRevision === undefined ? 0 : parseRevision(options.fromRevision, 'fromRevision');
    const watcher: MemoryWatcher = {
      prefix,
      next: from > 0 ? from : this.rev + 1,
      stream: new PushStream<KVWatchMessage>(() => this.watchers.delete(watcher), options.signal),
    };
    if (watcher.next < this.compactRev) {
      const list = this.listNow(prefix);
      watcher.stream.push({ kind: 'resync', list, reason: 'compacted' });
      watcher.next = this.rev + 1;
    } else {
      for (let i = this.historyHead; i < this.history.length; i++) {
        const h = this.history[i]!;
        if (h.revision >= watcher.next) this.deliver(watcher, h.revision, h.events);
      }
    }
    if (!watcher.stream.done) this.watchers.add(watcher);
    return watcher.stream;
  }

  async revision(): Promise<string> {
    this.checkOpen();
    return String(this.rev);
  }

  /**
   * Forget history before `revision`, as etcd's compaction does: a watch from an earlier revision
   * then starts with a `resync`. Fails `invalid` for a future revision and `compacted` for one at
   * or below an earlier compaction, as etcd does.
   */
  async compact(revision: string): Promise<void> {
    this.checkOpen();
    const r = parseRevision(revision);
    if (r > this.rev)
      throw new DatastoreError('invalid', `revision ${r} is in the future (current ${this.rev})`);
    if (r <= this.compactRev)
      throw new DatastoreError('compacted', `revision ${r} has already been compacted`);
    this.compactTo(r);
  }

  /**
   * Break every watch's connection for a moment: each yields `disconnected` then `reconnected` and
   * goes on without losing events, as the etcd store does across a reconnect.
   */
  interruptWatches(error: Error = new Error('connection interrupted')): void {
    for (const w of this.watchers) {
      w.stream.push({ kind: 'disconnected', error });
      w.stream.push({ kind: 'reconnected' });
    }
  }

  /** The whole store, for golden assertions. */
  dump(): MemoryKVDump {
    const keys = [...this.data.keys()].sort(compareKeys);
    const kvs: Record<string, string> = {};
    for (const k of keys) kvs[k] = this.data.get(k)!.kv.value;
    return { revision: String(this.rev), compactRevision: String(this.compactRev), kvs };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of [...this.watchers]) w.stream.end();
    this.watchers.clear();
  }

  private checkOpen(): void {
    if (this.closed) throw new DatastoreError('unavailable', 'the memory store is closed');
  }

  private listNow(prefix: string): KVList {
    const kvs: KV[] = [];
    for (const [k, e] of this.data) if (k.startsWith(prefix)) kvs.push(e.kv);
    kvs.sort((a, b) => compareKeys(a.key, b.key));
    return { kvs, revision: String(this.rev) };
  }

  private write(key: string, value: string, prev: KV | undefined): KV {
    if (typeof value !== 'string') throw new DatastoreError('invalid', `value for ${key} must be a string`);
    this.rev++;
    const r = String(this.rev);
    const kv: KV = Object.freeze({
      key,
      value,
      modRevision: r,
      createRevision: prev ? prev.createRevision : r,
    });
    this.data.set(key, { kv });
    this.record(prev ? { kind: 'put', kv, prev } : { kind: 'put', kv });
    return kv;
  }

  private record(event: KVEvent): void {
    this.recordAll([event]);
  }

  private recordAll(list: KVEvent[]): void {
    const events = list.map((e) => Object.freeze(e));
    this.history.push({ revision: this.rev, events });
    if (this.history.length - this.historyHead > this.historyLimit) {
      this.compactTo(this.history[this.history.length - this.historyLimit]!.revision);
    }
    for (const w of this.watchers) this.deliver(w, this.rev, events);
  }

  private deliver(w: MemoryWatcher, revision: number, events: KVEvent[]): void {
    if (revision < w.next) return;
    const mine = events.filter((e) => (e.kind === 'put' ? e.kv.key : e.key).startsWith(w.prefix));
    if (mine.length > 0) w.stream.push({ kind: 'events', events: mine, revision: String(revision) });
  }

  private compactTo(revision: number): void {
    this.compactRev = revision;
    while (this.historyHead < this.history.length && this.history[this.historyHead]!.revision < revision) {
      this.history[this.historyHead] = undefined as never;
      this.historyHead++;
    }
    if (this.historyHead > 4096 && this.historyHead * 2 > this.history.length) {
      this.history.splice(0, this.historyHead);
      this.historyHead = 0;
    }
  }
}
