/**
 * `calico` ADD (upstream `cmdAdd` / `CmdAddK8s`).
 *
 * ```
 *             ClusterInformation ready? ┐
 *             existing endpoint         │                                       ┌─► addresses, routes ┐
 * nodename ─► Pod + Namespace ─► veth   ├─► IPAM plugin ADD ─► result ──────────┤                     ├─► profile
 *             (Kubernetes mode)  pair   ┘   (undo: IPAM DEL)                     └─► WorkloadEndpoint ─┘
 *                     (undo: delete)                                                (undo: delete/restore)
 * ```
 *
 * Steps on one line run side by side: they need nothing from each other (the pod end's MAC is
 * chosen when the pair is made). The pair comes before IPAM: when CNI_IFNAME already exists in the
 * pod (a duplicate ADD), that fails before IPAM, whose undo would release the running pod's
 * address. In Kubernetes mode (handlers/kubernetes.ts) the pair waits for the Pod and its
 * Namespace: a pod the API server does not have, or a bad `cni.projectcalico.org/*` annotation,
 * fails before anything is made, and `hwAddr` is the pair's MAC. The annotations also choose the
 * addresses: calico-ipam with other pools or families (`ipv4pools`, `ipFamilies`, …), calico-ipam
 * once per address (`ipAddrs`, as `IP=<address>` in its CNI_ARGS), or no IPAM (`ipAddrsNoIpam`).
 * Any failure undoes what succeeded, newest first, and reports the first error in the order above
 * (readiness before the rest).
 */
import { withFields } from '@calico-ts/api/log';
import { CniPluginError, isCniPluginError } from '../errors.js';
import type { PluginBackend, WorkloadEndpoint } from '../io/backend.js';
import { hostVethName, interfacePrefix, ipamHandleId, workloadEndpointName } from '../naming.js';
import { floatingIpNats } from '../spec/annotations.js';
import { workloadIdentity } from '../spec/cni-args.js';
import { addressOf, hostCidr } from '../spec/ip.js';
import { type CniDns, type CniResult, decodeResult, encodeResult } from '../spec/result.js';
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
import { ipamStdin, kubernetesMode, type PodInfo, readPodInfo } from './kubernetes.js';

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
  const log = withFields(ctx.log, { ContainerID: inv.containerId, WorkloadEndpoint: wepName });
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
    // 1. Readiness, the endpoint as it is, and (Kubernetes mode) the Pod and its Namespace, then
    // the veth pair; calico-ipam's first reads too, when it runs in this process and shares the
    // datastore client.
    if (ipam.type === 'calico-ipam') backend.prefetchAssign?.(node);
    const podRead: Promise<PodInfo | undefined> =
      id.pod !== undefined && kubernetesMode(conf)
        ? readPodInfo(ctx, id.namespace, id.pod)
        : Promise.resolve(undefined);
    const endpointRead = readEndpoint(ctx, backend, podRead, id, wepName);
    const [ready, existingRead, made] = await Promise.allSettled([
      requireReady(backend),
      endpointRead,
      podRead.then((info) =>
        dp.createPair(
          info?.request.containerMac ? { ...pair, containerMac: info.request.containerMac } : pair,
        ),
      ),
    ]);
    if (made.status === 'fulfilled') undo.push(`delete ${hostIf}`, () => dp.removeHostInterface(hostIf));
    if (ready.status === 'rejected') throw ready.reason;
    if (existingRead.status === 'rejected') throw existingRead.reason;
    if (made.status === 'rejected') throw made.reason;
    const existing = existingRead.value;
    const { containerMac } = made.value;
    const podInfo = await podRead;

    // 2. Addresses: from the IPAM plugin, or as the pod's annotations say.
    const { addresses, dns } = await podAddresses(ctx, podInfo, existing, undo);
    const routes = podRouteDestinations(addresses, ipam.routes, conf.includeDefaultRoutes);
    log.info({ addresses: addresses.join(',') }, 'IPAM assigned addresses');
    const ipNATs =
      podInfo && podInfo.request.floatingIps.length > 0
        ? floatingIpNats(`${id.namespace}/${id.pod}`, podInfo.request.floatingIps, addresses)
        : undefined;

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
      ...(podInfo ? { podFields: podInfo.fields } : {}),
      ...(ipNATs ? { ipNATs } : {}),
      ...(podInfo ? { allowSpoofedSourcePrefixes: podInfo.request.allowedSourcePrefixes } : {}),
    });
    // With calico-ipam the endpoint is created only while this container's IPAM handle exists: a
    // create that reaches etcd after the runtime's DEL released the handle (this process killed, or
    // its connection given up, while etcd was cut off) is refused instead of left behind.
    const fromCalicoIpam =
      ipam.type === 'calico-ipam' && (podInfo?.request.addresses.kind ?? 'ipam') !== 'no-ipam';
    // The endpoint's request goes out first: configuring the pair may hold this thread (rtnetlink
    // requests are synchronous) while etcd works on it.
    const [written, configured] = await Promise.allSettled([
      backend.writeWorkloadEndpoint(
        wep,
        fromCalicoIpam ? { ipamHandle: ipamHandleId(conf.name, inv.containerId) } : {},
      ),
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
    log.info(
      {
        HostVeth: hostIf,
        ContainerMAC: wl.containerMac,
      },
      'networked the namespace and wrote the WorkloadEndpoint',
    );

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
      dns,
      ...(conf.prevResult ? { prevResult: conf.prevResult } : {}),
    });
    return encodeResult(result, conf.cniVersion);
  } catch (e) {
    await undo.run(e);
    throw e;
  }
}

/**
 * The endpoint as it is before this ADD. On the Kubernetes datastore the endpoint is the Pod, and
 * the Pod just read answers (a Pod that could not be read fails the ADD with its own error);
 * elsewhere it is read beside the Pod.
 */
function readEndpoint(
  ctx: PluginContext,
  backend: PluginBackend,
  podRead: Promise<PodInfo | undefined>,
  id: { namespace: string; pod?: string | undefined },
  wepName: string,
): Promise<WorkloadEndpoint | undefined> {
  if (id.pod === undefined || ctx.conf.datastoreType !== 'kubernetes' || !backend.endpointOfPod) {
    return backend.getWorkloadEndpoint(id.namespace, wepName);
  }
  return podRead.then(
    (info) => {
      const known = info ? backend.endpointOfPod?.(id.namespace, wepName, info.pod) : undefined;
      return known ? known.endpoint : backend.getWorkloadEndpoint(id.namespace, wepName);
    },
    () => undefined,
  );
}

/**
 * The pod's addresses (single-address CIDRs): from the IPAM plugin with the config as given or as
 * the pool and family annotations rewrite it; from calico-ipam once per `ipAddrs` address; or the
 * `ipAddrsNoIpam` addresses as they are. Pushes the IPAM undo once something is allocated.
 */
async function podAddresses(
  ctx: PluginContext,
  podInfo: PodInfo | undefined,
  existing: WorkloadEndpoint | undefined,
  undo: UndoStack,
): Promise<{ addresses: string[]; dns: CniDns }> {
  const ipam = requireIpam(ctx.conf);
  const source = podInfo?.request.addresses ?? { kind: 'ipam' as const };
  const release = () => ctx.delegate.run(ipam.type, 'DEL', ctx.stdin);
  switch (source.kind) {
    case 'no-ipam':
      ctx.log.info(
        {
          IPs: source.ips.join(','),
        },
        'addresses from the ipAddrsNoIpam annotation, without IPAM',
      );
      return { addresses: source.ips.map(hostCidr), dns: {} };
    case 'ipam-exact': {
      // An earlier sandbox of this pod still holds its addresses until its DEL: as upstream,
      // release them first, or asking for the same ones would fail. Only where that sandbox's
      // handle holds them (upstream releases whoever holds them).
      const oldContainer = existing?.spec.containerID;
      if (oldContainer && oldContainer !== ctx.inv.containerId && existing?.spec.ipNetworks?.length) {
        const backend = await ctx.backend();
        const released = await backend.releaseAddresses(
          existing.spec.ipNetworks.map(addressOf),
          ipamHandleId(ctx.conf.name, oldContainer),
        );
        if (released.length > 0) {
          ctx.log.info(
            {
              ContainerID: oldContainer,
              IPs: released.join(','),
            },
            'released the addresses of the pod’s earlier sandbox',
          );
        }
      }
      const addresses: string[] = [];
      let dns: CniDns = {};
      for (const [n, ip] of source.ips.entries()) {
        let out: string;
        try {
          out = await ctx.delegate.run(ipam.type, 'ADD', ctx.stdin, `IP=${ip}`);
        } catch (e) {
          // Say which annotation asked for the address, keeping the IPAM plugin's code and words.
          if (!isCniPluginError(e)) throw e;
          throw new CniPluginError(
            e.code,
            `pod ${ctx.inv.args.podNamespace}/${ctx.inv.args.podName}: annotation cni.projectcalico.org/ipAddrs asks for ${ip}: ${e.message}`,
            {
              cause: e,
              ...(e.details !== undefined ? { details: e.details } : {}),
              ...(e.delegateCode !== undefined ? { delegateCode: e.delegateCode } : {}),
            },
          );
        }
        if (n === 0) undo.push(`release addresses (${ipam.type} DEL)`, release);
        const r = decodeDelegateResult(out, ipam.type, ctx.conf.cniVersion);
        const got = r.ips.map((x) => addressOf(x.address));
        if (!got.includes(ip)) {
          throw new CniPluginError(
            'ipam-failed',
            `IPAM plugin ${ipam.type} was asked for ${ip} (annotation cni.projectcalico.org/ipAddrs) and returned ${got.join(', ') || 'nothing'}`,
          );
        }
        addresses.push(hostCidr(ip));
        if (Object.keys(r.dns).length > 0) dns = r.dns;
      }
      return { addresses, dns };
    }
    case 'ipam': {
      const stdin = podInfo ? ipamStdin(ctx.stdin, ctx.conf.raw, podInfo.request.ipam) : ctx.stdin;
      const out = await ctx.delegate.run(ipam.type, 'ADD', stdin);
      undo.push(`release addresses (${ipam.type} DEL)`, release);
      const r = decodeDelegateResult(out, ipam.type, ctx.conf.cniVersion);
      if (r.ips.length === 0) {
        throw new CniPluginError('ipam-failed', `IPAM plugin ${ipam.type} returned no IP addresses`);
      }
      return { addresses: narrowAddresses(r.ips.map((ip) => ip.address)), dns: r.dns };
    }
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
