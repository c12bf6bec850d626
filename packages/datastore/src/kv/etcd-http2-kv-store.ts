import { DatastoreError } from '../errors.js';
import { type CallKind, GrpcChannel, type GrpcStream, type GrpcStreamHandlers } from './etcd-grpc-channel.js';
import { classifyEtcdHttp2Error, EtcdStatusError } from './etcd-http2-errors.js';
import {
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type EtcdKVStoreOptions,
  prefixEnd,
  resolveEtcdOptions,
  ZERO_KEY,
} from './etcd-options.js';
import {
  authenticateRequest,
  decodeAuthenticateResponse,
  decodeDeleteRangeResponse,
  decodeLeaseGrantResponse,
  decodePutResponse,
  decodeRangeResponse,
  decodeTxnResponse,
  decodeWatchResponse,
  deleteRangeRequest,
  leaseGrantRequest,
  type ProtoMessage,
  type ProtoWriter,
  putRequest,
  rangeRequest,
  type TxnResponse,
  txnRequest,
  type WatchEvent,
  type WatchResponse,
  type WireKV,
  watchCreateRequest,
} from './etcd-proto.js';
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

/**
 * KVStore speaking etcd's gRPC protocol through Node's built-in HTTP/2 client, with a hand-written
 * codec for the few messages it uses (`etcd-proto.ts`): nothing to load but `node:http2`. For
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
 * - A watch is one Watch stream per prefix. It tracks the next revision to deliver; when the
 *   stream breaks it reports `disconnected`, reconnects with backoff (100 ms doubling to 2 s) from
 *   that revision and reports `reconnected` once etcd confirms the new watch: no gap, no duplicate.
 *   A compacted start revision (etcd cancels the watch with `compact_revision`) becomes a `resync`
 *   with a fresh list, and the watch goes on from that list's revision.
 *
 * Thread-safety: safe for any number of concurrent operations and watches from one event loop.
 */
export class EtcdHttp2KVStore implements KVStore {
  private readonly channel: GrpcChannel;
  private readonly where: string;
  private readonly options: EtcdKVStoreOptions;
  private readonly streams = new Set<PushStream<KVWatchMessage>>();
  private token: Promise<string> | undefined;
  private closed = false;

  constructor(options: EtcdKVStoreOptions) {
    const { hosts, where } = resolveEtcdOptions(options);
    this.options = options;
    this.where = where;
    this.channel = new GrpcChannel({
      hosts,
      ...(options.tls ? { tls: options.tls } : {}),
      dialTimeoutMs: options.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    });
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
    const from =
      options.fromRevision === undefined ? undefined : parseRevision(options.fromRevision, 'fromRevision');
    const run = new Http2PrefixWatch(this, prefix, from && from > 0 ? from : undefined, options.signal);
    this.streams.add(run.stream);
    run.start();
    return run.stream;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of [...this.streams]) s.end();
    this.streams.clear();
    this.channel.close();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** @internal */
  forget(stream: PushStream<KVWatchMessage>): void {
    this.streams.delete(stream);
  }

  /** @internal Wrap a foreign error with what was being done, classified. */
  fail(e: unknown, what: string): DatastoreError {
    return classifyEtcdHttp2Error(e, `${this.where}: ${what}`);
  }

  /** @internal Open a Watch stream with this store's credentials. */
  async openWatchStream(what: string, handlers: GrpcStreamHandlers): Promise<GrpcStream> {
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
        if (this.closed) throw new DatastoreError('unavailable', `${this.where}: the client is closed`);
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
    if (this.closed) throw new DatastoreError('unavailable', `${this.where}: the client is closed`);
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

type WatchOutcome =
  | { kind: 'ended'; created: boolean; error: Error | undefined }
  | { kind: 'compacted' }
  | { kind: 'cancelled'; error: Error };

/**
 * One prefix watch over a Watch stream, re-opened from the next undelivered revision whenever the
 * stream breaks.
 */
class Http2PrefixWatch {
  readonly stream: PushStream<KVWatchMessage>;
  /** The next revision to deliver; undefined until etcd tells us "now" for a watch from now. */
  private next: number | undefined;
  /** What the consumer was last told: nothing yet, connected, or disconnected. */
  private link: 'new' | 'up' | 'down' = 'new';
  private done = false;
  private current: GrpcStream | undefined;
  private readonly key: Buffer;
  private readonly rangeEnd: Buffer;

  constructor(
    private readonly store: EtcdHttp2KVStore,
    private readonly prefix: string,
    from: number | undefined,
    signal: AbortSignal | undefined,
  ) {
    this.next = from;
    this.key = prefix === '' ? ZERO_KEY : Buffer.from(prefix);
    this.rangeEnd = prefixEnd(this.key);
    this.stream = new PushStream<KVWatchMessage>(() => this.stop(), signal);
  }

  start(): void {
    void this.run();
  }

  private async run(): Promise<void> {
    let delay = 100;
    while (!this.done) {
      let outcome: WatchOutcome;
      try {
        outcome = await this.openOnce();
      } catch (e) {
        outcome = { kind: 'ended', created: false, error: e as Error };
      }
      if (this.done) return;
      if (outcome.kind === 'compacted') {
        try {
          const list = await this.store.list(this.prefix);
          if (this.done) return;
          this.stream.push({ kind: 'resync', list, reason: 'compacted' });
          this.next = Number(list.revision) + 1;
          delay = 100;
          continue;
        } catch (e) {
          if (!this.down(this.store.fail(e, `watch ${this.prefix}`))) return;
        }
      } else if (outcome.kind === 'cancelled') {
        this.stream.fail(this.store.fail(outcome.error, `watch ${this.prefix} cancelled by etcd`));
        return;
      } else {
        if (outcome.created) delay = 100;
        const error =
          outcome.error ?? Object.assign(new Error('the watch stream ended'), { code: 'ECONNRESET' });
        if (!this.down(this.store.fail(error, `watch ${this.prefix}`))) return;
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2_000);
    }
  }

  /** Report a lost stream; false (and the stream failed) when the error is not one to retry. */
  private down(error: DatastoreError): boolean {
    if (error.code !== 'unavailable' || this.store.isClosed) {
      this.stream.fail(error);
      return false;
    }
    if (this.link !== 'down') {
      this.link = 'down';
      this.stream.push({ kind: 'disconnected', error });
    }
    return true;
  }

  /** Open the stream and feed its messages until it ends; resolves with how it ended. */
  private openOnce(): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve, reject) => {
      let created = false;
      let settled = false;
      let opened: GrpcStream | undefined;
      const finish = (outcome: WatchOutcome) => {
        if (settled) return;
        settled = true;
        opened?.cancel();
        if (this.current === opened) this.current = undefined;
        resolve(outcome);
      };
      this.store
        .openWatchStream(`watch ${this.prefix}`, {
          message: (m) => {
            if (settled) return;
            let res: WatchResponse;
            try {
              res = decodeWatchResponse(m);
            } catch (e) {
              finish({ kind: 'ended', created, error: e as Error });
              return;
            }
            if (res.created) {
              created = true;
              this.onCreated(res.revision);
            }
            if (res.events.length > 0) this.onEvents(res.events);
            if (res.canceled) {
              finish(
                res.compactRevision > 0
                  ? { kind: 'compacted' }
                  : {
                      kind: 'cancelled',
                      error: new EtcdStatusError(2, res.cancelReason || 'etcd cancelled the watch'),
                    },
              );
            }
          },
          end: (error) => {
            if (error instanceof EtcdStatusError && error.grpcCode !== 14 && error.grpcCode !== 1) {
              finish({ kind: 'cancelled', error });
            } else {
              finish({ kind: 'ended', created, error });
            }
          },
        })
        .then((s) => {
          opened = s;
          if (settled || this.done) {
            s.cancel();
            if (!settled) finish({ kind: 'ended', created, error: undefined });
            return;
          }
          this.current = s;
          s.write(
            watchCreateRequest({
              key: this.key,
              rangeEnd: this.rangeEnd,
              ...(this.next !== undefined ? { startRevision: this.next } : {}),
              prevKv: true,
            }).finish(),
          );
        }, reject);
    });
  }

  private onCreated(revision: number): void {
    if (this.next === undefined) this.next = revision + 1;
    if (this.link === 'down') this.stream.push({ kind: 'reconnected' });
    this.link = 'up';
  }

  private onEvents(events: WatchEvent[]): void {
    let batch: KVEvent[] = [];
    let batchRev = -1;
    const flush = () => {
      if (batch.length > 0) this.stream.push({ kind: 'events', events: batch, revision: String(batchRev) });
      batch = [];
    };
    for (const ev of events) {
      const rev = ev.kv.modRevision;
      if (this.next !== undefined && rev < this.next) continue; // already delivered before a reconnect
      if (rev !== batchRev) {
        flush();
        batchRev = rev;
      }
      batch.push(toEvent(ev));
    }
    flush();
    if (batchRev >= 0) this.next = batchRev + 1;
  }

  private stop(): void {
    if (this.done) return;
    this.done = true;
    this.store.forget(this.stream);
    const s = this.current;
    this.current = undefined;
    s?.cancel();
  }
}

function toKV(kv: WireKV): KV {
  return {
    key: kv.key,
    value: kv.value,
    modRevision: String(kv.modRevision),
    createRevision: String(kv.createRevision),
  };
}

function toEvent(ev: WatchEvent): KVEvent {
  if (ev.type === 'delete') {
    const modRevision = String(ev.kv.modRevision);
    return ev.prevKv
      ? { kind: 'delete', key: ev.kv.key, modRevision, prev: toKV(ev.prevKv) }
      : { kind: 'delete', key: ev.kv.key, modRevision };
  }
  return ev.prevKv
    ? { kind: 'put', kv: toKV(ev.kv), prev: toKV(ev.prevKv) }
    : { kind: 'put', kv: toKV(ev.kv) };
}

function casFailure(res: TxnResponse, key: string, rev: string): DatastoreError {
  const current = res.responses[0]?.range?.kvs[0];
  if (!current) return new DatastoreError('not-found', `key ${key} does not exist`);
  return new DatastoreError('conflict', `key ${key} is at revision ${current.modRevision}, not ${rev}`);
}
