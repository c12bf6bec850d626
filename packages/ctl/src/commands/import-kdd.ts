/**
 * `datastore migrate import` into the Kubernetes datastore: upstream's etcd → KDD migration
 * (calicoctl/commands/datastore/migrate/import.go), from the file `export` wrote.
 *
 *   file ──parse, validate (datastore.ts)──► existing Calico data (refused) ──► ClusterInformation
 *        and default tiers (ensureInitialized; fails clearly without the CRDs) ──► what Kubernetes
 *        has: Nodes, Namespaces (kns.* Profiles) ──► planKddImport (pure) ──► nothing imported
 *        unless every namespace exists ──► locked ──► CRD kinds (apply) ──► Nodes: Calico fields onto
 *        the Kubernetes Nodes ──► ClusterInformation GUID and version ──► IPAM records (IPAMBlock,
 *        BlockAffinity, IPAMHandle, IPAMConfig)
 *
 * What does not carry over, said on stderr: WorkloadEndpoints (the Pods are the endpoints on
 * KDD), kns.* and ksa.* Profiles (derived from Namespaces and ServiceAccounts), other Profiles (KDD
 * has no place for them), knp.default.* NetworkPolicies (they are Kubernetes NetworkPolicies),
 * Nodes without a Kubernetes Node of the same name, and keys outside /calico/ipam/v2/.
 *
 * As upstream, the Kubernetes datastore is left locked (datastoreReady: false): `calicoctl
 * datastore migrate unlock` once Calico runs on it. A KDD that already holds Calico data is
 * refused, except what calicoctl itself creates there (ClusterInformation, the default tiers).
 */
import type { Kind, Resource } from '@calico-ts/api';
import { type Datastore, isDatastoreError, type KVStore } from '@calico-ts/datastore';
import { DEFAULT_TIERS, ensureInitialized } from '../cluster.js';
import { CtlError } from '../errors.js';
import type { Obj } from '../output/columns.js';
import { describeError } from '../resources/operations.js';
import type { CommandContext } from './context.js';
import type { ParsedExport } from './migration-file.js';

const IPAM_PREFIX = '/calico/ipam/v2/';
const KNP_PREFIX = 'knp.default.';
const BUILT_IN_PROFILE = 'projectcalico-default-allow';

/** The Calico kinds that are CRDs on KDD and must be empty before an import (besides IPAM). */
export const KDD_CRD_KINDS: readonly Kind[] = [
  'IPPool',
  'BGPPeer',
  'Tier',
  'GlobalNetworkPolicy',
  'GlobalNetworkSet',
  'HostEndpoint',
  'KubeControllersConfiguration',
  'NetworkPolicy',
  'NetworkSet',
  'BGPConfiguration',
  'FelixConfiguration',
  'IPReservation',
  'BGPFilter',
  'StagedGlobalNetworkPolicy',
  'StagedNetworkPolicy',
  'StagedKubernetesNetworkPolicy',
  'CalicoNodeStatus',
  'ClusterInformation',
];

function meta(r: Obj): Obj {
  return (r.metadata ?? {}) as Obj;
}

function nameOf(r: Obj): string {
  return String(meta(r).name ?? '');
}

function fullName(r: Obj): string {
  const ns = meta(r).namespace;
  return typeof ns === 'string' && ns !== '' ? `${ns}/${nameOf(r)}` : nameOf(r);
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x !== null && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Obj).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

/** Whether a stored resource is one calicoctl creates by itself (ClusterInformation, default tiers). */
function createdByCalicoctl(kind: Kind, r: Obj): boolean {
  if (kind === 'ClusterInformation') return nameOf(r) === 'default';
  if (kind === 'Tier') {
    const t = DEFAULT_TIERS.find((d) => d.name === nameOf(r));
    const spec = (r.spec ?? {}) as Obj;
    return !!t && spec.order === t.order && spec.defaultAction === t.defaultAction;
  }
  // Kubernetes NetworkPolicies seen through Calico.
  return kind === 'NetworkPolicy' && nameOf(r).startsWith(KNP_PREFIX);
}

/**
 * What Calico data the Kubernetes datastore already holds, worded for the refusal, or undefined
 * when there is none besides what calicoctl creates itself. Pure.
 */
export function kddExistingData(
  lists: readonly { kind: Kind; items: readonly Obj[] }[],
  ipamKeys: readonly string[],
): string | undefined {
  const found: string[] = [];
  for (const { kind, items } of lists) {
    const names = items.filter((r) => !createdByCalicoctl(kind, r)).map(fullName);
    if (names.length === 0) continue;
    const shown = names.slice(0, 3).join(', ') + (names.length > 3 ? `, … (${names.length})` : '');
    found.push(`${kind} ${shown}`);
  }
  if (ipamKeys.length > 0) found.push(`${ipamKeys.length} IPAM record(s), e.g. ${ipamKeys[0]}`);
  return found.length > 0 ? found.join('; ') : undefined;
}

export interface KddImportPlan {
  /** CRD-backed resources, in file order (tiers before the policies in them). */
  resources: Obj[];
  /** Nodes whose Calico fields go onto the Kubernetes Node of the same name. */
  nodes: Obj[];
  /** Nodes with no Kubernetes Node of that name: reported and skipped. */
  missingNodes: string[];
  /** What is left out on purpose, one entry per reason. */
  skipped: { what: string; why: string; names: string[] }[];
  /** IPAM records to create. */
  ipam: { key: string; value: string }[];
  /** Keys outside /calico/ipam/v2/: not imported. */
  otherKeys: string[];
  /** Namespaces that namespaced resources need and Kubernetes does not have. */
  missingNamespaces: string[];
}

/** What to write where, from an export and what the cluster has. Pure. */
export function planKddImport(
  parsed: ParsedExport,
  cluster: { nodes: ReadonlySet<string>; namespaces: ReadonlySet<string> },
): KddImportPlan {
  const plan: KddImportPlan = {
    resources: [],
    nodes: [],
    missingNodes: [],
    skipped: [],
    ipam: [],
    otherKeys: [],
    missingNamespaces: [],
  };
  const skip = (what: string, why: string, name: string) => {
    let entry = plan.skipped.find((s) => s.what === what && s.why === why);
    if (!entry) {
      entry = { what, why, names: [] };
      plan.skipped.push(entry);
    }
    entry.names.push(name);
  };
  const missingNs = new Set<string>();
  for (const r of parsed.resources) {
    const kind = String(r.kind);
    const name = nameOf(r);
    switch (kind) {
      case 'WorkloadEndpoint':
        skip('WorkloadEndpoint', 'in the Kubernetes datastore they are the Pods', fullName(r));
        continue;
      case 'Profile':
        if (name === BUILT_IN_PROFILE) continue;
        if (name.startsWith('kns.') || name.startsWith('ksa.')) {
          skip('Profile', 'derived from Namespaces and ServiceAccounts in the Kubernetes datastore', name);
        } else {
          skip(
            'Profile',
            'the Kubernetes datastore holds no Profiles besides those derived from Namespaces and ServiceAccounts',
            name,
          );
        }
        continue;
      case 'Node':
        if (cluster.nodes.has(name)) plan.nodes.push(r);
        else plan.missingNodes.push(name);
        continue;
      case 'NetworkPolicy':
        if (name.startsWith(KNP_PREFIX)) {
          skip('NetworkPolicy', 'they come from Kubernetes NetworkPolicies', fullName(r));
          continue;
        }
        break;
      default:
        break;
    }
    const ns = meta(r).namespace;
    if (typeof ns === 'string' && ns !== '' && !cluster.namespaces.has(ns)) missingNs.add(ns);
    plan.resources.push(r);
  }
  plan.missingNamespaces = [...missingNs].sort();
  for (const kv of parsed.kvs) {
    if (kv.key.startsWith(IPAM_PREFIX)) plan.ipam.push(kv);
    else plan.otherKeys.push(kv.key);
  }
  return plan;
}

function asResource(r: Obj): Resource & { kind: Kind } {
  const m = { ...meta(r) };
  delete m.resourceVersion;
  return { ...r, apiVersion: 'projectcalico.org/v3', metadata: m } as unknown as Resource & { kind: Kind };
}

/** `f` over `items`, at most `limit` at a time; the first failure rejects (after those running settle). */
async function eachLimited<T>(items: readonly T[], limit: number, f: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed: unknown;
  const worker = async () => {
    while (failed === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await f(item);
      } catch (e) {
        failed ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed !== undefined) throw failed;
}

async function readCluster(ds: Datastore): Promise<{ nodes: Set<string>; namespaces: Set<string> }> {
  const [nodes, profiles] = await Promise.all([ds.list('Node'), ds.list('Profile')]);
  return {
    nodes: new Set(nodes.items.map((n) => n.metadata.name)),
    namespaces: new Set(
      profiles.items.map((p) => p.metadata.name).flatMap((n) => (n.startsWith('kns.') ? [n.slice(4)] : [])),
    ),
  };
}

async function refuseExistingData(ds: Datastore, kv: KVStore): Promise<void> {
  const [lists, ipam] = await Promise.all([
    Promise.all(
      KDD_CRD_KINDS.map(async (kind) => ({
        kind,
        items: (await ds.list(kind)).items as unknown as Obj[],
      })),
    ),
    kv.list(IPAM_PREFIX),
  ]);
  const found = kddExistingData(
    lists,
    ipam.kvs.map((k) => k.key),
  );
  if (found) {
    throw new CtlError(
      'failed',
      `Datastore already has Calico resources: ${found}. Import needs a Kubernetes datastore without Calico data (besides the ClusterInformation and default tiers calicoctl creates): delete those resources first; nothing was written.`,
    );
  }
}

/**
 * ClusterInformation and the default tiers, as upstream's import begins (and as any calicoctl write
 * does); the first write, so it also finds out whether the Calico CRDs are served.
 */
async function initialize(ds: Datastore, ctx: CommandContext): Promise<void> {
  const errs = await ensureInitialized(ds, ctx.newClusterGUID);
  const crdsMissing = (e: unknown) =>
    isDatastoreError(e, 'not-found') ||
    (isDatastoreError(e, 'config') && /does not serve \S+\.crd\.projectcalico\.org/.test(e.message));
  if (errs.some(crdsMissing)) {
    throw new CtlError(
      'failed',
      'The Kubernetes API server does not serve the Calico CRDs (crd.projectcalico.org/v1): install them first (kubectl apply -f calico-crds.yaml); nothing was written.',
    );
  }
  if (errs.length > 0) {
    throw new CtlError(
      'failed',
      `Unable to initialize cluster information for the datastore migration: ${errs[0]!.message}`,
    );
  }
}

async function updateClusterInfo(ds: Datastore, change: (spec: Obj) => Obj): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      const ci = (await ds.get('ClusterInformation', 'default')) as unknown as Obj;
      const spec = change({ ...((ci.spec as Obj | undefined) ?? {}) });
      if (canonical(spec) === canonical(ci.spec ?? {})) return;
      await ds.update({ ...ci, spec } as unknown as Resource & { kind: 'ClusterInformation' });
      return;
    } catch (e) {
      if (isDatastoreError(e, 'conflict') && attempt < 5) continue;
      throw new CtlError(
        'failed',
        `Error updating current cluster info for migration: ${describeError(e, 'ClusterInformation', 'default').message}`,
        { cause: e },
      );
    }
  }
}

/** One stderr line per kind as it is imported (`Importing ippools... 3`). */
function kindCounts(resources: readonly Obj[]): { kind: string; count: number }[] {
  const out: { kind: string; count: number }[] = [];
  for (const r of resources) {
    const last = out[out.length - 1];
    if (last?.kind === r.kind) last.count++;
    else out.push({ kind: String(r.kind), count: 1 });
  }
  return out;
}

const WRITE_PARALLELISM = 8;

export async function importIntoKubernetes(
  parsed: ParsedExport,
  store: { datastore: Datastore; kv?: KVStore },
  ctx: CommandContext,
): Promise<number> {
  const ds = store.datastore;
  const kv = store.kv;
  if (!kv) throw new CtlError('unsupported', 'this datastore cannot store IPAM records');
  const { io } = ctx;

  io.stderr('Checking the Kubernetes datastore...\n');
  try {
    await refuseExistingData(ds, kv);
  } catch (e) {
    if (isDatastoreError(e, 'config') && /does not serve \S+\.crd\.projectcalico\.org/.test(e.message)) {
      throw new CtlError(
        'failed',
        'The Kubernetes API server does not serve the Calico CRDs (crd.projectcalico.org/v1): install them first (kubectl apply -f calico-crds.yaml); nothing was written.',
      );
    }
    throw e;
  }
  await initialize(ds, ctx);
  const cluster = await readCluster(ds);
  const plan = planKddImport(parsed, cluster);
  if (plan.missingNamespaces.length > 0) {
    const list = plan.missingNamespaces.join(', ');
    throw new CtlError(
      'failed',
      `Failed to import v3 resources: namespace(s) ${list} do not exist in Kubernetes; create them (kubectl create namespace ${plan.missingNamespaces[0]}) and import again; nothing was imported.`,
    );
  }
  for (const s of plan.skipped) {
    io.stderr(`Not importing ${s.names.length} ${s.what}(s) (${s.why}): ${s.names.join(', ')}\n`);
  }
  for (const name of plan.missingNodes) {
    io.stderr(
      `[WARNING] Node ${name}: there is no Kubernetes Node of that name; skipped (in the Kubernetes datastore a Calico Node is the Kubernetes Node)\n`,
    );
  }
  if (plan.otherKeys.length > 0) {
    io.stderr(
      `Not importing ${plan.otherKeys.length} key(s) outside ${IPAM_PREFIX} (the Kubernetes datastore has no place for them): ${plan.otherKeys.join(', ')}\n`,
    );
  }

  await updateClusterInfo(ds, (spec) => ({ ...spec, datastoreReady: false }));
  io.stderr('Locked the Kubernetes datastore (datastoreReady: false) for the import.\n');

  let applied = 0;
  let i = 0;
  for (const { kind, count } of kindCounts(plan.resources)) {
    io.stderr(`Importing ${kind} resources... `);
    for (const r of plan.resources.slice(i, i + count)) {
      try {
        await ds.apply(asResource(r));
      } catch (e) {
        const m = meta(r);
        const err = describeError(e, r.kind as Kind, nameOf(r), m.namespace as string | undefined);
        io.stderr('\n');
        throw new CtlError(
          'failed',
          `Failed to import v3 resources: ${err.message} (after ${applied} imported)`,
          {
            cause: e,
          },
        );
      }
      applied++;
    }
    i += count;
    io.stderr(`${count}\n`);
  }
  if (plan.nodes.length > 0) {
    io.stderr('Writing the Calico fields of Nodes onto their Kubernetes Nodes... ');
    for (const r of plan.nodes) {
      try {
        await ds.apply(asResource(r));
      } catch (e) {
        io.stderr('\n');
        const err = describeError(e, 'Node', nameOf(r));
        throw new CtlError(
          'failed',
          `Failed to import v3 resources: ${err.message} (after ${applied} imported)`,
          {
            cause: e,
          },
        );
      }
      applied++;
    }
    io.stderr(`${plan.nodes.length}\n`);
  }
  const imported = (parsed.clusterInfo.spec ?? {}) as Obj;
  await updateClusterInfo(ds, (spec) => {
    const next = { ...spec };
    if (typeof imported.clusterGUID === 'string' && imported.clusterGUID !== '')
      next.clusterGUID = imported.clusterGUID;
    if (typeof imported.calicoVersion === 'string' && imported.calicoVersion !== '')
      next.calicoVersion = imported.calicoVersion;
    return next;
  });
  io.stdout(`Successfully applied ${applied} resource(s)\n`);

  io.stdout('Importing IPAM resources\n');
  let written = 0;
  try {
    await eachLimited(plan.ipam, WRITE_PARALLELISM, async (rec) => {
      try {
        await kv.create(rec.key, rec.value);
      } catch (e) {
        throw new CtlError(
          'failed',
          `Failed to import IPAM record ${rec.key}: ${(e as Error).message} (after ${written} imported)`,
          { cause: e },
        );
      }
      written++;
      if (written % 100 === 0) io.stderr(`Imported ${written} of ${plan.ipam.length} IPAM records\n`);
    });
  } catch (e) {
    if (written > 0)
      io.stdout(`Partial success: applied ${written} out of ${plan.ipam.length} IPAM resources\n`);
    throw e;
  }
  io.stderr(`Imported ${written} IPAM record(s)\n`);
  io.stdout(`Successfully applied ${written} IPAM resource(s)\n`);
  io.stdout(
    'Datastore information successfully imported. Please refer to the datastore migration documentation for next steps.\n',
  );
  io.stderr(
    'The Kubernetes datastore stays locked: run `calicoctl datastore migrate unlock` against it once Calico runs on it.\n',
  );
  return 0;
}
