/**
 * `label <KIND> <NAME> key=value [--overwrite] | key --remove`, with upstream's messages.
 */
import { KINDS, type Resource } from '@calico-ts/api';
import type { Datastore } from '@calico-ts/datastore';
import { CtlError } from '../errors.js';
import { resolveCtlKind } from '../kinds.js';
import type { Obj } from '../output/columns.js';
import { describeError, getResource } from '../resources/operations.js';
import type { CommandContext } from './context.js';

export interface LabelArgs {
  kind: string;
  name: string;
  /** `key=value`, or the key alone with `remove`. */
  label: string;
  overwrite?: boolean;
  remove?: boolean;
  namespace?: string;
}

export async function labelCommand(args: LabelArgs, ds: Datastore, ctx: CommandContext): Promise<number> {
  const { kind: kindText, name } = args;
  if (args.overwrite && args.remove) {
    throw new CtlError('usage', '--overwrite and --remove cannot be used together');
  }
  let key: string;
  let value = '';
  if (args.remove) key = args.label;
  else {
    const kv = args.label.split('=');
    if (kv.length !== 2) throw new CtlError('usage', `invalid label ${args.label}`);
    key = kv[0]!;
    value = kv[1]!;
  }
  const kind = resolveCtlKind(kindText);
  if (!kind) {
    throw new CtlError(
      'usage',
      `failed to get ${kindText} ${name}, error resource type '${kindText}' is not supported`,
    );
  }
  const namespace = KINDS[kind].namespaced ? args.namespace || 'default' : undefined;
  if (!KINDS[kind].namespaced && args.namespace) {
    throw new CtlError('usage', `failed to get ${kindText} ${name}, error ${kind} is not namespaced`);
  }
  let resource: Obj;
  try {
    resource = await getResource(ds, kind, name, namespace);
  } catch (e) {
    if (e instanceof CtlError && e.code === 'not-found') {
      throw new CtlError('not-found', `${kindText} ${name} not found`, { cause: e });
    }
    throw new CtlError('failed', `failed to get ${kindText} ${name}, error ${(e as Error).message}`, {
      cause: e,
    });
  }
  const meta = { ...((resource.metadata as Obj) ?? {}) };
  const labels: Record<string, string> = { ...((meta.labels as Record<string, string>) ?? {}) };
  let overwritten = false;
  if (args.remove) {
    if (!(key in labels)) {
      throw new CtlError('failed', `cannot remove label of ${kindText} ${name}, key ${key} does not exist`);
    }
    delete labels[key];
  } else if (key in labels) {
    if (args.overwrite || labels[key] === value) {
      labels[key] = value;
      overwritten = true;
    } else {
      throw new CtlError(
        'failed',
        `failed to update label of ${kindText} ${name}, key ${key} is already present. please use '--overwrite' to set a new value.`,
      );
    }
  } else labels[key] = value;
  if (Object.keys(labels).length > 0) meta.labels = labels;
  else delete meta.labels;
  try {
    await ds.update({ ...resource, metadata: meta } as unknown as Resource & { kind: typeof kind });
  } catch (e) {
    const why = describeError(e, kind, name, namespace);
    ctx.log.info(why.message);
    // A resource the datastore cannot write (a Profile on the Kubernetes datastore) says why.
    const reason = why.code === 'unsupported' ? `: ${why.message}` : '';
    throw new CtlError('failed', `failed to update ${kindText} ${name}, label not changed${reason}`, {
      cause: e,
    });
  }
  if (args.remove) ctx.io.stdout(`Successfully removed label ${key} from ${kindText} ${name}\n`);
  else if (overwritten) ctx.io.stdout(`Successfully updated label ${key} on ${kindText} ${name}\n`);
  else ctx.io.stdout(`Successfully set label ${key} on ${kindText} ${name}\n`);
  return 0;
}
