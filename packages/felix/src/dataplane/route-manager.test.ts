/**
 * RouteManager and InterfaceMonitor through the real Netlinux argument building and output parsing,
 * over a scripted `ip` that keeps a routing table: the routes in that table after each step are
 * what is asserted, plus the sysctl writes for new interfaces.
 */
import { Netlinux } from '@calico-ts/netlinux';
import { type RecordedCall, ScriptedCommandRunner } from '@calico-ts/netlinux/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { InterfaceMonitor } from './interface-monitor.js';
import { protocolMatches, RouteManager } from './route-manager.js';

interface KRoute {
  dst: string;
  dev: string;
  protocol?: string;
  scope?: string;
}

/** A scripted `ip`: routes of the main table and a link list, changed by `route replace|del`. */
class ScriptedKernel {
  routes: KRoute[] = [];
  links: { ifname: string; ifindex: number; flags: string[]; operstate: string }[] = [];
  sysctls: string[] = [];
  readonly runner = new ScriptedCommandRunner((c) => this.#handle(c));

  #handle(c: RecordedCall) {
    const a = c.args;
    if (c.cmd === 'tee') {
      for (const p of a) this.sysctls.push(`${p.replace('/proc/sys/', '')}=${c.input}`);
      return {};
    }
    if (!a.includes('route') && a.includes('link')) {
      return {
        stdout: JSON.stringify(
          this.links.map((l) => ({ ...l, mtu: 1500, address: 'ee:ee:ee:ee:ee:ee', link_type: 'ether' })),
        ),
      };
    }
    const i = a.indexOf('route');
    const verb = a[i + 1];
    if (verb === 'show') {
      const v6 = a.includes('-6');
      return {
        stdout: JSON.stringify(
          this.routes
            .filter((r) => r.dst.includes(':') === v6)
            .map((r) => ({
              dst: r.dst.replace(/\/(32|128)$/, ''),
              dev: r.dev,
              protocol: r.protocol,
              scope: r.scope,
            })),
        ),
      };
    }
    const dst = a[i + 2]!;
    const dev = a[a.indexOf('dev') + 1]!;
    const proto = a.includes('proto') ? a[a.indexOf('proto') + 1] : undefined;
    const protoName = proto === '3' ? undefined : proto === '4' ? 'static' : proto;
    if (verb === 'replace') {
      this.routes = this.routes.filter((r) => r.dst !== dst);
      this.routes.push({ dst, dev, scope: 'link', ...(protoName ? { protocol: protoName } : {}) });
      return {};
    }
    if (verb === 'del') {
      const n = this.routes.length;
      this.routes = this.routes.filter((r) => !(r.dst === dst && r.dev === dev));
      return n === this.routes.length ? { exitCode: 2, stderr: 'RTNETLINK answers: No such process\n' } : {};
    }
    return { exitCode: 1, stderr: `unexpected ${a.join(' ')}` };
  }
}

const up = (ifname: string, ifindex: number) => ({
  ifname,
  ifindex,
  flags: ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'],
  operstate: 'UP',
});

describe('RouteManager', () => {
  let k: ScriptedKernel;
  let rm: RouteManager;
  let mon: InterfaceMonitor;
  beforeEach(() => {
    k = new ScriptedKernel();
    const net = new Netlinux({ runner: k.runner });
    // No grace period here; the test of the grace period sets its own.
    rm = new RouteManager({
      net,
      netns: 'node1',
      interfacePrefixes: ['cali'],
      protocol: 3,
      ipv6: true,
      cleanupGraceMs: 0,
    });
    mon = new InterfaceMonitor({
      listLinks: () => net.listLinks('node1'),
      interfacePrefixes: ['cali'],
      onUpdate: (n, s) => rm.onInterface(n, s),
    });
  });

  const ep = (iface: string, v4: string[], v6: string[] = []) => ({
    interfaceName: iface,
    ipv4Nets: v4,
    ipv6Nets: v6,
  });

  it('routes a workload only once its interface exists and is up, and configures it once', async () => {
    rm.setEndpoints([ep('calia', ['198.19.0.1/32'], ['fd00:19::1/128'])]);
    await mon.poll();
    expect(await rm.apply()).toEqual({ added: [], removed: [], configured: [], deferred: [] });
    expect(k.routes).toEqual([]);

    k.links.push({ ...up('calia', 7), flags: ['BROADCAST', 'UP'], operstate: 'LOWERLAYERDOWN' });
    expect(await mon.poll()).toBe(true);
    await rm.apply();
    expect(k.routes).toEqual([]);

    k.links[0] = up('calia', 7);
    await mon.poll();
    const r = await rm.apply();
    expect(r.configured).toEqual(['calia']);
    expect(k.routes).toEqual([
      { dst: '198.19.0.1/32', dev: 'calia', scope: 'link' },
      { dst: 'fd00:19::1/128', dev: 'calia', scope: 'link' },
    ]);
    expect(k.sysctls).toEqual(
      expect.arrayContaining([
        'net/ipv4/conf/calia/proxy_arp=1',
        'net/ipv4/conf/calia/forwarding=1',
        'net/ipv4/conf/calia/route_localnet=1',
        'net/ipv4/neigh/calia/proxy_delay=0',
        'net/ipv6/conf/calia/accept_ra=0',
        'net/ipv6/conf/calia/proxy_ndp=1',
      ]),
    );
    // Everything is in place: a second apply changes nothing and writes no sysctl again.
    const writes = k.sysctls.length;
    expect(await rm.apply()).toEqual({ added: [], removed: [], configured: [], deferred: [] });
    expect(k.sysctls).toHaveLength(writes);
    // Every command ran in the node's namespace.
    for (const line of k.runner.commandLines())
      expect(line).toMatch(/^(ip -n node1 |nsenter --net=\/run\/netns\/node1 )/);
  });

  it('puts back a route deleted by hand and removes its own stale routes, leaving others alone', async () => {
    k.links.push(up('calia', 7), up('calib', 8));
    await mon.poll();
    rm.setEndpoints([ep('calia', ['198.19.0.1/32']), ep('calib', ['198.19.0.2/32'])]);
    await rm.apply();
    k.routes = k.routes.filter((r) => r.dev !== 'calia');
    k.routes.push({ dst: '198.19.9.9/32', dev: 'calib', protocol: 'bird', scope: 'link' });
    expect((await rm.apply()).added).toEqual(['198.19.0.1/32 dev calia']);

    rm.setEndpoints([ep('calia', ['198.19.0.1/32'])]);
    const r = await rm.apply();
    expect(r.removed).toEqual(['198.19.0.2/32 dev calib']);
    expect(k.routes).toEqual([
      { dst: '198.19.9.9/32', dev: 'calib', protocol: 'bird', scope: 'link' },
      { dst: '198.19.0.1/32', dev: 'calia', scope: 'link' },
    ]);
  });

  it("leaves the CNI plugin's route to a new pod until its endpoint arrives, and cleans up after the grace period", async () => {
    let clock = 1_000_000;
    const net = new Netlinux({ runner: k.runner });
    const graceful = new RouteManager({
      net,
      netns: 'node1',
      interfacePrefixes: ['cali'],
      protocol: 3,
      ipv6: false,
      now: () => clock,
    });
    const monitor = new InterfaceMonitor({
      listLinks: () => net.listLinks('node1'),
      interfacePrefixes: ['cali'],
      onUpdate: (n, st) => graceful.onInterface(n, st),
    });
    // The CNI plugin made the interface and its route; Felix has not heard of the endpoint yet.
    k.links.push(up('calinew', 9));
    k.routes.push({ dst: '198.19.0.7/32', dev: 'calinew', scope: 'link' });
    await monitor.poll();
    clock += 2_000;
    const first = await graceful.apply();
    expect(first.removed).toEqual([]);
    expect(first.deferred).toEqual(['198.19.0.7/32 dev calinew']);
    expect(first.recheckInMs).toBe(8_000);
    expect(k.routes).toEqual([{ dst: '198.19.0.7/32', dev: 'calinew', scope: 'link' }]);
    // A route on an interface the monitor has not reported yet is just as new: it stays too.
    k.routes.push({ dst: '198.19.0.8/32', dev: 'caliunseen', scope: 'link' });
    const unseen = await graceful.apply();
    expect(unseen.removed).toEqual([]);
    expect(unseen.deferred).toContain('198.19.0.8/32 dev caliunseen');
    k.routes = k.routes.filter((r) => r.dev !== 'caliunseen');
    // The endpoint arrives: the route is wanted and stays.
    graceful.setEndpoints([ep('calinew', ['198.19.0.7/32'])]);
    expect(await graceful.apply()).toMatchObject({ added: [], removed: [], deferred: [] });
    // A stale route on an interface past its grace period goes.
    graceful.setEndpoints([]);
    clock += 8_000;
    const later = await graceful.apply();
    expect(later.removed).toEqual(['198.19.0.7/32 dev calinew']);
    expect(later.recheckInMs).toBeUndefined();
    expect(k.routes).toEqual([]);
  });

  it('takes over a route another protocol holds to a workload address', async () => {
    k.links.push(up('calia', 7));
    k.routes.push({ dst: '198.19.0.1/32', dev: 'calia', protocol: 'static', scope: 'link' });
    await mon.poll();
    rm.setEndpoints([ep('calia', ['198.19.0.1/32'])]);
    expect((await rm.apply()).added).toEqual(['198.19.0.1/32 dev calia']);
    expect(k.routes).toEqual([{ dst: '198.19.0.1/32', dev: 'calia', scope: 'link' }]);
  });

  it('configures an interface again when it comes back with a new index', async () => {
    k.links.push(up('calia', 7));
    await mon.poll();
    expect((await rm.apply()).configured).toEqual(['calia']);
    k.links = [];
    await mon.poll();
    k.links.push(up('calia', 9));
    await mon.poll();
    expect((await rm.apply()).configured).toEqual(['calia']);
  });
});

describe('InterfaceMonitor', () => {
  it('reports only matching interfaces, and only when they change', async () => {
    const seen: string[] = [];
    let links = [up('cali1', 3), up('eth0', 2), up('tap9', 4)];
    const net = new Netlinux({
      runner: new ScriptedCommandRunner(() => ({
        stdout: JSON.stringify(links.map((l) => ({ ...l, mtu: 1500, address: 'ee:ee:ee:ee:ee:ee' }))),
      })),
    });
    const mon = new InterfaceMonitor({
      listLinks: () => net.listLinks(),
      interfacePrefixes: ['cali', 'tap'],
      onUpdate: (n, s) => seen.push(s ? `${n}:${s.index}:${s.up ? 'up' : 'down'}` : `${n}:gone`),
    });
    expect(await mon.poll()).toBe(true);
    expect(await mon.poll()).toBe(false);
    links = [{ ...up('cali1', 3), flags: ['UP'], operstate: 'DOWN' }, up('eth0', 2)];
    await mon.poll();
    expect(seen).toEqual(['cali1:3:up', 'tap9:4:up', 'cali1:3:down', 'tap9:gone']);
  });
});

describe('protocolMatches', () => {
  it('knows iproute2 prints boot as nothing and names the usual numbers', () => {
    expect(protocolMatches(undefined, 3)).toBe(true);
    expect(protocolMatches('boot', 3)).toBe(true);
    expect(protocolMatches('static', 4)).toBe(true);
    expect(protocolMatches('80', 80)).toBe(true);
    expect(protocolMatches('static', 3)).toBe(false);
  });
});
