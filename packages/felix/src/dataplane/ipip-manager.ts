/**
 * IpipManager: keeps this node's IPIP device and the IPIP pools' routes equal to the desired state
 * from `resolveIpip` (upstream `ipip_mgr.go` with the device half of `route_mgr.go`).
 *
 *   setState(state) ──► apply():
 *     1. device   tunl0: asked for when missing (the kernel's `ipip` module makes it as its
 *                 fallback device, so `exists` is success); MTU set; exactly the tunnel address
 *                 /32; up. Not made until the node has a tunnel address.
 *     2. routes   <block> via <node IP> dev tunl0 onlink, <block> via <node IP> on the node's own
 *                 interface (CrossSubnet, same subnet), blackhole <local block>: replaced when
 *                 missing or different; stale owned ones deleted
 *   IPIP off: owned routes are removed; tunl0 stays, as upstream leaves it (the kernel does not
 *   delete a fallback device anyway).
 *
 * Ownership: a route is ours when it carries the tunnel route protocol (80 unless
 * DeviceRouteProtocol says otherwise) and is on tunl0, a blackhole, or a gateway route on a
 * non-workload interface, and the VXLAN manager does not want that destination (`claimedElsewhere`).
 * Routes BIRD programs over tunl0 carry BIRD's protocol and are left alone.
 *
 * API (a DataplaneManager): `onUpdate(diff)` takes a diff's `ipip` part and `setState` records it;
 * `completeDeferredWork()` applies when a state was recorded since the last one (`dirty`).
 * `apply()` reads the kernel back and makes it right, resolving with what it changed; it throws
 * after doing what it could when a step failed (the caller retries on its timer). A kernel without the `ipip` module fails with a message naming it. Thread-safety: calls
 * are serialised by the caller (LinuxDataplane).
 */
import { cidrContains } from '@calico-ts/api/net';
import { isNetlinuxError, type Link, type Netlinux, type Route, type RouteSpec } from '@calico-ts/netlinux';
import { IPIP_DEVICE, type IpipDevice, type IpipState } from '../calc/ipip-resolver.js';
import type { DataplaneDiff } from '../calc/types.js';
import type { EncapRoute } from '../calc/vxlan-resolver.js';
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';
import type { DataplaneManager } from './dataplane-manager.js';
import { type EncapManagerOptions, encapRouteSpec, syncOwnedRoutes } from './encap-routes.js';
import { matchesPrefixes } from './interface-monitor.js';
import { protocolMatches } from './route-manager.js';
import type { DeviceAction } from './vxlan-manager.js';

/** The kernel calls the IPIP manager makes (a Netlinux, or a fake of one). */
export type IpipNetOps = Pick<
  Netlinux,
  | 'listLinks'
  | 'createIpip'
  | 'setLink'
  | 'listAddrs'
  | 'addAddr'
  | 'delAddr'
  | 'listRoutes'
  | 'replaceRoute'
  | 'delRoute'
  | 'writeSysctls'
>;

/** What an IpipManager acts on, and how. */
export interface IpipManagerOptions extends EncapManagerOptions {
  /** The kernel. */
  readonly net: IpipNetOps;
}

/** What one `apply()` changed in the kernel. */
export interface IpipApplyResult {
  /** What became of tunl0. */
  readonly device: DeviceAction;
  /** Destinations of the routes added or replaced. */
  readonly routesAdded: readonly string[];
  /** Destinations of the routes removed. */
  readonly routesRemoved: readonly string[];
}

/**
 * Keeps tunl0 and the IPIP routes in the kernel as the last state given says (see the top of this
 * file).
 */
export class IpipManager implements DataplaneManager {
  readonly #o: IpipManagerOptions;
  readonly #log: Logger;
  #state: IpipState | undefined;
  #dirty = false;

  constructor(opts: IpipManagerOptions) {
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
  }

  /** The state last given, if any. */
  get state(): IpipState | undefined {
    return this.#state;
  }

  /** Records the desired state; the next `apply()` programs it. */
  setState(state: IpipState): void {
    this.#state = state;
    this.#dirty = true;
  }

  /** True when a state was recorded that `completeDeferredWork()` has not yet programmed. */
  get dirty(): boolean {
    return this.#dirty;
  }

  onUpdate(diff: DataplaneDiff): void {
    if (diff.ipip) this.setState(diff.ipip);
  }

  async completeDeferredWork(): Promise<void> {
    if (!this.#dirty) return;
    this.#dirty = false;
    try {
      await this.apply();
    } catch (e) {
      this.#dirty = true;
      throw e;
    }
  }

  /** The destinations the current state programs (for the VXLAN manager's ownership). */
  wants(dst: string): boolean {
    return this.#state?.routes.some((r) => r.dst === dst) ?? false;
  }

  /**
   * Reads the kernel back and makes it match the state: what it changed, or undefined before any
   * state. Throws after doing what it could when a step failed.
   */
  async apply(): Promise<IpipApplyResult | undefined> {
    const st = this.#state;
    if (!st) return undefined;
    const errors: string[] = [];
    const out = {
      device: 'absent' as DeviceAction,
      routesAdded: [] as string[],
      routesRemoved: [] as string[],
    };
    const ns = this.#o.netns;
    const existing = (await this.#o.net.listLinks(ns)).find((l) => l.name === IPIP_DEVICE);
    if (existing) out.device = 'unchanged';

    let deviceReady = false;
    if (st.enabled && st.device?.tunnelAddress !== undefined) {
      try {
        out.device = await this.#ensureDevice(st.device, st.device.tunnelAddress, existing);
        deviceReady = true;
      } catch (e) {
        errors.push(`device ${IPIP_DEVICE}: ${errorMessage(e)}`);
      }
    }
    await this.#syncRoutes(st.enabled ? st.routes : [], deviceReady, out, errors);

    const changed =
      (out.device !== 'unchanged' && out.device !== 'absent') ||
      out.routesAdded.length > 0 ||
      out.routesRemoved.length > 0;
    if (changed) this.#log.info(out, 'IPIP dataplane updated');
    if (errors.length > 0) throw new Error(`IPIP programming failed: ${errors.join('; ')}`);
    return out;
  }

  async #ensureDevice(want: IpipDevice, address: string, existing: Link | undefined): Promise<DeviceAction> {
    const ns = this.#o.netns;
    const net = this.#o.net;
    let action: DeviceAction = 'unchanged';
    let link = existing;
    if (!link) {
      try {
        await net.createIpip({ name: want.name }, ns);
      } catch (e) {
        // Loading the module makes tunl0 and then refuses the request for it: the device is there.
        if (!isNetlinuxError(e, 'exists')) {
          if (isNetlinuxError(e, 'invalid'))
            throw new Error(
              `the kernel cannot make an IPIP device (is the ipip module available?): ${errorMessage(e)}`,
            );
          throw e;
        }
      }
      link = (await net.listLinks(ns)).find((l) => l.name === want.name);
      if (!link) throw new Error(`${want.name} is missing after it was created`);
      action = 'created';
    }
    if (link.kind !== 'ipip')
      throw new Error(`${want.name} exists but is a ${link.kind || 'plain'} device, not ipip`);
    if (link.mtu !== want.mtu) {
      await net.setLink(want.name, { mtu: want.mtu }, ns);
      if (action === 'unchanged') action = 'updated';
    }
    const cidr = `${address}/32`;
    const addrs = await net.listAddrs({ dev: want.name, family: 4 }, ns);
    for (const a of addrs) {
      if (a.cidr === cidr) continue;
      await net.delAddr(want.name, a.cidr, { ignoreMissing: true }, ns);
      if (action === 'unchanged') action = 'updated';
    }
    if (!addrs.some((a) => a.cidr === cidr)) {
      await net.addAddr(want.name, cidr, undefined, ns);
      if (action === 'unchanged') action = 'updated';
    }
    if (!link.up) {
      await net.setLink(want.name, { up: true }, ns);
      // Decapsulated packets arrive here and are forwarded on to the pods.
      await net.writeSysctls([[`net.ipv4.conf.${want.name}.forwarding`, '1']], ns);
      if (action === 'unchanged') action = 'updated';
    }
    return action;
  }

  /** Whether a route in the kernel is one this manager programs (see the ownership note above). */
  owns(r: Route): boolean {
    if (r.table !== undefined || r.family !== 4) return false;
    if (!protocolMatches(r.proto, this.#o.protocol)) return false;
    if (this.#o.claimedElsewhere?.(r.dst)) return false;
    if (r.dev === IPIP_DEVICE || r.type === 'blackhole') return true;
    return (
      r.type === undefined &&
      r.gateway !== undefined &&
      r.dev !== undefined &&
      !matchesPrefixes(r.dev, this.#o.workloadPrefixes)
    );
  }

  async #syncRoutes(
    routes: readonly EncapRoute[],
    deviceReady: boolean,
    out: { routesAdded: string[]; routesRemoved: string[] },
    errors: string[],
  ): Promise<void> {
    const ns = this.#o.netns;
    const net = this.#o.net;
    // The interface of a same-subnet route is the one whose subnet holds the gateway.
    const addrs = routes.some((r) => r.kind === 'same-subnet') ? await net.listAddrs({ family: 4 }, ns) : [];
    const parentOf = (gw: string) =>
      addrs.find((a) => a.dev !== IPIP_DEVICE && a.address !== gw && cidrContains(a.cidr, gw))?.dev;
    const desired = new Map<string, RouteSpec>();
    for (const r of routes) {
      if ((r.kind === 'tunnel' || r.kind === 'device') && !deviceReady) continue;
      const spec = encapRouteSpec(
        r,
        r.kind === 'same-subnet' ? parentOf(r.gateway) : undefined,
        this.#o.protocol,
      );
      if (spec) desired.set(spec.dst, spec);
      else errors.push(`route ${r.dst}: no interface of this node is on the subnet of its gateway`);
    }
    await syncOwnedRoutes(
      { net, netns: ns, family: 4, protocol: this.#o.protocol, owns: (r) => this.owns(r) },
      desired,
      out,
      errors,
    );
  }
}
