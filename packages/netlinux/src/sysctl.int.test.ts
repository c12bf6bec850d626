/** Sysctls inside throw-away namespaces: never the caller's own, which a test must not change. */
import { execFileSync } from 'node:child_process';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isNetlinuxError, type NetlinuxError } from './errors.js';
import { Netlinux } from './netlinux.js';
import { interfaceSysctlKey } from './sysctl-key.js';
import { inCI, missingPrerequisite, Scratch } from './testing-internal/privileged.js';

const missing = missingPrerequisite();

async function failure(p: Promise<unknown>): Promise<NetlinuxError> {
  try {
    await p;
  } catch (e) {
    if (isNetlinuxError(e)) return e;
    throw e;
  }
  throw new Error('expected a NetlinuxError');
}

/** Reads a sysctl in a namespace without netlinux, to check what it wrote. */
function catIn(ns: string, path: string): string {
  return execFileSync('nsenter', [`--net=/run/netns/${ns}`, 'cat', `/proc/sys/${path}`], {
    encoding: 'utf8',
  }).trim();
}

describe.skipIf(missing !== undefined && !inCI)('sysctls in a namespace (root)', () => {
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

  it('reads and writes a namespace sysctl by name and by path, leaving the caller namespace alone', async () => {
    const ns = s.makeNetns('a');
    const path = await s.procNetnsPath(ns);
    const callerBefore = await nl.readSysctl('net.ipv4.conf.lo.forwarding');

    const start = await nl.readSysctl('net.ipv4.conf.lo.forwarding', ns);
    const flipped = start === '1' ? '0' : '1';
    await nl.writeSysctl('net.ipv4.conf.lo.forwarding', flipped, ns);
    expect(catIn(ns, 'net/ipv4/conf/lo/forwarding')).toBe(flipped);
    expect(await nl.readSysctl('net/ipv4/conf/lo/forwarding', path)).toBe(flipped);
    expect(await nl.readSysctl('net.ipv4.conf.lo.forwarding')).toBe(callerBefore);
  });

  it('maps interface names with dots intact', async () => {
    const ns = s.makeNetns('a');
    await nl.createVethPair({ name: 'eth0.100', peerName: 'vxlan.calico' }, ns);
    await nl.writeSysctls(
      [
        ['net.ipv4.conf.eth0.100.proxy_arp', 1],
        [interfaceSysctlKey(4, 'conf', 'vxlan.calico', 'proxy_arp'), 1],
        ['net.ipv4.neigh.eth0.100.proxy_delay', 0],
        ['net.ipv6.conf.vxlan.calico.accept_ra', 0],
      ],
      ns,
    );
    expect(catIn(ns, 'net/ipv4/conf/eth0.100/proxy_arp')).toBe('1');
    expect(catIn(ns, 'net/ipv4/conf/vxlan.calico/proxy_arp')).toBe('1');
    expect(catIn(ns, 'net/ipv4/neigh/eth0.100/proxy_delay')).toBe('0');
    expect(catIn(ns, 'net/ipv6/conf/vxlan.calico/accept_ra')).toBe('0');
    expect(await nl.readSysctl('net.ipv4.conf.eth0.100.proxy_arp', ns)).toBe('1');
  });

  it('classifies missing keys and rejected values', async () => {
    const ns = s.makeNetns('a');
    expect((await failure(nl.readSysctl('net.ipv4.conf.nosuch0.forwarding', ns))).code).toBe('not-found');
    expect((await failure(nl.writeSysctl('net.ipv4.conf.nosuch0.forwarding', 1, ns))).code).toBe('not-found');
    expect((await failure(nl.writeSysctl('net.ipv4.conf.lo.forwarding', 'abc', ns))).code).toBe('invalid');
    expect((await failure(nl.readSysctl('net.ipv4.ip_forward', s.netnsName('gone')))).code).toBe('not-found');
  });
});
