/**
 * `calico` STATUS (CNI 1.1): ready to serve ADD when the datastore answers, ClusterInformation
 * says it is ready, and the IPAM plugin's own STATUS passes (its error is passed on). Not ready ⇒
 * code 50 with the reason.
 */
import { CniPluginError, isCniPluginError, messageOf } from '../errors.js';
import { NOT_READY_MESSAGE, type PluginContext, requireIpam } from './context.js';

export async function cmdStatus(ctx: PluginContext): Promise<undefined> {
  const ipam = requireIpam(ctx.conf);
  await requireDatastoreReady(ctx);
  await ctx.delegate.run(ipam.type, 'STATUS', ctx.stdin);
  return undefined;
}

/** Datastore reachable and ready, else `plugin-not-available`. */
export async function requireDatastoreReady(ctx: PluginContext): Promise<void> {
  try {
    const backend = await ctx.backend();
    const r = await backend.readiness();
    if (!r.ready) {
      throw new CniPluginError(
        'plugin-not-available',
        NOT_READY_MESSAGE,
        r.reason ? { details: r.reason } : undefined,
      );
    }
  } catch (e) {
    if (isCniPluginError(e, 'plugin-not-available') || isCniPluginError(e, 'invalid-config')) throw e;
    throw new CniPluginError(
      'plugin-not-available',
      `the Calico datastore is not available: ${messageOf(e)}`,
    );
  }
}
