/**
 * WorkloadEndpointLabelController (upstream's workloadendpoint/pod controller, etcd mode): the
 * labels of every Kubernetes WorkloadEndpoint in the Calico datastore follow its Pod's labels and
 * service account. It never creates or deletes endpoints (the CNI plugin does).
 *
 *   Pods (Kubernetes, as they are) ─ Syncer ─┐
 *                                            ├─► labels a WEP should carry ≠ its labels? ─► update the WEP
 *   WorkloadEndpoints (etcd) ──────── Syncer ─┘
 *
 * A WEP's labels: the Pod's labels, plus `projectcalico.org/namespace`, `…/orchestrator: k8s` and
 * `…/serviceaccount` (when the name is under 63 characters), as upstream sets them.
 */

import type { WorkloadEndpoint } from '@calico-ts/api';
import type { Logger } from '@calico-ts/api/log';
import {
  type Datastore,
  type KVStore,
  kvSource,
  resourceSource,
  Syncer,
  type SyncSource,
} from '@calico-ts/datastore';
import { PODS_PREFIX } from '@calico-ts/datastore/internal';
import type { ReconcileReport } from './mirror-controller.js';
import { ReconcileLoop } from './reconcile-loop.js';
import { invalidReason, isInvalid, UnconvertibleReporter } from './unconvertible.js';

interface PodView {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
  };
  readonly spec?: { readonly serviceAccountName?: string };
}

export interface WepLabelControllerOptions {
  /** The Kubernetes datastore's key store (for the Pods as they are). */
  readonly kubernetes: KVStore;
  readonly calico: Datastore;
  readonly log: Logger;
  readonly debounceMs?: number;
  readonly retryMs?: number;
  readonly reconcilePeriodMs?: number;
  readonly onReconciled?: (r: ReconcileReport) => void;
  /** A Pod was skipped because it cannot be read or its endpoint's labels are not valid. */
  readonly onSkipped?: (name: string) => void;
}

const isStringMap = (v: unknown): v is Record<string, string> =>
  v !== null &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  Object.values(v).every((x) => typeof x === 'string');

/**
 * Only what the controllers read of a Pod (or Node): name, namespace, labels, annotations, service
 * account, addresses. The rest of a stored object (containers, managedFields, conditions) is most
 * of its size and would otherwise be held for every pod in the cluster.
 */
export function slimObject(o: unknown): SlimObject {
  const p = (o ?? {}) as {
    metadata?: Record<string, unknown>;
    spec?: { serviceAccountName?: unknown };
    status?: { podIP?: unknown; podIPs?: unknown };
  };
  const m = p.metadata ?? {};
  const out: {
    metadata: Record<string, unknown>;
    spec?: Record<string, unknown>;
    status?: Record<string, unknown>;
  } = { metadata: { name: m.name } };
  if (m.namespace !== undefined) out.metadata.namespace = m.namespace;
  if (m.labels !== undefined) out.metadata.labels = m.labels;
  if (m.annotations !== undefined) out.metadata.annotations = m.annotations;
  if (p.spec?.serviceAccountName !== undefined) out.spec = { serviceAccountName: p.spec.serviceAccountName };
  if (p.status?.podIP !== undefined || p.status?.podIPs !== undefined) {
    out.status = {
      ...(p.status.podIP !== undefined ? { podIP: p.status.podIP } : {}),
      ...(p.status.podIPs !== undefined ? { podIPs: p.status.podIPs } : {}),
    };
  }
  return out as SlimObject;
}

export interface SlimObject {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly spec?: { readonly serviceAccountName?: string };
  readonly status?: { readonly podIPs?: readonly { readonly ip?: string }[]; readonly podIP?: string };
}

/** A Pod as stored, checked for the fields the labels come from; throws naming what is wrong. */
export function decodePod(text: string): SlimObject {
  const p = JSON.parse(text) as { metadata?: unknown; spec?: unknown };
  const m = p?.metadata as { name?: unknown; namespace?: unknown; labels?: unknown } | undefined;
  if (!m || typeof m !== 'object' || typeof m.name !== 'string' || m.name === '')
    throw new Error('metadata.name is missing');
  if (m.labels !== undefined && !isStringMap(m.labels))
    throw new Error('metadata.labels is not a map of strings');
  const sa = (p.spec as { serviceAccountName?: unknown } | undefined)?.serviceAccountName;
  if (sa !== undefined && typeof sa !== 'string') throw new Error('spec.serviceAccountName is not a string');
  return slimObject(p);
}

/** The labels a pod's endpoint carries. Pure. */
export function endpointLabels(pod: PodView): Record<string, string> {
  const ns = pod.metadata.namespace ?? 'default';
  const sa = pod.spec?.serviceAccountName ?? 'default';
  const out: Record<string, string> = {
    ...pod.metadata.labels,
    'projectcalico.org/namespace': ns,
    'projectcalico.org/orchestrator': 'k8s',
  };
  if (sa.length < 63) out['projectcalico.org/serviceaccount'] = sa;
  return out;
}

function sameLabels(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => a![k] === b[k]);
}

export class WepLabelController {
  readonly name = 'workloadendpoint';
  readonly #o: WepLabelControllerOptions;
  readonly #pods = new Map<string, PodView>();
  readonly #weps = new Map<string, WorkloadEndpoint>();
  readonly #loop: ReconcileLoop;
  readonly #bad: UnconvertibleReporter;
  #syncer: Syncer | undefined;
  #inSync = false;

  constructor(opts: WepLabelControllerOptions) {
    this.#o = opts;
    this.#bad = new UnconvertibleReporter(this.name, opts.log, opts.onSkipped);
    this.#loop = new ReconcileLoop({
      pass: () => this.#reconcileOnce(),
      ...(opts.debounceMs !== undefined ? { debounceMs: opts.debounceMs } : {}),
      ...(opts.reconcilePeriodMs !== undefined ? { periodMs: opts.reconcilePeriodMs } : {}),
      ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
      onError: (e) =>
        opts.log.warn({ controller: this.name, err: (e as Error).message }, 'reconcile failed; will retry'),
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#syncer = new Syncer({
        sources: [
          kvSource('pods', this.#o.kubernetes, PODS_PREFIX, (kv) => {
            try {
              return decodePod(kv.value);
            } catch (e) {
              this.#bad.skip(kv.key, kv.modRevision, (e as Error).message);
              throw e;
            }
          }) as SyncSource,
          resourceSource(this.#o.calico, 'WorkloadEndpoint') as SyncSource,
        ],
        onUpdate: (u) => {
          if (u.source === 'pods') {
            const { value } = u.item as { value: PodView };
            const key = `${value.metadata.namespace}/${value.metadata.name}`;
            if (u.kind === 'set') this.#pods.set(key, value);
            else this.#pods.delete(key);
          } else {
            const w = u.item as WorkloadEndpoint;
            const key = `${w.metadata.namespace}/${w.metadata.name}`;
            if (u.kind === 'set') this.#weps.set(key, w);
            else this.#weps.delete(key);
          }
          if (this.#inSync) this.#loop.schedule();
        },
        onInSync: () => {
          this.#inSync = true;
          resolve();
        },
        log: this.#o.log,
        ...(this.#o.retryMs !== undefined ? { retryMs: this.#o.retryMs } : {}),
      });
      this.#syncer.start();
    });
    await this.reconcile();
    this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#loop.stop();
    await this.#syncer?.stop();
  }

  reconcile(): Promise<void> {
    return this.#loop.run();
  }

  /** One pass; true when an update failed (the loop retries). */
  async #reconcileOnce(): Promise<boolean> {
    const failed: string[] = [];
    let updated = 0;
    for (const w of this.#weps.values()) {
      if (w.spec.orchestrator !== 'k8s' || !w.spec.pod) continue;
      const pod = this.#pods.get(`${w.metadata.namespace}/${w.spec.pod}`);
      if (!pod) continue;
      const labels = endpointLabels(pod);
      if (sameLabels(w.metadata.labels, labels)) continue;
      const next = { ...w, metadata: { ...w.metadata, labels } };
      const podName = `${w.metadata.namespace}/${w.spec.pod}`;
      const why = invalidReason(next);
      if (why !== undefined) {
        this.#bad.skip(podName, JSON.stringify(labels), why);
        continue;
      }
      try {
        await this.#o.calico.update(next);
        updated++;
      } catch (e) {
        if (isInvalid(e)) {
          this.#bad.skip(podName, JSON.stringify(labels), (e as Error).message);
          continue;
        }
        failed.push(`${w.metadata.namespace}/${w.metadata.name}`);
        this.#o.log.warn(
          {
            controller: this.name,
            endpoint: `${w.metadata.namespace}/${w.metadata.name}`,
            err: (e as Error).message,
          },
          'cannot update WorkloadEndpoint labels; will retry',
        );
      }
    }
    this.#o.onReconciled?.({ created: 0, updated, deleted: 0, failed });
    return failed.length > 0;
  }
}
