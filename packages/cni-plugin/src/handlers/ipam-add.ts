/**
 * `calico-ipam` ADD (upstream `ipamplugin.cmdAdd`): addresses for handle `<network>.<containerID>`
 * on this node, with attributes `node`, `timestamp` and, for pods, `namespace` and `pod`.
 *
 * `IP=<addr>` in CNI_ARGS asks for that address; otherwise one IPv4 (`assign_ipv4`, default
 * "true") and no IPv6 (`assign_ipv6`, default "false") from `ipv4_pools`/`ipv6_pools` or every
 * enabled pool that selects the node and, for a Kubernetes pod, its namespace: in Kubernetes mode
 * (or with `kubernetes.kubeconfig`) the pod's Namespace is read for its labels, which IP pool
 * namespaceSelectors match (upstream; a calico plugin running this in process has read it already).
 * The result is an IPAM result: `ips` with the block's prefix length, no interfaces.
 */
import { withFields } from '@calico-ts/api/log';
import { CniPluginError } from '../errors.js';
import { DEFAULT_IPAM_LOCK_FILE } from '../io/host-lock.js';
import { ipamHandleId } from '../naming.js';
import { workloadIdentity } from '../spec/cni-args.js';
import { encodeResult } from '../spec/result.js';
import { ipamOrDefaults, type PluginContext, resolveNodename } from './context.js';
import { ipamReadsNamespace } from './kubernetes.js';

export async function cmdIpamAdd(ctx: PluginContext): Promise<Record<string, unknown>> {
  const { conf, inv } = ctx;
  const ipam = ipamOrDefaults(conf);
  const node = await resolveNodename(ctx, false);
  const id = workloadIdentity(inv.args);
  const handleId = ipamHandleId(conf.name, inv.containerId);
  const attrs: Record<string, string> = { node, timestamp: goTimestamp(ctx.host.now()) };
  if (id.pod !== undefined) {
    attrs.namespace = id.namespace;
    attrs.pod = id.pod;
  }
  const log = withFields(ctx.log, { ContainerID: inv.containerId, HandleID: handleId });
  const backend = await ctx.backend();
  let namespaceLabels: Record<string, string> | undefined;
  if (inv.args.ip === undefined && id.pod !== undefined && ipamReadsNamespace(conf)) {
    const ns = await (await ctx.kube()).getNamespace(id.namespace);
    namespaceLabels = ns.metadata.labels ?? {};
  }

  // One calico-ipam at a time on this host (best effort), as upstream.
  const release = await ctx.lock.acquire(conf.ipamLockFile ?? DEFAULT_IPAM_LOCK_FILE);
  let cidrs: string[];
  try {
    if (inv.args.ip !== undefined) {
      log.info({ IP: inv.args.ip }, 'assigning the requested address');
      cidrs = [await backend.assignIp({ ip: inv.args.ip, handleId, node, attrs })];
    } else {
      const num4 = ipam.assignIpv4 ? 1 : 0;
      const num6 = ipam.assignIpv6 ? 1 : 0;
      if (num4 + num6 === 0) {
        throw new CniPluginError(
          'invalid-config',
          'ipam: assign_ipv4 and assign_ipv6 are both "false": nothing to assign',
        );
      }
      cidrs = await backend.autoAssign({
        handleId,
        node,
        attrs,
        num4,
        num6,
        ipv4Pools: ipam.ipv4Pools,
        ipv6Pools: ipam.ipv6Pools,
        ...(namespaceLabels ? { namespaceLabels } : {}),
      });
    }
  } finally {
    await release();
  }
  log.info({ addresses: cidrs.join(',') }, 'assigned addresses');
  return encodeResult(
    { interfaces: [], ips: cidrs.map((address) => ({ address })), routes: [], dns: {} },
    conf.cniVersion,
  );
}

/** Go's `time.Time.String()` in UTC, as upstream stores it: `2006-01-02 15:04:05.999999999 +0000 UTC`. */
export function goTimestamp(d: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const frac = d.getUTCMilliseconds() === 0 ? '' : `.${p(d.getUTCMilliseconds(), 3).replace(/0+$/, '')}`;
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(
    d.getUTCMinutes(),
  )}:${p(d.getUTCSeconds())}${frac} +0000 UTC`;
}
