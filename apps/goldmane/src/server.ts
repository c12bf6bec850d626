/**
 * The gRPC server: the flows API over the flow store. This is the I/O side (sockets, TLS, the
 * clock, timers); every decision about flows is the store's and the codec's.
 *
 *   Felix ──FlowCollector.Connect (FlowUpdate → FlowReceipt)──► decode ──► store.ingest
 *   clients ◄──Flows.List / FilterHints (unary)──── decode ──► store.list / filterHints
 *   clients ◄──Flows.Stream──── backfill: store.closedSince, then at every bucket boundary:
 *                               store.expire + store.takeClosed, filtered per stream
 *   Statistics.List ──► UNIMPLEMENTED
 *
 * Credentials: mTLS (server certificate and key, and the CA client certificates must chain to),
 * or plaintext only when asked for, for tests on loopback. A bad FlowUpdate ends its Connect call
 * with INVALID_ARGUMENT naming the field; the flows before it are kept.
 *
 * Thread-safety: everything runs on Node's one loop; the store is only touched from handlers and
 * the bucket timer.
 */

import { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';
import {
  type handleBidiStreamingCall,
  type handleServerStreamingCall,
  type handleUnaryCall,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerWritableStream,
  status,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import {
  decodeFlowUpdate,
  decodeHintsRequest,
  decodeListRequest,
  decodeStreamRequest,
  encodeFlowResult,
  type Wire,
} from './codec.js';
import { GoldmaneError } from './errors.js';
import { type Filter, keyMatches } from './filter.js';
import type { FlowResult } from './flow.js';
import { grpcStatusOf } from './grpc-status.js';
import { loadGoldmaneProto } from './proto.js';
import { FlowStore, type FlowStoreOptions, type FlowStoreStats } from './store.js';

/** Server certificate, key, and the CA that client certificates must chain to (PEM). */
export interface GoldmaneServerTls {
  /** CA bundle for client certificates. */
  readonly ca: Buffer;
  /** Server certificate chain. */
  readonly cert: Buffer;
  /** Server private key. */
  readonly key: Buffer;
}

/** What the server needs; exactly one of `tls` and `plaintext`. */
export interface GoldmaneServerOptions {
  /** Address to bind. */
  readonly host: string;
  /** Port; 0 = a free one (see `port` after `start`). */
  readonly port: number;
  /** mTLS credentials. */
  readonly tls?: GoldmaneServerTls;
  /** No TLS at all: only for tests on loopback. */
  readonly plaintext?: boolean;
  /** The store's limits. */
  readonly store?: Partial<FlowStoreOptions>;
  /** The clock, in milliseconds since the epoch (tests). */
  readonly nowMs?: () => number;
  /** Logger (pino fits). */
  readonly log?: Logger;
}

/** The store's counters and the server's own. */
export interface GoldmaneServerStats extends FlowStoreStats {
  /** FlowUpdates refused as malformed. */
  readonly invalid: number;
  /** Open streams. */
  readonly streams: number;
  /** Open collector connections. */
  readonly collectors: number;
  /** The flow budget. */
  readonly maxFlows: number;
}

interface Subscriber {
  readonly call: ServerWritableStream<Wire, Wire>;
  readonly filter: Filter;
}

/** The aggregator's gRPC server. */
export class GoldmaneServer {
  readonly #opts: GoldmaneServerOptions;
  readonly #store: FlowStore;
  readonly #server = new Server();
  readonly #subscribers = new Set<Subscriber>();
  readonly #collectors = new Set<ServerDuplexStream<Wire, Wire>>();
  readonly #nowMs: () => number;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #invalid = 0;
  #port = 0;

  constructor(opts: GoldmaneServerOptions) {
    if ((opts.tls === undefined) === (opts.plaintext !== true)) {
      throw new GoldmaneError('config', 'GoldmaneServer: give either tls credentials or plaintext: true');
    }
    this.#opts = opts;
    this.#store = new FlowStore(opts.store);
    this.#nowMs = opts.nowMs ?? Date.now;
    this.#log = opts.log ?? NOOP_LOGGER;
    const { grpc } = loadGoldmaneProto();
    this.#server.addService(grpc.FlowCollector.service, {
      Connect: this.#connect,
    } as UntypedServiceImplementation);
    this.#server.addService(grpc.Flows.service, {
      List: this.#list,
      Stream: this.#stream,
      FilterHints: this.#filterHints,
    } as UntypedServiceImplementation);
    this.#server.addService(grpc.Statistics.service, {
      List: this.#statistics,
    } as UntypedServiceImplementation);
  }

  /** The bound port, once started. */
  get port(): number {
    return this.#port;
  }

  /** The store (read-only use: benches and tests). */
  get store(): FlowStore {
    return this.#store;
  }

  #now(): number {
    return Math.floor(this.#nowMs() / 1000);
  }

  /** Binds and starts the bucket timer. */
  async start(): Promise<void> {
    const creds = this.#opts.tls
      ? ServerCredentials.createSsl(
          this.#opts.tls.ca,
          [{ cert_chain: this.#opts.tls.cert, private_key: this.#opts.tls.key }],
          true,
        )
      : ServerCredentials.createInsecure();
    const host = this.#opts.host.includes(':') ? `[${this.#opts.host}]` : this.#opts.host;
    this.#port = await new Promise<number>((resolve, reject) => {
      this.#server.bindAsync(`${host}:${this.#opts.port}`, creds, (err, port) =>
        err ? reject(err) : resolve(port),
      );
    });
    this.#schedule();
  }

  /** Ends every call and stops. */
  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const s of this.#subscribers) s.call.end();
    this.#subscribers.clear();
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => this.#server.forceShutdown(), 2000);
      this.#server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  /** Counters for metrics. */
  stats(): GoldmaneServerStats {
    return {
      ...this.#store.stats(),
      invalid: this.#invalid,
      streams: this.#subscribers.size,
      collectors: this.#collectors.size,
      maxFlows: this.#store.options.maxFlows,
    };
  }

  #schedule(): void {
    const interval = this.#store.options.intervalSeconds * 1000;
    const now = this.#nowMs();
    // A little past the boundary, so the clock has surely crossed it.
    const wait = interval - (now % interval) + 20;
    this.#timer = setTimeout(() => {
      this.#rollover();
      this.#schedule();
    }, wait);
  }

  #rollover(): void {
    const now = this.#now();
    this.#store.expire(now);
    const closed = this.#store.takeClosed(now);
    if (closed.length === 0) return;
    for (const s of this.#subscribers) this.#send(s, closed);
  }

  #send(s: Subscriber, results: readonly FlowResult[]): void {
    for (const r of results) {
      if (keyMatches(s.filter, r.flow.key)) s.call.write(encodeFlowResult(r));
    }
  }

  readonly #connect: handleBidiStreamingCall<Wire, Wire> = (call) => {
    this.#collectors.add(call);
    const peer = call.getPeer();
    call.on('data', (update: Wire) => {
      let flow: ReturnType<typeof decodeFlowUpdate>;
      try {
        flow = decodeFlowUpdate(update);
      } catch (e) {
        this.#invalid++;
        const st = grpcStatusOf(e);
        this.#log.warn({ peer, error: st.details }, 'refusing a malformed FlowUpdate');
        call.emit('error', st);
        return;
      }
      this.#store.ingest(flow, this.#now());
      call.write({});
    });
    const done = () => this.#collectors.delete(call);
    call.on('end', () => {
      done();
      call.end();
    });
    call.on('cancelled', done);
    call.on('error', done);
  };

  readonly #list: handleUnaryCall<Wire, Wire> = (call, callback) => {
    try {
      const { flows, meta } = this.#store.list(decodeListRequest(call.request), this.#now());
      callback(null, { meta, flows: flows.map(encodeFlowResult) });
    } catch (e) {
      callback(this.#failure(e, 'List'));
    }
  };

  readonly #filterHints: handleUnaryCall<Wire, Wire> = (call, callback) => {
    try {
      const { values, meta } = this.#store.filterHints(decodeHintsRequest(call.request), this.#now());
      callback(null, { meta, hints: values.map((value) => ({ value })) });
    } catch (e) {
      callback(this.#failure(e, 'FilterHints'));
    }
  };

  readonly #stream: handleServerStreamingCall<Wire, Wire> = (call) => {
    let q: ReturnType<typeof decodeStreamRequest>;
    try {
      q = decodeStreamRequest(call.request, this.#store.options.intervalSeconds);
    } catch (e) {
      call.emit('error', this.#failure(e, 'Stream'));
      return;
    }
    const sub: Subscriber = { call, filter: q.filter };
    // A start time backfills the closed buckets from then on; 0 means from now.
    if (q.startTimeGte !== 0) this.#send(sub, this.#store.closedSince(q.startTimeGte, q.filter, this.#now()));
    this.#subscribers.add(sub);
    const done = () => this.#subscribers.delete(sub);
    call.on('cancelled', done);
    call.on('error', done);
    call.on('close', done);
  };

  readonly #statistics: handleServerStreamingCall<Wire, Wire> = (call) => {
    call.emit('error', {
      code: status.UNIMPLEMENTED,
      details: 'Statistics.List is not implemented by this goldmane; use Flows.List with a policies filter',
    });
  };

  #failure(e: unknown, method: string): { code: status; details: string } {
    const st = grpcStatusOf(e);
    if (st.code === status.INTERNAL) this.#log.warn({ method, error: String(e) }, 'request failed');
    return st;
  }
}
