/**
 * MirrorController: keeps the resources of one kind and name prefix in the Calico datastore equal
 * to what Kubernetes implies: the namespace controller (`kns.*` Profiles from Namespaces), the
 * service-account controller (`ksa.*` from ServiceAccounts) and the policy controller
 * (`knp.default.*` NetworkPolicies from Kubernetes NetworkPolicies).
 *
 *   Kubernetes view (the Kubernetes datastore's derived resources) ─ Syncer ─┐ desired
 *                                                                            ├─► planMirror ─► create / update / delete
 *   Calico datastore (etcd) ─────────────────────────────── Syncer ──────────┘ current          in the Calico datastore
 *
 * Both sides are followed by watches, so a change on either (a new Namespace, or someone deleting
 * a kns.* Profile by hand) is reconciled within `debounceMs`; everything is also re-planned every
 * `reconcilePeriodMs` and after a write failed. A resource that fails to write is reported with its
 * name and retried; the others are written.
 *
 * API: `start()` resolves once both sides are in sync and the first reconcile ran; `stop()`.
 * Thread-safety: one event loop; one reconcile at a time.
 */

import type { Kind, Resource, ResourceOf } from '@calico-ts/api';
import type { Logger } from '@calico-ts/api/log';
import {
  type Datastore,
  isDatastoreError,
  resourceSource,
  Syncer,
  type SyncSource,
} from '@calico-ts/datastore';
import { planMirror, resourceKeyOf } from './reconcile.js';
import { ReconcileLoop } from './reconcile-loop.js';
import { invalidReason, isInvalid, UnconvertibleReporter } from './unconvertible.js';

export interface MirrorControllerOptions<K extends Kind> {
  /** Controller name for logs and health: `namespace`, `serviceaccount`, `policy`. */
  readonly name: string;
  readonly kind: K;
  /** Only resources whose name starts with it are this controller's (`kns.`). */
  readonly namePrefix: string;
  /** Where the desired resources come from: the Kubernetes datastore's view. */
  readonly kubernetes: Datastore;
  /** Where they are written: the Calico datastore (etcd). */
  readonly calico: Datastore;
  readonly log: Logger;
  readonly debounceMs?: number;
  readonly reconcilePeriodMs?: number;
  readonly retryMs?: number;
  /** Called after every reconcile with what it did (health, metrics, tests). */
  readonly onReconciled?: (r: ReconcileReport) => void;
  /** A Kubernetes object was skipped because it cannot become a valid Calico resource. */
  readonly onSkipped?: (name: string) => void;
}

export interface ReconcileReport {
  readonly created: number;
  readonly updated: number;
  readonly deleted: number;
  /** Writes that failed and are retried. */
  readonly failed: readonly string[];
  /** Objects that cannot be converted: reported and skipped, not retried until they change. */
  readonly skipped?: readonly string[];
}

/** Only the resources whose name has the prefix, as a syncer source of its own name. */
function filtered<K extends Kind>(
  source: SyncSource<ResourceOf<K>>,
  name: string,
  prefix: string,
): SyncSource<ResourceOf<K>> {
  const mine = (r: ResourceOf<K>) => r.metadata.name.startsWith(prefix);
  return {
    name,
    keyOf: source.keyOf,
    async list() {
      const l = await source.list();
      return { items: l.items.filter(mine), revision: l.revision };
    },
    async *watch(revision, signal) {
      for await (const ev of source.watch(revision, signal)) {
        if ((ev.kind === 'set' || ev.kind === 'delete') && !mine(ev.item)) continue;
        if (ev.kind === 'resync') yield { kind: 'resync', items: ev.items.filter(mine) };
        else yield ev;
      }
    },
  };
}

export class MirrorController<K extends Kind> {
  readonly #o: MirrorControllerOptions<K>;
  readonly #desired = new Map<string, ResourceOf<K>>();
  readonly #current = new Map<string, ResourceOf<K>>();
  readonly #loop: ReconcileLoop;
  readonly #bad: UnconvertibleReporter;
  #syncer: Syncer | undefined;
  #inSync = false;

  constructor(opts: MirrorControllerOptions<K>) {
    this.#o = opts;
    this.#bad = new UnconvertibleReporter(opts.name, opts.log, opts.onSkipped);
    this.#loop = new ReconcileLoop({
      pass: () => this.#reconcileOnce(),
      ...(opts.debounceMs !== undefined ? { debounceMs: opts.debounceMs } : {}),
      ...(opts.reconcilePeriodMs !== undefined ? { periodMs: opts.reconcilePeriodMs } : {}),
      ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
      onError: (e) =>
        opts.log.warn({ controller: opts.name, err: (e as Error).message }, 'reconcile failed; will retry'),
    });
  }

  get name(): string {
    return this.#o.name;
  }

  async start(): Promise<void> {
    const { kind, namePrefix } = this.#o;
    await new Promise<void>((resolve) => {
      this.#syncer = new Syncer({
        sources: [
          filtered(resourceSource(this.#o.kubernetes, kind), 'desired', namePrefix) as SyncSource,
          filtered(resourceSource(this.#o.calico, kind), 'current', namePrefix) as SyncSource,
        ],
        onUpdate: (u) => {
          const side = u.source === 'desired' ? this.#desired : this.#current;
          const r = u.item as ResourceOf<K>;
          if (u.kind === 'set') side.set(resourceKeyOf(r as Resource), r);
          else side.delete(resourceKeyOf(r as Resource));
          if (this.#inSync) this.#loop.schedule();
        },
        onInSync: () => {
          this.#inSync = true;
          resolve();
        },
        onConnection: (source, connected, why) => {
          if (!connected)
            this.#o.log.warn({ controller: this.#o.name, source, why }, 'datastore unreachable; retrying');
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

  /** Plan from what both watches hold and write the difference; one at a time. */
  reconcile(): Promise<void> {
    return this.#loop.run();
  }

  /** One pass; true when a write failed (the loop retries). */
  async #reconcileOnce(): Promise<boolean> {
    // A desired resource that is not valid is skipped; what is held under its name stays as it is.
    const skipped: string[] = [];
    const desired: Resource[] = [];
    for (const [key, d] of this.#desired) {
      const why = invalidReason(d);
      if (why === undefined) {
        desired.push(d as Resource);
        continue;
      }
      skipped.push(key);
      this.#bad.skip(key, d.metadata.resourceVersion ?? '', why);
      const held = this.#current.get(key);
      if (held) desired.push(held as Resource);
    }
    const plan = planMirror(desired, [...this.#current.values()] as Resource[]);
    const failed: string[] = [];
    const done = { created: 0, updated: 0, deleted: 0 };
    const ds = this.#o.calico;
    const attempt = async (what: keyof typeof done, r: Resource, write: () => Promise<unknown>) => {
      try {
        await write();
        done[what]++;
        this.#o.log.info({ controller: this.#o.name, [what]: resourceKeyOf(r) }, `${this.#o.kind} ${what}`);
      } catch (e) {
        if (isInvalid(e)) {
          skipped.push(resourceKeyOf(r));
          this.#bad.skip(resourceKeyOf(r), r.metadata.resourceVersion ?? '', (e as Error).message);
          return;
        }
        // Already as planned: a pass that ran before the watch brought back the previous pass's
        // write (or someone else's). The watch event that follows schedules the next pass.
        if (
          (what === 'deleted' && isDatastoreError(e, 'not-found')) ||
          (what === 'created' && isDatastoreError(e, 'already-exists'))
        )
          return;
        failed.push(resourceKeyOf(r));
        this.#o.log.warn(
          { controller: this.#o.name, resource: resourceKeyOf(r), err: (e as Error).message },
          `cannot write ${this.#o.kind}; will retry`,
        );
      }
    };
    for (const r of plan.creates) await attempt('created', r, () => ds.create(r as never));
    for (const r of plan.updates) await attempt('updated', r, () => ds.update(r as never));
    for (const r of plan.deletes) {
      await attempt('deleted', r, () =>
        ds.delete(this.#o.kind, r.metadata.name, {
          ...(r.metadata.namespace ? { namespace: r.metadata.namespace } : {}),
          ...(r.metadata.resourceVersion ? { resourceVersion: r.metadata.resourceVersion } : {}),
        }),
      );
    }
    this.#bad.keepOnly(new Set(skipped));
    this.#o.onReconciled?.({ ...done, failed, skipped });
    return failed.length > 0;
  }
}
