/**
 * `calico` CHECK: the workload's networking is still what ADD set up. Upstream prints "OK" without
 * looking; we verify, and report the first problem in `msg` and all of them in `details`:
 *
 * - the WorkloadEndpoint exists, is this container's, lists the addresses and the host interface;
 * - the pod interface exists, is up, has its addresses, the 169.254.1.1 link route and the default
 *   (or configured) routes via the host end;
 * - the host end exists, is up, has MAC ee:ee:ee:ee:ee:ee, proxy ARP and a route per address;
 * - the IPAM plugin's own CHECK passes (its error is passed on).
 */
import { CniPluginError } from '../errors.js';
import { hostVethName, interfacePrefix, workloadEndpointName } from '../naming.js';
import { workloadIdentity } from '../spec/cni-args.js';
import { canonicalIp } from '../spec/ip.js';
import { addressesForInterface, podRouteDestinations, workloadProblems } from '../workload.js';
import { type PluginContext, requireIpam, requireReady, resolveNodename } from './context.js';

export async function cmdCheck(ctx: PluginContext): Promise<undefined> {
  const { conf, inv } = ctx;
  const ipam = requireIpam(conf);
  if (!conf.prevResult) {
    throw new CniPluginError('invalid-config', 'prevResult: missing (CHECK needs the result of the ADD)');
  }
  const node = await resolveNodename(ctx, true);
  const id = workloadIdentity(inv.args);
  const wepName = workloadEndpointName({
    node,
    orchestrator: id.orchestrator,
    ...(id.pod !== undefined ? { pod: id.pod } : {}),
    containerId: inv.containerId,
    endpoint: inv.ifName,
  });
  const hostIf = hostVethName({
    orchestrator: id.orchestrator,
    namespace: id.namespace,
    ...(id.pod !== undefined ? { pod: id.pod } : {}),
    containerId: inv.containerId,
    prefix: interfacePrefix(ctx.env.FELIX_INTERFACEPREFIX),
  });
  const addresses = addressesForInterface(conf.prevResult, inv.ifName);
  if (addresses.length === 0) {
    throw new CniPluginError('invalid-config', `prevResult: no IP addresses for interface ${inv.ifName}`);
  }
  const routes = podRouteDestinations(addresses, ipam.routes, conf.includeDefaultRoutes);

  const backend = await ctx.backend();
  await requireReady(backend);
  const problems: string[] = [];
  const wep = await backend.getWorkloadEndpoint(id.namespace, wepName);
  if (!wep) {
    problems.push(`WorkloadEndpoint ${id.namespace}/${wepName} does not exist`);
  } else {
    if (wep.spec.containerID !== inv.containerId) {
      problems.push(`WorkloadEndpoint ${wepName} belongs to container ${wep.spec.containerID}`);
    }
    const nets = new Set((wep.spec.ipNetworks ?? []).map((n) => canonicalIp(n.split('/')[0]!)));
    for (const a of addresses) {
      if (!nets.has(canonicalIp(a.split('/')[0]!)))
        problems.push(`WorkloadEndpoint ${wepName} does not list ${a}`);
    }
    if (wep.spec.interfaceName !== hostIf) {
      problems.push(`WorkloadEndpoint ${wepName} names interface ${wep.spec.interfaceName}, not ${hostIf}`);
    }
  }
  const observed = await ctx.dataplane().observe(inv.netns, inv.ifName, hostIf);
  problems.push(
    ...workloadProblems(
      { netns: inv.netns, containerIfName: inv.ifName, hostIfName: hostIf, addresses, routes },
      observed,
    ),
  );
  if (problems.length > 0) {
    throw new CniPluginError('check-failed', problems[0]!, { details: problems.join('; ') });
  }
  await ctx.delegate.run(ipam.type, 'CHECK', ctx.stdin);
  return undefined;
}
