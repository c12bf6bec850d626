/**
 * FakeTunnelNet against the real kernel: the same requests, in a throw-away namespace and in the
 * fake, give the same outcome (success or error code) and leave the same routes. Covers what the
 * IPIP manager relies on: an `ipip` device request (on a kernel without the module "Unknown device
 * type"; with it, tunl0 made by the module and the request for it refused `exists`, tunl0 kept on
 * delete), gateways that must be on a connected subnet, onlink routes that need their device up,
 * and a device set down losing its routes. Needs root and ip.
 */
import { spawnSync } from 'node:child_process';
import { isNetlinuxError, Netlinux, type RouteSpec } from '@calico-ts/netlinux';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeTunnelNet } from './testing-internal/fake-tunnel-net.js';

const missing: string[] = [];
if (process.getuid?.() !== 0) missing.push('root');
if (spawnSync('sh', ['-c', 'command -v ip']).status !== 0) missing.push('ip');
if (missing.length > 0) {
  describe('FakeTunnelNet against the kernel', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
}

/** `ok` or the error code of one operation. */
async function outcome(op: () => Promise<unknown>): Promise<string> {
  try {
    await op();
    return 'ok';
  } catch (e) {
    if (isNetlinuxError(e)) return e.code;
    throw e;
  }
}

describe.skipIf(missing.length > 0)('FakeTunnelNet against the kernel', () => {
  const nl = new Netlinux();
  const ns = `ctsfake-${process.pid}`;
  let fake: FakeTunnelNet;

  beforeEach(async () => {
    ip('netns', 'add', ns);
    // eth0 198.18.0.2/24 up; eth1 198.18.2.2/24 up; dn0 with no address, down.
    for (const [a, b] of [
      ['eth0', 'peer0'],
      ['eth1', 'peer1'],
      ['dn0', 'peer2'],
    ] as const) {
      ip('-n', ns, 'link', 'add', a, 'type', 'veth', 'peer', 'name', b);
    }
    ip('-n', ns, 'addr', 'add', '198.18.0.2/24', 'dev', 'eth0');
    ip('-n', ns, 'addr', 'add', '198.18.2.2/24', 'dev', 'eth1');
    for (const l of ['eth0', 'peer0', 'eth1', 'peer1']) ip('-n', ns, 'link', 'set', l, 'up');
    fake = new FakeTunnelNet({ ipipModule: kernelHasIpip() ? 'available' : 'absent' });
    fake.addUplink('eth0', '198.18.0.2/24');
    fake.addUplink('eth1', '198.18.2.2/24');
    fake.addUplink('dn0', '198.18.3.2/32');
    fake.addrs = fake.addrs.filter((a) => a.dev !== 'dn0');
    await fake.setLink('dn0', { up: false });
  });
  afterEach(() => {
    spawnSync('ip', ['netns', 'del', ns]);
  });

  /** Whether `type ipip` works here, tried in a namespace of its own. */
  function kernelHasIpip(): boolean {
    const probe = `${ns}-probe`;
    ip('netns', 'add', probe);
    try {
      return spawnSync('ip', ['-n', probe, 'link', 'add', 'probe0', 'type', 'ipip']).status === 0;
    } finally {
      spawnSync('ip', ['netns', 'del', probe]);
    }
  }

  const routesOf = async (which: 'kernel' | 'fake') =>
    (which === 'kernel' ? await nl.listRoutes({ family: 4 }, ns) : await fake.listRoutes({ family: 4 }))
      .filter((r) => r.proto === '80')
      .map((r) => `${r.dst} ${r.gateway ?? '-'} ${r.dev ?? '-'} ${r.onlink ? 'onlink' : ''}`)
      .sort();

  it('routes: off-subnet gateway refused, on-subnet taken, onlink on a down device refused, a device set down loses its routes', async () => {
    const steps: [string, RouteSpec][] = [
      ['off-subnet', { dst: '198.19.1.0/26', gateway: '198.18.5.1', dev: 'eth0', proto: 80 }],
      ['on-subnet', { dst: '198.19.2.0/26', gateway: '198.18.0.3', dev: 'eth0', proto: 80 }],
      [
        'onlink on down',
        { dst: '198.19.3.0/26', gateway: '198.18.5.1', dev: 'dn0', onlink: true, proto: 80 },
      ],
      ['onlink on up', { dst: '198.19.4.0/26', gateway: '198.18.5.1', dev: 'eth1', onlink: true, proto: 80 }],
    ];
    for (const [what, spec] of steps) {
      const real = await outcome(() => nl.replaceRoute(spec, ns));
      const faked = await outcome(() => fake.replaceRoute(spec));
      expect({ what, faked }).toEqual({ what, faked: real });
    }
    expect(await routesOf('fake')).toEqual(await routesOf('kernel'));
    expect(await routesOf('kernel')).toEqual([
      '198.19.2.0/26 198.18.0.3 eth0 ',
      '198.19.4.0/26 198.18.5.1 eth1 onlink',
    ]);
    await nl.setLink('eth1', { up: false }, ns);
    await fake.setLink('eth1', { up: false });
    expect(await routesOf('fake')).toEqual(await routesOf('kernel'));
    expect(await routesOf('kernel')).toEqual(['198.19.2.0/26 198.18.0.3 eth0 ']);
  });

  it('an ipip device request: the same outcome, and with the module the same tunl0', async () => {
    const real = await outcome(() => nl.createIpip({ name: 'tunl0' }, ns));
    const faked = await outcome(() => fake.createIpip({ name: 'tunl0' }));
    expect(faked).toBe(real);
    const realTunl = (await nl.listLinks(ns)).find((l) => l.name === 'tunl0');
    const fakeTunl = (await fake.listLinks()).find((l) => l.name === 'tunl0');
    const shape = (l: typeof realTunl) => l && { kind: l.kind, mtu: l.mtu, up: l.up };
    expect(shape(fakeTunl)).toEqual(shape(realTunl));
    if (realTunl) {
      expect(real).toBe('exists');
      await nl.deleteLink('tunl0', {}, ns);
      await fake.deleteLink('tunl0');
      expect((await nl.listLinks(ns)).some((l) => l.name === 'tunl0')).toBe(true);
      expect(fake.links.has('tunl0')).toBe(true);
    } else {
      expect(real).toBe('invalid');
    }
  });
});
