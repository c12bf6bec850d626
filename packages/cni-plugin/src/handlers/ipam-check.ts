/**
 * `calico-ipam` CHECK (upstream has none): the handle still holds every address of `prevResult`.
 */
import { CniPluginError } from '../errors.js';
import { ipamHandleId } from '../naming.js';
import { addressOf } from '../spec/ip.js';
import type { PluginContext } from './context.js';

export async function cmdIpamCheck(ctx: PluginContext): Promise<undefined> {
  const { conf, inv } = ctx;
  if (!conf.prevResult) {
    throw new CniPluginError('invalid-config', 'prevResult: missing (CHECK needs the result of the ADD)');
  }
  const handleId = ipamHandleId(conf.name, inv.containerId);
  const backend = await ctx.backend();
  const held = new Set((await backend.addressesOfHandle(handleId)).map(addressOf));
  const missing = conf.prevResult.ips.map((ip) => addressOf(ip.address)).filter((a) => !held.has(a));
  if (missing.length > 0) {
    throw new CniPluginError('check-failed', `IPAM handle ${handleId} does not hold ${missing.join(', ')}`, {
      details: `held: ${[...held].join(', ') || 'nothing'}`,
    });
  }
  return undefined;
}
