/**
 * Goldmane's Prometheus metrics (prom-client) on their own registry, served at /metrics. Upstream's
 * names where the meaning is the same (`goldmane_aggr_received_flows_total`,
 * `goldmane_aggr_dropped_flows_total`, `goldmane_aggr_num_unique_flows`); the rest are ours.
 * Everything is read from the server's stats at scrape time.
 *
 *   GoldmaneServer.stats() ──(scrape)──► received, dropped (budget), rejected{reason}, expired,
 *                                        unique flows, stored flows (key × bucket), streams
 */
import { createServer, type Server } from 'node:http';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { GoldmaneServerStats } from './server.js';

/** The metrics; `serve` starts the HTTP endpoint. */
export class GoldmaneMetrics {
  /** Their registry. */
  readonly registry = new Registry();

  constructor(stats: () => GoldmaneServerStats) {
    const registers = [this.registry];
    const counter = (name: string, help: string, read: (s: GoldmaneServerStats) => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read(stats()));
        },
      });
    const gauge = (name: string, help: string, read: (s: GoldmaneServerStats) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read(stats()));
        },
      });
    counter(
      'goldmane_aggr_received_flows_total',
      'Total number of flows received by Goldmane aggregator.',
      (s) => s.received,
    );
    counter(
      'goldmane_aggr_dropped_flows_total',
      'Total number of flows dropped by the aggregator: the oldest, when the flow budget (MAX_FLOWS) was full.',
      (s) => s.dropped,
    );
    new Counter({
      name: 'goldmane_aggr_rejected_flows_total',
      help: 'Flows refused on receipt: malformed (invalid), or a start time outside the kept window (too_old, too_new).',
      labelNames: ['reason'],
      registers,
      collect() {
        const s = stats();
        this.reset();
        this.inc({ reason: 'invalid' }, s.invalid);
        this.inc({ reason: 'too_old' }, s.rejectedTooOld);
        this.inc({ reason: 'too_new' }, s.rejectedTooNew);
      },
    });
    counter(
      'goldmane_aggr_expired_flows_total',
      'Flows that aged out of the retention window.',
      (s) => s.expired,
    );
    gauge(
      'goldmane_aggr_num_unique_flows',
      'Number of unique flows in the aggregator.',
      (s) => s.uniqueFlows,
    );
    gauge(
      'goldmane_aggr_stored_flows',
      'Flows held: one per flow key and aggregation bucket; bounded by MAX_FLOWS.',
      (s) => s.rows,
    );
    gauge('goldmane_aggr_max_flows', 'The flow budget (MAX_FLOWS).', (s) => s.maxFlows);
    gauge('goldmane_streams_active', 'Open Flows.Stream calls.', (s) => s.streams);
    gauge('goldmane_collector_connections_active', 'Open FlowCollector.Connect calls.', (s) => s.collectors);
    collectDefaultMetrics({ register: this.registry });
  }

  /** Serves `/metrics` on host:port (0: a free port); resolves once listening. */
  serve(host: string, port: number): Promise<Server> {
    const http = createServer((req, res) => {
      if ((req.url ?? '').split('?')[0] !== '/metrics') {
        res.statusCode = 404;
        res.end();
        return;
      }
      this.registry.metrics().then(
        (text) => {
          res.setHeader('Content-Type', this.registry.contentType);
          res.end(text);
        },
        (e: unknown) => {
          res.statusCode = 500;
          res.end(String(e));
        },
      );
    });
    return new Promise((resolve, reject) => {
      http.once('error', reject);
      http.listen(port, host, () => resolve(http));
    });
  }
}
