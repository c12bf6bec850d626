/**
 * `calico-ipam` STATUS (CNI 1.1): ready when the datastore answers and is ready, and an enabled
 * IP pool has a free address. Otherwise code 50 saying which.
 */
import { CniPluginError, isCniPluginError, messageOf } from '../errors.js';
import type { PluginContext } from './context.js';
import { requireDatastoreReady } from './status.js';

export async function cmdIpamStatus(ctx: PluginContext): Promise<undefined> {
  await requireDatastoreReady(ctx);
  let capacity: { enabledPools: number; free: bigint };
  try {
    capacity = await (await ctx.backend()).poolCapacity();
  } catch (e) {
    if (isCniPluginError(e, 'plugin-not-available')) throw e;
    throw new CniPluginError('plugin-not-available', `cannot read the IP pools: ${messageOf(e)}`);
  }
  if (capacity.enabledPools === 0) {
    throw new CniPluginError('plugin-not-available', 'no enabled IP pool: pods cannot get addresses');
  }
  if (capacity.free <= 0n) {
    throw new CniPluginError(
      'plugin-not-available',
      'every enabled IP pool is full: pods cannot get addresses',
    );
  }
  return undefined;
}
