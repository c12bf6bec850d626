/**
 * `version [--poll=<duration>]`: the client version, then the cluster's version and type from
 * ClusterInformation `default` (`unknown` when unset). Never checks for a version mismatch.
 */
import type { Datastore } from '@calico-ts/datastore';
import { CtlError } from '../errors.js';
import type { Obj } from '../output/columns.js';
import { describeError } from '../resources/operations.js';
import { CLIENT_VERSION, gitRevision } from '../version.js';
import type { CommandContext } from './context.js';

export interface VersionArgs {
  /** Go duration (`1s`, `10m`); 0 or unset = once. */
  poll?: string;
  /** For --poll: how to wait, and when to stop (tests). */
  sleep?: (ms: number) => Promise<void>;
  shouldStop?: () => boolean;
}

/** A Go duration string in milliseconds (`1h2m3.5s`, `300ms`). */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;
  const unit: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
  };
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(re)) {
    if (m.index !== consumed) return undefined;
    total += Number(m[1]) * unit[m[2]!]!;
    consumed += m[0].length;
  }
  return consumed === text.length && consumed > 0 ? total : undefined;
}

export async function versionCommand(
  args: VersionArgs,
  connect: () => Promise<Datastore>,
  ctx: CommandContext,
): Promise<number> {
  let pollMs = 0;
  if (args.poll !== undefined && args.poll !== '') {
    const d = parseGoDuration(args.poll);
    if (d === undefined) throw new CtlError('usage', `Invalid poll duration specified: ${args.poll}`);
    pollMs = d;
  }
  ctx.io.stdout(`Client Version:    ${CLIENT_VERSION}\n`);
  ctx.io.stdout(`Git commit:        ${gitRevision()}\n`);
  const ds = await connect();
  let shownVersion = '';
  let shownType = '';
  const sleep = args.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  for (;;) {
    let error: CtlError | undefined;
    try {
      const ci = (await ds.get('ClusterInformation', 'default')) as unknown as Obj;
      const spec = (ci.spec ?? {}) as Obj;
      const v =
        typeof spec.calicoVersion === 'string' && spec.calicoVersion !== '' ? spec.calicoVersion : 'unknown';
      const t =
        typeof spec.clusterType === 'string' && spec.clusterType !== '' ? spec.clusterType : 'unknown';
      if (v !== shownVersion) ctx.io.stdout(`Cluster Version:   ${v}\n`);
      if (t !== shownType) ctx.io.stdout(`Cluster Type:      ${t}\n`);
      shownVersion = v;
      shownType = t;
    } catch (e) {
      const why = describeError(e, 'ClusterInformation', 'default').message;
      error = new CtlError('failed', `Unable to retrieve Cluster Version or Type: ${why}`, { cause: e });
      shownVersion = '';
      shownType = '';
    }
    if (pollMs === 0 || args.shouldStop?.()) {
      if (error) throw error;
      return 0;
    }
    if (error) ctx.io.stderr(`${error.message}\n`);
    await sleep(pollMs);
  }
}
