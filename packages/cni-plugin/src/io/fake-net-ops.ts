/**
 * An in-memory kernel behind the `NetOps` subset of netlinux, for unit tests of `LinuxDataplane`
 * and the handlers. It keeps what the real kernel keeps and refuses what it refuses, as far as the
 * plugin can tell:
 *
 * - namespaces (the caller's own is `''`), each with links, addresses, routes and sysctls;
 * - a veth is two links in two namespaces; deleting either end deletes both, with their addresses
 *   and routes;
 * - adding a route whose destination is already in the table fails `exists`; an IPv4 gateway must
 *   be reachable through a link-scope route on the same device (as the kernel's "invalid gateway");
 * - per-device sysctls exist only while the device does;
 * - `batch` applies commands in order and stops at the first failure, leaving earlier ones applied.
 *
 * Failure injection: `failAt(n)` makes the n-th mutating operation (1-based, each batch command
 * counts as one) fail with `failed`; `ops` records every applied operation.
 */

import { isIPv4 } from 'node:net';
import type {
  Addr,
  IgnoreMissing,
  Link,
  LinkChanges,
  LinkOp,
  Route,
  RouteSpec,
  VethSpec,
} from '@calico-ts/netlinux';
import { NetlinuxBatchError, NetlinuxError } from '@calico-ts/netlinux';
import { linkOpArgs } from '@calico-ts/netlinux/internal';
import type { NetOps } from './linux-dataplane.js';

interface FakeLink {
  name: string;
  index: number;
  mtu: number;
  mac: string;
  up: boolean;
  kind: string;
  peer?: { ns: string; name: string };
}

export interface FakeNamespace {
  links: Map<string, FakeLink>;
  addrs: Addr[];
  routes: Route[];
  sysctls: Map<string, string>;
}

const GLOBAL_SYSCTLS = [
  'net.ipv4.ip_forward',
  'net.ipv6.conf.all.forwarding',
  'net.ipv6.conf.all.disable_ipv6',
  'net.ipv6.conf.default.disable_ipv6',
];

export class FakeNetOps implements NetOps {
  readonly namespaces = new Map<string, FakeNamespace>();
  readonly ops: string[] = [];
  #opCount = 0;
  #failAt: number | undefined;
  #nextIndex = 2;
  #macSeq = 1;

  constructor() {
    this.addNetns('');
  }

  /** Creates a namespace (a name, or a path such as `/run/netns/pod1`) with a loopback device. */
  addNetns(ns: string): FakeNamespace {
    const n: FakeNamespace = { links: new Map(), addrs: [], routes: [], sysctls: new Map() };
    n.links.set('lo', { name: 'lo', index: 1, mtu: 65536, mac: '00:00:00:00:00:00', up: true, kind: '' });
    for (const k of [...GLOBAL_SYSCTLS, 'net.ipv6.conf.lo.disable_ipv6']) n.sysctls.set(k, '0');
    this.namespaces.set(ns, n);
    return n;
  }

  ns(ns: string | undefined): FakeNamespace {
    const n = this.namespaces.get(ns ?? '');
    if (!n) throw new NetlinuxError('not-found', `no network namespace ${ns}`, { netns: ns });
    return n;
  }

  failAt(n: number | undefined): void {
    this.#failAt = n;
    this.#opCount = 0;
  }

  #mutate(what: string): void {
    this.#opCount++;
    if (this.#failAt !== undefined && this.#opCount === this.#failAt) {
      throw new NetlinuxError('failed', `injected failure at operation ${this.#opCount}: ${what}`);
    }
    this.ops.push(what);
  }

  async netnsExists(nameOrPath: string): Promise<boolean> {
    return this.namespaces.has(nameOrPath);
  }

  async findLink(name: string, ns?: string): Promise<Link | undefined> {
    const n = this.namespaces.get(ns ?? '');
    const l = n?.links.get(name);
    return l ? toLink(l) : undefined;
  }

  async createVethPair(spec: VethSpec, ns?: string): Promise<void> {
    const here = this.ns(ns);
    const peerNsKey = spec.peerNetns ?? ns ?? '';
    this.#mutate(
      `veth add ${spec.name} peer ${spec.peerName}${spec.peerNetns ? ` netns ${spec.peerNetns}` : ''}`,
    );
    const there = this.namespaces.get(peerNsKey);
    if (!there) throw new NetlinuxError('not-found', `no network namespace ${peerNsKey}`);
    if (here.links.has(spec.name)) throw new NetlinuxError('exists', `device ${spec.name} exists`);
    if (there.links.has(spec.peerName)) throw new NetlinuxError('exists', `device ${spec.peerName} exists`);
    const mtu = spec.mtu ?? 1500;
    here.links.set(spec.name, {
      name: spec.name,
      index: this.#nextIndex++,
      mtu,
      mac: spec.mac ?? this.#mac(),
      up: false,
      kind: 'veth',
      peer: { ns: peerNsKey, name: spec.peerName },
    });
    there.links.set(spec.peerName, {
      name: spec.peerName,
      index: this.#nextIndex++,
      mtu,
      mac: spec.peerMac ?? this.#mac(),
      up: false,
      kind: 'veth',
      peer: { ns: ns ?? '', name: spec.name },
    });
  }

  async setLink(name: string, changes: LinkChanges, ns?: string): Promise<void> {
    this.#mutate(`link set ${name}${changes.up === undefined ? '' : changes.up ? ' up' : ' down'}`);
    this.#setLink(name, changes, ns);
  }

  #setLink(name: string, changes: LinkChanges, ns?: string): void {
    const l = this.ns(ns).links.get(name);
    if (!l) throw new NetlinuxError('not-found', `Cannot find device "${name}"`);
    if (changes.up !== undefined) l.up = changes.up;
    if (changes.mtu !== undefined) l.mtu = changes.mtu;
    if (changes.mac !== undefined) l.mac = changes.mac;
  }

  async deleteLink(name: string, opts?: IgnoreMissing, ns?: string): Promise<boolean> {
    this.#mutate(`link del ${name}${ns ? ` netns ${ns}` : ''}`);
    const n = this.namespaces.get(ns ?? '');
    const l = n?.links.get(name);
    if (!n || !l) {
      if (opts?.ignoreMissing) return false;
      throw new NetlinuxError('not-found', `Cannot find device "${name}"`);
    }
    this.#dropLink(n, name);
    if (l.peer) {
      const pn = this.namespaces.get(l.peer.ns);
      if (pn) this.#dropLink(pn, l.peer.name);
    }
    return true;
  }

  #dropLink(n: FakeNamespace, name: string): void {
    n.links.delete(name);
    n.addrs = n.addrs.filter((a) => a.dev !== name);
    n.routes = n.routes.filter((r) => r.dev !== name);
    for (const k of [...n.sysctls.keys()]) if (k.includes(`.${name}.`)) n.sysctls.delete(k);
  }

  async listAddrs(filter: { dev?: string; family?: 4 | 6 } = {}, ns?: string): Promise<Addr[]> {
    return this.ns(ns)
      .addrs.filter(
        (a) =>
          (filter.dev === undefined || a.dev === filter.dev) &&
          (filter.family === undefined || a.family === filter.family),
      )
      .map((a) => ({ ...a }));
  }

  async addRoute(route: RouteSpec, ns?: string): Promise<void> {
    this.#mutate(
      `route add ${route.dst}${route.gateway ? ` via ${route.gateway}` : ''}${route.dev ? ` dev ${route.dev}` : ''}`,
    );
    this.#addRoute(route, ns);
  }

  #addRoute(route: RouteSpec, ns?: string): void {
    const n = this.ns(ns);
    const family = isIPv4(route.dst.split('/')[0]!) ? 4 : 6;
    const dst = route.dst.includes('/') ? route.dst : `${route.dst}/${family === 4 ? 32 : 128}`;
    if (route.dev !== undefined && !n.links.has(route.dev)) {
      throw new NetlinuxError('not-found', `Cannot find device "${route.dev}"`);
    }
    if (n.routes.some((r) => r.dst === dst && r.family === family)) {
      throw new NetlinuxError('exists', `RTNETLINK answers: File exists (${dst})`);
    }
    if (route.gateway !== undefined && family === 4) {
      const reachable =
        n.routes.some(
          (r) =>
            r.family === 4 && r.scope === 'link' && r.dst === `${route.gateway}/32` && r.dev === route.dev,
        ) || n.addrs.some((a) => a.family === 4 && a.dev === route.dev && sameSubnet(a.cidr, route.gateway!));
      if (!reachable) throw new NetlinuxError('invalid', `RTNETLINK answers: Nexthop has invalid gateway`);
    }
    const r: Route = { family, dst, proto: 'boot' };
    if (route.dev !== undefined) r.dev = route.dev;
    if (route.gateway !== undefined) r.gateway = route.gateway;
    if (route.scope !== undefined && route.scope !== 'global') r.scope = route.scope;
    n.routes.push(r);
  }

  async listRoutes(filter: { dev?: string; family?: 4 | 6 } = {}, ns?: string): Promise<Route[]> {
    return this.ns(ns)
      .routes.filter(
        (r) =>
          (filter.dev === undefined || r.dev === filter.dev) &&
          (filter.family === undefined || r.family === filter.family),
      )
      .map((r) => ({ ...r }));
  }

  async writeSysctls(entries: Iterable<readonly [string, string | number]>, ns?: string): Promise<void> {
    const n = this.ns(ns);
    for (const [key, value] of entries) {
      this.#mutate(`sysctl ${key}=${value}${ns ? ` netns ${ns}` : ''}`);
      if (!this.#sysctlExists(n, key))
        throw new NetlinuxError('not-found', `sysctl ${key}: No such file or directory`);
      n.sysctls.set(key, String(value));
    }
  }

  async readSysctl(key: string, ns?: string): Promise<string> {
    const n = this.ns(ns);
    const v = n.sysctls.get(key);
    if (v !== undefined) return v;
    if (this.#sysctlExists(n, key)) return '0';
    throw new NetlinuxError('not-found', `sysctl ${key}: No such file or directory`);
  }

  #sysctlExists(n: FakeNamespace, key: string): boolean {
    if (GLOBAL_SYSCTLS.includes(key)) return true;
    const m = /^net\.ipv[46]\.(?:conf|neigh)\.([^.]+)\./.exec(key);
    if (!m) return false;
    return m[1] === 'all' || m[1] === 'default' || n.links.has(m[1]!);
  }

  /** As the real one without rtnetlink: the ops' `ip` arguments, batched. */
  apply(ops: readonly LinkOp[], ns?: string): Promise<void> {
    return this.batch(ops.map(linkOpArgs), ns);
  }

  async batch(commands: readonly (readonly string[])[], ns?: string): Promise<void> {
    this.ns(ns);
    for (let i = 0; i < commands.length; i++) {
      const c = commands[i]!;
      try {
        this.#mutate(`${c.join(' ')}${ns ? ` netns ${ns}` : ''}`);
        this.#applyCommand(c, ns);
      } catch (e) {
        const ne = e as NetlinuxError;
        throw new NetlinuxBatchError(
          ne.code,
          `ip ${c.join(' ')} (batch command ${i + 1}): ${ne.message}`,
          i,
          {
            netns: ns,
          },
        );
      }
    }
  }

  #applyCommand(c: readonly string[], ns?: string): void {
    const arg = (k: string) => {
      const i = c.indexOf(k);
      return i >= 0 ? c[i + 1] : undefined;
    };
    if (c[0] === 'link' && c[1] === 'set') {
      const changes: LinkChanges = {};
      if (c.includes('up')) changes.up = true;
      if (c.includes('down')) changes.up = false;
      this.#setLink(c[3]!, changes, ns);
      return;
    }
    if (c[0] === 'addr' && c[1] === 'add') {
      const n = this.ns(ns);
      const dev = arg('dev')!;
      if (!n.links.has(dev)) throw new NetlinuxError('not-found', `Cannot find device "${dev}"`);
      const cidr = c[2]!;
      if (n.addrs.some((a) => a.cidr === cidr && a.dev === dev))
        throw new NetlinuxError('exists', 'File exists');
      const [address, len] = cidr.split('/') as [string, string];
      const family = isIPv4(address) ? 4 : 6;
      const link = n.links.get(dev)!;
      n.addrs.push({
        dev,
        index: link.index,
        family,
        cidr,
        address,
        prefixLen: Number(len),
        scope: 'global',
        noDad: c.includes('nodad'),
        tentative: false,
      });
      // The connected route of a non-host prefix, as the kernel adds it.
      const full = family === 4 ? 32 : 128;
      if (Number(len) < full) {
        n.routes.push({ family, dst: networkOf(address, Number(len)), dev, scope: 'link', proto: 'kernel' });
      }
      return;
    }
    if (c[0] === 'route' && c[1] === 'add') {
      const spec: RouteSpec = { dst: c[2]! };
      const via = arg('via');
      const dev = arg('dev');
      const scope = arg('scope');
      if (via !== undefined) spec.gateway = via;
      if (dev !== undefined) spec.dev = dev;
      if (scope !== undefined) spec.scope = scope;
      this.#addRoute(spec, ns);
      return;
    }
    throw new NetlinuxError('invalid', `fake kernel does not understand: ip ${c.join(' ')}`);
  }

  #mac(): string {
    const n = this.#macSeq++;
    return `0a:58:00:00:${((n >> 8) & 255).toString(16).padStart(2, '0')}:${(n & 255).toString(16).padStart(2, '0')}`;
  }
}

function toLink(l: FakeLink): Link {
  const flags = l.up ? ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'] : ['BROADCAST', 'MULTICAST'];
  return {
    name: l.name,
    index: l.index,
    mtu: l.mtu,
    mac: l.mac,
    operstate: l.up ? 'UP' : 'DOWN',
    kind: l.kind,
    flags,
    up: l.up,
  };
}

function networkOf(address: string, len: number): string {
  if (!isIPv4(address)) return `${address}/${len}`;
  const v = address.split('.').reduce((acc, o) => (acc << 8) + Number(o), 0) >>> 0;
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
  const nw = (v & mask) >>> 0;
  return `${[24, 16, 8, 0].map((s) => (nw >>> s) & 255).join('.')}/${len}`;
}

function sameSubnet(cidr: string, ip: string): boolean {
  const [a, len] = cidr.split('/') as [string, string];
  if (!isIPv4(a) || !isIPv4(ip)) return false;
  return networkOf(a, Number(len)) === networkOf(ip, Number(len));
}
