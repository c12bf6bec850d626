/**
 * VxlanManager: keeps this node's VXLAN device, routes, neighbours and FDB entries equal to the
 * desired state from `resolveVxlan` (upstream `vxlan_mgr.go`, `route_mgr.go` device handling,
 * `vxlanfdb`).
 *
 *   setState(state) ──► apply():
 *     1. device   vxlan.calico: created if missing, recreated if its VNI, port, source address,
 *                 parent interface or MAC differ; MTU set; exactly the tunnel address /32; up;
 *                 forwarding on (decapsulated packets are forwarded to the pods)
 *     2. FDB      <remote MAC> dst <remote node IP> self permanent   ─┐ before the routes that need
 *        neigh    <remote tunnel addr> lladdr <remote MAC> permanent ┘ them; stale ones removed
 *     3. routes   replaced when missing or different, stale owned ones deleted
 *   VXLAN off: the device is deleted (its routes, neighbours and FDB go with it) and owned routes
 *   elsewhere are removed.
 *
 * One manager per address family (`family`, default 4): vxlan.calico with IPv4 routes, or
 * vxlan-v6.calico with IPv6 routes, a /128 tunnel address and IPv6 neighbours; each owns only
 * routes of its family.
 *
 * Ownership: everything on the VXLAN device is Felix's. Elsewhere a route is ours when it carries
 * the tunnel route protocol (80 unless DeviceRouteProtocol says otherwise) and is a blackhole or a
 * gateway route on a non-workload interface, unless the IPIP manager wants that destination
 * (`claimedElsewhere`); workload routes (`cali*`) belong to RouteManager.
 *
 * API (a DataplaneManager): `onUpdate(diff)` takes this family's part of a diff (`vxlan` or
 * `vxlanV6`) and `setState` records it; `completeDeferredWork()` applies when a state was recorded
 * since the last one (`dirty`). `apply()` reads the kernel back and makes it right, resolving with
 * what it changed; it throws after doing what it could when a step failed (the caller retries on
 * its timer). Thread-safety: calls are serialised by the caller (LinuxDataplane).
 */
import type { Link, Netlinux, Route, RouteSpec } from '@calico-ts/netlinux';
import type { DataplaneDiff } from '../calc/types.js';
import { type VxlanDevice, type VxlanState, vxlanDeviceName } from '../calc/vxlan-resolver.js';
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';
import type { DataplaneManager } from './dataplane-manager.js';
import { type EncapManagerOptions, encapRouteSpec, syncOwnedRoutes } from './encap-routes.js';
import { matchesPrefixes } from './interface-monitor.js';
import { protocolMatches } from './route-manager.js';

export type VxlanNetOps = Pick<
  Netlinux,
  | 'listLinks'
  | 'createVxlan'
  | 'deleteLink'
  | 'setLink'
  | 'listAddrs'
  | 'addAddr'
  | 'delAddr'
  | 'listRoutes'
  | 'replaceRoute'
  | 'delRoute'
  | 'listNeighbours'
  | 'replaceNeighbour'
  | 'delNeighbour'
  | 'listFdb'
  | 'replaceFdb'
  | 'delFdb'
  | 'writeSysctls'
>;

export interface VxlanManagerOptions extends EncapManagerOptions {
  /** The kernel. */
  readonly net: VxlanNetOps;
  /** The address family: 4 (vxlan.calico, the default) or 6 (vxlan-v6.calico). */
  readonly family?: 4 | 6;
}

export type DeviceAction = 'created' | 'recreated' | 'updated' | 'unchanged' | 'removed' | 'absent';

export interface VxlanApplyResult {
  readonly device: DeviceAction;
  readonly routesAdded: readonly string[];
  readonly routesRemoved: readonly string[];
  readonly neighboursSet: readonly string[];
  readonly neighboursRemoved: readonly string[];
  readonly fdbSet: readonly string[];
  readonly fdbRemoved: readonly string[];
}

/** Why an existing device cannot be kept (upstream `vxlanLinksIncompat`), or undefined. */
export function vxlanIncompatibility(link: Link, want: VxlanDevice, parentDev: string): string | undefined {
  if (link.kind !== 'vxlan' || !link.vxlan) return `link type: ${link.kind || 'none'} vs vxlan`;
  const v = link.vxlan;
  if (v.vni !== want.vni) return `vni: ${v.vni} vs ${want.vni}`;
  if (v.port !== want.port) return `port: ${v.port} vs ${want.port}`;
  if (v.local !== want.parentAddress) return `source address: ${v.local ?? 'none'} vs ${want.parentAddress}`;
  if (v.dev !== undefined && v.dev !== parentDev) return `parent interface: ${v.dev} vs ${parentDev}`;
  if (v.learning) return 'learning: on vs off';
  if (link.mac !== want.mac) return `MAC: ${link.mac} vs ${want.mac}`;
  return undefined;
}

export class VxlanManager implements DataplaneManager {
  readonly #o: VxlanManagerOptions;
  readonly #log: Logger;
  readonly #family: 4 | 6;
  /** This family's device name. */
  readonly device: string;
  #state: VxlanState | undefined;
  #dirty = false;

  constructor(opts: VxlanManagerOptions) {
    this.#o = opts;
    this.#log = opts.log ?? NOOP_LOGGER;
    this.#family = opts.family ?? 4;
    this.device = vxlanDeviceName(this.#family);
  }

  get state(): VxlanState | undefined {
    return this.#state;
  }

  /** True when a state was recorded that `completeDeferredWork()` has not yet programmed. */
  get dirty(): boolean {
    return this.#dirty;
  }

  setState(state: VxlanState): void {
    this.#state = state;
    this.#dirty = true;
  }

  onUpdate(diff: DataplaneDiff): void {
    const state = this.#family === 6 ? diff.vxlanV6 : diff.vxlan;
    if (state) this.setState(state);
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

  async apply(): Promise<VxlanApplyResult | undefined> {
    const st = this.#state;
    if (!st) return undefined;
    const errors: string[] = [];
    const out = {
      device: 'absent' as DeviceAction,
      routesAdded: [] as string[],
      routesRemoved: [] as string[],
      neighboursSet: [] as string[],
      neighboursRemoved: [] as string[],
      fdbSet: [] as string[],
      fdbRemoved: [] as string[],
    };
    const ns = this.#o.netns;
    const links = await this.#o.net.listLinks(ns);
    const existing = links.find((l) => l.name === this.device);

    let deviceReady = false;
    let parentDev: string | undefined;
    if (!st.enabled) {
      if (existing) {
        await this.#o.net.deleteLink(this.device, { ignoreMissing: true }, ns);
        out.device = 'removed';
      }
    } else if (st.device) {
      const addrs = await this.#o.net.listAddrs({ family: this.#family }, ns);
      parentDev = addrs.find((a) => a.address === st.device?.parentAddress && a.dev !== this.device)?.dev;
      if (parentDev === undefined) {
        errors.push(`no interface holds this node's IP ${st.device.parentAddress}`);
      } else {
        try {
          out.device = await this.#ensureDevice(st.device, existing, parentDev);
          deviceReady = true;
        } catch (e) {
          errors.push(`device ${this.device}: ${errorMessage(e)}`);
        }
      }
    } else if (existing) {
      out.device = 'unchanged';
    }

    if (deviceReady) {
      await this.#syncFdb(st, out, errors);
      await this.#syncNeighbours(st, out, errors);
    }
    await this.#syncRoutes(st, deviceReady, parentDev, out, errors);

    const changed =
      out.device !== 'unchanged' && out.device !== 'absent'
        ? true
        : [
            out.routesAdded,
            out.routesRemoved,
            out.neighboursSet,
            out.neighboursRemoved,
            out.fdbSet,
            out.fdbRemoved,
          ].some((l) => l.length > 0);
    const v = this.#family === 4 ? 'VXLAN' : 'IPv6 VXLAN';
    if (changed) this.#log.info(out, `${v} dataplane updated`);
    if (errors.length > 0) throw new Error(`${v} programming failed: ${errors.join('; ')}`);
    return out;
  }

  async #ensureDevice(
    want: VxlanDevice,
    existing: Link | undefined,
    parentDev: string,
  ): Promise<DeviceAction> {
    const ns = this.#o.netns;
    const net = this.#o.net;
    let action: DeviceAction = 'unchanged';
    let link = existing;
    if (link) {
      const why = vxlanIncompatibility(link, want, parentDev);
      if (why !== undefined) {
        this.#log.warn(
          { device: want.name, mismatch: why },
          'VXLAN device has an incompatible configuration; recreating it',
        );
        await net.deleteLink(want.name, { ignoreMissing: true }, ns);
        link = undefined;
        action = 'recreated';
      }
    }
    if (!link) {
      await net.createVxlan(
        {
          name: want.name,
          vni: want.vni,
          port: want.port,
          local: want.parentAddress,
          dev: parentDev,
          learning: false,
          mtu: want.mtu,
          mac: want.mac,
        },
        ns,
      );
      if (action === 'unchanged') action = 'created';
    } else if (link.mtu !== want.mtu) {
      await net.setLink(want.name, { mtu: want.mtu }, ns);
      action = 'updated';
    }
    const cidr = `${want.tunnelAddress}/${this.#family === 4 ? 32 : 128}`;
    // The kernel's own link-local address of an IPv6 device stays.
    const addrs = (await net.listAddrs({ dev: want.name, family: this.#family }, ns)).filter(
      (a) => !(this.#family === 6 && a.address.startsWith('fe80:')),
    );
    for (const a of addrs) {
      if (a.cidr === cidr) continue;
      await net.delAddr(want.name, a.cidr, { ignoreMissing: true }, ns);
      if (action === 'unchanged') action = 'updated';
    }
    if (!addrs.some((a) => a.cidr === cidr)) {
      // IPv6: no duplicate address detection, so the address is usable at once.
      await net.addAddr(want.name, cidr, this.#family === 6 ? { noDad: true } : undefined, ns);
      if (action === 'unchanged') action = 'updated';
    }
    if (!link?.up) {
      await net.setLink(want.name, { up: true }, ns);
      // Decapsulated packets arrive here and are forwarded on to the pods.
      await net.writeSysctls([[`net.ipv${this.#family}.conf.${want.name}.forwarding`, '1']], ns);
      if (action === 'unchanged') action = 'updated';
    }
    return action;
  }

  async #syncFdb(
    st: VxlanState,
    out: { fdbSet: string[]; fdbRemoved: string[] },
    errors: string[],
  ): Promise<void> {
    const ns = this.#o.netns;
    const dev = this.device;
    const current = (await this.#o.net.listFdb(dev, ns)).filter((e) => e.dst !== undefined);
    const want = new Map(st.fdb.map((f) => [f.mac, f.dst]));
    for (const f of st.fdb) {
      const ok = current.some((e) => e.mac === f.mac && e.dst === f.dst && e.state === 'permanent');
      if (ok) continue;
      try {
        await this.#o.net.replaceFdb({ mac: f.mac, dev, dst: f.dst }, ns);
        out.fdbSet.push(`${f.mac} dst ${f.dst}`);
      } catch (e) {
        errors.push(`fdb ${f.mac}: ${errorMessage(e)}`);
      }
    }
    for (const e of current) {
      if (want.get(e.mac) === e.dst) continue;
      try {
        if (await this.#o.net.delFdb({ mac: e.mac, dev, dst: e.dst! }, { ignoreMissing: true }, ns)) {
          out.fdbRemoved.push(`${e.mac} dst ${e.dst}`);
        }
      } catch (err) {
        errors.push(`fdb ${e.mac}: ${errorMessage(err)}`);
      }
    }
  }

  async #syncNeighbours(
    st: VxlanState,
    out: { neighboursSet: string[]; neighboursRemoved: string[] },
    errors: string[],
  ): Promise<void> {
    const ns = this.#o.netns;
    const dev = this.device;
    const current = await this.#o.net.listNeighbours({ dev, family: this.#family }, ns);
    const want = new Map(st.neighbours.map((n) => [n.dst, n.lladdr]));
    for (const n of st.neighbours) {
      const ok = current.some(
        (c) => c.dst === n.dst && c.lladdr === n.lladdr && c.state.includes('permanent'),
      );
      if (ok) continue;
      try {
        await this.#o.net.replaceNeighbour({ dst: n.dst, dev, lladdr: n.lladdr, state: 'permanent' }, ns);
        out.neighboursSet.push(`${n.dst} lladdr ${n.lladdr}`);
      } catch (e) {
        errors.push(`neighbour ${n.dst}: ${errorMessage(e)}`);
      }
    }
    for (const c of current) {
      if (want.has(c.dst)) continue;
      try {
        if (await this.#o.net.delNeighbour({ dst: c.dst, dev }, { ignoreMissing: true }, ns)) {
          out.neighboursRemoved.push(c.dst);
        }
      } catch (e) {
        errors.push(`neighbour ${c.dst}: ${errorMessage(e)}`);
      }
    }
  }

  /** Whether a route in the kernel is one this manager programs (see the ownership note above). */
  owns(r: Route): boolean {
    if (r.table !== undefined || r.family !== this.#family) return false;
    if (r.dev === this.device) return r.proto !== 'kernel';
    if (!protocolMatches(r.proto, this.#o.protocol)) return false;
    if (this.#o.claimedElsewhere?.(r.dst)) return false;
    if (r.type === 'blackhole') return true;
    return (
      r.type === undefined &&
      r.gateway !== undefined &&
      r.dev !== undefined &&
      !matchesPrefixes(r.dev, this.#o.workloadPrefixes)
    );
  }

  async #syncRoutes(
    st: VxlanState,
    deviceReady: boolean,
    parentDev: string | undefined,
    out: { routesAdded: string[]; routesRemoved: string[] },
    errors: string[],
  ): Promise<void> {
    const desired = new Map<string, RouteSpec>();
    for (const r of st.routes) {
      if ((r.kind === 'tunnel' || r.kind === 'device') && !deviceReady) continue;
      const spec = encapRouteSpec(r, parentDev, this.#o.protocol);
      if (spec) desired.set(spec.dst, spec);
    }
    await syncOwnedRoutes(
      {
        net: this.#o.net,
        netns: this.#o.netns,
        family: this.#family,
        protocol: this.#o.protocol,
        owns: (r) => this.owns(r),
      },
      desired,
      out,
      errors,
    );
  }
}
