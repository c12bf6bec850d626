/**
 * `calico` ADD (upstream `cmdAdd` / `CmdAddK8s`).
 *
 * ```
 * nodename ─► ClusterInformation ready? ┐                                       ┌─► addresses, routes ┐
 *             existing endpoint         ├─► IPAM plugin ADD ─► result ──────────┤                     ├─► profile
 *             veth pair (undo: delete)  ┘   (undo: IPAM DEL)                     └─► WorkloadEndpoint ─┘
 *                                                                                   (undo: delete/restore)
 * ```
 *
 * Steps on one line run side by side: they need nothing from each other (the pod end's MAC is
 * chosen when the pair is made). The pair comes before IPAM: when CNI_IFNAME already exists in the
 * pod (a duplicate ADD), that fails before IPAM, whose undo would release the running pod's
 * address. Any failure undoes what succeeded, newest first, and reports the first error in the
 * order above (readiness before the rest).
 */
import { CniPluginError, isCniPluginError } from '../errors.js';
import { hostVethName, interfacePrefix, workloadEndpointName } from '../naming.js';
import { workloadIdentity } from '../spec/cni-args.js';
import { type CniResult, decodeResult, encodeResult } from '../spec/result.js';
import { isSupportedVersion } from '../spec/versions.js';
import { buildAddResult, buildWorkloadEndpoint, narrowAddresses, podRouteDestinations } from '../workload.js';
import {
  type PluginContext,
  requireIpam,
  requireReady,
  resolveMtu,
  resolveNodename,
  UndoStack,
} from './context.js';

export async function cmdAdd(ctx: PluginContext): Promise<Record<string, unknown>> {
  const { conf, inv } = ctx;
  const ipam = requireIpam(conf);
  const node = await resolveNodename(ctx, true);
  const mtu = await resolveMtu(ctx);
  const id = workloadIdentity(inv.args);
  const wepName = workloadEndpointName({
    node,
    orchestrator: id.orchestrator,
    ...(id.pod !== undefined ? { pod: id.pod } : {}),
    containerId: inv.containerId,
    endpoint: inv.ifName,
  });
  const log = ctx.log.with({ ContainerID: inv.containerId, WorkloadEndpoint: wepName });
  const hostIf = hostVethName({
    orchestrator: id.orchestrator,
    namespace: id.namespace,
    ...(id.pod !== undefined ? { pod: id.pod } : {}),
    containerId: inv.containerId,
    prefix: interfacePrefix(ctx.env.FELIX_INTERFACEPREFIX),
  });

  const backend = await ctx.backend();
  const dp = ctx.dataplane();
  const pair = {
    netns: inv.netns,
    containerIfName: inv.ifName,
    hostIfName: hostIf,
    mtu,
    numQueues: conf.numQueues,
  };

  const undo = new UndoStack(log);
  try {
    // 1. Readiness, the endpoint as it is, and the veth pair; calico-ipam's first reads too, when
    // it runs in this process and shares the datastore client.
    if (ipam.type === 'calico-ipam') backend.prefetchAssign?.(node);
    const [ready, existingRead, made] = await Promise.allSettled([
      requireReady(backend),
      backend.getWorkloadEndpoint(id.namespace, wepName),
      dp.createPair(pair),
    ]);
    if (made.status === 'fulfilled') undo.push(`delete ${hostIf}`, () => dp.removeHostInterface(hostIf));
    if (ready.status === 'rejected') throw ready.reason;
    if (existingRead.status === 'rejected') throw existingRead.reason;
    if (made.status === 'rejected') throw made.reason;
    const existing = existingRead.value;
    const { containerMac } = made.value;

    // 2. Addresses from the IPAM plugin.
    const ipamOut = await ctx.delegate.run(ipam.type, 'ADD', ctx.stdin);
    undo.push(`release addresses (${ipam.type} DEL)`, () => ctx.delegate.run(ipam.type, 'DEL', ctx.stdin));
    const ipamResult = decodeDelegateResult(ipamOut, ipam.type, conf.cniVersion);
    if (ipamResult.ips.length === 0) {
      throw new CniPluginError('ipam-failed', `IPAM plugin ${ipam.type} returned no IP addresses`);
    }
    const addresses = narrowAddresses(ipamResult.ips.map((ip) => ip.address));
    const routes = podRouteDestinations(addresses, ipam.routes, conf.includeDefaultRoutes);
    log.info('IPAM assigned addresses', { addresses: addresses.join(',') });

    // 3. The pair's addresses, routes and sysctls, and the WorkloadEndpoint.
    const wep = buildWorkloadEndpoint({
      name: wepName,
      namespace: id.namespace,
      node,
      orchestrator: id.orchestrator,
      ...(id.pod !== undefined ? { pod: id.pod } : {}),
      containerId: inv.containerId,
      endpoint: inv.ifName,
      addresses,
      hostIfName: hostIf,
      mac: containerMac,
      networkName: conf.name,
      policyType: conf.policyType,
    });
    // The endpoint's request goes out first: configuring the pair may hold this thread (rtnetlink
    // requests are synchronous) while etcd works on it.
    const [written, configured] = await Promise.allSettled([
      backend.writeWorkloadEndpoint(wep),
      dp.configure({ ...pair, addresses, routes, allowIpForwarding: conf.allowIpForwarding }, containerMac),
    ]);
    if (written.status === 'fulfilled') {
      if (existing) {
        const previous = structuredClone(existing);
        delete previous.metadata.resourceVersion;
        undo.push('restore the previous WorkloadEndpoint', () => backend.writeWorkloadEndpoint(previous));
      } else {
        undo.push('delete the WorkloadEndpoint', () => backend.deleteWorkloadEndpoint(id.namespace, wepName));
      }
    }
    if (configured.status === 'rejected') throw configured.reason;
    if (written.status === 'rejected') throw written.reason;
    const wl = configured.value;
    log.info('networked the namespace and wrote the WorkloadEndpoint', {
      HostVeth: hostIf,
      ContainerMAC: wl.containerMac,
    });

    // 4. Without a policy plugin, the network's profile (upstream creates it when missing).
    if (conf.policyType === '') await backend.ensureNetworkProfile(conf.name, id.orchestrator);

    const result = buildAddResult({
      hostIfName: hostIf,
      containerIfName: inv.ifName,
      containerMac: wl.containerMac,
      containerMtu: wl.containerMtu,
      netns: inv.netns,
      addresses,
      routes,
      dns: ipamResult.dns,
      ...(conf.prevResult ? { prevResult: conf.prevResult } : {}),
    });
    return encodeResult(result, conf.cniVersion);
  } catch (e) {
    await undo.run(e);
    throw e;
  }
}

/** A delegate's stdout as a result, read in the version it says it printed. */
export function decodeDelegateResult(
  stdout: string,
  type: string,
  fallbackVersion: Parameters<typeof decodeResult>[1],
): CniResult {
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch {
    throw new CniPluginError('ipam-failed', `IPAM plugin ${type} printed something that is not JSON`, {
      details: stdout.slice(0, 500),
    });
  }
  const v = (value as { cniVersion?: unknown } | null)?.cniVersion;
  try {
    return decodeResult(value, isSupportedVersion(v) ? v : fallbackVersion, `result of ${type}`);
  } catch (e) {
    if (isCniPluginError(e)) throw new CniPluginError('ipam-failed', e.message);
    throw e;
  }
}
