/**
 * Calico's workload veth on Linux, through `@calico-ts/netlinux` (upstream
 * `cni-plugin/pkg/dataplane/linux/dataplane_linux.go`).
 *
 * The process runs in the host's (node's) network namespace; the pod's namespace is CNI_NETNS.
 *
 * ```
 *  node netns                                   pod netns (CNI_NETNS)
 *  cali<11>  mac ee:ee:ee:ee:ee:ee  <──veth──>  eth0  <ip>/32
 *    proxy_arp=1 proxy_delay=0                    169.254.1.1 dev eth0 scope link
 *    forwarding=1 route_localnet=1                default via 169.254.1.1 dev eth0
 *    accept_ra=0                                  (v6: <ip>/128, default via fe80::ecee:eeff:feee:eeee)
 *  <ip>/32 dev cali<11> scope link
 * ```
 *
 * Set-up: `createPair` (pod end directly in the netns, with a MAC chosen here; when a name is taken,
 * CNI_IFNAME in the pod is refused and a stale host end is deleted first): the ADD does this before
 * IPAM, so a duplicate ADD fails having touched nothing. Then `configure`, both ends at once: the pod
 * end's sysctls (DAD off before the link comes up), then it comes up with its addresses and routes;
 * the host end's sysctls, then it comes up with its routes. A failed `configure` deletes the host
 * end, which takes the pod end and every route with it. With netlinux's rtnetlink path (the
 * plugin's), no process is started; otherwise three `ip` processes, the last two side by side.
 */
import { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';
import {
  isNetlinuxError,
  type LinkOp,
  type Netlinux,
  NetlinuxBatchError,
  randomMac,
} from '@calico-ts/netlinux';
import { CniPluginError, isCniPluginError, messageOf } from '../errors.js';
import { isIPv4 } from '../spec/ip.js';
import {
  type Dataplane,
  HOST_VETH_MAC,
  IPV4_GATEWAY,
  IPV6_GATEWAY,
  type ObservedInterface,
  type ObservedWorkload,
  type VethPairSpec,
  type WorkloadNetwork,
  type WorkloadNetworkSpec,
} from './dataplane.js';

/** The netlinux operations this dataplane uses (a real `Netlinux`, or `FakeNetOps` in tests). */
export type NetOps = Pick<
  Netlinux,
  | 'netnsExists'
  | 'findLink'
  | 'createVethPair'
  | 'setLink'
  | 'deleteLink'
  | 'listAddrs'
  | 'addRoute'
  | 'listRoutes'
  | 'writeSysctls'
  | 'readSysctl'
  | 'apply'
>;

export interface LinuxDataplaneOptions {
  log?: Logger;
}

export class LinuxDataplane implements Dataplane {
  readonly #net: NetOps;
  readonly #log: Logger;

  constructor(net: NetOps, options: LinuxDataplaneOptions = {}) {
    this.#net = net;
    this.#log = options.log ?? NOOP_LOGGER;
  }

  async preflight(netns: string, ifName: string): Promise<void> {
    await this.#requireNetns(netns);
    if (await step(`look for ${ifName} in ${netns}`, () => this.#net.findLink(ifName, netns))) {
      throw new CniPluginError('dataplane-failed', `interface ${ifName} already exists in ${netns}`);
    }
  }

  async createPair(p: VethPairSpec): Promise<{ containerMac: string }> {
    const { netns, containerIfName: cont, hostIfName: host } = p;
    // The pod end's MAC is chosen here (as the kernel would: random, locally administered), so
    // the result needs no read-back of the pod end; or the one the pod asks for (hwAddr).
    const containerMac = p.containerMac ?? randomMac();
    const pair = {
      name: host,
      peerName: cont,
      peerNetns: netns,
      mac: HOST_VETH_MAC,
      peerMac: containerMac,
      ...(p.mtu > 0 ? { mtu: p.mtu } : {}),
      ...(p.numQueues > 1 ? { numQueues: p.numQueues } : {}),
    };

    await this.#requireNetns(netns);
    try {
      await this.#net.createVethPair(pair);
    } catch (e) {
      if (!isNetlinuxError(e, 'exists'))
        throw dataplaneError(`create veth ${host} <-> ${cont} in ${netns}`, e);
      // Either CNI_IFNAME is taken in the pod (refuse, touching nothing) or a host end of this name
      // is left from an earlier sandbox of the same pod (delete it and create the pair again).
      await this.preflight(netns, cont);
      if (await step(`delete stale ${host}`, () => this.#net.deleteLink(host, { ignoreMissing: true }))) {
        this.#log.info(`deleted stale host interface ${host}`);
      }
      await step(`create veth ${host} <-> ${cont} in ${netns}`, () => this.#net.createVethPair(pair));
    }
    return { containerMac };
  }

  async configure(spec: WorkloadNetworkSpec, containerMac: string): Promise<WorkloadNetwork> {
    const v4 = spec.addresses.some((a) => isIPv4(a.split('/')[0]!));
    const v6 = spec.addresses.some((a) => !isIPv4(a.split('/')[0]!));
    try {
      await this.#configure(spec, v4, v6);
      return {
        hostIfName: spec.hostIfName,
        hostMac: HOST_VETH_MAC,
        containerMac,
        containerMtu: spec.mtu > 0 ? spec.mtu : DEFAULT_VETH_MTU,
      };
    } catch (e) {
      try {
        await this.#net.deleteLink(spec.hostIfName, { ignoreMissing: true });
      } catch (undoError) {
        this.#log.warn(`failed to delete ${spec.hostIfName} after a failed set-up: ${messageOf(undoError)}`);
      }
      throw e;
    }
  }

  async setUp(spec: WorkloadNetworkSpec): Promise<WorkloadNetwork> {
    const { containerMac } = await this.createPair(spec);
    return this.configure(spec, containerMac);
  }

  /**
   * The two ends are independent from here: with `ip` each runs in its own process, at the same
   * time (with rtnetlink the requests are synchronous and simply run one after the other).
   */
  async #configure(spec: WorkloadNetworkSpec, v4: boolean, v6: boolean): Promise<void> {
    const [pod, host] = await Promise.allSettled([
      this.#configurePodEnd(spec, v4, v6),
      this.#configureHostEnd(spec, v4, v6),
    ]);
    if (pod.status === 'rejected') throw pod.reason;
    if (host.status === 'rejected') throw host.reason;
  }

  async #configurePodEnd(spec: WorkloadNetworkSpec, v4: boolean, v6: boolean): Promise<void> {
    const net = this.#net;
    const { netns, containerIfName: cont } = spec;
    // Pod end sysctls. A new netns starts with forwarding off; only turn it on when allowed.
    const podSysctls: [string, string][] = [];
    if (v6) {
      podSysctls.push(
        ['net.ipv6.conf.all.disable_ipv6', '0'],
        ['net.ipv6.conf.default.disable_ipv6', '0'],
        ['net.ipv6.conf.lo.disable_ipv6', '0'],
        [`net.ipv6.conf.${cont}.accept_dad`, '0'],
      );
    }
    if (spec.allowIpForwarding) {
      if (v4) podSysctls.push(['net.ipv4.ip_forward', '1']);
      if (v6) podSysctls.push(['net.ipv6.conf.all.forwarding', '1']);
    }
    if (podSysctls.length > 0)
      await step(`set sysctls in ${netns}`, () => net.writeSysctls(podSysctls, netns));

    // Pod end: up, addresses, routes via the host end.
    const podOps: LinkOp[] = [{ op: 'up', dev: cont }];
    for (const a of spec.addresses) {
      podOps.push({
        op: 'addr-add',
        dev: cont,
        cidr: a,
        ...(isIPv4(a.split('/')[0]!) ? {} : { noDad: true }),
      });
    }
    if (v4) podOps.push({ op: 'route-add', dev: cont, dst: `${IPV4_GATEWAY}/32`, scope: 'link' });
    for (const dst of spec.routes) {
      const isV4 = isIPv4(dst.split('/')[0]!);
      if (isV4 && !v4) continue;
      if (!isV4 && !v6) continue;
      podOps.push({ op: 'route-add', dev: cont, dst, gateway: isV4 ? IPV4_GATEWAY : IPV6_GATEWAY });
    }
    await step(`configure ${cont} in ${netns}`, () => net.apply(podOps, netns));
  }

  async #configureHostEnd(spec: WorkloadNetworkSpec, v4: boolean, v6: boolean): Promise<void> {
    const net = this.#net;
    const host = spec.hostIfName;
    // Host end sysctls. DAD must be off before the link comes up.
    const hostSysctls: [string, string][] = [];
    if (v4) {
      hostSysctls.push(
        [`net.ipv4.conf.${host}.route_localnet`, '1'],
        [`net.ipv4.neigh.${host}.proxy_delay`, '0'],
        [`net.ipv4.conf.${host}.proxy_arp`, '1'],
        [`net.ipv4.conf.${host}.forwarding`, '1'],
      );
    }
    if (v6) {
      hostSysctls.push(
        [`net.ipv6.conf.${host}.disable_ipv6`, '0'],
        [`net.ipv6.conf.${host}.accept_dad`, '0'],
        [`net.ipv6.conf.${host}.proxy_ndp`, '1'],
        [`net.ipv6.conf.${host}.forwarding`, '1'],
      );
    }
    await step(`set sysctls of ${host}`, () => net.writeSysctls(hostSysctls));
    // Router advertisements from a pod must never configure the host; absent when IPv6 is off.
    try {
      await net.writeSysctls([[`net.ipv6.conf.${host}.accept_ra`, '0']]);
    } catch (e) {
      if (!isNetlinuxError(e, 'not-found')) throw dataplaneError(`set net.ipv6.conf.${host}.accept_ra=0`, e);
    }

    // Host end: up, then the /32 (/128) routes to the pod, in one request.
    const hostOps: LinkOp[] = [{ op: 'up', dev: host }];
    for (const a of spec.addresses) hostOps.push({ op: 'route-add', dev: host, dst: a, scope: 'link' });
    try {
      await net.apply(hostOps);
    } catch (e) {
      const failed = e instanceof NetlinuxBatchError ? e.index : undefined;
      // A route already there (Felix may have programmed it first) is checked one by one below.
      if (failed === undefined || failed === 0 || !isNetlinuxError(e, 'exists')) {
        throw dataplaneError(failed === 0 ? `set ${host} up` : `add the routes to ${host}`, e);
      }
      for (const a of spec.addresses.slice(failed - 1)) await this.#addHostRoute(host, a);
    }
  }

  /** `<ip>/32 dev <host> scope link`; already there on this device is fine, on another is an error. */
  async #addHostRoute(host: string, dst: string): Promise<void> {
    const net = this.#net;
    try {
      await net.addRoute({ dst, dev: host, scope: 'link' });
      return;
    } catch (e) {
      if (!isNetlinuxError(e, 'exists')) throw dataplaneError(`add route ${dst} dev ${host}`, e);
    }
    const family = isIPv4(dst.split('/')[0]!) ? 4 : 6;
    const mine = await step(`list routes of ${host}`, () => net.listRoutes({ dev: host, family }));
    if (mine.some((r) => r.dst === dst)) return;
    const all = await step('list routes', () => net.listRoutes({ family }));
    const other = all.find((r) => r.dst === dst);
    throw new CniPluginError(
      'dataplane-failed',
      `route ${dst} already exists for an interface other than ${host}${other?.dev ? `: it uses ${other.dev}` : ''}`,
    );
  }

  async removeHostInterface(name: string): Promise<boolean> {
    return step(`delete ${name}`, () => this.#net.deleteLink(name, { ignoreMissing: true }));
  }

  async tearDown(netns: string, ifName: string): Promise<'removed' | 'absent'> {
    if (netns === '') return 'absent';
    const exists = await step(`open ${netns}`, () => this.#net.netnsExists(netns));
    if (!exists) return 'absent';
    const removed = await step(`delete ${ifName} in ${netns}`, () =>
      this.#net.deleteLink(ifName, { ignoreMissing: true }, netns),
    );
    return removed ? 'removed' : 'absent';
  }

  async observe(netns: string, ifName: string, hostIfName: string): Promise<ObservedWorkload> {
    const net = this.#net;
    const exists = await step(`open ${netns}`, () => net.netnsExists(netns));
    const out: ObservedWorkload = { netnsExists: exists };
    if (exists) {
      const c = await this.#observeInterface(ifName, netns);
      if (c) out.container = c;
    }
    const h = await this.#observeInterface(hostIfName, undefined);
    if (h) {
      const sysctls: Record<string, string | undefined> = {};
      for (const key of [`net.ipv4.conf.${hostIfName}.proxy_arp`, `net.ipv4.conf.${hostIfName}.forwarding`]) {
        try {
          sysctls[key] = await net.readSysctl(key);
        } catch {
          sysctls[key] = undefined;
        }
      }
      out.host = { ...h, sysctls };
    }
    return out;
  }

  async #observeInterface(name: string, ns: string | undefined): Promise<ObservedInterface | undefined> {
    const net = this.#net;
    const where = ns === undefined ? '' : ` in ${ns}`;
    const link = await step(`read ${name}${where}`, () => net.findLink(name, ns));
    if (!link) return undefined;
    const addrs = await step(`list addresses of ${name}${where}`, () => net.listAddrs({ dev: name }, ns));
    const routes = await step(`list routes of ${name}${where}`, () => net.listRoutes({ dev: name }, ns));
    return {
      name,
      up: link.up,
      mac: link.mac,
      mtu: link.mtu,
      addresses: addrs.filter((a) => a.scope !== 'link').map((a) => a.cidr),
      routes: routes.map((r) => {
        const o: { dst: string; gateway?: string; dev?: string; scope?: string } = { dst: r.dst };
        if (r.gateway !== undefined) o.gateway = r.gateway;
        o.dev = r.dev ?? name;
        if (r.scope !== undefined) o.scope = r.scope;
        return o;
      }),
    };
  }

  async #requireNetns(netns: string): Promise<void> {
    let exists: boolean;
    try {
      exists = await this.#net.netnsExists(netns);
    } catch (e) {
      throw new CniPluginError('invalid-netns', `CNI_NETNS ${netns} cannot be opened: ${messageOf(e)}`);
    }
    if (!exists) throw new CniPluginError('invalid-netns', `CNI_NETNS ${netns} is not a network namespace`);
  }
}

/** What the kernel gives a veth without an MTU. */
const DEFAULT_VETH_MTU = 1500;

/** Runs one kernel operation; a netlinux failure becomes `dataplane-failed` saying what was being done. */
async function step<T>(what: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (e) {
    if (isCniPluginError(e)) throw e;
    throw dataplaneError(what, e);
  }
}

function dataplaneError(what: string, e: unknown): CniPluginError {
  return new CniPluginError('dataplane-failed', `failed to ${what}: ${messageOf(e)}`, { cause: e });
}
