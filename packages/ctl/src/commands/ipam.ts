/**
 * `ipam show | check | release | configure`: Calico IPAM from the command line, on `IpamClient`
 * (assignment records through compare-and-swap) and `IpamStore` (the raw records) over the same
 * key-value store as the typed datastore.
 *
 * Texts and rules follow upstream `calicoctl/commands/ipam/*.go`: tables as upstream's tablewriter
 * draws them, `release --from-report` refuses a report of another cluster, of another calicoctl
 * version (unless `--force`), a set of reports none of which is current, and an unlocked datastore
 * (unless `--force`). Where this differs, the README says so.
 */

import { formatIP, parseIP } from '@calico-ts/api/net';
import { type Datastore, type IPAMConfig, isDatastoreError } from '@calico-ts/datastore';
import { parseJsonExact } from '@calico-ts/datastore/internal';
import { type IpamClient, type IpamStore, isIpamError, type ReleaseSpec } from '@calico-ts/ipam';
import { CtlError } from '../errors.js';
import { formatReport, type IpamReport, type ReportHandle, runCheck } from '../ipam/ipam-check.js';
import { type PoolLike, splitPools } from '../ipam/ipam-split.js';
import {
  borrowedIPs,
  DEFAULT_IPAM_CONFIG,
  poolUtilization,
  renderAssignment,
  renderBorrowed,
  renderIpamConfig,
  renderUtilization,
} from '../ipam/ipam-views.js';
import { CLIENT_VERSION } from '../version.js';
import type { CommandContext } from './context.js';

/** What the IPAM commands work on: the typed datastore, the raw IPAM records, and the IPAM client. */
export interface IpamDeps {
  datastore: Datastore;
  store: IpamStore;
  ipam: IpamClient;
}

type Obj = Record<string, unknown>;

function validIP(text: string): string {
  const ip = parseIP(text);
  if (!ip) throw new CtlError('usage', `Error executing command: invalid IP address specified: ${text}`);
  return formatIP(ip);
}

// ---- show ----------------------------------------------------------------------------------------

export interface IpamShowArgs {
  ip?: string;
  showBlocks?: boolean;
  showBorrowed?: boolean;
  showConfiguration?: boolean;
}

async function poolRefs(ds: Datastore): Promise<{ name: string; cidr: string; disabled?: boolean }[]> {
  const pools = await ds.list('IPPool');
  return pools.items.map((p) => ({ name: p.metadata.name, cidr: p.spec.cidr, disabled: p.spec.disabled }));
}

export async function ipamShowCommand(
  args: IpamShowArgs,
  deps: IpamDeps,
  ctx: CommandContext,
): Promise<number> {
  if (args.ip !== undefined) {
    const ip = validIP(args.ip);
    try {
      const a = await deps.ipam.getAssignmentAttributes(ip);
      ctx.io.stdout(renderAssignment(ip, a));
    } catch (e) {
      if (!isIpamError(e, 'not-found')) throw e;
      ctx.io.stdout(renderAssignment(ip, undefined));
    }
    return 0;
  }
  if (args.showBorrowed) {
    const blocks = (await deps.store.listBlocks()).items.map((b) => b.value);
    ctx.io.stdout(renderBorrowed(borrowedIPs(blocks)));
    return 0;
  }
  if (args.showConfiguration) {
    const cfg = (await deps.store.getConfig())?.value ?? DEFAULT_IPAM_CONFIG;
    ctx.io.stdout(renderIpamConfig(cfg));
    return 0;
  }
  const [pools, blocks] = await Promise.all([poolRefs(deps.datastore), deps.store.listBlocks()]);
  ctx.io.stdout(
    renderUtilization(
      poolUtilization(
        pools,
        blocks.items.map((b) => b.value),
      ),
      !!args.showBlocks,
    ),
  );
  return 0;
}

// ---- check ---------------------------------------------------------------------------------------

export interface IpamCheckArgs {
  showAllIps?: boolean;
  showProblemIps?: boolean;
  /** Report file. */
  output?: string;
}

interface ClusterInfoView {
  guid: string;
  revision: string;
  locked: boolean;
  clusterType: string;
}

async function clusterInfo(ds: Datastore): Promise<ClusterInfoView | undefined> {
  try {
    const ci = (await ds.get('ClusterInformation', 'default')) as unknown as Obj;
    const spec = (ci.spec ?? {}) as Obj;
    const meta = (ci.metadata ?? {}) as Obj;
    return {
      guid: String(spec.clusterGUID ?? ''),
      revision: String(meta.resourceVersion ?? ''),
      locked: spec.datastoreReady === false,
      clusterType: String(spec.clusterType ?? ''),
    };
  } catch (e) {
    if (isDatastoreError(e, 'not-found')) return undefined;
    throw e;
  }
}

export async function ipamCheckCommand(
  args: IpamCheckArgs,
  deps: IpamDeps,
  ctx: CommandContext,
): Promise<number> {
  const { datastore: ds, store } = deps;
  const [ci, blocks, pools, nodes, weps, handles, records] = await Promise.all([
    clusterInfo(ds),
    store.listBlocks(),
    poolRefs(ds),
    ds.list('Node'),
    ds.list('WorkloadEndpoint'),
    store.listHandles(),
    deps.ipam.check(),
  ]);
  const r = runCheck({
    version: CLIENT_VERSION,
    clusterInfo: ci,
    blocks: blocks.items.map((b) => b.value),
    pools,
    nodes: nodes.items,
    workloadEndpoints: weps.items,
    handles: new Map(handles.items.map((h) => [h.value.handleId, h.revision])),
    records,
    showAllIPs: !!args.showAllIps,
    showProblemIPs: !!args.showProblemIps,
  });
  for (const l of r.lines) (l.stream === 'progress' ? ctx.io.stderr : ctx.io.stdout)(`${l.text}\n`);
  if (args.output !== undefined) {
    if (!ctx.io.writeFile) throw new CtlError('unsupported', 'writing a report file is not available here');
    try {
      await ctx.io.writeFile(args.output, formatReport(r.report));
    } catch (e) {
      throw new CtlError('failed', `failed to write report ${args.output}: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }
  return 0;
}

// ---- release -------------------------------------------------------------------------------------

export interface IpamReleaseArgs {
  ip?: string;
  fromReport?: string[];
  force?: boolean;
}

export async function ipamReleaseCommand(
  args: IpamReleaseArgs,
  deps: IpamDeps,
  ctx: CommandContext,
): Promise<number> {
  const reports = args.fromReport ?? [];
  if (reports.length > 0) {
    await releaseFromReports(reports, !!args.force, deps, ctx);
    ctx.io.stdout('You may now unlock the data store.\n');
    return 0;
  }
  if (args.ip === undefined) {
    throw new CtlError('usage', 'ipam release needs --ip=<IP> or --from-report=<REPORT>');
  }
  const ip = validIP(args.ip);
  let released: string[];
  try {
    released = (await deps.ipam.releaseIPs([ip])).released;
  } catch (e) {
    throw new CtlError('failed', `error: ${(e as Error).message}`, { cause: e });
  }
  if (released.length === 0) throw new CtlError('not-found', `IP address ${ip} is not assigned`);
  ctx.io.stdout(`Successfully released IP address ${ip}\n`);
  return 0;
}

function readReport(text: string, file: string): IpamReport {
  let r: unknown;
  try {
    r = parseJsonExact(text);
  } catch (e) {
    throw new CtlError('invalid-input', `${file}: ${(e as Error).message}`, { cause: e });
  }
  const o = r as Obj | null;
  if (!o || typeof o !== 'object' || Array.isArray(o) || typeof o.allocations !== 'object') {
    throw new CtlError('invalid-input', `${file}: not an IPAM check report`);
  }
  return {
    version: String(o.version ?? ''),
    clusterGUID: String(o.clusterGUID ?? ''),
    datastoreLocked: o.datastoreLocked === true,
    clusterInformationRevision: String(o.clusterInformationRevision ?? ''),
    clusterType: String(o.clusterType ?? ''),
    allocations: (o.allocations ?? {}) as IpamReport['allocations'],
    leakedHandles: Array.isArray(o.leakedHandles) ? (o.leakedHandles as ReportHandle[]) : [],
  };
}

/** Only what every report calls leaked (IPs), or leaked and unchanged (handles), is released. */
export function mergeReports(reports: readonly IpamReport[]): {
  ips: Map<string, ReleaseSpec>;
  handles: Map<string, ReportHandle>;
} {
  let ips: Map<string, ReleaseSpec> | undefined;
  let handles: Map<string, ReportHandle> | undefined;
  for (const r of reports) {
    const nextIps = new Map<string, ReleaseSpec>();
    for (const allocs of Object.values(r.allocations)) {
      for (const a of allocs ?? []) {
        if (a.inUse) continue;
        if (ips && !ips.has(a.ip)) continue;
        const seq = a.sequenceNumber as unknown;
        nextIps.set(a.ip, {
          ip: a.ip,
          ...(a.handle ? { handleId: a.handle } : {}),
          ...(typeof seq === 'bigint' || typeof seq === 'number' ? { sequenceNumber: BigInt(seq) } : {}),
        });
      }
    }
    ips = nextIps;
    const nextHandles = new Map<string, ReportHandle>();
    for (const h of r.leakedHandles ?? []) {
      if (!handles) nextHandles.set(h.ID, h);
      else if (handles.get(h.ID)?.Revision === h.Revision) nextHandles.set(h.ID, h);
    }
    handles = nextHandles;
  }
  return { ips: ips ?? new Map(), handles: handles ?? new Map() };
}

async function releaseFromReports(
  files: readonly string[],
  force: boolean,
  deps: IpamDeps,
  ctx: CommandContext,
): Promise<void> {
  const out = ctx.io.stdout;
  const ci = await clusterInfo(deps.datastore);
  if (!ci) {
    throw new CtlError('not-found', 'resource does not exist: ClusterInformation(default) with error: <nil>');
  }
  const reports: IpamReport[] = [];
  let foundCurrent = false;
  for (const file of files) {
    let text: string;
    try {
      text = await ctx.io.readFile(file);
    } catch (e) {
      throw new CtlError('invalid-input', `open ${file}: no such file or directory`, { cause: e });
    }
    const r = readReport(text, file);
    if (r.clusterGUID !== ci.guid) {
      throw new CtlError(
        'failed',
        `cluster does not match the provided report (${file}): mismatched cluster GUID. Refusing to release`,
      );
    }
    if (r.version !== CLIENT_VERSION) {
      if (!force) {
        throw new CtlError(
          'failed',
          `the provided report (${file}) was produced using a different version (${r.version}) of calicoctl. Refusing to release`,
        );
      }
      out(
        'WARNING: Report was produced using a different version of calicoctl. Ignoring due to --force option\n',
      );
    }
    if (r.clusterInformationRevision === ci.revision) foundCurrent = true;
    reports.push(r);
  }
  if (!foundCurrent) {
    throw new CtlError(
      'failed',
      'the provided reports are all stale - at least one should be up-to-date. Please generate a new report while the data store is locked and try again',
    );
  }
  if (!ci.locked) {
    if (!force) {
      throw new CtlError(
        'failed',
        'data store is not locked. Either lock the data store, or re-run with --force',
      );
    }
    out('WARNING: Data store is not locked. Ignoring due to --force option\n');
  }

  const { ips, handles } = mergeReports(reports);
  if (ips.size > 0) {
    out(`Releasing ${ips.size} old IPs...\n`);
    try {
      const r = await deps.ipam.releaseIPs([...ips.values()]);
      out(`Released ${r.released.length} IPs successfully\n`);
      if (r.notAssigned.length > 0) {
        out(
          `${r.notAssigned.length} addresses marked as leaked in the report had already been cleaned up.\n`,
        );
      }
      if (r.mismatched.length > 0) {
        out(`${r.mismatched.length} addresses were assigned again since the report and were left alone.\n`);
      }
    } catch (e) {
      out(
        `An error occurred while releasing some IPs: ${(e as Error).message}.  Problems are often caused by an out-of-date IPAM report.  Try regenerating the IPAM report and retry.\n`,
      );
    }
  } else {
    out("Report didn't contain any leaked IPs to clean up.\n");
  }

  if (handles.size > 0) {
    out(`Deleting ${handles.size} handles...\n`);
    out("Key: '.' = Deleted OK; 'x' = skip, handle missing/changed.\n");
    let released = 0;
    let skipped = 0;
    let errors = 0;
    for (const h of handles.values()) {
      try {
        await deps.store.deleteHandle(h.ID, h.Revision);
        released++;
        out('.');
      } catch (e) {
        if (isDatastoreError(e, 'not-found') || isDatastoreError(e, 'conflict')) {
          skipped++;
          out('x');
        } else {
          errors++;
          out(`\nDeleting handle ${h.ID} failed: ${(e as Error).message}.\n`);
        }
      }
    }
    out('\n');
    out(`Released ${released} handles; ${skipped} skipped; ${errors} errors.\n`);
  } else {
    out("Report didn't contain any handles to clean up.\n");
  }
}

// ---- configure -----------------------------------------------------------------------------------

export interface IpamConfigureArgs {
  strictaffinity?: string;
  maxBlocksPerHost?: string;
  kubevirtIpPersistence?: string;
}

/** Go's strconv.ParseBool. */
function parseGoBool(s: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s)) return false;
  return undefined;
}

export async function ipamConfigureCommand(
  args: IpamConfigureArgs,
  deps: IpamDeps,
  ctx: CommandContext,
): Promise<number> {
  let strict: boolean | undefined;
  if (args.strictaffinity !== undefined && args.strictaffinity !== '') {
    strict = parseGoBool(args.strictaffinity);
    if (strict === undefined) {
      throw new CtlError('usage', 'invalid value. Use true or false to set strictaffinity');
    }
  }
  let maxBlocks: number | undefined;
  if (args.maxBlocksPerHost !== undefined && args.maxBlocksPerHost !== '') {
    const t = args.maxBlocksPerHost;
    const n = /^[+-]?\d+$/.test(t) ? Number(t) : Number.NaN;
    if (!Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 31) {
      throw new CtlError('usage', 'invalid value for maxblockhost. Use a valid number');
    }
    maxBlocks = n;
  }
  let persistence: string | undefined;
  if (args.kubevirtIpPersistence !== undefined && args.kubevirtIpPersistence !== '') {
    if (args.kubevirtIpPersistence !== 'Enabled' && args.kubevirtIpPersistence !== 'Disabled') {
      throw new CtlError('usage', 'invalid value for --kubevirt-ip-persistence. Use Enabled or Disabled');
    }
    persistence = args.kubevirtIpPersistence;
  }
  if (strict === undefined && maxBlocks === undefined && persistence === undefined) {
    throw new CtlError('usage', 'at least one configuration option must be specified');
  }

  for (let attempt = 0; ; attempt++) {
    const cur = await deps.store.getConfig();
    const next: IPAMConfig = { ...(cur?.value ?? DEFAULT_IPAM_CONFIG) };
    if (strict !== undefined) next.strict_affinity = strict;
    if (maxBlocks !== undefined) next.maxBlocksPerHost = maxBlocks;
    if (persistence !== undefined) next.kubeVirtVMAddressPersistence = persistence;
    try {
      await deps.store.setConfig(next, cur?.revision);
      break;
    } catch (e) {
      const raced = isDatastoreError(e, 'conflict') || isDatastoreError(e, 'already-exists');
      if (!raced || attempt >= 10)
        throw new CtlError('failed', `error: ${(e as Error).message}`, { cause: e });
    }
  }
  if (strict !== undefined) ctx.io.stdout(`Successfully set StrictAffinity to: ${strict}\n`);
  if (maxBlocks !== undefined) ctx.io.stdout(`Successfully set MaxBlocksPerHost to: ${maxBlocks}\n`);
  if (persistence !== undefined)
    ctx.io.stdout(`Successfully set KubeVirtVMAddressPersistence to: ${persistence}\n`);
  return 0;
}

// ---- split ---------------------------------------------------------------------------------------

export interface IpamSplitArgs {
  number: string;
  cidr?: string;
  name?: string;
}

/**
 * Split a pool into a power of two smaller ones, as upstream: only on a locked datastore (nothing
 * allocates meanwhile); the pool is disabled, the children (`split-<pool>-<i>`, its spec, enabled)
 * are created and the pool is deleted without touching blocks or affinities, which stay valid in
 * the children. Upstream creates the children while the parent still exists; here the parent goes
 * first (the store refuses overlapping pools), and any failure after that puts the parent back and
 * removes the children made, so a failed split leaves the pools as they were.
 */
export async function ipamSplitCommand(
  args: IpamSplitArgs,
  deps: IpamDeps,
  ctx: CommandContext,
): Promise<number> {
  const { datastore: ds } = deps;
  if (args.cidr === undefined && args.name === undefined) {
    throw new CtlError(
      'usage',
      'No name or CIDR provided. Provide a name or CIDR to denote the IP pool to split.',
    );
  }
  if (!/^\d+$/.test(args.number)) {
    throw new CtlError(
      'usage',
      `error reading number to split IP pools into. ${args.number} is not a valid number`,
    );
  }
  const ci = await clusterInfo(ds);
  if (!ci?.locked) {
    throw new CtlError(
      'failed',
      'Datastore is not locked. Run the `calicoctl datastore migrate lock` command in order split the IP pools.',
    );
  }
  const pools = (await ds.list('IPPool')).items;
  const pool =
    args.name !== undefined
      ? pools.find((p) => p.metadata.name === args.name)
      : pools.find((p) => p.spec.cidr === args.cidr);
  if (!pool) {
    throw new CtlError(
      'not-found',
      args.name !== undefined
        ? `Unable to find IP pool with name ${args.name}`
        : `Unable to find IP pool covering the specified CIDR ${args.cidr}`,
    );
  }
  let children: ReturnType<typeof splitPools>;
  try {
    children = splitPools(pool as unknown as PoolLike, Number(args.number));
  } catch (e) {
    throw new CtlError('invalid-input', (e as Error).message);
  }
  const taken = children.filter((c) => pools.some((p) => p.metadata.name === c.metadata.name));
  if (taken.length > 0) {
    throw new CtlError('failed', `IP pool ${taken[0]!.metadata.name} already exists; nothing was changed`);
  }

  const parent = pool as unknown as Obj & { metadata: Obj; spec: Obj };
  const original = structuredClone(parent);
  const { resourceVersion: _rv, uid: _uid, creationTimestamp: _ts, ...originalMeta } = original.metadata;
  const disabled = await ds.update({ ...parent, spec: { ...parent.spec, disabled: true } } as never);
  const made: string[] = [];
  try {
    // The children first, beside their (disabled) parent, so the pool's addresses are always
    // covered by some pool (Felix's NAT and routes, BIRD's export); then the parent goes.
    for (const c of children) {
      await ds.create({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', ...c } as never, {
        allowPoolOverlap: true,
      });
      made.push(c.metadata.name);
    }
    await ds.delete('IPPool', pool.metadata.name);
  } catch (e) {
    // The parent back as it was (re-enabled; made again if the failure came after its delete),
    // then the children made so far, so the addresses stay covered throughout.
    await ds
      .update({ ...(disabled as unknown as Obj), spec: original.spec } as never)
      .catch(() => ds.create({ ...original, metadata: originalMeta } as never, { allowPoolOverlap: true }))
      .catch(() => {});
    for (const name of made) await ds.delete('IPPool', name).catch(() => {});
    throw new CtlError(
      'failed',
      `splitting IP pool ${pool.metadata.name} failed, and it was put back as it was: ${(e as Error).message}`,
      { cause: e },
    );
  }
  ctx.io.stdout(
    `IP Pool ${pool.metadata.name} was successfully split into ${children.length} smaller pools.\n`,
  );
  for (const c of children) ctx.io.stdout(`Created ${c.metadata.name} with CIDR ${c.spec.cidr}.\n`);
  ctx.io.stdout('Unlock the datastore (`calicoctl datastore migrate unlock`) to resume IPAM.\n');
  return 0;
}
