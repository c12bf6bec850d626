import { DatastoreError } from '../errors.js';
import { type CallKind, GrpcChannel, type GrpcStream, type GrpcStreamHandlers } from './etcd-grpc-channel.js';
import { toKV } from './etcd-http2-convert.js';
import { classifyEtcdHttp2Error, EtcdStatusError } from './etcd-http2-errors.js';
import { Http2PrefixWatch, type Http2WatchHost } from './etcd-http2-watch.js';
import {
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type EtcdKVStoreOptions,
  prefixEnd,
  resolveEtcdOptions,
  ZERO_KEY,
} from './etcd-options.js';
import { authenticateRequest, decodeAuthenticateResponse } from './etcd-proto/auth.js';
import {
  decodeDeleteRangeResponse,
  decodePutResponse,
  decodeRangeResponse,
  decodeTxnResponse,
  deleteRangeRequest,
  putRequest,
  rangeRequest,
  type TxnResponse,
  txnRequest,
} from './etcd-proto/kv.js';
import { decodeLeaseGrantResponse, leaseGrantRequest } from './etcd-proto/lease.js';
import type { ProtoMessage } from './etcd-proto/wire.js';
import type { ProtoWriter } from './etcd-proto/writer.js';
import type { KV, KVList, KVRead, KVStore, KVWatchMessage, KVWatchOptions, KVWrite } from './kv-store.js';
import { parseRevision } from './revision.js';
import { StoreLifecycle } from './store-lifecycle.js';
import { transactionFailure } from './transaction.js';
import { watchStart } from './watch-cursor.js';

/**
 * KVStore speaking etcd's gRPC protocol through Node's built-in HTTP/2 client, with a hand-written
 * codec for the few messages it uses (`etcd-proto/`): nothing to load but `node:http2`. For
 * short-lived processes (calicoctl, the CNI plugin), where loading etcd3, grpc-js and protobufjs
 * cost more than the work itself. Long-running daemons keep `EtcdKVStore`. Same contract, same
 * errors: the shared contract tests run on both.
 *
 * Why not etcd's JSON gateway (`/v3/kv/range` over HTTP/1.1, which needs only `node:http`)? It is
 * the same server work plus a JSON encoding of every key and value in base64: a range of 5,000
 * GlobalNetworkPolicies (4.3 MB) took the gateway 140–270 ms to answer, gRPC about 50 ms.
 *
 * Design:
 * - Each operation is one unary call, shaped as `EtcdKVStore` shapes it: create is a transaction on
 *   `version(key) == 0`, update and conditional delete compare `mod_revision` and read the key
 *   (keys only) on failure, puts ask for the previous KV.
 * - Transport, deadlines and failover: `GrpcChannel`.
 * - With a username, a token from `Auth/Authenticate` goes with every call as `token` metadata and
 *   is renewed once when etcd reports it invalid.
 * - A watch is one Watch stream per prefix (`Http2PrefixWatch`, `etcd-http2-watch.ts`, over the
 *   shared `WatchCursor`). When the stream breaks it reports `disconnected`, reconnects with backoff
 *   (100 ms doubling to 2 s) from the next revision to deliver and reports `reconnected` once etcd
 *   confirms the new watch: no gap, no duplicate. A compacted start revision (etcd cancels the
 *   watch with `compact_revision`) becomes a `resync` with a fresh list, and the watch goes on from
 *   that list's revision.
 * - Open/closed state and the teardown of watches on `close()`: `StoreLifecycle`, shared with
 *   `EtcdKVStore`.
 *
 * Thread-safety: safe for any number of concurrent operations and watches from one event loop.
 */
export class EtcdHttp2KVStore implements KVStore {
  private readonly channel: GrpcChannel;
  private readonly where: string;
  private readonly options: EtcdKVStoreOptions;
  private readonly life: StoreLifecycle;
  /** What this store's watches use of it. */
  private readonly watchHost: Http2WatchHost;
  private token: Promise<string> | undefined;

  constructor(options: EtcdKVStoreOptions) {
    const { hosts, where } = resolveEtcdOptions(options);
    this.options = options;
    this.where = where;
    this.life = new StoreLifecycle(where);
    this.channel = new GrpcChannel({
      hosts,
      ...(options.tls ? { tls: options.tls } : {}),
      dialTimeoutMs: options.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    });
    this.watchHost = {
      lifecycle: this.life,
      list: (prefix) => this.list(prefix),
      fail: (e, what) => this.fail(e, what),
      openWatchStream: (what, handlers) => this.openWatchStream(what, handlers),
    };
  }

  async get(key: string): Promise<KV | undefined> {
    const res = decodeRangeResponse(
      await this.call(RANGE, rangeRequest({ key: Buffer.from(key) }), `get ${key}`, READ),
    );
    const kv = res.kvs[0];
    return kv ? toKV(kv) : undefined;
  }

  async list(prefix: string): Promise<KVList> {
    const start = prefix === '' ? ZERO_KEY : Buffer.from(prefix);
    const reply = await this.call(
      RANGE,
      rangeRequest({ key: start, rangeEnd: prefixEnd(start) }),
      `list ${prefix}`,
      READ,
    );
    const res = decodeRangeResponse(reply);
    const kvs: KV[] = new Array(res.kvs.length);
    for (let i = 0; i < kvs.length; i++) kvs[i] = toKV(res.kvs[i]!);
    return { kvs, revision: String(res.revision) };
  }

  async create(key: string, value: string): Promise<KV> {
    const k = Buffer.from(key);
    const res = decodeTxnResponse(
      await this.call(
        TXN,
        txnRequest({
          compare: [{ key: k, target: 'version', equals: 0 }],
          success: [{ put: { key: k, value: Buffer.from(value) } }],
        }),
        `create ${key}`,
        WRITE,
      ),
    );
    if (!res.succeeded) throw new DatastoreError('already-exists', `key ${key} already exists`);
    const rev = String(res.revision);
    return { key, value, modRevision: rev, createRevision: rev };
  }

  async update(key: string, value: string, modRevision: string): Promise<KV> {
    this.checkOpen();
    const want = parseRevision(modRevision, 'modRevision');
    const k = Buffer.from(key);
    const res = decodeTxnResponse(
      await this.call(
        TXN,
        txnRequest({
          compare: [{ key: k, target: 'mod', equals: want }],
          success: [{ put: { key: k, value: Buffer.from(value), prevKv: true } }],
          failure: [{ range: { key: k, keysOnly: true } }],
        }),
        `update ${key}`,
        WRITE,
      ),
    );
    if (!res.succeeded) throw casFailure(res, key, modRevision);
    const rev = String(res.revision);
    const prev = res.responses[0]?.put?.prevKv;
    return { key, value, modRevision: rev, createRevision: prev ? String(prev.createRevision) : rev };
  }

  async readAll(reads: readonly KVRead[]): Promise<{ results: KV[][]; revision: string }> {
    if (reads.length === 0) return { results: [], revision: await this.revision() };
    const res = decodeTxnResponse(
      await this.call(
        TXN,
        txnRequest({
          compare: [],
          success: reads.map((r) => {
            const start = r.prefix && r.key === '' ? ZERO_KEY : Buffer.from(r.key);
            const keysOnly = r.keysOnly === true;
            return {
              range: r.prefix
                ? { key: start, rangeEnd: prefixEnd(start), keysOnly }
                : { key: start, keysOnly },
            };
          }),
        }),
        `read ${reads.map((r) => (r.prefix ? `${r.key}*` : r.key)).join(', ')}`,
        READ,
      ),
    );
    return {
      results: reads.map((_, i) => (res.responses[i]?.range?.kvs ?? []).map(toKV)),
      revision: String(res.revision),
    };
  }

  async writeAll(writes: readonly KVWrite[]): Promise<KV[]> {
    this.checkOpen();
    if (writes.length === 0) return [];
    const keys = writes.map((w) => Buffer.from(w.key));
    const res = decodeTxnResponse(
      await this.call(
        TXN,
        txnRequest({
          compare: writes.map((w, i) =>
            w.modRevision === undefined
              ? { key: keys[i]!, target: 'version' as const, equals: 0 }
              : {
                  key: keys[i]!,
                  target: 'mod' as const,
                  equals: parseRevision(w.modRevision, 'modRevision'),
                },
          ),
          success: writes.map((w, i) => ({
            put: { key: keys[i]!, value: Buffer.from(w.value), prevKv: true },
          })),
          failure: keys.map((k) => ({ range: { key: k, keysOnly: true } })),
        }),
        `write ${writes.map((w) => w.key).join(', ')}`,
        WRITE,
      ),
    );
    if (!res.succeeded) {
      throw transactionFailure(
        writes,
        res.responses.map((r) => r.range?.kvs[0]?.modRevision),
      );
    }
    const rev = String(res.revision);
    return writes.map((w, i) => {
      const prev = res.responses[i]?.put?.prevKv;
      return {
        key: w.key,
        value: w.value,
        modRevision: rev,
        createRevision: prev ? String(prev.createRevision) : rev,
      };
    });
  }

  async put(key: string, value: string): Promise<KV> {
    const res = decodePutResponse(
      await this.call(
        PUT,
        putRequest({ key: Buffer.from(key), value: Buffer.from(value), prevKv: true }),
        `put ${key}`,
        WRITE,
      ),
    );
    const rev = String(res.revision);
    return {
      key,
      value,
      modRevision: rev,
      createRevision: res.prevKv ? String(res.prevKv.createRevision) : rev,
    };
  }

  /**
   * Unconditional put on a new lease of `ttlSeconds`: the key disappears unless written again in
   * time. Each call grants its own lease; an old one simply expires.
   */
  async putWithTTL(key: string, value: string, ttlSeconds: number): Promise<KV> {
    const what = `put ${key} with a ${ttlSeconds}s lease`;
    const lease = decodeLeaseGrantResponse(
      await this.call(LEASE_GRANT, leaseGrantRequest(Math.max(1, Math.round(ttlSeconds))), what, WRITE),
    );
    if (lease.error !== '') throw this.fail(new EtcdStatusError(2, lease.error), what);
    const res = decodePutResponse(
      await this.call(
        PUT,
        putRequest({ key: Buffer.from(key), value: Buffer.from(value), lease: lease.id, prevKv: true }),
        what,
        WRITE,
      ),
    );
    const rev = String(res.revision);
    return {
      key,
      value,
      modRevision: rev,
      createRevision: res.prevKv ? String(res.prevKv.createRevision) : rev,
    };
  }

  async delete(key: string, modRevision?: string): Promise<KV> {
    this.checkOpen();
    const k = Buffer.from(key);
    if (modRevision === undefined) {
      const res = decodeDeleteRangeResponse(
        await this.call(DELETE_RANGE, deleteRangeRequest({ key: k, prevKv: true }), `delete ${key}`, WRITE),
      );
      const prev = res.prevKvs[0];
      if (!prev) throw new DatastoreError('not-found', `key ${key} does not exist`);
      return toKV(prev);
    }
    const want = parseRevision(modRevision, 'modRevision');
    const res = decodeTxnResponse(
      await this.call(
        TXN,
        txnRequest({
          compare: [{ key: k, target: 'mod', equals: want }],
          success: [{ deleteRange: { key: k, prevKv: true } }],
          failure: [{ range: { key: k, keysOnly: true } }],
        }),
        `delete ${key}`,
        WRITE,
      ),
    );
    if (!res.succeeded) throw casFailure(res, key, modRevision);
    const prev = res.responses[0]?.deleteRange?.prevKvs[0];
    // A key that is absent has mod_revision 0, so only a delete "at revision 0" gets here.
    if (!prev) throw new DatastoreError('not-found', `key ${key} does not exist`);
    return toKV(prev);
  }

  async revision(): Promise<string> {
    const res = decodeRangeResponse(
      await this.call(RANGE, rangeRequest({ key: ZERO_KEY, countOnly: true }), 'read revision', READ),
    );
    return String(res.revision);
  }

  watch(prefix: string, options: KVWatchOptions = {}): AsyncIterable<KVWatchMessage> {
    this.checkOpen();
    const run = new Http2PrefixWatch(
      this.watchHost,
      prefix,
      watchStart(options.fromRevision),
      options.signal,
    );
    run.start();
    return run.stream;
  }

  async close(): Promise<void> {
    if (this.life.close()) this.channel.close();
  }

  /** True once `close()` was called: every call then fails `unavailable`. */
  get isClosed(): boolean {
    return this.life.isClosed;
  }

  /** Wrap a foreign error with what was being done, classified. */
  private fail(e: unknown, what: string): DatastoreError {
    return classifyEtcdHttp2Error(e, `${this.where}: ${what}`);
  }

  /** Open a Watch stream with this store's credentials. */
  private async openWatchStream(what: string, handlers: GrpcStreamHandlers): Promise<GrpcStream> {
    const metadata = await this.metadata(what);
    return this.channel.openStream(WATCH, metadata, handlers);
  }

  /** One unary call, classified errors, the auth token renewed once if etcd rejects it. */
  private async call(
    method: string,
    request: ProtoWriter,
    what: string,
    kind: CallKind,
  ): Promise<ProtoMessage> {
    this.checkOpen();
    const message = request.finish();
    for (let renewed = false; ; renewed = true) {
      try {
        return await this.channel.call(method, message, await this.metadata(what), kind);
      } catch (e) {
        if (e instanceof DatastoreError) throw e;
        if (!renewed && this.token && e instanceof EtcdStatusError && /invalid auth token/i.test(e.message)) {
          this.token = undefined;
          continue;
        }
        if (this.life.isClosed) throw this.life.closedError();
        throw this.fail(e, what);
      }
    }
  }

  /** Headers for a call: the auth token when a username is configured. */
  private async metadata(what: string): Promise<Record<string, string>> {
    const { username, password } = this.options;
    if (username === undefined || password === undefined) return {};
    if (!this.token) {
      const t = this.channel
        .call(AUTHENTICATE, authenticateRequest(username, password).finish(), {}, READ)
        .then((reply) => {
          const { token } = decodeAuthenticateResponse(reply);
          if (!token) throw new EtcdStatusError(16, 'etcd returned no auth token');
          return token;
        });
      this.token = t;
      // A failed authentication is not remembered: the next call tries again.
      t.catch(() => {
        if (this.token === t) this.token = undefined;
      });
    }
    try {
      return { token: await this.token };
    } catch (e) {
      throw this.fail(e, `${what}: authenticate as ${username}`);
    }
  }

  private checkOpen(): void {
    this.life.checkOpen();
  }
}

const RANGE = 'etcdserverpb.KV/Range';
const PUT = 'etcdserverpb.KV/Put';
const DELETE_RANGE = 'etcdserverpb.KV/DeleteRange';
const TXN = 'etcdserverpb.KV/Txn';
const WATCH = 'etcdserverpb.Watch/Watch';
const LEASE_GRANT = 'etcdserverpb.Lease/LeaseGrant';
const AUTHENTICATE = 'etcdserverpb.Auth/Authenticate';

const READ: CallKind = { idempotent: true };
const WRITE: CallKind = { idempotent: false };

function casFailure(res: TxnResponse, key: string, rev: string): DatastoreError {
  const current = res.responses[0]?.range?.kvs[0];
  if (!current) return new DatastoreError('not-found', `key ${key} does not exist`);
  return new DatastoreError('conflict', `key ${key} is at revision ${current.modRevision}, not ${rev}`);
}
