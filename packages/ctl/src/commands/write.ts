/**
 * `create`, `apply`, `replace` and `delete`: every document is loaded and checked first (see
 * load.ts); then each resource is written in order, and the summary is upstream's, word for word
 * (`Successfully applied 1 'IPPool' resource(s)`, `Partial success: …`, `Hit error(s): […]`).
 */
import { KINDS, type Kind, type Rule } from '@calico-ts/api';
import { unenforcedConsequence, unenforcedPolicyFields } from '@calico-ts/api/internal';
import type { Datastore } from '@calico-ts/datastore';
import { ensureInitialized } from '../cluster.js';
import { CtlError } from '../errors.js';
import { resolveCtlKind } from '../kinds.js';
import type { Obj } from '../output/columns.js';
import { kddRefusal } from '../resources/kdd-rules.js';
import { deleteNode, type NodeIpam } from '../resources/node-deletion.js';
import {
  applyResource,
  createResource,
  deleteResource,
  type PoolDeletion,
  updateResource,
} from '../resources/operations.js';
import { type PreparedResource, unsupportedOperation } from '../resources/prepare.js';
import type { CommandContext } from './context.js';
import { errorList, type FileArgs, loadResources, singleKind } from './load.js';

export interface CreateArgs extends FileArgs {
  skipExists?: boolean;
}

async function initialize(ds: Datastore, ctx: CommandContext): Promise<void> {
  for (const e of await ensureInitialized(ds, ctx.newClusterGUID))
    ctx.log.info(`Unable to initialize datastore: ${e.message}`);
}

interface Tally {
  total: number;
  handled: number;
  errors: CtlError[];
  kind: string;
}

/** Upstream's summary for create and apply (which go on after a failed resource). */
function summarize(verb: 'created' | 'applied', t: Tally, ctx: CommandContext): number {
  const base = verb === 'created' ? 'create' : 'apply';
  if (t.total === 0) {
    ctx.io.stdout('No resources specified\n');
    return 0;
  }
  if (t.handled === 0) {
    if (t.total === 1)
      throw new CtlError('failed', `Failed to ${base} '${t.kind}' resource: ${errorList(t.errors)}`);
    if (t.kind)
      throw new CtlError('failed', `Failed to ${base} any '${t.kind}' resources: ${errorList(t.errors)}`);
    throw new CtlError('failed', `Failed to ${base} any resources: ${errorList(t.errors)}`);
  }
  if (t.errors.length === 0) {
    ctx.io.stdout(
      t.kind
        ? `Successfully ${verb} ${t.handled} '${t.kind}' resource(s)\n`
        : `Successfully ${verb} ${t.handled} resource(s)\n`,
    );
    return 0;
  }
  ctx.io.stdout(
    t.kind
      ? `Partial success: ${verb} the first ${t.handled} out of ${t.total} '${t.kind}' resources:\n`
      : `Partial success: ${verb} the first ${t.handled} out of ${t.total} resources:\n`,
  );
  throw new CtlError(
    'failed',
    `${verb === 'created' ? 'Hit error' : 'Hit error(s)'}: ${errorList(t.errors)}`,
  );
}

const RULE_KINDS: ReadonlySet<string> = new Set([
  'NetworkPolicy',
  'GlobalNetworkPolicy',
  'StagedNetworkPolicy',
  'StagedGlobalNetworkPolicy',
  'Profile',
]);

/**
 * One line per rule field of a resource the dataplane does not enforce (HTTP matches, unknown
 * keys), saying what the rule does instead (fail closed): `NetworkPolicy 'prod/api':
 * spec.ingress[0].http is not enforced (...); the Allow rule matches nothing`. The resource is
 * still written.
 */
export function unenforcedWarnings(r: Pick<PreparedResource, 'kind' | 'resource'>): string[] {
  if (!RULE_KINDS.has(r.kind)) return [];
  const meta = (r.resource.metadata ?? {}) as Obj;
  const spec = (r.resource.spec ?? {}) as { ingress?: Rule[]; egress?: Rule[] };
  const name = meta.namespace ? `${String(meta.namespace)}/${String(meta.name)}` : String(meta.name);
  return unenforcedPolicyFields(spec).map(
    (f) =>
      `${r.kind} '${name}': ${f.fullPath} is not enforced (${f.reason}); ${unenforcedConsequence(f.action)}`,
  );
}

/** `unenforcedWarnings` of each resource on stderr, each line after `Warning: `. */
export function warnUnenforced(resources: readonly PreparedResource[], ctx: CommandContext): void {
  for (const r of resources) {
    for (const line of unenforcedWarnings(r)) ctx.io.stderr(`Warning: ${line}\n`);
  }
}

async function eachResource(
  resources: readonly PreparedResource[],
  op: (r: PreparedResource) => Promise<unknown>,
  skip: (e: CtlError) => boolean,
): Promise<Tally> {
  const t: Tally = { total: resources.length, handled: 0, errors: [], kind: singleKind(resources) };
  for (const r of resources) {
    try {
      await op(r);
      t.handled++;
    } catch (e) {
      const err = e instanceof CtlError ? e : new CtlError('failed', (e as Error).message, { cause: e });
      if (skip(err)) t.handled++;
      else t.errors.push(err);
    }
  }
  return t;
}

export async function createCommand(args: CreateArgs, ds: Datastore, ctx: CommandContext): Promise<number> {
  const resources = await loadResources('create', args, ctx);
  warnUnenforced(resources, ctx);
  if (resources.length > 0) await initialize(ds, ctx);
  const t = await eachResource(
    resources,
    (r) => createResource(ds, r.kind, r.resource),
    (e) => !!args.skipExists && e.code === 'already-exists',
  );
  return summarize('created', t, ctx);
}

export async function applyCommand(args: FileArgs, ds: Datastore, ctx: CommandContext): Promise<number> {
  const resources = await loadResources('apply', args, ctx);
  warnUnenforced(resources, ctx);
  if (resources.length > 0) await initialize(ds, ctx);
  const t = await eachResource(
    resources,
    (r) => applyResource(ds, r.kind, r.resource),
    () => false,
  );
  return summarize('applied', t, ctx);
}

export async function replaceCommand(args: FileArgs, ds: Datastore, ctx: CommandContext): Promise<number> {
  const resources = await loadResources('replace', args, ctx);
  warnUnenforced(resources, ctx);
  const kind = singleKind(resources);
  if (resources.length === 0) {
    ctx.io.stdout('No resources specified\n');
    return 0;
  }
  await initialize(ds, ctx);
  let handled = 0;
  for (const r of resources) {
    try {
      await updateResource(ds, r.kind, r.resource, { skipUnchanged: false });
      handled++;
    } catch (e) {
      const err = e as Error;
      if (handled === 0) {
        if (resources.length === 1)
          throw new CtlError('failed', `Failed to replace '${kind}' resource: ${err.message}`);
        if (kind) throw new CtlError('failed', `Failed to replace any '${kind}' resources: ${err.message}`);
        throw new CtlError('failed', `Failed to replace any resources: ${err.message}`);
      }
      ctx.io.stdout(
        kind
          ? `Partial success: replaced the first ${handled} out of ${resources.length} '${kind}' resources:\n`
          : `Partial success: replaced the first ${handled} out of ${resources.length} resources:\n`,
      );
      throw new CtlError('failed', `Hit error: ${err.message}`);
    }
  }
  ctx.io.stdout(
    kind
      ? `Successfully replaced ${handled} '${kind}' resource(s)\n`
      : `Successfully replaced ${handled} resource(s)\n`,
  );
  return 0;
}

export interface DeleteArgs {
  filename?: string;
  recursive?: boolean;
  skipEmpty?: boolean;
  kind?: string;
  names?: string[];
  namespace?: string;
  skipNotExists?: boolean;
}

/** Resources named on the command line: `delete <KIND> <NAME>…`. */
function resourcesFromArgs(
  kindText: string,
  names: readonly string[],
  namespace: string | undefined,
  action: 'delete',
): PreparedResource[] {
  const kind = resolveCtlKind(kindText);
  if (!kind) throw new CtlError('usage', `resource type '${kindText}' is not supported`);
  if (names.length === 0) throw new CtlError('usage', 'No resources specified');
  if (names.some((n) => n === '')) throw new CtlError('usage', 'resource name may not be empty');
  return names.map((name) => {
    const metadata: Obj = { name };
    if (isNamespacedKind(kind)) metadata.namespace = namespace || 'default';
    else if (namespace) throw new CtlError('usage', `${kind} is not namespaced`);
    const refused = unsupportedOperation(action, kind, name);
    if (refused) throw new CtlError('unsupported', `Failed to delete '${kind}' resource: ${refused}\n`);
    return { kind, resource: { apiVersion: 'projectcalico.org/v3', kind, metadata }, origin: 'arguments' };
  });
}

function isNamespacedKind(kind: Kind): boolean {
  return KINDS[kind].namespaced;
}

/** What deleting some kinds needs besides the datastore; without it they are deleted like any resource. */
export interface DeletionDeps {
  /**
   * How to release an IPPool's block affinities before deleting it (upstream's order: disable,
   * pause, release, delete).
   */
  pools?: PoolDeletion;
  /** IPAM for a Node's addresses and block affinities (see resources/node-deletion.ts). */
  nodeIpam?: NodeIpam;
}

/**
 * A Node is deleted with what belongs to it (endpoints, addresses, affinities, node-scoped peers,
 * configuration and host endpoints), as upstream's client does; see resources/node-deletion.ts.
 */
export async function deleteCommand(
  args: DeleteArgs,
  ds: Datastore,
  ctx: CommandContext,
  deps: DeletionDeps = {},
): Promise<number> {
  const fromArgs = args.filename === undefined;
  const resources = fromArgs
    ? resourcesFromArgs(args.kind ?? '', args.names ?? [], args.namespace, 'delete')
    : await loadResources('delete', { ...args, filename: args.filename! }, ctx);
  const kind = fromArgs ? resources[0]!.kind : singleKind(resources);
  if (resources.length === 0) {
    ctx.io.stdout('No resources specified\n');
    return 0;
  }
  const t = await eachResource(
    resources,
    (r) =>
      r.kind === 'Node'
        ? deleteNodeResource(ds, r.resource, deps, ctx)
        : deleteResource(ds, r.kind, r.resource, deps.pools),
    (e) => !!args.skipNotExists && e.code === 'not-found',
  );
  if (t.handled > 0) {
    ctx.io.stdout(
      kind
        ? `Successfully deleted ${t.handled} '${kind}' resource(s)\n`
        : `Successfully deleted ${t.handled} resource(s)\n`,
    );
  }
  if (t.errors.length > 0) {
    const text = t.errors
      .map((e) =>
        kind
          ? `Failed to delete '${kind}' resource: ${e.message}\n`
          : `Failed to delete resource: ${e.message}\n`,
      )
      .join('');
    throw new CtlError(t.errors[0]!.code, text);
  }
  return 0;
}

function deleteNodeResource(ds: Datastore, r: Obj, deps: DeletionDeps, ctx: CommandContext): Promise<Obj> {
  const meta = (r.metadata ?? {}) as Obj;
  // On the Kubernetes datastore the Node is Kubernetes': refused before anything of it is cleaned up.
  const refused =
    ds.backend === 'kubernetes' ? kddRefusal('delete', 'Node', String(meta.name ?? '')) : undefined;
  if (refused) return Promise.reject(new CtlError('unsupported', refused));
  const rv = meta.resourceVersion;
  return deleteNode(ds, String(meta.name ?? ''), {
    ...(typeof rv === 'string' && rv !== '' ? { resourceVersion: rv } : {}),
    ...(deps.nodeIpam ? { ipam: deps.nodeIpam } : {}),
    warn: (m) => ctx.log.warn(m),
  });
}
