/**
 * The calculation graph's health row (`async_calc_graph`): ready once the datastore is in sync,
 * reachable and not locked, with the reason in the detail otherwise.
 *
 *   syncer connection state ─┐
 *   probe (a raw KV revision │ read, every probeIntervalMs; no answer within probeTimeoutMs counts
 *   as unreachable) ─────────┴► datastore reachable? ──► report() ──► HealthAggregator
 *   in sync? locked? (asked of the daemon) ───────────────────┘      felix_datastore_connected
 *
 * A late answer of an abandoned probe is ignored. Thread-safety: one event loop.
 */
import { errorMessage, type Logger } from '../logging.js';
import type { HealthAggregator } from './health.js';
import type { FelixMetrics } from './metrics.js';

/** The health reporter of the calculation graph. */
export const CALC_GRAPH = 'async_calc_graph';

export interface DatastoreHealthOptions {
  readonly health: HealthAggregator;
  readonly metrics: FelixMetrics;
  readonly log: Logger;
  /** A cheap datastore round trip; absent: only the syncer's connection state counts. */
  readonly probe?: () => Promise<unknown>;
  readonly probeTimeoutMs?: number;
  /** Whether the datastore has reported in-sync. */
  readonly inSync: () => boolean;
  /** Whether ClusterInformation holds the dataplane (`datastoreReady: false`). */
  readonly locked: () => boolean;
}

export class DatastoreHealth {
  readonly #o: DatastoreHealthOptions;
  /** Source → why it is unreachable. */
  readonly #down = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;
  #pending = false;
  #started = 0;
  #generation = 0;
  #stopped = false;

  constructor(o: DatastoreHealthOptions) {
    this.#o = o;
  }

  /** Reports what the graph is doing before there is a datastore to judge (start-up). */
  starting(detail: string): void {
    this.#o.health.report(CALC_GRAPH, { live: true, ready: false, detail });
  }

  /** The configuration could not be read: unreachable, with the error as the reason. */
  unreachable(e: unknown): void {
    this.#o.health.report(CALC_GRAPH, {
      live: true,
      ready: false,
      detail: `datastore unreachable: ${errorMessage(e)}`.slice(0, 120),
    });
    this.#o.metrics.datastoreConnected.set(0);
  }

  setConnection(source: string, connected: boolean, why?: string): void {
    const wasUp = this.#down.size === 0;
    if (connected) this.#down.delete(source);
    else this.#down.set(source, why ?? 'unreachable');
    const up = this.#down.size === 0;
    if (wasUp !== up) {
      if (up) this.#o.log.info({}, 'datastore reachable again');
      else this.#o.log.warn({ source, why }, 'datastore unreachable; keeping the programmed rules');
    }
    this.#o.metrics.datastoreConnected.set(up ? 1 : 0);
    this.report();
  }

  report(): void {
    const inSync = this.#o.inSync();
    const locked = this.#o.locked();
    const up = this.#down.size === 0;
    const detail = !up
      ? `datastore unreachable: ${[...this.#down.values()][0]}`.slice(0, 120)
      : locked
        ? 'datastore locked (ClusterInformation datastoreReady: false); dataplane held as programmed'
        : inSync
          ? undefined
          : 'waiting for the datastore to sync';
    const ready = inSync && up && !locked;
    this.#o.health.report(CALC_GRAPH, { live: true, ready, ...(detail ? { detail } : {}) });
  }

  /** Probes every `everyMs` (nothing without a probe). */
  startProbing(everyMs: number): void {
    if (!this.#o.probe) return;
    this.#timer = setInterval(() => this.#runProbe(), everyMs);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
  }

  #runProbe(): void {
    const probe = this.#o.probe;
    if (!probe) return;
    const timeout = this.#o.probeTimeoutMs ?? 2000;
    const now = Date.now();
    if (this.#pending) {
      if (now - this.#started <= timeout) return;
      // No answer in time: unreachable. Abandon that call (its late answer is ignored) and try anew.
      this.setConnection('probe', false, `no answer in ${timeout} ms`);
    }
    const generation = ++this.#generation;
    this.#pending = true;
    this.#started = now;
    const settle = (connected: boolean, why?: string) => {
      if (generation !== this.#generation || this.#stopped) return;
      this.#pending = false;
      this.setConnection('probe', connected, why);
    };
    probe().then(
      () => settle(true),
      (e: unknown) => settle(false, errorMessage(e)),
    );
  }
}
