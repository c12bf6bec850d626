/**
 * FakeTunnelNet: an in-memory kernel for the operations VxlanManager and IpipManager use, with the
 * kernel's behaviour where it matters: creating an existing device or address fails `exists`,
 * deleting a missing one fails `not-found` (unless `ignoreMissing`), a route, neighbour or FDB
 * entry needs its device, and deleting a device takes its addresses, routes, neighbours and FDB
 * entries with it. Routes are checked as the kernel's `fib_check_nh` does: a gateway must be on a
 * subnet of an up interface (of `dev` when given) unless the route is `onlink`, and an `onlink`
 * route needs its device up; a device set down loses its routes.
 *
 * IPIP as the kernel has it (`ipipModule`): `absent` answers any `type ipip` request "Unknown
 * device type" (this project's kernels); `available` loads the module on the first request, which
 * makes the fallback device `tunl0` (down, MTU 1480, NOARP), so a request for `tunl0` itself then
 * fails `exists`; `loaded` starts with `tunl0` there. `tunl0` cannot be deleted: the kernel
 * accepts the request and keeps it.
 *
 * `dump()` prints the state as sorted lines for whole-state assertions; `changes` counts changes.
 */
import { cidrContains } from '@calico-ts/api/net';
import {
  type Addr,
  type AddrFilter,
  type FdbEntry,
  type FdbSpec,
  type IgnoreMissing,
  type IpipSpec,
  type Link,
  type LinkChanges,
  type Neighbour,
  type NeighbourFilter,
  type NeighbourSpec,
  NetlinuxError,
  type Route,
  type RouteFilter,
  type RouteSpec,
  type VxlanSpec,
} from '@calico-ts/netlinux';
import type { IpipNetOps } from '../ipip-manager.js';
import type { VxlanNetOps } from '../vxlan-manager.js';

const PROTO_NAMES: Record<string, string> = { '2': 'kernel', '3': 'boot', '4': 'static', '12': 'bird' };

function protoText(p: string | number | undefined): string {
  const s = p === undefined ? '3' : String(p);
  return PROTO_NAMES[s] ?? s;
}

function hostPrefix(dst: string): string {
  return dst.includes('/') ? dst : `${dst}/${dst.includes(':') ? 128 : 32}`;
}

export type IpipModule = 'absent' | 'available' | 'loaded';

/** The kernel's fallback IPIP device, made when the `ipip` module loads. */
const IPIP_FALLBACK = 'tunl0';

export class FakeTunnelNet implements VxlanNetOps, IpipNetOps {
  readonly links = new Map<string, Link>();
  addrs: Addr[] = [];
  routes: Route[] = [];
  neighbours: Neighbour[] = [];
  fdb: FdbEntry[] = [];
  readonly sysctls = new Map<string, string>();
  /** Number of changing calls (creates, replaces, deletes, sets). */
  changes = 0;
  #index = 10;
  #ipip: IpipModule;

  constructor(opts: { ipipModule?: IpipModule } = {}) {
    this.#ipip = 'absent';
    if (opts.ipipModule === 'loaded') this.#loadIpip();
    else this.#ipip = opts.ipipModule ?? 'available';
  }

  /** Whether the `ipip` module is absent, loadable or loaded. */
  get ipipModule(): IpipModule {
    return this.#ipip;
  }

  #loadIpip(): void {
    this.#ipip = 'loaded';
    this.links.set(IPIP_FALLBACK, {
      name: IPIP_FALLBACK,
      index: this.#index++,
      mtu: 1480,
      mac: '00:00:00:00',
      operstate: 'DOWN',
      kind: 'ipip',
      flags: ['NOARP'],
      up: false,
    });
  }

  /** A plain interface with an address, as a node's uplink. */
  addUplink(name: string, cidr: string, mtu = 1500): void {
    this.links.set(name, {
      name,
      index: this.#index++,
      mtu,
      mac: '02:00:00:00:00:01',
      operstate: 'UP',
      kind: 'veth',
      flags: ['UP', 'LOWER_UP'],
      up: true,
    });
    this.addrs.push(this.#addr(name, cidr));
  }

  #need(dev: string): Link {
    const l = this.links.get(dev);
    if (!l) throw new NetlinuxError('not-found', `Cannot find device "${dev}"`);
    return l;
  }

  #addr(dev: string, cidr: string): Addr {
    const [address, len] = cidr.split('/') as [string, string];
    return {
      dev,
      index: this.links.get(dev)?.index ?? 0,
      family: address.includes(':') ? 6 : 4,
      cidr,
      address,
      prefixLen: Number(len),
      scope: 'global',
      noDad: false,
      tentative: false,
    };
  }

  async listLinks(): Promise<Link[]> {
    return [...this.links.values()].map((l) => structuredClone(l));
  }

  async createVxlan(spec: VxlanSpec): Promise<void> {
    if (this.links.has(spec.name)) throw new NetlinuxError('exists', 'RTNETLINK answers: File exists');
    if (spec.dev !== undefined) this.#need(spec.dev);
    this.changes++;
    this.links.set(spec.name, {
      name: spec.name,
      index: this.#index++,
      mtu: spec.mtu ?? 1500,
      mac: spec.mac ?? '66:00:00:00:00:99',
      operstate: 'DOWN',
      kind: 'vxlan',
      flags: ['BROADCAST', 'MULTICAST'],
      up: false,
      vxlan: {
        vni: spec.vni,
        port: spec.port,
        learning: spec.learning === true,
        ...(spec.local !== undefined ? { local: spec.local } : {}),
        ...(spec.dev !== undefined ? { dev: spec.dev } : {}),
      },
    });
  }

  async createIpip(spec: IpipSpec): Promise<void> {
    if (this.#ipip === 'absent') throw new NetlinuxError('invalid', 'Error: Unknown device type.');
    if (this.#ipip === 'available') {
      this.changes++;
      this.#loadIpip();
    }
    if (this.links.has(spec.name)) throw new NetlinuxError('exists', 'RTNETLINK answers: File exists');
    this.changes++;
    this.links.set(spec.name, {
      name: spec.name,
      index: this.#index++,
      mtu: spec.mtu ?? 1480,
      mac: '00:00:00:00',
      operstate: 'DOWN',
      kind: 'ipip',
      flags: ['POINTOPOINT', 'NOARP'],
      up: false,
    });
  }

  async deleteLink(name: string, opts?: IgnoreMissing): Promise<boolean> {
    if (!this.links.has(name)) {
      if (opts?.ignoreMissing) return false;
      throw new NetlinuxError('not-found', `Cannot find device "${name}"`);
    }
    // The fallback device stays as long as the module: the kernel ignores the request.
    if (name === IPIP_FALLBACK && this.links.get(name)?.kind === 'ipip') return true;
    this.changes++;
    this.links.delete(name);
    this.addrs = this.addrs.filter((a) => a.dev !== name);
    this.routes = this.routes.filter((r) => r.dev !== name);
    this.neighbours = this.neighbours.filter((n) => n.dev !== name);
    this.fdb = this.fdb.filter((f) => f.dev !== name);
    return true;
  }

  async setLink(name: string, changes: LinkChanges): Promise<void> {
    const l = this.#need(name);
    if (changes.mtu !== undefined && (changes.mtu < 68 || changes.mtu > 65535))
      throw new NetlinuxError('invalid', 'Error: mtu less than device minimum.');
    this.changes++;
    if (changes.mtu !== undefined) l.mtu = changes.mtu;
    // A device going down loses the routes through it (fib_sync_down_dev).
    if (changes.up === false) this.routes = this.routes.filter((r) => r.dev !== name);
    if (changes.up !== undefined) {
      l.up = changes.up;
      l.flags = changes.up
        ? [...l.flags.filter((f) => f !== 'UP'), 'UP', 'LOWER_UP']
        : l.flags.filter((f) => f !== 'UP' && f !== 'LOWER_UP');
      l.operstate = changes.up ? 'UNKNOWN' : 'DOWN';
    }
  }

  async listAddrs(filter: AddrFilter = {}): Promise<Addr[]> {
    return this.addrs.filter(
      (a) =>
        (filter.dev === undefined || a.dev === filter.dev) &&
        (filter.family === undefined || a.family === filter.family),
    );
  }

  async addAddr(dev: string, cidr: string): Promise<void> {
    this.#need(dev);
    const c = hostPrefix(cidr);
    if (this.addrs.some((a) => a.dev === dev && a.cidr === c))
      throw new NetlinuxError('exists', 'RTNETLINK answers: File exists');
    this.changes++;
    this.addrs.push(this.#addr(dev, c));
  }

  async delAddr(dev: string, cidr: string, opts?: IgnoreMissing): Promise<boolean> {
    const c = hostPrefix(cidr);
    const n = this.addrs.length;
    this.addrs = this.addrs.filter((a) => !(a.dev === dev && a.cidr === c));
    if (n === this.addrs.length) {
      if (opts?.ignoreMissing) return false;
      throw new NetlinuxError('not-found', 'RTNETLINK answers: Cannot assign requested address');
    }
    this.changes++;
    return true;
  }

  async listRoutes(filter: RouteFilter = {}): Promise<Route[]> {
    return this.routes
      .filter((r) => filter.family === undefined || r.family === filter.family)
      .map((r) => structuredClone(r));
  }

  async replaceRoute(spec: RouteSpec): Promise<void> {
    const dev = spec.dev !== undefined ? this.#need(spec.dev) : undefined;
    if (spec.gateway !== undefined) this.#checkGateway(spec.gateway, dev, spec.onlink === true);
    const dst = hostPrefix(spec.dst);
    this.changes++;
    this.routes = this.routes.filter((r) => r.dst !== dst);
    const r: Route = { family: dst.includes(':') ? 6 : 4, dst, proto: protoText(spec.proto) };
    if (spec.dev !== undefined) r.dev = spec.dev;
    if (spec.gateway !== undefined) r.gateway = spec.gateway;
    if (spec.scope !== undefined) r.scope = spec.scope;
    if (spec.onlink) r.onlink = true;
    if (spec.type !== undefined && spec.type !== 'unicast') r.type = spec.type;
    this.routes.push(r);
  }

  /** The kernel's next-hop check (`fib_check_nh`): where the gateway must be for the route to take. */
  #checkGateway(gateway: string, dev: Link | undefined, onlink: boolean): void {
    if (onlink) {
      if (!dev) throw new NetlinuxError('invalid', 'Error: Nexthop device required for onlink.');
      if (!dev.up) throw new NetlinuxError('failed', 'Error: Nexthop device is not up.');
      return;
    }
    const reachable = this.addrs.some(
      (a) =>
        (dev === undefined || a.dev === dev.name) &&
        this.links.get(a.dev)?.up === true &&
        a.address !== gateway &&
        cidrContains(a.cidr, gateway),
    );
    if (!reachable) throw new NetlinuxError('invalid', 'Error: Nexthop has invalid gateway.');
  }

  async delRoute(spec: RouteSpec, opts?: IgnoreMissing): Promise<boolean> {
    const dst = hostPrefix(spec.dst);
    const i = this.routes.findIndex(
      (r) =>
        r.dst === dst &&
        (spec.dev === undefined || r.dev === spec.dev) &&
        (spec.type === undefined || (r.type ?? 'unicast') === spec.type),
    );
    if (i < 0) {
      if (opts?.ignoreMissing) return false;
      throw new NetlinuxError('not-found', 'RTNETLINK answers: No such process');
    }
    this.changes++;
    this.routes.splice(i, 1);
    return true;
  }

  async listNeighbours(filter: NeighbourFilter = {}): Promise<Neighbour[]> {
    return this.neighbours
      .filter(
        (n) =>
          (filter.dev === undefined || n.dev === filter.dev) &&
          (filter.family === undefined || n.family === filter.family),
      )
      .map((n) => structuredClone(n));
  }

  async replaceNeighbour(spec: NeighbourSpec): Promise<void> {
    this.#need(spec.dev);
    this.changes++;
    this.neighbours = this.neighbours.filter((n) => !(n.dst === spec.dst && n.dev === spec.dev));
    this.neighbours.push({
      family: spec.dst.includes(':') ? 6 : 4,
      dst: spec.dst,
      dev: spec.dev,
      ...(spec.lladdr !== undefined ? { lladdr: spec.lladdr } : {}),
      state: [spec.state ?? 'permanent'],
      router: false,
      proxy: false,
    });
  }

  async delNeighbour(spec: Pick<NeighbourSpec, 'dst' | 'dev'>, opts?: IgnoreMissing): Promise<boolean> {
    const n = this.neighbours.length;
    this.neighbours = this.neighbours.filter((x) => !(x.dst === spec.dst && x.dev === spec.dev));
    if (n === this.neighbours.length) {
      if (opts?.ignoreMissing) return false;
      throw new NetlinuxError('not-found', 'RTNETLINK answers: No such file or directory');
    }
    this.changes++;
    return true;
  }

  async listFdb(dev?: string): Promise<FdbEntry[]> {
    return this.fdb.filter((f) => dev === undefined || f.dev === dev).map((f) => structuredClone(f));
  }

  async replaceFdb(spec: FdbSpec): Promise<void> {
    this.#need(spec.dev);
    this.changes++;
    this.fdb = this.fdb.filter((f) => !(f.mac === spec.mac && f.dev === spec.dev));
    this.fdb.push({
      mac: spec.mac,
      dev: spec.dev,
      ...(spec.dst !== undefined ? { dst: spec.dst } : {}),
      flags: ['self'],
      state: 'permanent',
    });
  }

  async delFdb(spec: FdbSpec, opts?: IgnoreMissing): Promise<boolean> {
    const n = this.fdb.length;
    this.fdb = this.fdb.filter(
      (f) => !(f.mac === spec.mac && f.dev === spec.dev && (spec.dst === undefined || f.dst === spec.dst)),
    );
    if (n === this.fdb.length) {
      if (opts?.ignoreMissing) return false;
      throw new NetlinuxError('not-found', 'RTNETLINK answers: No such file or directory');
    }
    this.changes++;
    return true;
  }

  async writeSysctls(entries: Iterable<readonly [string, string | number]>): Promise<void> {
    for (const [k, v] of entries) this.sysctls.set(k, String(v));
  }

  /** The state as sorted lines: links (with VXLAN details), addresses, routes, neighbours, FDB. */
  dump(): string[] {
    const lines: string[] = [];
    for (const l of this.links.values()) {
      const v = l.vxlan;
      lines.push(
        `link ${l.name} mtu ${l.mtu} ${l.up ? 'up' : 'down'}${l.kind === 'ipip' ? ' ipip' : ''}${v ? ` vxlan id ${v.vni} dstport ${v.port} local ${v.local ?? '-'} dev ${v.dev ?? '-'} address ${l.mac}` : ''}`,
      );
    }
    for (const a of this.addrs) lines.push(`addr ${a.cidr} dev ${a.dev}`);
    for (const r of this.routes) {
      const parts = ['route', r.type === 'blackhole' ? `blackhole ${r.dst}` : r.dst];
      if (r.gateway !== undefined) parts.push(`via ${r.gateway}`);
      if (r.dev !== undefined) parts.push(`dev ${r.dev}`);
      if (r.scope !== undefined) parts.push(`scope ${r.scope}`);
      parts.push(`proto ${r.proto}`);
      if (r.onlink) parts.push('onlink');
      lines.push(parts.join(' '));
    }
    for (const n of this.neighbours)
      lines.push(`neigh ${n.dst} dev ${n.dev} lladdr ${n.lladdr ?? '-'} ${n.state.join(',')}`);
    for (const f of this.fdb) lines.push(`fdb ${f.mac} dev ${f.dev} dst ${f.dst ?? '-'} ${f.state}`);
    return lines.sort();
  }
}
