/**
 * `calico-ipam` DEL: releases handle `<network>.<containerID>`; when that handle does not exist,
 * the handle upstream used before v3 (`<namespace>.<pod>` for pods, the container ID otherwise). A
 * handle that does not exist is fine: DEL is idempotent.
 *
 * Upstream releases the pre-v3 handle on every DEL. A container whose ADD made the current handle
 * cannot hold addresses under the old one (only a pre-v3 ADD made those), so its DEL skips that
 * read: one request fewer on every DEL. An older sandbox of the same pod that does hold the old
 * handle has a DEL of its own, which finds no current handle and releases the old one.
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
    if (!released && legacy !== handleId && (await backend.releaseByHandle(legacy))) {
      log.info({ LegacyHandleID: legacy }, 'released addresses of the pre-v3 handle');
    }
  } finally {
    await release();
  }
  return undefined;
}
