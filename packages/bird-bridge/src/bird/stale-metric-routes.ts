/**
 * Routes BIRD left in the kernel under an earlier kernel metric, and their removal.
 *
 * BIRD's kernel protocol owns the `proto bird` routes of its own `metric` only: when the route
 * priority (BGPConfiguration `ipv4NormalRoutePriority`/`ipv6NormalRoutePriority`) changes, or
 * calico-node restarts with another one, the routes programmed under the old metric stay (the
 * protocol `persist`s them) and, at a lower metric, would keep winning over the new ones. They are
 * removed here, and only once the kernel holds the same destination at the current metric, so a
 * priority change never leaves a destination without a route.
 *
 *   kernelSettingsOf(main config text) ─► { metric, family }
 *   `ip -j [-6] route show proto bird` ─► staleMetricRoutes(routes, metric) ─► `ip route del …` each
 *
 * Pure parts first; `StaleMetricSweeper` does the I/O, again every `everyMs` while stale routes
 * remain (BIRD programs the new ones asynchronously after a reload or a start).
 */

import { execFile } from 'node:child_process';
import type { Logger } from '@calico-ts/api/log';

/** One route of `ip -j route show`, as far as this needs it. */
export interface KernelRouteRow {
  readonly dst: string;
  readonly metric?: number;
  readonly type?: string;
}

/** The kernel protocol's `metric` and channel family in a rendered main configuration. */
export function kernelSettingsOf(mainText: string): { metric: number; family: 4 | 6 } | undefined {
  const block = /protocol kernel \{([\s\S]*?)\n\}/.exec(mainText)?.[1];
  if (block === undefined) return undefined;
  const metric = /^\s*metric (\d+);/m.exec(block)?.[1];
  if (metric === undefined) return undefined;
  return { metric: Number(metric), family: /^\s*ipv6 \{/m.test(block) ? 6 : 4 };
}

/** The `proto bird` routes at another metric whose destination the kernel also has at `metric`. */
export function staleMetricRoutes(routes: readonly KernelRouteRow[], metric: number): KernelRouteRow[] {
  const current = new Set(routes.filter((r) => (r.metric ?? 0) === metric).map((r) => r.dst));
  return routes.filter((r) => (r.metric ?? 0) !== metric && current.has(r.dst));
}

/** `ip route del` arguments for one stale route (its type, destination, protocol and metric). */
export function deleteArgs(r: KernelRouteRow, family: 4 | 6): string[] {
  const type = r.type && r.type !== 'unicast' ? [r.type] : [];
  return [`-${family}`, 'route', 'del', ...type, r.dst, 'proto', 'bird', 'metric', String(r.metric ?? 0)];
}

/** Removes stale-metric routes in BIRD's network namespace (see the top of this file). */
export class StaleMetricSweeper {
  #timer: NodeJS.Timeout | undefined;
  #settings: { metric: number; family: 4 | 6 } | undefined;
  #runs = 0;
  #stopped = false;

  constructor(
    private readonly commandPrefix: readonly string[],
    private readonly log: Logger,
    private readonly everyMs = 2000,
    /** Give up on a destination's old route after this many sweeps (it was never re-announced). */
    private readonly maxRuns = 90,
  ) {}

  /** The configuration now live is `mainText`: sweep for its metric, now and until clean. */
  kick(mainText: string): void {
    this.#settings = kernelSettingsOf(mainText);
    this.#runs = 0;
    this.#schedule(0);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(ms: number): void {
    clearTimeout(this.#timer);
    if (this.#stopped || this.#settings === undefined) return;
    this.#timer = setTimeout(() => void this.#sweep(), ms);
    this.#timer.unref?.();
  }

  async #sweep(): Promise<void> {
    const s = this.#settings;
    if (this.#stopped || s === undefined) return;
    this.#runs++;
    let rows: KernelRouteRow[];
    try {
      rows = JSON.parse((await this.#ip([`-${s.family}`, '-j', 'route', 'show', 'proto', 'bird'])) || '[]');
    } catch (e) {
      this.log.warn({ error: (e as Error).message }, 'cannot list the routes BIRD programmed');
      return this.#schedule(this.everyMs);
    }
    for (const r of staleMetricRoutes(rows, s.metric)) {
      try {
        await this.#ip(deleteArgs(r, s.family));
        this.log.info(
          {
            dst: r.dst,
            metric: r.metric ?? 0,
            now: s.metric,
          },
          'removed a route BIRD programmed under an earlier route priority',
        );
      } catch (e) {
        this.log.warn({ dst: r.dst, error: (e as Error).message }, 'cannot remove a stale BIRD route');
      }
    }
    const left = rows.some((r) => (r.metric ?? 0) !== s.metric);
    if (left && this.#runs < this.maxRuns) this.#schedule(this.everyMs);
  }

  #ip(args: string[]): Promise<string> {
    const [cmd, ...pre] = [...this.commandPrefix, 'ip'];
    return new Promise((resolve, reject) =>
      execFile(cmd!, [...pre, ...args], (err, stdout, stderr) =>
        err ? reject(new Error(`ip ${args.join(' ')}: ${stderr.trim() || err.message}`)) : resolve(stdout),
      ),
    );
  }
}
