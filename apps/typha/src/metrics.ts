/**
 * Typha's Prometheus metrics (prom-client), on their own registry, served at /metrics on
 * TYPHA_PROMETHEUSMETRICSHOST:TYPHA_PROMETHEUSMETRICSPORT when TYPHA_PROMETHEUSMETRICSENABLED.
 * Names are upstream's where the meaning is the same; counts are read from the server's stats at
 * scrape time, timings arrive through its observer.
 *
 *   TyphaServer.stats() ──(scrape)──► typha_connections_active, typha_connections_accepted,
 *                                     typha_connections_dropped{reason}, typha_connections_refused,
 *                                     typha_updates_total, typha_cache_size{syncer}
 *   TyphaServer observer ───────────► typha_ping_latency, typha_client_snapshot_send_secs
 */
import { createServer, type Server } from 'node:http';
import { Counter, collectDefaultMetrics, Gauge, Registry, Summary } from 'prom-client';
import { SYNCER_TYPES } from './protocol.js';
import type { TyphaServerObserver, TyphaServerStats } from './server.js';

/** Typha's metrics; `observer` goes to the server, `stats` is read at each scrape. */
export class TyphaMetrics {
  readonly registry = new Registry();
  readonly #pingLatency: Summary;
  readonly #snapshotSend: Summary;

  constructor(stats: () => TyphaServerStats) {
    const registers = [this.registry];
    new Gauge({
      name: 'typha_connections_active',
      help: 'Number of open client connections (that completed the hello).',
      registers,
      collect() {
        this.set(stats().clients);
      },
    });
    new Counter({
      name: 'typha_connections_accepted',
      help: 'Total number of connections accepted over time.',
      registers,
      collect() {
        this.reset();
        this.inc(stats().accepted);
      },
    });
    new Counter({
      name: 'typha_connections_dropped',
      help: 'Total number of connections Typha dropped: too far behind (slow) or silent past the pong timeout (silent).',
      labelNames: ['reason'],
      registers,
      collect() {
        const s = stats();
        this.reset();
        this.inc({ reason: 'slow' }, s.droppedSlow);
        this.inc({ reason: 'silent' }, s.droppedSilent);
      },
    });
    new Counter({
      name: 'typha_connections_refused',
      help: 'Total number of connections refused: TLS handshake, certificate identity, hello, or the connection limit.',
      registers,
      collect() {
        this.reset();
        this.inc(stats().refused);
      },
    });
    new Counter({
      name: 'typha_updates_total',
      help: 'Total number of updates received from the Syncer.',
      registers,
      collect() {
        this.reset();
        this.inc(stats().updates);
      },
    });
    new Gauge({
      name: 'typha_cache_size',
      help: "The total number of key/value pairs in Typha's in-memory cache, per syncer type.",
      labelNames: ['syncer'],
      registers,
      collect() {
        const s = stats();
        for (const syncer of SYNCER_TYPES) this.set({ syncer }, s.cacheSize[syncer]);
      },
    });
    this.#pingLatency = new Summary({
      name: 'typha_ping_latency',
      help: 'Round-trip ping latency to client, in seconds.',
      percentiles: [0.5, 0.9, 0.99],
      registers,
    });
    this.#snapshotSend = new Summary({
      name: 'typha_client_snapshot_send_secs',
      help: 'How long it took to send the initial snapshot to each client.',
      percentiles: [0.5, 0.9, 0.99],
      registers,
    });
    collectDefaultMetrics({ register: this.registry });
  }

  /** For `TyphaServerOptions.observer`. */
  readonly observer: TyphaServerObserver = {
    pingLatency: (seconds) => this.#pingLatency.observe(seconds),
    snapshotSent: (seconds) => this.#snapshotSend.observe(seconds),
  };

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
