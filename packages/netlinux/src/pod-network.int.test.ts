/**
 * The dataplane the CNI plugin programs for a pod, built with netlinux between two throw-away
 * namespaces ("host" and "pod"), proven by pinging across it.
 *
 *   pod netns                         host netns
 *   eth0 198.18.0.10/32 ── veth ──── cali0123456789a (ee:ee:ee:ee:ee:ee, proxy_arp=1)
 *        2001:db8:1::10/128             routes 198.18.0.10/32, 2001:db8:1::10/128 dev cali…
 *   169.254.1.1/32 dev eth0 scope link
 *   default via 169.254.1.1           uplink0 198.18.200.1/24, 2001:db8:ff::1/64 ── veth ── uplink1
 *   ::/0 via fe80::ecee:eeff:feee:eeee default via 198.18.200.2 (so 169.254.1.1 routes away from
 *                                     cali…, which is what makes proxy ARP answer for it)
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { addrAddArgs, linkSetArgs, routeArgs } from './ip-commands.js';
import { CALICO_HOST_MAC, linkLocalFromMac } from './mac.js';
import { Netlinux } from './netlinux.js';
import { inCI, missingPrerequisite, runIn, Scratch } from './testing-internal/privileged.js';

const missing = missingPrerequisite(['ip', 'bridge', 'nsenter', 'ping']);
const HOST_VETH = 'cali0123456789a';
const POD_IP4 = '198.18.0.10';
const POD_IP6 = '2001:db8:1::10';
const HOST_IP4 = '198.18.200.1';
const HOST_IP6 = '2001:db8:ff::1';

describe.skipIf(missing !== undefined && !inCI)('pod network through a Calico-style veth (root)', () => {
  const nl = new Netlinux();
  let s: Scratch;

  beforeAll(() => {
    if (missing) throw new Error(`privileged test prerequisite missing: ${missing}`);
  });
  beforeEach(() => {
    s = new Scratch();
  });
  afterEach(() => {
    s.cleanup();
  });

  /** Programs both sides as the CNI plugin does; returns the host netns name and the pod netns path. */
  async function buildPod(opts: { proxyArp: boolean }): Promise<{ host: string; pod: string }> {
    const host = s.makeNetns('host');
    // The pod namespace is addressed by /proc/<pid>/ns/net, as CNI_NETNS does.
    const pod = await s.procNetnsPath(s.makeNetns('pod'));

    await nl.createVethPair({ name: 'uplink0', peerName: 'uplink1' }, host);
    await nl.batch(
      [
        linkSetArgs('uplink0', { up: true }),
        linkSetArgs('uplink1', { up: true }),
        addrAddArgs('uplink0', `${HOST_IP4}/24`),
        addrAddArgs('uplink0', `${HOST_IP6}/64`, { noDad: true }),
        routeArgs('add', { dst: 'default', gateway: '198.18.200.2', dev: 'uplink0' }),
      ],
      host,
    );

    await nl.createVethPair(
      { name: HOST_VETH, peerName: 'eth0', peerNetns: pod, mac: CALICO_HOST_MAC, mtu: 1440, numQueues: 2 },
      host,
    );
    await nl.writeSysctls(
      [
        [`net.ipv4.conf.${HOST_VETH}.route_localnet`, 1],
        [`net.ipv4.conf.${HOST_VETH}.proxy_arp`, opts.proxyArp ? 1 : 0],
        [`net.ipv4.conf.${HOST_VETH}.forwarding`, 1],
        [`net.ipv4.neigh.${HOST_VETH}.proxy_delay`, 0],
        [`net.ipv6.conf.${HOST_VETH}.accept_dad`, 0],
        [`net.ipv6.conf.${HOST_VETH}.disable_ipv6`, 0],
        [`net.ipv6.conf.${HOST_VETH}.proxy_ndp`, 1],
        [`net.ipv6.conf.${HOST_VETH}.forwarding`, 1],
        [`net.ipv6.conf.${HOST_VETH}.accept_ra`, 0],
      ],
      host,
    );
    await nl.batch(
      [
        linkSetArgs(HOST_VETH, { up: true }),
        routeArgs('add', { dst: POD_IP4, dev: HOST_VETH, scope: 'link' }),
        routeArgs('add', { dst: POD_IP6, dev: HOST_VETH }),
      ],
      host,
    );

    await nl.writeSysctls(
      [
        ['net.ipv6.conf.all.disable_ipv6', 0],
        ['net.ipv6.conf.default.disable_ipv6', 0],
        ['net.ipv6.conf.lo.disable_ipv6', 0],
        ['net.ipv6.conf.eth0.accept_dad', 0],
      ],
      pod,
    );
    await nl.batch(
      [
        linkSetArgs('eth0', { up: true }),
        addrAddArgs('eth0', POD_IP4),
        routeArgs('add', { dst: '169.254.1.1', dev: 'eth0', scope: 'link' }),
        routeArgs('add', { dst: 'default', gateway: '169.254.1.1', dev: 'eth0' }),
        addrAddArgs('eth0', POD_IP6, { noDad: true }),
        routeArgs('add', { dst: 'default', gateway: linkLocalFromMac(CALICO_HOST_MAC), dev: 'eth0' }),
      ],
      pod,
    );
    return { host, pod };
  }

  it('programs the kernel state the CNI plugin needs', async () => {
    const { host, pod } = await buildPod({ proxyArp: true });

    const hostEnd = await nl.getLink(HOST_VETH, host);
    expect(hostEnd).toMatchObject({ kind: 'veth', mac: CALICO_HOST_MAC, mtu: 1440, up: true });
    const podEnd = await nl.getLink('eth0', pod);
    expect(podEnd).toMatchObject({ kind: 'veth', mtu: 1440, up: true });
    expect(podEnd.mac).not.toBe(CALICO_HOST_MAC);

    const podRoutes = await nl.listRoutes({}, pod);
    expect(podRoutes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ family: 4, dst: '169.254.1.1/32', dev: 'eth0', scope: 'link' }),
        expect.objectContaining({ family: 4, dst: '0.0.0.0/0', gateway: '169.254.1.1', dev: 'eth0' }),
        expect.objectContaining({
          family: 6,
          dst: '::/0',
          gateway: 'fe80::ecee:eeff:feee:eeee',
          dev: 'eth0',
        }),
      ]),
    );
    expect(await nl.listAddrs({ dev: 'eth0' }, pod)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ cidr: `${POD_IP4}/32`, family: 4 }),
        expect.objectContaining({ cidr: `${POD_IP6}/128`, family: 6, noDad: true }),
      ]),
    );

    const hostRoutes = await nl.listRoutes({ dev: HOST_VETH }, host);
    expect(hostRoutes.map((r) => r.dst).sort()).toEqual(
      [`${POD_IP6}/128`, `${POD_IP4}/32`, 'fe80::/64'].sort(),
    );
    expect(hostRoutes.every((r) => r.dev === HOST_VETH)).toBe(true);
    expect(hostRoutes.find((r) => r.dst === `${POD_IP4}/32`)).toMatchObject({ scope: 'link', proto: 'boot' });
    // The kernel gave the host end the link-local address linkLocalFromMac computes.
    const hostLl = await nl.listAddrs({ dev: HOST_VETH, family: 6 }, host);
    expect(hostLl.map((a) => a.cidr)).toEqual([`${linkLocalFromMac(CALICO_HOST_MAC)}/64`]);
    expect(await nl.readSysctl(`net.ipv4.conf.${HOST_VETH}.proxy_arp`, host)).toBe('1');
    expect(await nl.readSysctl(`net.ipv6.conf.${HOST_VETH}.accept_ra`, host)).toBe('0');

    const chosen = await nl.getRoute(HOST_IP4, pod);
    expect(chosen).toMatchObject({
      dst: `${HOST_IP4}/32`,
      gateway: '169.254.1.1',
      dev: 'eth0',
      src: POD_IP4,
    });
  });

  it('pings the host side over IPv4 (proxy ARP answers for 169.254.1.1) and IPv6', async () => {
    const { pod } = await buildPod({ proxyArp: true });

    const v4 = runIn(pod, ['ping', '-n', '-c', '1', '-W', '3', HOST_IP4]);
    expect(v4.out).toContain('1 received');
    expect(v4.code).toBe(0);
    // The gateway was resolved to the host veth's MAC by proxy ARP: there is no such address.
    const neigh = await nl.listNeighbours({ dev: 'eth0', family: 4 }, pod);
    expect(neigh).toContainEqual(expect.objectContaining({ dst: '169.254.1.1', lladdr: CALICO_HOST_MAC }));

    const v6 = runIn(pod, ['ping', '-6', '-n', '-c', '1', '-W', '3', HOST_IP6]);
    expect(v6.out).toContain('1 received');
    expect(v6.code).toBe(0);
  });

  it('without proxy_arp on the host veth the pod cannot reach its gateway', async () => {
    const { pod } = await buildPod({ proxyArp: false });
    const v4 = runIn(pod, ['ping', '-n', '-c', '1', '-W', '1', HOST_IP4]);
    expect(v4.code).not.toBe(0);
    const neigh = await nl.listNeighbours({ dev: 'eth0', family: 4 }, pod);
    expect(neigh.find((n) => n.dst === '169.254.1.1')?.lladdr).toBeUndefined();
  });
});
