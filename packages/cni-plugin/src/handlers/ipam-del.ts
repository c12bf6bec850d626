/**
 * `calico-ipam` DEL: releases handle `<network>.<containerID>`, then the handle upstream used
 * before v3 (`<namespace>.<pod>` for pods, the container ID otherwise). A handle that does not
 * exist is fine: DEL is idempotent.
 */

import { withFields } from '@calico-ts/api/log';
import { DEFAULT_IPAM_LOCK_FILE } from '../io/host-lock.js';
import { ipamHandleId, legacyHandleId } from '../naming.js';
import { workloadIdentity } from '../spec/cni-args.js';
import type { PluginContext } from './context.js';

export async function cmdIpamDel(ctx: PluginContext): Promise<undefined> {
  const { conf, inv } = ctx;
  const id = workloadIdentity(inv.args);
  const handleId = ipamHandleId(conf.name, inv.containerId);
  const log = withFields(ctx.log, { ContainerID: inv.containerId, HandleID: handleId });
  const backend = await ctx.backend();
  const release = await ctx.lock.acquire(conf.ipamLockFile ?? DEFAULT_IPAM_LOCK_FILE);
  try {
    const released = await backend.releaseByHandle(handleId);
    log.info(released ? 'released addresses' : 'no addresses held by the handle');
    const legacy = legacyHandleId({ ...id, containerId: inv.containerId });
    if (legacy !== handleId && (await backend.releaseByHandle(legacy))) {
      log.info({ LegacyHandleID: legacy }, 'released addresses of the pre-v3 handle');
    }
  } finally {
    await release();
  }
  return undefined;
}
