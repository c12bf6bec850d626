/**
 * `calico` GC (CNI 1.1): the addresses belong to the IPAM plugin, so its GC runs with the same
 * `cni.dev/valid-attachments` (spec: a plugin delegates GC to its IPAM plugin).
 */
import { type PluginContext, requireIpam } from './context.js';

export async function cmdGc(ctx: PluginContext): Promise<undefined> {
  const ipam = requireIpam(ctx.conf);
  await ctx.delegate.run(ipam.type, 'GC', ctx.stdin);
  return undefined;
}
