/**
 * Felix's status in the datastore (upstream `felix/statusrep`, `model/statusreports.go`): every
 * ReportingInterval, `<prefix>/status` with a lease of ReportingTTL (it vanishes when Felix stops
 * reporting) and `<prefix>/last_reported_status` without one, each holding
 * `{"time":"<RFC 3339>","uptime":<seconds>,"first_update":<bool>}`.
 */
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';

/** The raw key-value writes this needs; `putWithTTL` when the store has leases (etcd). */
export interface StatusStore {
  put(key: string, value: string): Promise<unknown>;
  putWithTTL?(key: string, value: string, ttlSeconds: number): Promise<unknown>;
}

export interface StatusReporterOptions {
  readonly store: StatusStore;
  /** `/calico/felix/v2/no-region/host/<node>`. */
  readonly prefix: string;
  readonly intervalSecs: number;
  readonly ttlSecs: number;
  readonly startedAt: number;
  readonly now?: () => number;
  readonly log?: Logger;
  readonly onResult?: (ok: boolean) => void;
}

/** The JSON value of one report, as upstream's StatusReport marshals. */
export function statusValue(now: number, startedAt: number, firstUpdate: boolean): string {
  const time = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return JSON.stringify({ time, uptime: (now - startedAt) / 1000, first_update: firstUpdate });
}

export class StatusReporter {
  readonly #o: StatusReporterOptions;
  readonly #log: Logger;
  #first = true;
  #timer: NodeJS.Timeout | undefined;
  /** The report being written, if any: `stop()` waits for it. */
  #inFlight: Promise<void> | undefined;

  constructor(opts: StatusReporterOptions) {
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
  }

  async report(): Promise<void> {
    const now = (this.#o.now ?? Date.now)();
    const value = statusValue(now, this.#o.startedAt, this.#first);
    const { store, prefix, ttlSecs } = this.#o;
    try {
      if (store.putWithTTL && ttlSecs > 0) await store.putWithTTL(`${prefix}/status`, value, ttlSecs);
      else await store.put(`${prefix}/status`, value);
      await store.put(`${prefix}/last_reported_status`, value);
      this.#first = false;
      this.#o.onResult?.(true);
    } catch (e) {
      this.#log.warn({ err: errorMessage(e) }, 'writing the status report failed');
      this.#o.onResult?.(false);
    }
  }

  start(): void {
    if (this.#o.intervalSecs <= 0) return;
    const tick = () => {
      const r = this.report().finally(() => {
        if (this.#inFlight === r) this.#inFlight = undefined;
      });
      this.#inFlight = r;
    };
    tick();
    this.#timer = setInterval(tick, this.#o.intervalSecs * 1000);
  }

  /** Stops the timer and resolves once a report already being written has finished. */
  async stop(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#inFlight;
  }
}
