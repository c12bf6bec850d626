/**
 * `datastore migrate lock|unlock|export|import`.
 *
 * lock/unlock flip `ClusterInformation.default.spec.datastoreReady` (CNI and Felix refuse to work
 * while it is false). export needs a locked datastore and writes upstream's three-part file:
 *
 *   <every v3 resource as YAML lists, one per kind, each followed by ---> ===
 *   <ClusterInformation default as JSON> ===
 *   <every other key under /calico/ (IPAM blocks, affinities, handles, config) as JSON>
 *
 * The export serves two targets. Into another etcd, resources keep their uid and
 * creationTimestamp, workload endpoints and profiles are included, node names are not rewritten,
 * and the third part holds raw keys and values, so an import into an empty datastore reproduces the
 * source key by key; import refuses a datastore that holds anything under /calico/. Into the
 * Kubernetes datastore (upstream's migration), import-kdd.ts writes what Kubernetes can hold and
 * says what it leaves out. Either import checks every document before writing and reports
 * progress on stderr. The file's parts and their parsing are migration-file.ts's.
 */
import { API_VERSION, KINDS, type Kind, type Resource, validateResource } from '@calico-ts/api';
import { type Datastore, isDatastoreError, type KVStore } from '@calico-ts/datastore';
import { ensureInitialized } from '../cluster.js';
import { CtlError } from '../errors.js';
import type { Obj } from '../output/columns.js';
import { goJsonIndent, toYaml } from '../output/printers.js';
import { listObject } from '../output/tables.js';
import { describeError } from '../resources/operations.js';
import type { CommandContext } from './context.js';
import { importIntoKubernetes } from './import-kdd.js';
import { parseExport, SEPARATOR } from './migration-file.js';

export interface MigrateStore {
  datastore: Datastore;
  /** Raw access for the keys that are not v3 resources (IPAM); absent on backends without keys. */
  kv?: KVStore;
}

/** Export order: what others refer to comes first (tiers before policies, nodes before endpoints). */
export const EXPORT_KINDS: readonly Kind[] = [
  'IPPool',
  'BGPPeer',
  'Tier',
  'GlobalNetworkPolicy',
  'StagedGlobalNetworkPolicy',
  'GlobalNetworkSet',
  'HostEndpoint',
  'KubeControllersConfiguration',
  'NetworkPolicy',
  'StagedNetworkPolicy',
  'StagedKubernetesNetworkPolicy',
  'NetworkSet',
  'Node',
  'BGPConfiguration',
  'FelixConfiguration',
  'IPReservation',
  'BGPFilter',
  'Profile',
  'WorkloadEndpoint',
  'CalicoNodeStatus',
];

const BUILT_IN_PROFILE = 'projectcalico-default-allow';
const RESOURCE_PREFIX = '/calico/resources/v3/';
/** Felix status keys live under a lease and are rewritten every 30 s: not data to migrate. */
const EPHEMERAL_PREFIX = '/calico/felix/';

async function clusterInfo(ds: Datastore, what: string): Promise<Obj> {
  try {
    return (await ds.get('ClusterInformation', 'default')) as unknown as Obj;
  } catch (e) {
    throw new CtlError(
      'failed',
      `Error retrieving ClusterInformation for ${what}: ${describeError(e, 'ClusterInformation', 'default').message}`,
      {
        cause: e,
      },
    );
  }
}

async function setReady(ds: Datastore, ready: boolean, what: string): Promise<void> {
  const ci = await clusterInfo(ds, what);
  const spec = { ...((ci.spec as Obj) ?? {}), datastoreReady: ready };
  try {
    await ds.update({ ...ci, spec } as unknown as Resource & { kind: 'ClusterInformation' });
  } catch (e) {
    throw new CtlError(
      'failed',
      `Error updating ClusterInformation for ${what}: ${describeError(e, 'ClusterInformation', 'default').message}`,
      {
        cause: e,
      },
    );
  }
}

export async function lockCommand(ds: Datastore, ctx: CommandContext): Promise<number> {
  const errs = await ensureInitialized(ds, ctx.newClusterGUID);
  if (errs.length > 0) {
    throw new CtlError(
      'failed',
      `Unable to initialize cluster information for the datastore migration: ${errs[0]!.message}`,
    );
  }
  await setReady(ds, false, 'locking');
  ctx.io.stdout('Datastore locked.\n');
  return 0;
}

export async function unlockCommand(ds: Datastore, ctx: CommandContext): Promise<number> {
  await setReady(ds, true, 'unlocking');
  ctx.io.stdout('Datastore unlocked.\n');
  return 0;
}

function withoutRevision(r: Obj): Obj {
  const meta = { ...((r.metadata as Obj) ?? {}) };
  delete meta.resourceVersion;
  return { ...r, metadata: meta };
}

export async function exportCommand(store: MigrateStore, ctx: CommandContext): Promise<number> {
  const ds = store.datastore;
  if (ds.backend === 'kubernetes') {
    throw new CtlError(
      'unsupported',
      'invalid datastore type: kubernetes to export from for datastore migration. Datastore type must be etcdv3',
    );
  }
  let ci: Obj;
  try {
    ci = (await ds.get('ClusterInformation', 'default')) as unknown as Obj;
  } catch (e) {
    throw new CtlError(
      'failed',
      `error while checking if datastore was locked: Error retrieving ClusterInformation: ${describeError(e, 'ClusterInformation', 'default').message}`,
    );
  }
  if ((ci.spec as Obj | undefined)?.datastoreReady !== false) {
    throw new CtlError(
      'failed',
      'datastore is not locked. Run the `calicoctl datastore migrate lock` command in order to begin migration',
    );
  }
  let out = '';
  let total = 0;
  for (const kind of EXPORT_KINDS) {
    ctx.io.stderr(`Exporting ${KINDS[kind].plural}...`);
    const list = await ds.list(kind, {}).catch((e: unknown) => {
      throw describeError(e, kind, '');
    });
    const items = (list.items as unknown as Obj[])
      .filter((r) => !(kind === 'Profile' && (r.metadata as Obj).name === BUILT_IN_PROFILE))
      .map(withoutRevision);
    const obj = listObject(kind, items, '');
    delete (obj.metadata as Obj).resourceVersion;
    out += `${toYaml(obj)}---\n`;
    total += items.length;
    ctx.io.stderr(` ${items.length}\n`);
  }
  out += SEPARATOR;
  out += `${goJsonIndent(withoutRevision(ci))}\n`;
  out += SEPARATOR;
  const kvs: { key: string; value: string }[] = [];
  if (store.kv) {
    const all = await store.kv.list('/calico/');
    for (const kv of all.kvs) {
      if (kv.key.startsWith(RESOURCE_PREFIX) || kv.key.startsWith(EPHEMERAL_PREFIX)) continue;
      kvs.push({ key: kv.key, value: kv.value });
    }
  } else {
    ctx.io.stderr('This datastore has no raw keys to export (IPAM data is not included).\n');
  }
  ctx.io.stderr(`Exporting other keys (IPAM)... ${kvs.length}\n`);
  out += `${goJsonIndent({ kvs })}\n`;
  ctx.io.stdout(out);
  ctx.io.stderr(`Exported ${total} resource(s), ClusterInformation and ${kvs.length} other key(s).\n`);
  return 0;
}

export interface ImportArgs {
  filename: string;
}

async function existingData(store: MigrateStore): Promise<string | undefined> {
  if (store.kv) {
    const all = await store.kv.list('/calico/');
    if (all.kvs.length > 0) return `${all.kvs.length} key(s) under /calico/, e.g. ${all.kvs[0]!.key}`;
    return undefined;
  }
  for (const kind of [...EXPORT_KINDS, 'ClusterInformation' as Kind]) {
    const list = await store.datastore.list(kind, {});
    const items = (list.items as unknown as Obj[]).filter(
      (r) => (r.metadata as Obj).name !== BUILT_IN_PROFILE,
    );
    if (items.length > 0) return `existing ${kind} resource(s)`;
  }
  return undefined;
}

export async function importCommand(
  args: ImportArgs,
  store: MigrateStore,
  ctx: CommandContext,
): Promise<number> {
  const ds = store.datastore;
  const text =
    args.filename === '-'
      ? await ctx.io.stdin()
      : await ctx.io.readFile(args.filename).catch((e: unknown) => {
          throw new CtlError(
            'invalid-input',
            `Error while reading migration file: open ${args.filename}: no such file or directory`,
            { cause: e },
          );
        });
  const parsed = parseExport(text, args.filename === '-' ? 'stdin' : args.filename);

  // Every document is checked before the first write.
  const problems: string[] = [];
  const all = [...parsed.resources, parsed.clusterInfo];
  all.forEach((r, i) => {
    const v = validateResource(withoutRevision(r));
    if (!v.ok) {
      const name = String(((r.metadata ?? {}) as Obj).name ?? '');
      for (const e of v.errors)
        problems.push(
          `  resource ${i + 1} (${String(r.kind)} "${name}"): ${e.path ? `${e.path}: ` : ''}${e.rule}`,
        );
    }
  });
  if (parsed.clusterInfo.kind !== 'ClusterInformation')
    problems.push('  the second section must be the ClusterInformation resource');
  for (const kv of parsed.kvs) {
    if (!kv.key.startsWith('/calico/') || kv.key.startsWith(RESOURCE_PREFIX)) {
      problems.push(`  key ${kv.key}: not a key this file may carry`);
    }
  }
  if (problems.length > 0) {
    throw new CtlError(
      'invalid-input',
      `Failed to import: the file has problems; nothing was written:\n${problems.join('\n')}`,
    );
  }
  if (ds.backend === 'kubernetes') return importIntoKubernetes(parsed, store, ctx);

  const existing = await existingData(store);
  if (existing) {
    throw new CtlError(
      'failed',
      `Datastore already has Calico data (${existing}). Import needs an empty datastore: import into a new etcd, or remove the existing data first.`,
    );
  }
  if (parsed.kvs.length > 0 && !store.kv) {
    throw new CtlError(
      'unsupported',
      `this datastore cannot store the ${parsed.kvs.length} IPAM key(s) in the file`,
    );
  }

  let n = 0;
  for (const r of [...parsed.resources, parsed.clusterInfo]) {
    const res = { ...withoutRevision(r), apiVersion: API_VERSION } as unknown as Resource & { kind: Kind };
    try {
      await ds.create(res);
    } catch (e) {
      const meta = (r.metadata ?? {}) as Obj;
      const err = describeError(
        e,
        r.kind as Kind,
        String(meta.name ?? ''),
        meta.namespace as string | undefined,
      );
      throw new CtlError('failed', `Failed to import v3 resources: ${err.message} (after ${n} imported)`, {
        cause: e,
      });
    }
    n++;
    if (n % 100 === 0) ctx.io.stderr(`Imported ${n} of ${parsed.resources.length + 1} resources\n`);
  }
  ctx.io.stderr(`Imported ${n} resource(s) including ClusterInformation\n`);
  ctx.io.stdout(`Successfully applied ${n} resource(s)\n`);
  ctx.io.stdout('Importing IPAM resources\n');
  let k = 0;
  for (const kv of parsed.kvs) {
    try {
      await store.kv!.create(kv.key, kv.value);
    } catch (e) {
      if (isDatastoreError(e)) {
        throw new CtlError(
          'failed',
          `Failed to import IPAM key ${kv.key}: ${e.message} (after ${k} imported)`,
          { cause: e },
        );
      }
      throw e;
    }
    k++;
  }
  ctx.io.stderr(`Imported ${k} other key(s)\n`);
  ctx.io.stdout(`Successfully applied ${k} IPAM resource(s)\n`);
  ctx.io.stdout('Datastore information successfully imported.\n');
  return 0;
}
