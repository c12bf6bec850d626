/**
 * KubeControllers: the controllers a kube-controllers process runs, started and stopped together,
 * with one health view.
 *
 *   Kubernetes datastore view ──► namespace   (kns.* Profiles)      ──┐
 *   (derived resources, Pods)  ──► serviceaccount (ksa.* Profiles) ──┼──► Calico datastore (etcd)
 *                              ──► policy      (knp.default.*)      ──┤
 *                              ──► workloadendpoint (WEP labels)   ──┘
 *   Pods, Nodes ──► node (IPAM garbage collection, auto HostEndpoints; etcd: Calico Nodes of
 *                         deleted Nodes, Node labels)
 *
 * API: `start()` resolves when every controller has done its first reconcile; `status()` says
 * which are running and when each last reconciled; `stop()`.
 */
import type { Logger } from '@calico-ts/api/log';
import type { AllocationBlock, Datastore, KVStore } from '@calico-ts/datastore';
import type { IpamClient } from '@calico-ts/ipam';
import { type ControllerName, IMPLEMENTED } from './config.js';
import { KubeControllersError } from './errors.js';
import { controllerMetrics, MetricsRegistry } from './metrics.js';
import { MirrorController, type ReconcileReport } from './mirror-controller.js';
import { NodeController } from './node-controller.js';
import { WepLabelController } from './wep-label-controller.js';

export interface KubeControllersOptions {
  readonly enabled: readonly ControllerName[];
  /** The Kubernetes datastore (typed view) and its key store (for Pods as they are). */
  readonly kubernetes: { readonly datastore: Datastore; readonly kv: KVStore };
  /** Where the controllers write: the Calico (etcd) datastore. */
  readonly calico: Datastore;
  /** IPAM on the Calico datastore: needed by the node controller (garbage collection). */
  readonly ipam?: IpamClient;
  /**
   * The node controller's leak grace period (KubeControllersConfiguration `controllers.node.
   * leakGracePeriod`): default 15 min, 0 turns collection on live nodes off.
   */
  readonly leakGracePeriodMs?: number;
  /** Node controller: copy Kubernetes Node labels onto Calico Nodes. Default: on in etcd mode. */
  readonly syncNodeLabels?: boolean;
  /** Node controller: a HostEndpoint `<node>-auto-hep` per node (`hostEndpoint.autoCreate`). Default off. */
  readonly autoHostEndpoints?: boolean;
  /** The IPAM blocks as stored: what the node controller's leak collection and IPAM metrics read. */
  readonly ipamBlocks?: () => Promise<readonly AllocationBlock[]>;
  /** Where the metrics go (served by `serveMetrics`); a fresh registry when not given. */
  readonly metrics?: MetricsRegistry;
  readonly log: Logger;
  readonly reconcilePeriodMs?: number;
  readonly debounceMs?: number;
  readonly now?: () => number;
}

export interface ControllerStatus {
  readonly name: string;
  /** ms since the epoch of the last reconcile, or undefined before the first. */
  readonly lastReconciled?: number;
  readonly lastReport?: ReconcileReport;
}

interface Running {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export class KubeControllers {
  readonly #o: KubeControllersOptions;
  readonly #controllers: Running[] = [];
  readonly #status = new Map<string, ControllerStatus>();
  /** Every controller's counters, and the node controller's IPAM gauges. */
  readonly metrics: MetricsRegistry;

  constructor(opts: KubeControllersOptions) {
    const missing = opts.enabled.filter((n) => !IMPLEMENTED.has(n));
    if (missing.length > 0) {
      throw new KubeControllersError(
        'unsupported',
        `controllers not available in this version: ${missing.join(', ')} (available: ${[...IMPLEMENTED].join(', ')})`,
      );
    }
    this.#o = opts;
    const now = opts.now ?? Date.now;
    this.metrics = opts.metrics ?? new MetricsRegistry();
    const m = controllerMetrics(this.metrics);
    const report = (name: string) => (r: ReconcileReport) => {
      const at = now();
      this.#status.set(name, { name, lastReconciled: at, lastReport: r });
      const controller = { controller: name };
      m.reconciles.inc(controller);
      m.errors.inc(controller, r.failed.length);
      m.writes.inc({ controller: name, operation: 'create' }, r.created);
      m.writes.inc({ controller: name, operation: 'update' }, r.updated);
      m.writes.inc({ controller: name, operation: 'delete' }, r.deleted);
      m.lastReconcile.set(controller, at / 1000);
    };
    const skipped = (name: string) => () => m.skipped.inc({ controller: name });
    const common = {
      kubernetes: opts.kubernetes.datastore,
      calico: opts.calico,
      log: opts.log,
      ...(opts.reconcilePeriodMs !== undefined ? { reconcilePeriodMs: opts.reconcilePeriodMs } : {}),
      ...(opts.debounceMs !== undefined ? { debounceMs: opts.debounceMs } : {}),
    };
    for (const name of opts.enabled) {
      this.#status.set(name, { name });
      switch (name) {
        case 'namespace':
          this.#controllers.push(
            new MirrorController({
              ...common,
              name,
              kind: 'Profile',
              namePrefix: 'kns.',
              onReconciled: report(name),
              onSkipped: skipped(name),
            }),
          );
          break;
        case 'serviceaccount':
          this.#controllers.push(
            new MirrorController({
              ...common,
              name,
              kind: 'Profile',
              namePrefix: 'ksa.',
              onReconciled: report(name),
              onSkipped: skipped(name),
            }),
          );
          break;
        case 'policy':
          this.#controllers.push(
            new MirrorController({
              ...common,
              name,
              kind: 'NetworkPolicy',
              namePrefix: 'knp.default.',
              onReconciled: report(name),
              onSkipped: skipped(name),
            }),
          );
          break;
        case 'workloadendpoint':
          this.#controllers.push(
            new WepLabelController({
              kubernetes: opts.kubernetes.kv,
              calico: opts.calico,
              log: opts.log,
              ...(opts.reconcilePeriodMs !== undefined ? { reconcilePeriodMs: opts.reconcilePeriodMs } : {}),
              ...(opts.debounceMs !== undefined ? { debounceMs: opts.debounceMs } : {}),
              onReconciled: report(name),
              onSkipped: skipped(name),
            }),
          );
          break;
        case 'node':
          if (!opts.ipam || !opts.ipamBlocks)
            throw new KubeControllersError(
              'config',
              'the node controller needs IPAM and its blocks (options ipam, ipamBlocks)',
            );
          this.#controllers.push(
            new NodeController({
              kubernetes: opts.kubernetes.kv,
              calico: opts.calico,
              ipam: opts.ipam,
              deleteNodes: opts.calico.backend !== 'kubernetes',
              syncLabels: opts.calico.backend !== 'kubernetes' && opts.syncNodeLabels !== false,
              autoHostEndpoints: opts.autoHostEndpoints === true,
              metrics: this.metrics,
              blocks: opts.ipamBlocks,
              log: opts.log,
              ...(opts.leakGracePeriodMs !== undefined ? { leakGracePeriodMs: opts.leakGracePeriodMs } : {}),
              ...(opts.reconcilePeriodMs !== undefined ? { scanPeriodMs: opts.reconcilePeriodMs } : {}),
              onReconciled: report(name),
              onSkipped: skipped(name),
            }),
          );
          break;
        default:
          break;
      }
    }
  }

  async start(): Promise<void> {
    await Promise.all(this.#controllers.map((c) => c.start()));
    this.#o.log.info({ controllers: this.#controllers.map((c) => c.name) }, 'controllers running');
  }

  status(): ControllerStatus[] {
    return [...this.#status.values()];
  }

  async stop(): Promise<void> {
    await Promise.all(this.#controllers.map((c) => c.stop()));
  }
}
