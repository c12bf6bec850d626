/**
 * `calico` DEL (upstream `cmdDel` / `CmdDelK8s`). Idempotent: a missing WorkloadEndpoint, netns,
 * interface or allocation is success.
 *
 * 1. The WorkloadEndpoint: deleted when its `containerID` is this container's (with uid and
 *    resourceVersion preconditions, retried on conflict); kept when it belongs to a newer sandbox of
 *    the same pod; a read error other than "not found" fails the DEL before anything is removed.
 * 2. The pod interface CNI_IFNAME in CNI_NETNS (taking the host end and its routes with it), started
 *    as soon as step 1 has read the endpoint and run beside its deletion. With no CNI_NETNS, the
 *    host end named in our own WorkloadEndpoint is deleted instead, after step 1.
 * 3. The IPAM plugin's DEL, which releases the addresses: only once the interface (and the host
 *    route to the address) is gone, so an address is never handed out while a route still uses it.
 * 4. With calico-ipam, once the addresses are released: the WorkloadEndpoint again, deleted if it
 *    is this container's. An ADD's create that reached the datastore late (after step 1) put it
 *    there; ADD creates are guarded by the IPAM handle (calico-backend.ts), so after step 3 no
 *    late one can land. Not where step 1 deleted this container's endpoint from its Pod (the
 *    Kubernetes datastore): that delete changed the Pod, and a late write, which carries the
 *    resourceVersion read before it, fails.
 *
 * Steps 2 and 3 run even when an earlier one failed, so as much as possible is cleaned up; the
 * first error is reported.
 */
import { withFields } from '@calico-ts/api/log';
import { messageOf } from '../errors.js';
import { workloadEndpointName } from '../naming.js';
import { workloadIdentity } from '../spec/cni-args.js';
import {
  type PluginContext,
  requireIpam,
  requireReady,
  resolveNodename,
  retryOnConflict,
} from './context.js';

export async function cmdDel(ctx: PluginContext): Promise<undefined> {
  const { conf, inv } = ctx;
  const ipam = requireIpam(conf);
  const node = await resolveNodename(ctx, true);
  const id = workloadIdentity(inv.args);
  const wepName = workloadEndpointName({
    node,
    orchestrator: id.orchestrator,
    ...(id.pod !== undefined ? { pod: id.pod } : {}),
    containerId: inv.containerId,
    endpoint: inv.ifName,
  });
  const log = withFields(ctx.log, { ContainerID: inv.containerId, WorkloadEndpoint: wepName });
  const backend = await ctx.backend();
  await requireReady(backend);

  let firstError: unknown;
  const attempt = async (what: string, op: () => Promise<void>) => {
    try {
      await op();
    } catch (e) {
      log.error(`DEL: failed to ${what}: ${messageOf(e)}`);
      firstError ??= e;
    }
  };

  // 2. The interface: CNI_IFNAME in CNI_NETNS is this container's whatever the endpoint says, so
  // once the endpoint has been read its removal (the kernel takes ~20 ms for a veth) runs beside the
  // endpoint's deletion. Without a netns, the host end is named by our own endpoint: after step 1.
  const dp = ctx.dataplane();
  let ownHostIf: string | undefined;
  /** Step 1 deleted this container's endpoint, with a compare-and-swap on its Pod. */
  let deletedFromPod = false;
  let teardown: Promise<void> | undefined;
  const removeInterface = () =>
    attempt('remove the pod interface', async () => {
      if (inv.netns !== '') {
        const r = await dp.tearDown(inv.netns, inv.ifName);
        log.info(r === 'removed' ? `deleted ${inv.ifName} in ${inv.netns}` : 'pod interface already gone');
      } else if (ownHostIf) {
        await dp.removeHostInterface(ownHostIf);
      }
    });

  // 1. The WorkloadEndpoint. A read failure stops here: we cannot tell whose endpoint it is.
  try {
    await retryOnConflict(5, async () => {
      const wep = await backend.getWorkloadEndpoint(id.namespace, wepName);
      if (inv.netns !== '') teardown ??= removeInterface();
      if (!wep) {
        log.info('WorkloadEndpoint does not exist, nothing to delete');
        return;
      }
      if (wep.spec.containerID && wep.spec.containerID !== inv.containerId) {
        log.info(
          {
            Owner: wep.spec.containerID,
          },
          'WorkloadEndpoint belongs to another container, keeping it',
        );
        return;
      }
      ownHostIf = wep.spec.interfaceName;
      const pre: { uid?: string; resourceVersion?: string } = {};
      if (wep.metadata.uid) pre.uid = wep.metadata.uid;
      if (wep.metadata.resourceVersion) pre.resourceVersion = wep.metadata.resourceVersion;
      const deleted = await backend.deleteWorkloadEndpoint(id.namespace, wepName, pre);
      deletedFromPod = deleted && backend.endpointsOnPods === true;
      log.info('deleted the WorkloadEndpoint');
    });
  } finally {
    // Started or not, the interface step is over before this handler returns or fails.
    await teardown;
  }
  if (teardown === undefined) await removeInterface();

  // 3. The addresses.
  let released = false;
  await attempt('release the addresses', async () => {
    await ctx.delegate.run(ipam.type, 'DEL', ctx.stdin);
    released = true;
  });

  // 4. With calico-ipam, the endpoint once more: an ADD of this container whose create reached the
  // datastore after step 1 read (sent before its process was killed, on a connection cut off and
  // delivered when the link came back) wrote it there. Its creates are guarded by the IPAM handle
  // step 3 has now released, so none can land after this read.
  if (released && ipam.type === 'calico-ipam' && !deletedFromPod) {
    await attempt('delete a WorkloadEndpoint written late', async () => {
      await retryOnConflict(5, async () => {
        const wep = await backend.getWorkloadEndpoint(id.namespace, wepName);
        if (!wep || wep.spec.containerID !== inv.containerId) return;
        const pre: { uid?: string; resourceVersion?: string } = {};
        if (wep.metadata.uid) pre.uid = wep.metadata.uid;
        if (wep.metadata.resourceVersion) pre.resourceVersion = wep.metadata.resourceVersion;
        await backend.deleteWorkloadEndpoint(id.namespace, wepName, pre);
        log.warn('deleted a WorkloadEndpoint of this container written after the first look');
      });
    });
  }

  if (firstError !== undefined) throw firstError;
  return undefined;
}
