/**
 * Health aggregation and its HTTP endpoints, as upstream's `libcalico-go/lib/health`:
 *
 *   reporters ──report({live, ready, detail})──► HealthAggregator.summary()
 *   GET /liveness, /readiness ──► 200 + table | 204 (good, no detail) | 503 + table (bad)
 *
 * A reporter that declared a timeout and has not reported within it counts as "timed out" (not
 * live / not ready). The detail is the table upstream prints:
 * `COMPONENT TIMEOUT LIVENESS READINESS DETAIL`, one row per reporter, by name.
 *
 * The aggregator is pure apart from the clock it is given; the server is a thin node:http wrapper.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HealthReport {
  readonly live: boolean;
  readonly ready: boolean;
  readonly detail?: string;
}

interface Reporter {
  readonly name: string;
  readonly reportsLive: boolean;
  readonly reportsReady: boolean;
  /** Seconds; 0 = reports never expire. */
  readonly timeoutSecs: number;
  latest: HealthReport;
  at: number;
}

export interface HealthSummary {
  readonly live: boolean;
  readonly ready: boolean;
  readonly detail: string;
}

/** Go's `time.Duration.String()` for whole and fractional seconds (`20s`, `1m30s`, `1.5s`). */
export function goDurationString(secs: number): string {
  if (secs === 0) return '0s';
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs % 3600) / 60);
  const s = Math.round((secs % 60) * 1000) / 1000;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/** An ASCII table like the tablewriter upstream uses: centred header, left-aligned cells. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  const centre = (s: string, w: number) => {
    const left = Math.floor((w - s.length) / 2);
    return ' '.repeat(left) + s + ' '.repeat(w - s.length - left);
  };
  const out = [line, `|${header.map((h, i) => ` ${centre(h, widths[i]!)} `).join('|')}|`, line];
  for (const r of rows) out.push(`|${widths.map((w, i) => ` ${(r[i] ?? '').padEnd(w)} `).join('|')}|`);
  out.push(line);
  return out.join('\n');
}

export class HealthAggregator {
  readonly #reporters = new Map<string, Reporter>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  register(name: string, reports: { live: boolean; ready: boolean }, timeoutSecs = 0): void {
    this.#reporters.set(name, {
      name,
      reportsLive: reports.live,
      reportsReady: reports.ready,
      timeoutSecs,
      latest: { live: true, ready: false },
      at: this.#now(),
    });
  }

  report(name: string, report: HealthReport): void {
    const r = this.#reporters.get(name);
    if (!r) throw new Error(`health reporter ${name} is not registered`);
    r.latest = report;
    r.at = this.#now();
  }

  summary(): HealthSummary {
    let live = true;
    let ready = true;
    const rows: string[][] = [];
    for (const r of [...this.#reporters.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const timedOut = r.timeoutSecs > 0 && this.#now() - r.at > r.timeoutSecs * 1000;
      let liveness = '-';
      if (r.reportsLive) {
        liveness = timedOut ? 'timed out' : r.latest.live ? 'reporting live' : 'reporting non-live';
        if (timedOut || !r.latest.live) live = false;
      }
      let readiness = '-';
      if (r.reportsReady) {
        readiness = timedOut ? 'timed out' : r.latest.ready ? 'reporting ready' : 'reporting non-ready';
        if (timedOut || !r.latest.ready) ready = false;
      }
      rows.push([
        r.name,
        r.timeoutSecs === 0 ? '-' : goDurationString(r.timeoutSecs),
        liveness,
        readiness,
        r.latest.detail ?? '',
      ]);
    }
    const detail =
      rows.length === 0 ? '' : renderTable(['COMPONENT', 'TIMEOUT', 'LIVENESS', 'READINESS', 'DETAIL'], rows);
    return { live, ready, detail };
  }
}

/** The status and body upstream answers a probe with. */
export function probeResponse(good: boolean, detail: string): { status: number; body: string } {
  if (!good) return { status: 503, body: detail };
  return detail === '' ? { status: 204, body: '' } : { status: 200, body: detail };
}

/** Serves /liveness and /readiness; resolves once listening (port 0 picks a free one). */
export async function startHealthServer(agg: HealthAggregator, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || (path !== '/liveness' && path !== '/readiness')) {
      res.writeHead(404).end();
      return;
    }
    const s = agg.summary();
    const { status, body } = probeResponse(path === '/liveness' ? s.live : s.ready, s.detail);
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
  });
  await listen(server, host, port);
  return server;
}

export function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host === '' ? undefined : host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

export function boundPort(server: Server): number {
  return (server.address() as AddressInfo).port;
}

export function closeServer(server: Server | undefined): Promise<void> {
  if (!server) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections?.();
  });
}
