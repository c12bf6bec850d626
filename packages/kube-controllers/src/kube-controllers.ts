/**
 * KubeControllers: the controllers a kube-controllers process runs, started and stopped together,
 * with one health view.
 *
 *   Kubernetes datastore view ──► namespace   (kns.* Profiles)      ──┐
 *   (derived resources, Pods)  ──► serviceaccount (ksa.* Profiles) ──┼──► Calico datastore (etcd)
 *                              ──► policy      (knp.default.*)      ──┤
 *                              ──► workloadendpoint (WEP labels)   ──┘
 *
 * API: `start()` resolves when every controller has done its first reconcile; `status()` says
 * which are running and when each last reconciled; `stop()`.
 */
import type { Datastore, KVStore } from '@calico-ts/datastore';
import { type ControllerName, IMPLEMENTED } from './config.js';
import { KubeControllersError } from './errors.js';
import { type ControllerLogger, MirrorController, type ReconcileReport } from './mirror-controller.js';
import { WepLabelController } from './wep-label-controller.js';

export interface KubeControllersOptions {
  readonly enabled: readonly ControllerName[];
  /** The Kubernetes datastore (typed view) and its key store (for Pods as they are). */
  readonly kubernetes: { readonly datastore: Datastore; readonly kv: KVStore };
  /** Where the controllers write: the Calico (etcd) datastore. */
  readonly calico: Datastore;
  readonly log: ControllerLogger;
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
    const report = (name: string) => (r: ReconcileReport) =>
      this.#status.set(name, { name, lastReconciled: now(), lastReport: r });
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
