/**
 * One pass of the operator (I/O around the pure render and status calculations):
 *
 *   Installation default ─► resolveInstallation ─► render(base, config, nodes) ─► apply each
 *   object (server-side apply; skipped while its rendered form is unchanged, again every
 *   minute) ─► delete what carries the operator's label and is no longer rendered ─► create the
 *   IP pools that do not exist, update those it made that nobody else edited (a pool a user
 *   edited stays as edited) ─►
 *   TigeraStatus calico / ippools / apiserver from the workloads and pods
 *
 * Before the render: the Felix ↔ Typha certificates (certs.ts), the CA kept in
 * tigera-operator/tigera-ca-private, the leaves reused while still good.
 *
 * The Installation carries the finalizer `tigera.io/operator-cleanup`, as upstream's does, so that
 * its deletion is done in order: first everything but the namespace, the ServiceAccounts and the
 * CNI plugin's RBAC; then, once no pod is left in calico-system, the rest, and the finalizer goes.
 * The kubelet tears down a pod's network through the Calico CNI plugin, which needs the
 * calico-cni-plugin ServiceAccount and its ClusterRole: removed first, the pods of
 * calico-kube-controllers could never finish terminating, nor could calico-system.
 * No Installation: everything the operator made is deleted (its ownerReferences let Kubernetes
 * do the same), and the TigeraStatuses of calico and ippools go. An invalid Installation changes
 * nothing in the cluster: TigeraStatus calico says Degraded with each problem.
 */

import { createHash } from 'node:crypto';
import type { Logger } from '@calico-ts/api/log';
import type { Datastore } from '@calico-ts/datastore';
import { isDatastoreError } from '@calico-ts/datastore';
import type { CalicoBase } from './base.js';
import {
  APISERVER_SECRET,
  apiServerCertificate,
  CA_SECRET,
  caFrom,
  certificateObjects,
  NODE_SECRET,
  OPERATOR_NAMESPACE,
  pairFromSecret,
  TYPHA_SECRET,
  tlsSecret,
} from './certs.js';
import { resolveInstallation } from './installation.js';
import { CLUSTER_KINDS, type KubeApi, MANAGED_KINDS, MANAGED_NAMESPACES, type Obj } from './kube-api.js';
import { CALICO_NAMESPACE, type KubeObject, MANAGED_BY, MANAGED_BY_LABEL, objectKey } from './kube-object.js';
import { poolStep } from './pool-updates.js';
import { type PoolResource, render } from './render.js';
import { APISERVER_NAME, APISERVICE_NAME, apiServerDnsNames } from './render-apiserver.js';
import {
  apiServiceProblem,
  type ComponentState,
  type Condition,
  calicoState,
  conditions,
  podProblems,
  sameConditions,
  workloadStatus,
} from './status.js';

export const APISERVER_WAITING = 'calico-apiserver waits for a valid Installation named default';
const FULL_APPLY_MS = 60_000;
const CERT_CHECK_MS = 10 * 60_000;
const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
/** Upstream's finalizer on the Installation: the operator's ordered teardown. */
export const CLEANUP_FINALIZER = 'tigera.io/operator-cleanup';
/** What stays until calico-system has no pod left: what a pod's CNI DEL needs. */
const KEPT_IN_TEARDOWN = new Set([
  objectKey({ kind: 'Namespace', metadata: { name: CALICO_NAMESPACE } }),
  ...['calico-cni-plugin', 'calico-node'].flatMap((name) => [
    objectKey({ kind: 'ServiceAccount', metadata: { name, namespace: CALICO_NAMESPACE } }),
    objectKey({ kind: 'ClusterRole', metadata: { name } }),
    objectKey({ kind: 'ClusterRoleBinding', metadata: { name } }),
  ]),
]);

/** The operator's certificates: Felix ↔ Typha's, and calico-apiserver's serving one. */
interface Certificates extends ReturnType<typeof certificateObjects> {
  readonly caPem: string;
  readonly apiServer: ReturnType<typeof apiServerCertificate>;
}

/** Is a calico-system pod one of calico-apiserver's (its TigeraStatus, not calico's)? */
function isApiServerPod(p: Obj): boolean {
  return ((p.metadata as Obj | undefined)?.labels as Obj | undefined)?.apiserver === 'true';
}

export class Reconciler {
  readonly #applied = new Map<string, string>();
  #lastFull = 0;
  #certs: { at: number; value: Certificates } | undefined;

  constructor(
    readonly api: KubeApi,
    readonly calico: Datastore,
    readonly base: CalicoBase,
    readonly log: Logger,
    readonly clock: () => number = Date.now,
  ) {}

  async tick(): Promise<void> {
    const [inst, apiServer] = await Promise.all([
      this.api.get('Installation', 'default'),
      this.api.get('APIServer', 'default'),
    ]);
    const wantApiServer =
      apiServer !== undefined && !(apiServer.metadata as Obj | undefined)?.deletionTimestamp;
    if (!inst) {
      if (this.#applied.size > 0 || this.#lastFull === 0) await this.prune(new Set());
      this.#applied.clear();
      this.#certs = undefined;
      this.#lastFull = this.clock();
      await this.api.remove('TigeraStatus', 'calico');
      await this.api.remove('TigeraStatus', 'ippools');
      await this.apiServerWaiting(wantApiServer);
      return;
    }
    const meta = (inst.metadata ?? {}) as {
      finalizers?: string[];
      deletionTimestamp?: string;
      resourceVersion?: string;
    };
    const finalizers = meta.finalizers ?? [];
    if (meta.deletionTimestamp) {
      if (finalizers.includes(CLEANUP_FINALIZER)) await this.teardown(finalizers, meta.resourceVersion ?? '');
      return;
    }
    if (!finalizers.includes(CLEANUP_FINALIZER)) {
      await this.api.setFinalizers(
        'Installation',
        'default',
        [...finalizers, CLEANUP_FINALIZER],
        meta.resourceVersion ?? '',
      );
    }
    const generation = (inst.metadata as Obj | undefined)?.generation as number | undefined;
    const resolved = resolveInstallation(inst);
    if (!resolved.ok) {
      const message = `the Installation is invalid: ${resolved.errors.join('; ')}`;
      await this.writeStatus(
        'calico',
        { available: false, degraded: { reason: 'InvalidConfigurationError', message } },
        generation,
      );
      await this.apiServerWaiting(wantApiServer);
      return;
    }
    const nodes = await this.api.list('Node');
    const uid = (inst.metadata as Obj | undefined)?.uid as string | undefined;
    const certificates = await this.certificates();
    const desired = render(this.base, resolved.config, {
      nodeCount: nodes.length,
      ...(uid ? { installationUid: uid } : {}),
      certificates,
      ...(wantApiServer
        ? {
            apiServer: {
              caPem: certificates.caPem,
              certsHash: certificates.apiServer.hash,
              secret: certificates.apiServer.secret,
            },
          }
        : {}),
    });
    let writeError: string | undefined;
    try {
      await this.applyAll(desired.objects);
      await this.prune(new Set(desired.objects.map(objectKey)));
    } catch (e) {
      writeError = (e as Error).message;
      this.log.error({ err: writeError }, 'applying calico-system failed');
    }
    await this.writeStatus('ippools', await this.ensurePools(desired.pools), generation);
    const [ds, typha, kc, pods] = await Promise.all([
      this.api.get('DaemonSet', 'calico-node', CALICO_NAMESPACE),
      this.api.get('Deployment', 'calico-typha', CALICO_NAMESPACE),
      this.api.get('Deployment', 'calico-kube-controllers', CALICO_NAMESPACE),
      this.api.list('Pod', { namespace: CALICO_NAMESPACE }),
    ]);
    const state = calicoState(
      ['DaemonSet calico-node', 'Deployment calico-typha', 'Deployment calico-kube-controllers'],
      [ds, typha, kc].map(workloadStatus),
      podProblems(pods.filter((p) => !isApiServerPod(p))),
      writeError,
    );
    await this.writeStatus('calico', state, generation);
    await this.apiServerStatus(wantApiServer, pods.filter(isApiServerPod), writeError);
    const status = { variant: 'Calico', ...(resolved.config.mtu ? { mtu: resolved.config.mtu } : {}) };
    const current = inst.status as Obj | undefined;
    if (state.available && (current?.variant !== status.variant || current?.mtu !== status.mtu))
      await this.api.apply(
        { apiVersion: 'operator.tigera.io/v1', kind: 'Installation', metadata: { name: 'default' }, status },
        '/status',
      );
  }

  /**
   * The Felix ↔ Typha certificates: the CA from Secret tigera-operator/tigera-ca-private (made
   * once), the leaves from calico-system while still good (certs.ts). Read again every 10 minutes.
   */
  async certificates(): Promise<Certificates> {
    if (this.#certs && this.clock() - this.#certs.at < CERT_CHECK_MS) return this.#certs.value;
    const now = new Date(this.clock());
    const { ca, created } = caFrom(
      pairFromSecret(await this.api.get('Secret', CA_SECRET, OPERATOR_NAMESPACE)),
      now,
    );
    if (created) {
      await this.api.apply(tlsSecret(CA_SECRET, OPERATOR_NAMESPACE, ca));
      this.log.info({ secret: `${OPERATOR_NAMESPACE}/${CA_SECRET}` }, 'made the CA for Felix and Typha');
    }
    const [typha, node, apiServer] = await Promise.all([
      this.api.get('Secret', TYPHA_SECRET, CALICO_NAMESPACE),
      this.api.get('Secret', NODE_SECRET, CALICO_NAMESPACE),
      this.api.get('Secret', APISERVER_SECRET, CALICO_NAMESPACE),
    ]);
    const value = {
      ...certificateObjects(ca, pairFromSecret(typha), pairFromSecret(node), now),
      caPem: ca.certPem,
      apiServer: apiServerCertificate(ca, pairFromSecret(apiServer), apiServerDnsNames(), now),
    };
    this.#certs = { at: this.clock(), value };
    return value;
  }

  /** Server-side apply of every object whose rendered form changed (all of them every minute). */
  async applyAll(objects: readonly KubeObject[]): Promise<void> {
    const full = this.clock() - this.#lastFull > FULL_APPLY_MS;
    for (const kind of MANAGED_KINDS) {
      for (const o of objects.filter((x) => x.kind === kind)) {
        const key = objectKey(o);
        const hash = createHash('sha1').update(JSON.stringify(o)).digest('hex');
        if (!full && this.#applied.get(key) === hash) continue;
        try {
          await this.api.apply(o);
        } catch (e) {
          this.#applied.delete(key);
          throw new Error(`applying ${key}: ${(e as Error).message}`);
        }
        if (this.#applied.get(key) !== hash) this.log.info({ object: key }, 'applied');
        this.#applied.set(key, hash);
      }
    }
    if (full) this.#lastFull = this.clock();
  }

  /**
   * The Installation is being deleted: everything but what a pod's CNI DEL needs goes; once no
   * pod is left in calico-system, the rest, the TigeraStatuses and the finalizer go.
   */
  async teardown(finalizers: readonly string[], resourceVersion: string): Promise<void> {
    await this.prune(KEPT_IN_TEARDOWN);
    const pods = await this.api.list('Pod', { namespace: CALICO_NAMESPACE });
    if (pods.length > 0) {
      const names = pods.map((p) => (p.metadata as { name: string }).name);
      this.log.info({ pods: names }, 'Installation deleted: waiting for the pods of calico-system to end');
      await this.writeStatus('calico', {
        available: false,
        progressing: {
          reason: 'Terminating',
          message: `removing Calico: ${pods.length} pod(s) left in ${CALICO_NAMESPACE}`,
        },
      });
      return;
    }
    await this.prune(new Set());
    this.#applied.clear();
    this.#certs = undefined;
    await this.api.remove('TigeraStatus', 'calico');
    await this.api.remove('TigeraStatus', 'ippools');
    await this.api.setFinalizers(
      'Installation',
      'default',
      finalizers.filter((f) => f !== CLEANUP_FINALIZER),
      resourceVersion,
    );
    this.log.info({}, 'Installation deleted: calico-system removed');
  }

  /**
   * Deletes what carries the operator's label and is not in `keep` (cluster-wide kinds, and the
   * namespaced ones in calico-system and kube-system).
   */
  async prune(keep: ReadonlySet<string>): Promise<void> {
    for (const kind of [...MANAGED_KINDS].reverse()) {
      const namespaces = CLUSTER_KINDS.has(kind) ? [undefined] : MANAGED_NAMESPACES;
      const lists = await Promise.all(
        namespaces.map((ns) =>
          this.api.list(kind, { ...(ns ? { namespace: ns } : {}), labelSelector: SELECTOR }),
        ),
      );
      for (const item of lists.flat()) {
        const meta = item.metadata as { name: string; namespace?: string };
        const key = objectKey({ kind, metadata: meta });
        if (keep.has(key)) continue;
        await this.api.remove(kind, meta.name, meta.namespace);
        this.#applied.delete(key);
        this.log.info({ object: key }, 'deleted: no longer part of the Installation');
      }
    }
  }

  /**
   * Creates each pool that does not exist, and carries a change of the Installation's pool into
   * the pool it made while nobody else edited it (pool-updates.ts decides).
   */
  async ensurePools(pools: readonly PoolResource[]): Promise<ComponentState> {
    const problems: string[] = [];
    for (const p of pools) {
      let stored: Obj | undefined;
      try {
        stored = (await this.calico.get('IPPool', p.metadata.name)) as unknown as Obj;
      } catch (e) {
        if (!isDatastoreError(e, 'not-found')) {
          problems.push(`IPPool ${p.metadata.name}: ${(e as Error).message}`);
          continue;
        }
      }
      const step = poolStep(p, stored);
      if (step.action === 'keep') continue;
      if (step.action === 'refuse') {
        problems.push(step.message);
        continue;
      }
      try {
        if (step.action === 'create') await this.calico.create(step.pool as never);
        else await this.calico.update(step.pool as never);
        this.log.info(
          {
            pool: p.metadata.name,
            cidr: p.spec.cidr,
            ...(step.action === 'update' ? { changed: step.changed } : {}),
          },
          step.action === 'create' ? 'created IP pool' : 'updated IP pool from the Installation',
        );
      } catch (e2) {
        if (!isDatastoreError(e2, 'already-exists'))
          problems.push(
            `${step.action === 'create' ? 'creating' : 'updating'} IPPool ${p.metadata.name}: ${(e2 as Error).message}`,
          );
      }
    }
    if (problems.length > 0)
      return { available: false, degraded: { reason: 'ResourceCreateError', message: problems.join('; ') } };
    return { available: true };
  }

  /** TigeraStatus apiserver while there is no valid Installation: waiting, or gone with the APIServer. */
  async apiServerWaiting(wanted: boolean): Promise<void> {
    if (!wanted) {
      await this.api.remove('TigeraStatus', 'apiserver');
      return;
    }
    await this.writeStatus('apiserver', {
      available: false,
      progressing: { reason: 'ResourceNotReady', message: APISERVER_WAITING },
    });
  }

  /**
   * TigeraStatus apiserver from calico-apiserver's Deployment, its pods and the APIService's
   * Available condition (the aggregator reached it and its discovery answered).
   */
  async apiServerStatus(
    wanted: boolean,
    pods: readonly Obj[],
    writeError: string | undefined,
  ): Promise<void> {
    if (!wanted) {
      await this.api.remove('TigeraStatus', 'apiserver');
      return;
    }
    const [deployment, apiService] = await Promise.all([
      this.api.get('Deployment', APISERVER_NAME, CALICO_NAMESPACE),
      this.api.get('APIService', APISERVICE_NAME),
    ]);
    let state = calicoState(
      [`Deployment ${APISERVER_NAME}`],
      [workloadStatus(deployment)],
      podProblems(pods),
      writeError,
    );
    const problem = state.available ? apiServiceProblem(APISERVICE_NAME, apiService) : undefined;
    if (problem) state = { available: false, progressing: { reason: 'ResourceNotReady', message: problem } };
    await this.writeStatus('apiserver', state);
  }

  /** TigeraStatus `name` with `state`'s conditions, written only when they changed. */
  async writeStatus(name: string, state: ComponentState, generation?: number): Promise<void> {
    const current = await this.api.get('TigeraStatus', name);
    const previous = ((current?.status as Obj | undefined)?.conditions as Condition[] | undefined) ?? [];
    const next = conditions(state, previous, new Date(this.clock()).toISOString(), generation);
    if (current && sameConditions(previous, next)) return;
    const meta = { name, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } };
    if (!current)
      await this.api.apply({
        apiVersion: 'operator.tigera.io/v1',
        kind: 'TigeraStatus',
        metadata: meta,
        spec: {},
      });
    await this.api.apply(
      {
        apiVersion: 'operator.tigera.io/v1',
        kind: 'TigeraStatus',
        metadata: { name },
        status: { conditions: next },
      },
      '/status',
    );
    const say = state.degraded ?? state.progressing;
    this.log.info(
      {
        component: name,
        available: state.available,
        ...(say ? { reason: say.reason, message: say.message } : {}),
      },
      'TigeraStatus',
    );
  }
}
