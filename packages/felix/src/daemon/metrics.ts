/**
 * Felix's Prometheus metrics (prom-client) on their own registry, served at /metrics on
 * PrometheusMetricsHost:PrometheusMetricsPort. Names follow upstream's where one exists.
 */
import { createServer, type Server } from 'node:http';
import { Counter, collectDefaultMetrics, Gauge, Registry, Summary } from 'prom-client';
import { listen } from './health.js';

export class FelixMetrics {
  readonly registry = new Registry();
  readonly activeLocalEndpoints = new Gauge({
    name: 'felix_active_local_endpoints',
    help: 'Number of active endpoints on this host.',
    registers: [this.registry],
  });
  readonly activeLocalPolicies = new Gauge({
    name: 'felix_active_local_policies',
    help: 'Number of active policies on this host.',
    registers: [this.registry],
  });
  readonly activeLocalIPSets = new Gauge({
    name: 'felix_active_local_ipsets',
    help: 'Number of active IP sets on this host.',
    registers: [this.registry],
  });
  readonly clusterWorkloadEndpoints = new Gauge({
    name: 'felix_cluster_num_workload_endpoints',
    help: 'Total number of workload endpoints cluster-wide.',
    registers: [this.registry],
  });
  readonly calcGraphUpdates = new Counter({
    name: 'felix_calc_graph_updates_processed',
    help: 'Datastore updates fed to the calculation graph.',
    labelNames: ['type'],
    registers: [this.registry],
  });
  readonly applyTime = new Summary({
    name: 'felix_int_dataplane_apply_time_seconds',
    help: 'Time in seconds that it took to apply a dataplane update.',
    registers: [this.registry],
  });
  readonly dataplaneFailures = new Counter({
    name: 'felix_int_dataplane_failures',
    help: 'Number of times dataplane updates failed and will be retried.',
    registers: [this.registry],
  });
  readonly nftCommands = new Counter({
    name: 'felix_nftables_commands_total',
    help: 'nftables commands sent to the kernel, by kind of apply (incremental or resync).',
    labelNames: ['mode'],
    registers: [this.registry],
  });
  readonly nftRepairs = new Counter({
    name: 'felix_nftables_resync_repairs_total',
    help: 'Read-back resyncs that found the calico tables changed and repaired them.',
    registers: [this.registry],
  });
  readonly datastoreConnected = new Gauge({
    name: 'felix_datastore_connected',
    help: '1 while the datastore answers, 0 while it is unreachable.',
    registers: [this.registry],
  });
  readonly statusReports = new Counter({
    name: 'felix_status_reports_total',
    help: 'Status reports written to the datastore, by outcome.',
    labelNames: ['outcome'],
    registers: [this.registry],
  });

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }
}

export async function startMetricsServer(metrics: FelixMetrics, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    metrics.registry
      .metrics()
      .then((text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text))
      .catch((e: unknown) => res.writeHead(500).end(String(e)));
  });
  await listen(server, host, port);
  return server;
}
