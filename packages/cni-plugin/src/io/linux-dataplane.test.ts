import { describe, expect, it } from 'vitest';
import { CniPluginError } from '../errors.js';
import type { WorkloadNetworkSpec } from './dataplane.js';
import { FakeNetOps } from './fake-net-ops.js';
import { LinuxDataplane } from './linux-dataplane.js';

const POD = '/run/netns/pod1';
const spec: WorkloadNetworkSpec = {
  netns: POD,
  containerIfName: 'eth0',
  hostIfName: 'calic440f455693',
  mtu: 1450,
  numQueues: 1,
  addresses: ['198.19.0.4/32'],
  routes: ['0.0.0.0/0'],
  allowIpForwarding: false,
};

function setup() {
  const net = new FakeNetOps();
  net.addNetns(POD);
  return { net, dp: new LinuxDataplane(net) };
}

/** Everything the plugin could have left behind, for comparing before/after. */
function snapshot(net: FakeNetOps) {
  return [...net.namespaces.entries()].map(([name, n]) => ({
    name,
    links: [...n.links.keys()].sort(),
    addrs: n.addrs.map((a) => `${a.cidr} ${a.dev}`).sort(),
    routes: n.routes.map((r) => `${r.dst} ${r.gateway ?? ''} ${r.dev}`).sort(),
  }));
}

describe('LinuxDataplane.setUp', () => {
  it('creates the veth, addresses, routes and sysctls Calico expects', async () => {
    const { net, dp } = setup();
    const wl = await dp.setUp(spec);
    expect(wl.hostIfName).toBe('calic440f455693');
    expect(wl.hostMac).toBe('ee:ee:ee:ee:ee:ee');
    expect(wl.containerMtu).toBe(1450);

    const host = net.ns('');
    const hostLink = host.links.get('calic440f455693')!;
    expect(hostLink).toMatchObject({ mac: 'ee:ee:ee:ee:ee:ee', up: true, mtu: 1450 });
    expect(host.routes).toEqual([
      { family: 4, dst: '198.19.0.4/32', dev: 'calic440f455693', scope: 'link', proto: 'boot' },
    ]);
    for (const [k, v] of [
      ['net.ipv4.conf.calic440f455693.proxy_arp', '1'],
      ['net.ipv4.neigh.calic440f455693.proxy_delay', '0'],
      ['net.ipv4.conf.calic440f455693.forwarding', '1'],
      ['net.ipv4.conf.calic440f455693.route_localnet', '1'],
      ['net.ipv6.conf.calic440f455693.accept_ra', '0'],
    ]) {
      expect(host.sysctls.get(k!), k).toBe(v);
    }

    const pod = net.ns(POD);
    const eth0 = pod.links.get('eth0')!;
    expect(eth0).toMatchObject({ up: true, mtu: 1450, mac: wl.containerMac });
    expect(pod.addrs.map((a) => `${a.cidr} ${a.dev}`)).toEqual(['198.19.0.4/32 eth0']);
    expect(pod.routes.map((r) => [r.dst, r.gateway, r.dev, r.scope])).toEqual([
      ['169.254.1.1/32', undefined, 'eth0', 'link'],
      ['0.0.0.0/0', '169.254.1.1', 'eth0', undefined],
    ]);
    // Forwarding stays off in the pod unless allowed.
    expect(pod.sysctls.get('net.ipv4.ip_forward')).toBe('0');
  });

  it('dual stack: /128 without DAD and the IPv6 default via the host end’s link-local address', async () => {
    const { net, dp } = setup();
    await dp.setUp({
      ...spec,
      addresses: ['198.19.0.4/32', 'fd00:198:19::4/128'],
      routes: ['0.0.0.0/0', '::/0'],
      allowIpForwarding: true,
    });
    const pod = net.ns(POD);
    expect(pod.addrs.find((a) => a.family === 6)).toMatchObject({ cidr: 'fd00:198:19::4/128', noDad: true });
    expect(pod.routes.find((r) => r.dst === '::/0')).toMatchObject({
      gateway: 'fe80::ecee:eeff:feee:eeee',
      dev: 'eth0',
    });
    expect(pod.sysctls.get('net.ipv6.conf.eth0.accept_dad')).toBe('0');
    expect(pod.sysctls.get('net.ipv4.ip_forward')).toBe('1');
    const host = net.ns('');
    expect(host.sysctls.get('net.ipv6.conf.calic440f455693.proxy_ndp')).toBe('1');
    expect(host.routes.map((r) => r.dst).sort()).toEqual(['198.19.0.4/32', 'fd00:198:19::4/128']);
  });

  it('deletes a stale host end of the same name first', async () => {
    const { net, dp } = setup();
    net.addNetns('/run/netns/old');
    await net.createVethPair({ name: 'calic440f455693', peerName: 'eth0', peerNetns: '/run/netns/old' });
    await dp.setUp(spec);
    expect(net.ns('/run/netns/old').links.has('eth0')).toBe(false);
    expect(net.ns(POD).links.has('eth0')).toBe(true);
  });

  it('refuses when CNI_IFNAME already exists in the pod, touching nothing', async () => {
    const { net, dp } = setup();
    await net.createVethPair({ name: 'other', peerName: 'eth0', peerNetns: POD });
    const before = snapshot(net);
    await expect(dp.setUp(spec)).rejects.toThrow('interface eth0 already exists in /run/netns/pod1');
    expect(snapshot(net)).toEqual(before);
  });

  it('a missing netns is invalid-netns', async () => {
    const { dp } = setup();
    const e = await dp.setUp({ ...spec, netns: '/run/netns/gone' }).catch((x: CniPluginError) => x);
    expect(e).toBeInstanceOf(CniPluginError);
    expect((e as CniPluginError).code).toBe('invalid-netns');
  });

  it('a host route owned by another interface is an error, and nothing is left', async () => {
    const { net, dp } = setup();
    net.addNetns('/run/netns/other');
    await net.createVethPair({ name: 'caliother', peerName: 'eth0', peerNetns: '/run/netns/other' });
    await net.addRoute({ dst: '198.19.0.4/32', dev: 'caliother', scope: 'link' });
    const before = snapshot(net);
    await expect(dp.setUp(spec)).rejects.toThrow(
      'route 198.19.0.4/32 already exists for an interface other than calic440f455693: it uses caliother',
    );
    expect(snapshot(net)).toEqual(before);
  });

  it('the same host route already on our interface is fine', async () => {
    const { net, dp } = setup();
    const orig = net.batch.bind(net);
    // Felix may have programmed the route before our host-side request.
    net.batch = async (commands, ns) => {
      if (ns === undefined)
        await net.addRoute({ dst: '198.19.0.4/32', dev: 'calic440f455693', scope: 'link' });
      await orig(commands, ns);
    };
    await expect(dp.setUp(spec)).resolves.toMatchObject({ hostIfName: 'calic440f455693' });
    expect(net.ns(undefined).routes.filter((r) => r.dst === '198.19.0.4/32')).toHaveLength(1);
  });

  it('undoes everything when any kernel operation fails', async () => {
    const probe = setup();
    await probe.dp.setUp({
      ...spec,
      addresses: ['198.19.0.4/32', 'fd00::4/128'],
      routes: ['0.0.0.0/0', '::/0'],
    });
    const total = probe.net.ops.length;
    expect(total).toBeGreaterThan(10);
    for (let n = 1; n <= total; n++) {
      const { net, dp } = setup();
      const before = snapshot(net);
      net.failAt(n);
      const e = await dp
        .setUp({ ...spec, addresses: ['198.19.0.4/32', 'fd00::4/128'], routes: ['0.0.0.0/0', '::/0'] })
        .then(
          () => undefined,
          (x: unknown) => x,
        );
      expect(e, `operation ${n}: ${probe.net.ops[n - 1]}`).toBeInstanceOf(CniPluginError);
      expect((e as CniPluginError).code).toBe('dataplane-failed');
      expect((e as CniPluginError).message).toContain(`injected failure at operation ${n}`);
      net.failAt(undefined);
      expect(snapshot(net), `state after failing operation ${n}: ${probe.net.ops[n - 1]}`).toEqual(before);
    }
  });
});

describe('LinuxDataplane.tearDown and observe', () => {
  it('DEL removes the pod interface (and with it the host end and route), then reports absent', async () => {
    const { net, dp } = setup();
    await dp.setUp(spec);
    expect(await dp.tearDown(POD, 'eth0')).toBe('removed');
    expect(net.ns('').links.has('calic440f455693')).toBe(false);
    expect(net.ns('').routes).toEqual([]);
    expect(await dp.tearDown(POD, 'eth0')).toBe('absent');
    expect(await dp.tearDown('/run/netns/gone', 'eth0')).toBe('absent');
    expect(await dp.tearDown('', 'eth0')).toBe('absent');
  });

  it('observes both ends', async () => {
    const { dp } = setup();
    const wl = await dp.setUp(spec);
    const o = await dp.observe(POD, 'eth0', 'calic440f455693');
    expect(o.netnsExists).toBe(true);
    expect(o.container).toMatchObject({
      name: 'eth0',
      up: true,
      mac: wl.containerMac,
      addresses: ['198.19.0.4/32'],
    });
    expect(o.container?.routes).toContainEqual({ dst: '0.0.0.0/0', gateway: '169.254.1.1', dev: 'eth0' });
    expect(o.host).toMatchObject({ up: true, mac: 'ee:ee:ee:ee:ee:ee' });
    expect(o.host?.sysctls['net.ipv4.conf.calic440f455693.proxy_arp']).toBe('1');
    expect(await dp.observe('/run/netns/gone', 'eth0', 'calinope')).toEqual({ netnsExists: false });
  });
});
