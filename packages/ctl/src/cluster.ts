/**
 * What calicoctl does with ClusterInformation besides showing it: the client/cluster version check
 * (`calicoctl/calicoctl/commands/common/version_mismatch.go`) and, before writes, upstream's
 * best-effort datastore initialisation (`clientv3.EnsureInitialized`: ClusterInformation
 * `default` with a cluster GUID and `datastoreReady: true`, and the tiers `default`, `kube-admin`,
 * `kube-baseline`).
 */
import type { Resource } from '@calico-ts/api';
import { type Datastore, isDatastoreError } from '@calico-ts/datastore';
import { CtlError } from './errors.js';
import type { Obj } from './output/columns.js';

/** `v3.32.1-12-gabc` → `3.32.1`, as upstream compares versions. */
export function baseVersion(v: string): string {
  return (v.startsWith('v') ? v.slice(1) : v).split('-')[0]!;
}

/**
 * Refuse to go on when the cluster's calicoVersion differs from ours. No ClusterInformation, or
 * one without calicoVersion, means nothing to compare: the check passes.
 */
export async function checkVersionMismatch(ds: Datastore, clientVersion: string): Promise<void> {
  let ci: Obj;
  try {
    ci = (await ds.get('ClusterInformation', 'default')) as unknown as Obj;
  } catch (e) {
    if (isDatastoreError(e, 'not-found')) return;
    throw new CtlError(
      'version-mismatch',
      `Unable to get Cluster Information to verify version mismatch: ${(e as Error).message}\nUse --allow-version-mismatch to override.\n`,
      { cause: e },
    );
  }
  const clusterVersion = (ci.spec as Obj | undefined)?.calicoVersion;
  if (typeof clusterVersion !== 'string' || clusterVersion === '') return;
  const cluster = baseVersion(clusterVersion);
  if (cluster !== baseVersion(clientVersion)) {
    throw new CtlError(
      'version-mismatch',
      `Version mismatch.\nClient Version:   ${clientVersion}\nCluster Version:  ${cluster}\nUse --allow-version-mismatch to override.\n`,
    );
  }
}

/** The tiers upstream's EnsureInitialized creates. */
export const DEFAULT_TIERS = [
  { name: 'default', order: 1_000_000, defaultAction: 'Deny' },
  { name: 'kube-admin', order: 1_000, defaultAction: 'Pass' },
  { name: 'kube-baseline', order: 10_000_000, defaultAction: 'Pass' },
] as const;

function newClusterGUID(): string {
  return globalThis.crypto.randomUUID().replaceAll('-', '');
}

async function ensureClusterInformation(ds: Datastore, newGuid: () => string): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let ci: Obj;
    try {
      ci = (await ds.get('ClusterInformation', 'default')) as unknown as Obj;
    } catch (e) {
      if (!isDatastoreError(e, 'not-found')) throw e;
      try {
        await ds.create({
          apiVersion: 'projectcalico.org/v3',
          kind: 'ClusterInformation',
          metadata: { name: 'default' },
          spec: { clusterGUID: newGuid(), datastoreReady: true },
        } as unknown as Resource & { kind: 'ClusterInformation' });
        return;
      } catch (e2) {
        if (isDatastoreError(e2, 'already-exists')) continue;
        throw e2;
      }
    }
    const spec = { ...((ci.spec as Obj | undefined) ?? {}) };
    let changed = false;
    if (!spec.clusterGUID) {
      spec.clusterGUID = newGuid();
      changed = true;
    }
    if (spec.datastoreReady === undefined || spec.datastoreReady === null) {
      spec.datastoreReady = true;
      changed = true;
    }
    if (!changed) return;
    try {
      await ds.update({ ...ci, spec } as unknown as Resource & { kind: 'ClusterInformation' });
      return;
    } catch (e) {
      if (!isDatastoreError(e, 'conflict')) throw e;
    }
  }
}

/**
 * Upstream's EnsureInitialized with no version or cluster type: creates what is missing, changes
 * nothing that exists. Failures are returned, not thrown (writes of other resources go on).
 */
export async function ensureInitialized(
  ds: Datastore,
  newGuid: () => string = newClusterGUID,
): Promise<Error[]> {
  const errors: Error[] = [];
  try {
    await ensureClusterInformation(ds, newGuid);
  } catch (e) {
    errors.push(e as Error);
  }
  for (const t of DEFAULT_TIERS) {
    try {
      await ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'Tier',
        metadata: { name: t.name },
        spec: { order: t.order, defaultAction: t.defaultAction },
      } as unknown as Resource & { kind: 'Tier' });
    } catch (e) {
      if (!isDatastoreError(e, 'already-exists')) errors.push(e as Error);
    }
  }
  return errors;
}
