/**
 * InterfaceMonitor: notices workload interfaces (`cali*`, or the configured prefixes) appearing,
 * going up or down, and disappearing, by polling the link list (`ip -d -json link show`) on a
 * short interval. Upstream listens to netlink; a poll of one `ip` process every few hundred
 * milliseconds is enough for routes and sysctls to follow a new pod's veth promptly (policy does
 * not wait for it: the nftables dispatch maps match interface names, present or not).
 *
 * API: `poll()` reads the links once and reports every change through `onUpdate` (name, state or
 * undefined when gone), resolving true when anything changed; `start(ms)`/`stop()` run it on a
 * timer. Thread-safety: single event loop; overlapping polls are skipped.
 */
import type { Link } from '@calico-ts/netlinux';
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';

export interface InterfaceState {
  readonly name: string;
  readonly index: number;
  /** Administratively up with carrier: what routes and sysctls wait for. */
  readonly up: boolean;
}

export interface InterfaceMonitorOptions {
  readonly listLinks: () => Promise<readonly Link[]>;
  readonly interfacePrefixes: readonly string[];
  readonly onUpdate: (name: string, state: InterfaceState | undefined) => void;
  readonly log?: Logger;
}

export function matchesPrefixes(name: string, prefixes: readonly string[]): boolean {
  return prefixes.some((p) => p !== '' && name.startsWith(p));
}

export class InterfaceMonitor {
  readonly #opts: InterfaceMonitorOptions;
  readonly #log: Logger;
  readonly #known = new Map<string, InterfaceState>();
  #timer: NodeJS.Timeout | undefined;
  #polling = false;

  constructor(opts: InterfaceMonitorOptions) {
    this.#opts = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
  }

  get interfaces(): ReadonlyMap<string, InterfaceState> {
    return this.#known;
  }

  async poll(): Promise<boolean> {
    if (this.#polling) return false;
    this.#polling = true;
    try {
      const links = await this.#opts.listLinks();
      const seen = new Map<string, InterfaceState>();
      for (const l of links) {
        if (!matchesPrefixes(l.name, this.#opts.interfacePrefixes)) continue;
        const carrier = l.operstate === 'UP' || l.flags.includes('LOWER_UP');
        seen.set(l.name, { name: l.name, index: l.index, up: l.up && carrier });
      }
      let changed = false;
      for (const [name, state] of seen) {
        const old = this.#known.get(name);
        if (old && old.index === state.index && old.up === state.up) continue;
        this.#known.set(name, state);
        changed = true;
        this.#log.debug({ iface: name, up: state.up, index: state.index }, 'workload interface changed');
        this.#opts.onUpdate(name, state);
      }
      for (const name of [...this.#known.keys()]) {
        if (seen.has(name)) continue;
        this.#known.delete(name);
        changed = true;
        this.#log.debug({ iface: name }, 'workload interface gone');
        this.#opts.onUpdate(name, undefined);
      }
      return changed;
    } finally {
      this.#polling = false;
    }
  }

  start(intervalMs: number): void {
    this.stop();
    const tick = () => {
      this.poll()
        .catch((e: unknown) => this.#log.warn({ err: errorMessage(e) }, 'listing interfaces failed'))
        .finally(() => {
          if (this.#timer !== undefined) this.#timer = setTimeout(tick, intervalMs);
        });
    };
    this.#timer = setTimeout(tick, 0);
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
