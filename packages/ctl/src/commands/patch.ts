/**
 * `patch <KIND> <NAME> --patch=<PATCH> [--type strategic|merge|json]`: read the resource, patch it,
 * write it back with its resourceVersion (so a concurrent change is a conflict, not lost).
 */
import { KINDS, type Resource } from '@calico-ts/api';
import type { Datastore } from '@calico-ts/datastore';
import { CtlError } from '../errors.js';
import { resolveCtlKind } from '../kinds.js';
import type { Obj } from '../output/columns.js';
import { describeError, getResource, replaceForUpdate } from '../resources/operations.js';
import { jsonPatch, mergePatch } from '../resources/patch.js';
import type { CommandContext } from './context.js';

export interface PatchArgs {
  kind: string;
  name: string;
  patch: string;
  type?: string;
  namespace?: string;
}

export async function patchCommand(args: PatchArgs, ds: Datastore, ctx: CommandContext): Promise<number> {
  const kind = resolveCtlKind(args.kind);
  if (!kind) throw new CtlError('usage', `resource type '${args.kind}' is not supported`);
  if (args.name === '') throw new CtlError('usage', 'resource name may not be empty');
  const type = args.type ?? 'strategic';
  if (!['strategic', 'merge', 'json'].includes(type)) {
    throw new CtlError('usage', `unknown patch type ${JSON.stringify(type)} (one of strategic, merge, json)`);
  }
  if (!KINDS[kind].namespaced && args.namespace) throw new CtlError('usage', `${kind} is not namespaced`);
  const namespace = KINDS[kind].namespaced ? args.namespace || 'default' : undefined;
  if (kind === 'ClusterInformation') {
    throw new CtlError(
      'unsupported',
      `Failed to patch '${kind}' resource: operation apply or replace is not supported on ClusterInformation\n`,
    );
  }
  let stored: Obj;
  try {
    stored = await getResource(ds, kind, args.name, namespace);
  } catch (e) {
    throw new CtlError(
      (e as CtlError).code ?? 'failed',
      `Failed to patch '${kind}' resource: ${(e as Error).message}\n`,
      {
        cause: e,
      },
    );
  }
  let patchDoc: unknown;
  try {
    patchDoc = JSON.parse(args.patch);
  } catch (e) {
    throw new CtlError(
      'usage',
      `Failed to patch '${kind}' resource: invalid patch (not JSON): ${(e as Error).message}\n`,
    );
  }
  let patched: Obj;
  try {
    const p = type === 'json' ? jsonPatch(stored, patchDoc) : mergePatch(stored, patchDoc);
    if (p === null || typeof p !== 'object' || Array.isArray(p))
      throw new CtlError('usage', 'patch result is not a resource');
    patched = p as Obj;
  } catch (e) {
    throw new CtlError('usage', `Failed to patch '${kind}' resource: ${(e as Error).message}\n`);
  }
  // Identity fields come from the stored object: a patch may change labels, annotations and spec.
  const next = replaceForUpdate(stored, patched);
  next.kind = kind;
  next.apiVersion = stored.apiVersion;
  try {
    await ds.update(next as unknown as Resource & { kind: typeof kind });
  } catch (e) {
    const err = describeError(e, kind, args.name, namespace);
    throw new CtlError(
      err.code,
      `Failed to patch '${kind}' resource: updating existing resource: ${err.message}\n`,
      {
        cause: e,
      },
    );
  }
  ctx.io.stdout(`Successfully patched 1 '${kind}' resource\n`);
  return 0;
}
