import { ExponentialBackoff, handleWhen, noop, retry } from 'cockatiel';
import {
  CompareResult,
  CompareTarget,
  Etcd3,
  type IKeyValue,
  type IOptions,
  isRecoverableError,
} from 'etcd3';
import { DatastoreError } from '../errors.js';
import { classifyEtcdError } from './etcd-errors.js';
import { toKV } from './etcd-kv-convert.js';
import { EtcdPrefixWatch, type EtcdWatchHost } from './etcd-kv-watch.js';
import {
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type EtcdKVStoreOptions,
  prefixEnd,
  resolveEtcdOptions,
  ZERO_KEY,
} from './etcd-options.js';
import type { KV, KVList, KVRead, KVStore, KVWatchMessage, KVWatchOptions, KVWrite } from './kv-store.js';
import { parseRevision } from './revision.js';
import { StoreLifecycle } from './store-lifecycle.js';
import { transactionFailure } from './transaction.js';
import { watchStart } from './watch-cursor.js';

export type { EtcdKVStoreOptions } from './etcd-options.js';

/**
 * KVStore over a real etcd v3 cluster through the `etcd3` package.
 *
 * Design:
 * - Each operation is one gRPC call, shaped as upstream Calico's etcdv3 backend shapes it: create is
 *   a transaction on `version(key) == 0`, update and conditional delete compare `mod_revision`; the
 *   failure branch reads the key (keys only) so `not-found` and `conflict` are told apart without a
 *   second round trip. Puts ask for the previous KV to learn the create revision.
 * - Watches share one gRPC stream (the etcd3 watch manager); each is an `EtcdPrefixWatch`
 *   (`etcd-kv-watch.ts`) over the shared `WatchCursor`: it resumes exactly after the last revision
 *   it delivered (no gap, no duplicate), and a compacted start revision becomes a `resync` with a
 *   fresh list, the watch going on from that list's revision.
 * - Open/closed state and the teardown of watches on `close()`: `StoreLifecycle`, shared with
 *   `EtcdHttp2KVStore`.
 * - Errors are classified once here (`etcd-errors.ts`).
 * - No circuit breaker: after an etcd restart requests go through as soon as it is back; transient
 *   transport failures are retried (up to 3 attempts, rotating endpoints).
 *
 * Thread-safety: safe for any number of concurrent operations and watches from one event loop.
 */
export class EtcdKVStore implements KVStore {
  private readonly client: Etcd3;
  private readonly where: string;
  private readonly life: StoreLifecycle;
  /** What this store's watches use of it. */
  private readonly watchHost: EtcdWatchHost;

  constructor(options: EtcdKVStoreOptions) {
    const { tls } = options;
    const { hosts, secure, where } = resolveEtcdOptions(options);
    this.where = where;
    this.life = new StoreLifecycle(where);
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
    this.watchHost = {
      etcd: this.client,
      lifecycle: this.life,
      list: (prefix) => this.list(prefix),
      fail: (e, what) => this.fail(e, what),
    };
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
    const run = new EtcdPrefixWatch(this.watchHost, prefix, watchStart(options.fromRevision), options.signal);
    run.start();
    return run.stream;
  }

  async close(): Promise<void> {
    if (this.life.close()) this.client.close();
  }

  /** True once `close()` was called: every call then fails `unavailable`. */
  get isClosed(): boolean {
    return this.life.isClosed;
  }

  /** Wrap a foreign error with what was being done, classified. */
  private fail(e: unknown, what: string): DatastoreError {
    return classifyEtcdError(e, `${this.where}: ${what}`);
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
    this.life.checkOpen();
  }
}
