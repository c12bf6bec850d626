/**
 * The rtnetlink path (`new Netlinux({ netlink: true })`) against the kernel: the pod network the
 * CNI plugin builds, made without `ip`, read back with `ip`, and proven by ping; its errors carry
 * the codes the `ip` path gives. Under Node (koffi) in this process, and under Bun (bun:ffi), as
 * the native executables run it. Root only; everything happens in throw-away namespaces.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isNetlinuxError, NetlinuxBatchError } from './errors.js';
import { CALICO_HOST_MAC } from './mac.js';
import { Netlinux } from './netlinux.js';
import { inCI, missingPrerequisite, runIn, Scratch } from './testing-internal/privileged.js';
import type { LinkOp } from './types.js';

const missing = missingPrerequisite(['ip', 'nsenter', 'ping']);

/** The ops the CNI plugin applies to each end of a pod's veth. */
function podOps(ip: string): LinkOp[] {
  return [
    { op: 'up', dev: 'eth0' },
    { op: 'addr-add', dev: 'eth0', cidr: `${ip}/32` },
    { op: 'addr-add', dev: 'eth0', cidr: 'fd00:198:18::9/128', noDad: true },
    { op: 'route-add', dev: 'eth0', dst: '169.254.1.1/32', scope: 'link' },
    { op: 'route-add', dev: 'eth0', dst: '0.0.0.0/0', gateway: '169.254.1.1' },
  ];
}
function hostOps(host: string, ip: string): LinkOp[] {
  return [
    { op: 'up', dev: host },
    { op: 'route-add', dev: host, dst: `${ip}/32`, scope: 'link' },
  ];
}

describe.skipIf(missing !== undefined && !inCI)('rtnetlink (root)', () => {
  const nl = new Netlinux({ netlink: true });
  const ipOnly = new Netlinux();
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

  it('builds a pod veth that ip reads back as asked, and that carries traffic', async () => {
    const node = s.makeNetns('node');
    const pod = await s.procNetnsPath(s.makeNetns('pod'));
    await nl.createVethPair(
      {
        name: 'calinltest0001',
        peerName: 'eth0',
        peerNetns: pod,
        mac: CALICO_HOST_MAC,
        peerMac: '0a:58:c6:12:00:09',
        mtu: 1440,
      },
      node,
    );
    await ipOnly.writeSysctls(
      [
        ['net.ipv4.conf.calinltest0001.proxy_arp', '1'],
        ['net.ipv4.conf.calinltest0001.forwarding', '1'],
      ],
      node,
    );
    await nl.apply(podOps('198.18.0.9'), pod);
    await nl.apply(hostOps('calinltest0001', '198.18.0.9'), node);
    // An uplink with the default route, so 169.254.1.1 routes away from the pod's host end and
    // proxy ARP answers for it there.
    await ipOnly.createVethPair({ name: 'uplink0', peerName: 'uplink1' }, node);
    await ipOnly.apply(
      [
        { op: 'up', dev: 'uplink0' },
        { op: 'up', dev: 'uplink1' },
        { op: 'addr-add', dev: 'uplink0', cidr: '198.18.200.1/24' },
        { op: 'route-add', dev: 'uplink0', dst: '0.0.0.0/0', gateway: '198.18.200.2' },
      ],
      node,
    );

    const host = await ipOnly.findLink('calinltest0001', node);
    expect(host).toMatchObject({ up: true, mac: CALICO_HOST_MAC, mtu: 1440 });
    const eth0 = await ipOnly.findLink('eth0', pod);
    expect(eth0).toMatchObject({ up: true, mac: '0a:58:c6:12:00:09', mtu: 1440 });
    const addrs = (await ipOnly.listAddrs({ dev: 'eth0' }, pod)).map((a) => a.cidr);
    expect(addrs).toEqual(expect.arrayContaining(['198.18.0.9/32', 'fd00:198:18::9/128']));
    const podRoutes = await ipOnly.listRoutes({ family: 4 }, pod);
    expect(podRoutes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ dst: '0.0.0.0/0', gateway: '169.254.1.1', dev: 'eth0' }),
        expect.objectContaining({ dst: '169.254.1.1/32', dev: 'eth0', scope: 'link' }),
      ]),
    );
    const hostRoutes = await ipOnly.listRoutes({ family: 4, dev: 'calinltest0001' }, node);
    expect(hostRoutes).toEqual([expect.objectContaining({ dst: '198.18.0.9/32', scope: 'link' })]);
    expect(runIn(pod, ['ping', '-c', '1', '-W', '2', '198.18.200.1']).code).toBe(0);
  });

  it('many Netlinux instances (one per request in a long-running program) open no socket each', async () => {
    // Run inside a namespace of its own, so "this namespace" is never the host's.
    const node = s.makeNetns('node');
    const script = `
      import { readdirSync } from 'node:fs';
      import { Netlinux } from ${JSON.stringify(fileURLToPath(new URL('./netlinux.ts', import.meta.url)))};
      const fds = () => readdirSync('/proc/self/fd').length;
      await new Netlinux({ netlink: true }).apply([{ op: 'up', dev: 'lo' }]);
      const before = fds();
      for (let i = 0; i < 50; i++) await new Netlinux({ netlink: true }).apply([{ op: 'up', dev: 'lo' }]);
      process.stdout.write(JSON.stringify({ before, after: fds() }));
    `;
    const r = spawnSync('nsenter', [`--net=/run/netns/${node}`, bunBinary(), '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.stderr).toBe('');
    const { before, after } = JSON.parse(r.stdout) as { before: number; after: number };
    expect(after).toBeLessThanOrEqual(before + 2);
  });

  it('reports exists, not-found and the failing index with the codes of the ip path', async () => {
    const node = s.makeNetns('node');
    const pod = s.makeNetns('pod');
    const spec = { name: 'calinltest0002', peerName: 'eth0', peerNetns: pod };
    await nl.createVethPair(spec, node);
    const again = await nl.createVethPair(spec, node).catch((e: unknown) => e);
    expect(isNetlinuxError(again, 'exists')).toBe(true);

    const e = await nl
      .apply(
        [
          { op: 'up', dev: 'eth0' },
          { op: 'addr-add', dev: 'eth0', cidr: '198.18.0.7/32' },
          { op: 'addr-add', dev: 'eth0', cidr: '198.18.0.7/32' },
        ],
        pod,
      )
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(NetlinuxBatchError);
    expect((e as NetlinuxBatchError).index).toBe(2);
    expect((e as NetlinuxBatchError).code).toBe('exists');

    const noDev = await nl.apply([{ op: 'up', dev: 'nosuchdev0' }], pod).catch((x: unknown) => x);
    expect(isNetlinuxError(noDev, 'not-found')).toBe(true);

    // Deleting (by `ip`) the pod end takes the host end with it; deleting again is "missing".
    expect(await nl.deleteLink('eth0', { ignoreMissing: true }, pod)).toBe(true);
    expect(await ipOnly.findLink('calinltest0002', node)).toBeUndefined();
    expect(await nl.deleteLink('eth0', { ignoreMissing: true }, pod)).toBe(false);
    expect(await nl.deleteLink('eth0', { ignoreMissing: true }, `/run/netns/${s.prefix}-gone`)).toBe(false);
  });

  it('under Bun (bun:ffi), as the native executables run it', async () => {
    const node = s.makeNetns('node');
    const pod = s.makeNetns('pod');
    const script = `
      import { Netlinux } from ${JSON.stringify(fileURLToPath(new URL('./netlinux.ts', import.meta.url)))};
      const nl = new Netlinux({ netlink: true });
      await nl.createVethPair({ name: 'calinltest0003', peerName: 'eth0', peerNetns: ${JSON.stringify(pod)} }, ${JSON.stringify(node)});
      await nl.apply(${JSON.stringify(podOps('198.18.0.8'))}, ${JSON.stringify(pod)});
      await nl.apply(${JSON.stringify(hostOps('calinltest0003', '198.18.0.8'))}, ${JSON.stringify(node)});
      let code = 'none';
      try { await nl.apply([{ op: 'up', dev: 'nosuchdev0' }], ${JSON.stringify(pod)}); } catch (e) { code = e.code; }
      process.stdout.write(JSON.stringify({ code, own: (await import('node:fs')).readlinkSync('/proc/thread-self/ns/net') }));
    `;
    const r = spawnSync(bunBinary(), ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { code: string; own: string };
    expect(out.code).toBe('not-found');
    // The thread is back in its own namespace after working in the others.
    expect(out.own).toBe(spawnSync('readlink', ['/proc/self/ns/net'], { encoding: 'utf8' }).stdout.trim());
    expect((await ipOnly.listAddrs({ dev: 'eth0' }, pod)).map((a) => a.cidr)).toContain('198.18.0.8/32');
    expect(await ipOnly.findLink('calinltest0003', node)).toMatchObject({ up: true });
  });
});

/** The bun executable the workspace installs for the native builds (a dependency of the CNI plugin). */
function bunBinary(): string {
  const fromPlugin = createRequire(fileURLToPath(new URL('../../cni-plugin/package.json', import.meta.url)));
  const fromBun = createRequire(fromPlugin.resolve('bun/package.json'));
  const arch = process.arch === 'arm64' ? 'aarch64' : process.arch;
  return fromBun.resolve(`@oven/bun-${process.platform}-${arch}/bin/bun`);
}
