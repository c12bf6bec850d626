/**
 * `calico-ipam` GC (CNI 1.1): releases every allocation of this network whose container is not in
 * `cni.dev/valid-attachments`. Only pod handles of this network (`<network>.<containerID>`) are
 * considered; tunnel addresses, other networks and pre-v3 handles are never touched. Every stale
 * handle is tried; the first failure is reported at the end.
 */
import { messageOf } from '../errors.js';
import { containerIdOfHandle } from '../naming.js';
import type { PluginContext } from './context.js';

export async function cmdIpamGc(ctx: PluginContext): Promise<undefined> {
  const { conf } = ctx;
  const valid = new Set((conf.validAttachments ?? []).map((a) => a.containerID));
  const backend = await ctx.backend();
  const handles = await backend.listHandles();
  let firstError: unknown;
  let released = 0;
  for (const h of handles) {
    const cid = containerIdOfHandle(h, conf.name);
    if (cid === undefined || valid.has(cid)) continue;
    try {
      if (await backend.releaseByHandle(h)) released++;
      ctx.log.info({ HandleID: h }, 'GC released a stale allocation');
    } catch (e) {
      ctx.log.error(`GC failed to release ${h}: ${messageOf(e)}`);
      firstError ??= e;
    }
  }
  ctx.log.info(`GC done: released ${released} stale handle(s), ${valid.size} attachment(s) valid`);
  if (firstError !== undefined) throw firstError;
  return undefined;
}
