/**
 * VXLAN the way Felix programs it, between two throw-away namespaces joined by an underlay veth:
 *
 *   n1: und0 198.18.100.1/24 ─────── und1 198.18.100.2/24 :n2
 *       vxlan.calico 198.18.50.1/32        vxlan.calico 198.18.50.2/32
 *       neigh 198.18.50.2 → mac2           neigh 198.18.50.1 → mac1
 *       fdb mac2 → dst 198.18.100.2        fdb mac1 → dst 198.18.100.1
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isNetlinuxError } from './errors.js';
import { Netlinux } from './netlinux.js';
import { inCI, missingPrerequisite, runIn, Scratch } from './testing-internal/privileged.js';

const missing = missingPrerequisite(['ip', 'bridge', 'nsenter', 'ping']);
const VX = 'vxlan.calico';
const MAC1 = '66:00:00:00:00:01';
const MAC2 = '66:00:00:00:00:02';

describe.skipIf(missing !== undefined && !inCI)('VXLAN with FDB and neighbour entries (root)', () => {
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

  async function vtep(
    ns: string,
    underlay: string,
    local: string,
    tunnel: string,
    mac: string,
  ): Promise<void> {
    await nl.addAddr(underlay, `${local}/24`, undefined, ns);
    await nl.setLinkUp(underlay, ns);
    await nl.createVxlan({ name: VX, vni: 4096, port: 4789, local, dev: underlay, mtu: 1450, mac }, ns);
    await nl.addAddr(VX, `${tunnel}/32`, undefined, ns);
    await nl.setLinkUp(VX, ns);
  }

  it('creates a VXLAN device with the requested parameters and deletes it', async () => {
    const n1 = s.makeNetns('n1');
    await nl.createVethPair({ name: 'und0', peerName: 'und1' }, n1);
    await nl.createVxlan(
      { name: VX, vni: 4096, port: 4789, local: '198.18.100.1', dev: 'und0', mac: MAC1 },
      n1,
    );
    expect(await nl.getLink(VX, n1)).toMatchObject({
      kind: 'vxlan',
      mac: MAC1,
      vxlan: { vni: 4096, port: 4789, local: '198.18.100.1', dev: 'und0', learning: false },
    });
    await nl.createVxlan({ name: 'vx-learn', vni: 7, port: 8472, learning: true }, n1);
    expect((await nl.getLink('vx-learn', n1)).vxlan).toEqual({ vni: 7, port: 8472, learning: true });

    expect(await nl.deleteLink(VX, {}, n1)).toBe(true);
    expect(await nl.findLink(VX, n1)).toBeUndefined();
    expect(await nl.deleteLink(VX, { ignoreMissing: true }, n1)).toBe(false);
  });

  it('carries traffic once FDB and neighbour entries are programmed, and stops when they go', async () => {
    const n1 = s.makeNetns('n1');
    const n2 = s.makeNetns('n2');
    await nl.createVethPair({ name: 'und0', peerName: 'und1', peerNetns: n2 }, n1);
    await vtep(n1, 'und0', '198.18.100.1', '198.18.50.1', MAC1);
    await vtep(n2, 'und1', '198.18.100.2', '198.18.50.2', MAC2);

    for (const [ns, peerTunnel, peerMac, peerUnderlay] of [
      [n1, '198.18.50.2', MAC2, '198.18.100.2'],
      [n2, '198.18.50.1', MAC1, '198.18.100.1'],
    ] as const) {
      await nl.addNeighbour({ dst: peerTunnel, lladdr: peerMac, dev: VX }, ns);
      await nl.addFdb({ mac: peerMac, dev: VX, dst: peerUnderlay }, ns);
      await nl.addRoute({ dst: peerTunnel, dev: VX, scope: 'link' }, ns);
    }

    expect(await nl.listNeighbours({ dev: VX }, n1)).toContainEqual({
      family: 4,
      dst: '198.18.50.2',
      dev: VX,
      lladdr: MAC2,
      state: ['permanent'],
      router: false,
      proxy: false,
    });
    expect(await nl.listFdb(VX, n1)).toContainEqual({
      mac: MAC2,
      dev: VX,
      dst: '198.18.100.2',
      flags: ['self'],
      state: 'permanent',
    });
    expect((await nl.listFdb(undefined, n1)).filter((e) => e.dev === VX && e.mac === MAC2)).toHaveLength(1);

    const ping = runIn(`/run/netns/${n1}`, ['ping', '-n', '-c', '1', '-W', '3', '198.18.50.2']);
    expect(ping.out).toContain('1 received');

    // Re-pointing the FDB entry at an address nobody has breaks the tunnel.
    await nl.replaceFdb({ mac: MAC2, dev: VX, dst: '198.18.100.99' }, n1);
    expect((await nl.listFdb(VX, n1)).find((e) => e.mac === MAC2)?.dst).toBe('198.18.100.99');
    expect(runIn(`/run/netns/${n1}`, ['ping', '-n', '-c', '1', '-W', '1', '198.18.50.2']).code).not.toBe(0);

    expect(await nl.delFdb({ mac: MAC2, dev: VX, dst: '198.18.100.99' }, {}, n1)).toBe(true);
    expect((await nl.listFdb(VX, n1)).find((e) => e.mac === MAC2)).toBeUndefined();
    expect(await nl.delFdb({ mac: MAC2, dev: VX, dst: '198.18.100.99' }, { ignoreMissing: true }, n1)).toBe(
      false,
    );
    expect(await nl.delNeighbour({ dst: '198.18.50.2', dev: VX }, {}, n1)).toBe(true);
    expect(await nl.delNeighbour({ dst: '198.18.50.2', dev: VX }, { ignoreMissing: true }, n1)).toBe(false);
    expect((await nl.listNeighbours({ dev: VX }, n1)).find((n) => n.dst === '198.18.50.2')).toBeUndefined();
  });

  it('appends flood entries and reports duplicates as exists', async () => {
    const n1 = s.makeNetns('n1');
    await nl.createVxlan({ name: VX, vni: 4096, port: 4789 }, n1);
    await nl.appendFdb({ mac: '00:00:00:00:00:00', dev: VX, dst: '198.18.100.2' }, n1);
    await nl.appendFdb({ mac: '00:00:00:00:00:00', dev: VX, dst: '198.18.100.3' }, n1);
    const flood = (await nl.listFdb(VX, n1)).filter((e) => e.mac === '00:00:00:00:00:00').map((e) => e.dst);
    expect(flood.sort()).toEqual(['198.18.100.2', '198.18.100.3']);

    await nl.addNeighbour({ dst: '198.18.50.9', lladdr: MAC2, dev: VX }, n1);
    let err: unknown;
    try {
      await nl.addNeighbour({ dst: '198.18.50.9', lladdr: MAC2, dev: VX }, n1);
    } catch (e) {
      err = e;
    }
    expect(isNetlinuxError(err, 'exists')).toBe(true);
    await nl.replaceNeighbour({ dst: '198.18.50.9', lladdr: MAC1, dev: VX }, n1);
    expect((await nl.listNeighbours({ dev: VX }, n1)).find((n) => n.dst === '198.18.50.9')?.lladdr).toBe(
      MAC1,
    );
  });
});
