import { ExponentialBackoff, handleWhen, noop, retry } from 'cockatiel';
import {
  CompareResult,
  CompareTarget,
  Etcd3,
  type IKeyValue,
  type IOptions,
  type IWatchResponse,
  isRecoverableError,
  type Watcher,
} from 'etcd3';
import { DatastoreError } from '../errors.js';
import { classifyEtcdError } from './etcd-errors.js';
import {
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type EtcdKVStoreOptions,
  prefixEnd,
  resolveEtcdOptions,
  ZERO_KEY,
} from './etcd-options.js';
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
import { parseRevision } from './revision.js';
import { transactionFailure } from './transaction.js';

export type { EtcdKVStoreOptions } from './etcd-options.js';

/**
 * KVStore over a real etcd v3 cluster through the `etcd3` package.
 *
 * Design:
 * - Each operation is one gRPC call, shaped as upstream Calico's etcdv3 backend shapes it: create is
 *   a transaction on `version(key) == 0`, update and conditional delete compare `mod_revision`; the
 *   failure branch reads the key (keys only) so `not-found` and `conflict` are told apart without a
 *   second round trip. Puts ask for the previous KV to learn the create revision.
 * - Watches share one gRPC stream (the etcd3 watch manager). This class tracks the last revision it
 *   delivered and re-arms the server-side start revision after every message, so a reconnect
 *   resumes exactly after it: no gap, no duplicate. A watch whose revision was compacted (at start
 *   or across a reconnect) is cancelled by etcd; we confirm compaction with a range read at that
 *   revision, deliver a `resync` with a fresh list, and watch on from that list's revision.
 * - Errors are classified once here (`etcd-errors.ts`).
 * - No circuit breaker: after an etcd restart requests go through as soon as it is back; transient
 *   transport failures are retried (up to 3 attempts, rotating endpoints).
 *
 * Thread-safety: safe for any number of concurrent operations and watches from one event loop.
 */
export class EtcdKVStore implements KVStore {
  private readonly client: Etcd3;
  private readonly where: string;
  private readonly streams = new Set<PushStream<KVWatchMessage>>();
  private closed = false;

  constructor(options: EtcdKVStoreOptions) {
    const { tls } = options;
    const { hosts, secure, where } = resolveEtcdOptions(options);
    this.where = where;
    const dialTimeout = options.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS;
    const budget = dialTimeout + (options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    const opts: IOptions = {
      hosts,
      dialTimeout,
      grpcOptions: {
        'grpc.keepalive_time_ms': 30_000,
        'grpc.keepalive_timeout_ms': 10_000,
        'grpc.initial_reconnect_backoff_ms': 100,
        'grpc.max_reconnect_backoff_ms': 2_000,
        'grpc.max_receive_message_length': -1,
        'grpc.max_send_message_length': -1,
      },
      // One deadline per unary request; watch streams stay open.
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + budget }),
      faultHandling: {
        host: () => noop,
        global: retry(handleWhen(isRecoverableError), { maxAttempts: 2 }),
        watchBackoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 2_000 }) as never,
      },
    };
    if (secure) {
      // grpc-js takes null for "use the system roots".
      opts.credentials = {
        rootCertificate: (tls?.ca ?? null) as Buffer,
        ...(tls?.cert ? { certChain: tls.cert, privateKey: tls.key } : {}),
      };
    }
    if (options.username !== undefined && options.password !== undefined) {
      opts.auth = { username: options.username, password: options.password };
    }
    this.client = new Etcd3(opts);
  }

  async get(key: string): Promise<KV | undefined> {
    this.checkOpen();
    try {
      const res = await this.client.kv.range({ key: Buffer.from(key) });
      const kv = res.kvs[0];
      return kv ? toKV(kv) : undefined;
    } catch (e) {
      throw this.fail(e, `get ${key}`);
    }
  }

  async list(prefix: string): Promise<KVList> {
    this.checkOpen();
    try {
      const start = prefix === '' ? ZERO_KEY : Buffer.from(prefix);
      const res = await this.client.kv.range({ key: start, range_end: prefixEnd(start) });
      return { kvs: res.kvs.map(toKV), revision: String(res.header.revision) };
    } catch (e) {
      throw this.fail(e, `list ${prefix}`);
    }
  }

  async create(key: string, value: string): Promise<KV> {
    this.checkOpen();
    const k = Buffer.from(key);
    let res: Awaited<ReturnType<Etcd3['kv']['txn']>>;
    try {
      res = await this.client.kv.txn({
        compare: [{ key: k, target: CompareTarget.Version, result: CompareResult.Equal, version: 0 }],
        success: [{ request_put: { key: k, value: Buffer.from(value) } }],
      });
    } catch (e) {
      throw this.fail(e, `create ${key}`);
    }
    if (!res.succeeded) throw new DatastoreError('already-exists', `key ${key} already exists`);
    const rev = String(res.header.revision);
    return { key, value, modRevision: rev, createRevision: rev };
  }

  async update(key: string, value: string, modRevision: string): Promise<KV> {
    this.checkOpen();
    const want = parseRevision(modRevision, 'modRevision');
    const k = Buffer.from(key);
    let res: Awaited<ReturnType<Etcd3['kv']['txn']>>;
    try {
      res = await this.client.kv.txn({
        compare: [{ key: k, target: CompareTarget.Mod, result: CompareResult.Equal, mod_revision: want }],
        success: [{ request_put: { key: k, value: Buffer.from(value), prev_kv: true } }],
        failure: [{ request_range: { key: k, keys_only: true } }],
      });
    } catch (e) {
      throw this.fail(e, `update ${key}`);
    }
    if (!res.succeeded) throw this.casFailure(res.responses, key, modRevision);
    const rev = String(res.header.revision);
    const prev = res.responses[0]?.response_put?.prev_kv;
    return { key, value, modRevision: rev, createRevision: prev ? String(prev.create_revision) : rev };
  }

  async put(key: string, value: string): Promise<KV> {
    this.checkOpen();
    try {
      const res = await this.client.kv.put({
        key: Buffer.from(key),
        value: Buffer.from(value),
        prev_kv: true,
      });
      const rev = String(res.header.revision);
      return {
        key,
        value,
        modRevision: rev,
        createRevision: res.prev_kv ? String(res.prev_kv.create_revision) : rev,
      };
    } catch (e) {
      throw this.fail(e, `put ${key}`);
    }
  }

  /**
   * Unconditional put on a new lease of `ttlSeconds`: the key disappears unless written again in
   * time (Felix's status reports). Each call grants its own lease; an old one simply expires.
   */
  async putWithTTL(key: string, value: string, ttlSeconds: number): Promise<KV> {
    this.checkOpen();
    try {
      const lease = await this.client.leaseClient.leaseGrant({ TTL: Math.max(1, Math.round(ttlSeconds)) });
      const res = await this.client.kv.put({
        key: Buffer.from(key),
        value: Buffer.from(value),
        lease: lease.ID,
        prev_kv: true,
      });
      const rev = String(res.header.revision);
      return {
        key,
        value,
        modRevision: rev,
        createRevision: res.prev_kv ? String(res.prev_kv.create_revision) : rev,
      };
    } catch (e) {
      throw this.fail(e, `put ${key} with a ${ttlSeconds}s lease`);
    }
  }

  async delete(key: string, modRevision?: string): Promise<KV> {
    this.checkOpen();
    const k = Buffer.from(key);
    if (modRevision === undefined) {
      let res: Awaited<ReturnType<Etcd3['kv']['deleteRange']>>;
      try {
        res = await this.client.kv.deleteRange({ key: k, prev_kv: true });
      } catch (e) {
        throw this.fail(e, `delete ${key}`);
      }
      const prev = res.prev_kvs[0];
      if (!prev) throw new DatastoreError('not-found', `key ${key} does not exist`);
      return toKV(prev);
    }
    const want = parseRevision(modRevision, 'modRevision');
    let res: Awaited<ReturnType<Etcd3['kv']['txn']>>;
    try {
      res = await this.client.kv.txn({
        compare: [{ key: k, target: CompareTarget.Mod, result: CompareResult.Equal, mod_revision: want }],
        success: [{ request_delete_range: { key: k, prev_kv: true } }],
        failure: [{ request_range: { key: k, keys_only: true } }],
      });
    } catch (e) {
      throw this.fail(e, `delete ${key}`);
    }
    if (!res.succeeded) throw this.casFailure(res.responses, key, modRevision);
    const prev = res.responses[0]?.response_delete_range?.prev_kvs[0];
    // A key that is absent has mod_revision 0, so only a delete "at revision 0" gets here.
    if (!prev) throw new DatastoreError('not-found', `key ${key} does not exist`);
    return toKV(prev);
  }

  async revision(): Promise<string> {
    this.checkOpen();
    try {
      const res = await this.client.kv.range({ key: ZERO_KEY, count_only: true });
      return String(res.header.revision);
    } catch (e) {
      throw this.fail(e, 'read revision');
    }
  }

  watch(prefix: string, options: KVWatchOptions = {}): AsyncIterable<KVWatchMessage> {
    this.checkOpen();
    const from =
      options.fromRevision === undefined ? undefined : parseRevision(options.fromRevision, 'fromRevision');
    const run = new PrefixWatch(this, prefix, from && from > 0 ? from : undefined, options.signal);
    this.streams.add(run.stream);
    run.start();
    return run.stream;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of [...this.streams]) s.end();
    this.streams.clear();
    this.client.close();
  }

  /** @internal The underlying client, for watches of this store. */
  get etcd(): Etcd3 {
    return this.client;
  }

  /** @internal */
  forget(stream: PushStream<KVWatchMessage>): void {
    this.streams.delete(stream);
  }

  /** @internal Wrap a foreign error with what was being done, classified. */
  fail(e: unknown, what: string): DatastoreError {
    return classifyEtcdError(e, `${this.where}: ${what}`);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async readAll(reads: readonly KVRead[]): Promise<{ results: KV[][]; revision: string }> {
    this.checkOpen();
    if (reads.length === 0) return { results: [], revision: await this.revision() };
    let res: Awaited<ReturnType<Etcd3['kv']['txn']>>;
    try {
      res = await this.client.kv.txn({
        compare: [],
        success: reads.map((r) => {
          const start = r.prefix && r.key === '' ? ZERO_KEY : Buffer.from(r.key);
          const keys_only = r.keysOnly === true;
          return {
            request_range: r.prefix
              ? { key: start, range_end: prefixEnd(start), keys_only }
              : { key: start, keys_only },
          };
        }),
      });
    } catch (e) {
      throw this.fail(e, `read ${reads.map((r) => (r.prefix ? `${r.key}*` : r.key)).join(', ')}`);
    }
    return {
      results: reads.map((_, i) => (res.responses[i]?.response_range?.kvs ?? []).map(toKV)),
      revision: String(res.header.revision),
    };
  }

  async writeAll(writes: readonly KVWrite[]): Promise<KV[]> {
    this.checkOpen();
    if (writes.length === 0) return [];
    const keys = writes.map((w) => Buffer.from(w.key));
    let res: Awaited<ReturnType<Etcd3['kv']['txn']>>;
    try {
      res = await this.client.kv.txn({
        compare: writes.map((w, i) =>
          w.modRevision === undefined
            ? { key: keys[i]!, target: CompareTarget.Version, result: CompareResult.Equal, version: 0 }
            : {
                key: keys[i]!,
                target: CompareTarget.Mod,
                result: CompareResult.Equal,
                mod_revision: parseRevision(w.modRevision, 'modRevision'),
              },
        ),
        success: writes.map((w, i) => ({
          request_put: { key: keys[i]!, value: Buffer.from(w.value), prev_kv: true },
        })),
        failure: keys.map((k) => ({ request_range: { key: k, keys_only: true } })),
      });
    } catch (e) {
      throw this.fail(e, `write ${writes.map((w) => w.key).join(', ')}`);
    }
    if (!res.succeeded) {
      throw transactionFailure(
        writes,
        res.responses.map((r) => r.response_range?.kvs[0]?.mod_revision),
      );
    }
    const rev = String(res.header.revision);
    return writes.map((w, i) => {
      const prev = res.responses[i]?.response_put?.prev_kv;
      return {
        key: w.key,
        value: w.value,
        modRevision: rev,
        createRevision: prev ? String(prev.create_revision) : rev,
      };
    });
  }

  private casFailure(responses: { response_range?: { kvs: IKeyValue[] } }[], key: string, rev: string) {
    const current = responses[0]?.response_range?.kvs[0];
    if (!current) return new DatastoreError('not-found', `key ${key} does not exist`);
    return new DatastoreError('conflict', `key ${key} is at revision ${current.mod_revision}, not ${rev}`);
  }

  private checkOpen(): void {
    if (this.closed) throw new DatastoreError('unavailable', `${this.where}: the client is closed`);
  }
}

/**
 * One prefix watch. Owns at most one etcd3 `Watcher` at a time; a compaction replaces it with a new
 * one after the resync.
 */
class PrefixWatch {
  readonly stream: PushStream<KVWatchMessage>;
  /** The next revision to deliver; undefined until etcd tells us "now" for a watch from now. */
  private next: number | undefined;
  private watcher: Watcher | undefined;
  /** What the consumer was last told: nothing yet, connected, or disconnected. */
  private link: 'new' | 'up' | 'down' = 'new';
  private done = false;

  constructor(
    private readonly store: EtcdKVStore,
    private readonly prefix: string,
    from: number | undefined,
    signal: AbortSignal | undefined,
  ) {
    this.next = from;
    this.stream = new PushStream<KVWatchMessage>(() => this.stop(), signal);
  }

  start(): void {
    if (this.done) return;
    const start = this.prefix === '' ? ZERO_KEY : Buffer.from(this.prefix);
    let builder = this.store.etcd
      .watch()
      .inRange({ start, end: prefixEnd(start) })
      .withPreviousKV();
    if (this.next !== undefined) builder = builder.startRevision(String(this.next));
    const w = builder.watcher();
    this.watcher = w;
    w.on('connected', (res) => this.onConnected(w, res));
    w.on('data', (res) => this.onData(w, res));
    w.on('disconnected', (err) => this.onDisconnected(w, err));
    w.on('error', (err) => void this.onCancelled(w, err));
  }

  private rearm(w: Watcher): void {
    // etcd3 moves its resume point to the response header's revision + 1, which can run ahead of
    // the events actually delivered (catch-up batches carry the current revision). Resume from
    // what we delivered instead.
    if (this.next !== undefined) w.request.start_revision = this.next;
  }

  private onConnected(w: Watcher, res: IWatchResponse): void {
    if (w !== this.watcher || this.done) return;
    if (this.next === undefined) this.next = Number(res.header.revision) + 1;
    this.rearm(w);
    if (this.link === 'down') this.stream.push({ kind: 'reconnected' });
    this.link = 'up';
  }

  private onData(w: Watcher, res: IWatchResponse): void {
    if (w !== this.watcher || this.done) return;
    let batch: KVEvent[] = [];
    let batchRev = -1;
    const flush = () => {
      if (batch.length > 0) this.stream.push({ kind: 'events', events: batch, revision: String(batchRev) });
      batch = [];
    };
    for (const ev of res.events) {
      const rev = Number(ev.kv.mod_revision);
      if (this.next !== undefined && rev < this.next) continue; // already delivered before a reconnect
      if (rev !== batchRev) {
        flush();
        batchRev = rev;
      }
      batch.push(toEvent(ev.type, ev.kv, ev.prev_kv));
    }
    flush();
    if (batchRev >= 0) this.next = batchRev + 1;
    this.rearm(w);
  }

  private onDisconnected(w: Watcher, err: Error): void {
    if (w !== this.watcher || this.done) return;
    this.rearm(w);
    this.markDown(this.store.fail(err, `watch ${this.prefix}`));
  }

  private markDown(error: DatastoreError): void {
    if (this.link === 'down') return;
    this.link = 'down';
    this.stream.push({ kind: 'disconnected', error });
  }

  /** etcd cancelled the watch: compaction (resync and go on) or a real error (end the stream). */
  private async onCancelled(w: Watcher, err: Error): Promise<void> {
    if (w !== this.watcher || this.done) return;
    this.watcher = undefined;
    let delay = 100;
    while (!this.done) {
      try {
        if (this.next !== undefined && (await this.isCompacted(this.next))) {
          const list = await this.store.list(this.prefix);
          if (this.done) return;
          this.stream.push({ kind: 'resync', list, reason: 'compacted' });
          this.next = Number(list.revision) + 1;
          this.start();
          return;
        }
        this.stream.fail(this.store.fail(err, `watch ${this.prefix} cancelled by etcd`));
        return;
      } catch (e) {
        // etcd went away while we looked; report once and try again.
        const de = this.store.fail(e, `watch ${this.prefix}`);
        if (de.code !== 'unavailable' || this.store.isClosed) {
          this.stream.fail(de);
          return;
        }
        this.markDown(de);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 2_000);
      }
    }
  }

  /** A range read at `revision` fails with "compacted" exactly when a watch from it would. */
  private async isCompacted(revision: number): Promise<boolean> {
    try {
      await this.store.etcd.kv.range({ key: ZERO_KEY, count_only: true, revision });
      return false;
    } catch (e) {
      const de = this.store.fail(e, 'probe revision');
      if (de.code === 'compacted') return true;
      if (de.code === 'invalid') return false; // a future revision
      throw e;
    }
  }

  private stop(): void {
    if (this.done) return;
    this.done = true;
    this.store.forget(this.stream);
    const w = this.watcher;
    this.watcher = undefined;
    w?.removeAllListeners();
    // Keep an error listener: a late cancel must not become an unhandled 'error' event.
    w?.on('error', () => undefined);
    w?.cancel().catch(() => undefined);
  }
}

function toKV(kv: IKeyValue): KV {
  return {
    key: kv.key.toString(),
    value: kv.value.toString(),
    modRevision: String(kv.mod_revision),
    createRevision: String(kv.create_revision),
  };
}

function toEvent(type: string, kv: IKeyValue, prev: IKeyValue | null | undefined): KVEvent {
  if (type === 'Delete') {
    return prev
      ? { kind: 'delete', key: kv.key.toString(), modRevision: String(kv.mod_revision), prev: toKV(prev) }
      : { kind: 'delete', key: kv.key.toString(), modRevision: String(kv.mod_revision) };
  }
  return prev ? { kind: 'put', kv: toKV(kv), prev: toKV(prev) } : { kind: 'put', kv: toKV(kv) };
}
