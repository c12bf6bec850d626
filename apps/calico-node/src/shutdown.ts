/**
 * The one way calico-node's processes end: on SIGTERM or SIGINT (once; a second signal while
 * stopping is ignored), stop what runs, then close what it used, in that order, and exit 0; exit 1
 * with a log line when stopping fails.
 *
 *   signal ──► log "shutting down" ──► stop() ──► close[] (all attempted, failures ignored) ──► exit 0
 *                                         └─ throws ──► log "shutdown failed" ──► exit 1
 *
 * Both process modes use it: the whole node (start-up, Felix, BIRD) and Felix alone (`-felix`).
 */
import type { Logger } from '@calico-ts/api/log';
import { errorMessage } from './errors.js';

export interface ShutdownOptions {
  readonly log: Logger;
  /** Stops what runs (Felix leaves its rules and routes in place). */
  readonly stop: () => Promise<void>;
  /** Closes what `stop` used (nftables contexts, the datastore), after it. */
  readonly close: readonly (() => Promise<unknown> | undefined)[];
  /** Ends the process; `process.exit` unless a test says otherwise. */
  readonly exit?: (code: number) => void;
  /** Where the signals come from; `process` unless a test says otherwise. */
  readonly signals?: Pick<NodeJS.Process, 'on'>;
}

/** Installs the SIGTERM and SIGINT handlers; returns the shutdown itself (for tests, and callers). */
export function onShutdownSignals(o: ShutdownOptions): (signal: string) => Promise<void> {
  const exit = o.exit ?? ((code: number) => process.exit(code));
  let stopping: Promise<void> | undefined;
  const shutdown = (signal: string): Promise<void> => {
    if (stopping) return stopping;
    o.log.info({ signal }, 'shutting down');
    stopping = o
      .stop()
      .then(() => Promise.allSettled(o.close.map((c) => c())))
      .then(
        () => exit(0),
        (e: unknown) => {
          o.log.error({ err: errorMessage(e) }, 'shutdown failed');
          exit(1);
        },
      );
    return stopping;
  };
  const signals = o.signals ?? process;
  signals.on('SIGTERM', () => void shutdown('SIGTERM'));
  signals.on('SIGINT', () => void shutdown('SIGINT'));
  return shutdown;
}
