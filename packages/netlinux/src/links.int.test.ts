/**
 * Namespaces, links, addresses, routes, batches and error classification against the real kernel,
 * each test inside namespaces it made (`nltest-<random>-…`) and removes.
 */
import { execFileSync } from 'node:child_process';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isNetlinuxError, NetlinuxBatchError, type NetlinuxError } from './errors.js';
import { addrAddArgs, linkSetArgs, routeArgs } from './ip-commands.js';
import { Netlinux } from './netlinux.js';
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

describe.skipIf(missing !== undefined && !inCI)('links, addresses and routes in namespaces (root)', () => {
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

  it('creates, lists, detects and deletes namespaces idempotently', async () => {
    const name = s.netnsName('a');
    expect(await nl.netnsExists(name)).toBe(false);
    await nl.createNetns(name);
    expect(await nl.listNetns()).toContain(name);
    expect(await nl.netnsExists(name)).toBe(true);
    expect(await nl.netnsExists(`/run/netns/${name}`)).toBe(true);
    expect((await failure(nl.createNetns(name))).code).toBe('exists');
    expect(await nl.deleteNetns(name)).toBe(true);
    expect(await nl.deleteNetns(name)).toBe(false);
    expect(await nl.listNetns()).not.toContain(name);
    expect(await nl.netnsExists('/proc/self/ns/net')).toBe(true);
    expect(await nl.netnsExists('/proc/999999999/ns/net')).toBe(false);
  });

  it('creates a veth across namespaces and changes it', async () => {
    const a = s.makeNetns('a');
    const b = await s.procNetnsPath(s.makeNetns('b'));

    await nl.createVethPair(
      { name: 'host0', peerName: 'eth0', peerNetns: b, mtu: 1400, peerMac: '02:00:00:00:00:42' },
      a,
    );
    const host0 = await nl.getLink('host0', a);
    const eth0 = await nl.getLink('eth0', b);
    expect(host0).toMatchObject({ kind: 'veth', mtu: 1400, up: false, peerIndex: eth0.index });
    expect(host0.peerNetnsId).toBeTypeOf('number');
    expect(eth0).toMatchObject({ kind: 'veth', mtu: 1400, mac: '02:00:00:00:00:42' });
    expect(await nl.findLink('eth0', a)).toBeUndefined();

    await nl.setLinkMtu('host0', 9000, a);
    await nl.setLinkMac('host0', 'EE:EE:EE:EE:EE:EE', a);
    await nl.setLinkUp('host0', a);
    expect(await nl.getLink('host0', a)).toMatchObject({ mtu: 9000, mac: 'ee:ee:ee:ee:ee:ee', up: true });
    await nl.setLinkDown('host0', a);
    expect((await nl.getLink('host0', a)).up).toBe(false);

    await nl.renameLink('eth0', 'tmp0', b);
    expect((await nl.listLinks(b)).map((l) => l.name).sort()).toEqual(['lo', 'tmp0']);

    // Move the pod end back next to the host end; the pair is then local on both sides.
    await nl.moveLinkToNetns('tmp0', a, b);
    expect((await nl.listLinks(a)).map((l) => l.name).sort()).toEqual(['host0', 'lo', 'tmp0']);

    expect(await nl.deleteLink('host0', {}, a)).toBe(true);
    // Deleting one end removed its peer too.
    expect((await nl.listLinks(a)).map((l) => l.name)).toEqual(['lo']);
  });

  it('enslaves a veth to a bridge', async () => {
    const a = s.makeNetns('a');
    await nl.createBridge({ name: 'br0', mtu: 1500 }, a);
    await nl.createVethPair({ name: 'v0', peerName: 'v1' }, a);
    await nl.setLinkMaster('v0', 'br0', a);
    expect(await nl.getLink('br0', a)).toMatchObject({ kind: 'bridge' });
    expect((await nl.getLink('v0', a)).master).toBe('br0');
    await nl.setLinkMaster('v0', null, a);
    expect((await nl.getLink('v0', a)).master).toBeUndefined();
  });

  it('adds, lists, deletes and flushes addresses', async () => {
    const a = s.makeNetns('a');
    await nl.createVethPair({ name: 'v0', peerName: 'v1' }, a);
    await nl.setLinkUp('v0', a);
    await nl.addAddr('v0', '198.18.1.1/24', undefined, a);
    await nl.addAddr('v0', '198.18.1.2', { scope: 'link' }, a);
    await nl.addAddr('v0', '2001:db8:1::1/64', { noDad: true }, a);
    const addrs = await nl.listAddrs({ dev: 'v0' }, a);
    const mine = addrs.filter((x) => x.scope !== 'link' || x.family === 4);
    expect(mine.map((x) => [x.cidr, x.scope, x.noDad]).sort()).toEqual([
      ['198.18.1.1/24', 'global', false],
      ['198.18.1.2/32', 'link', false],
      ['2001:db8:1::1/64', 'global', true],
    ]);
    expect((await failure(nl.addAddr('v0', '198.18.1.1/24', undefined, a))).code).toBe('exists');
    await nl.replaceAddr('v0', '198.18.1.1/24', undefined, a);

    expect(await nl.delAddr('v0', '198.18.1.2/32', {}, a)).toBe(true);
    expect((await failure(nl.delAddr('v0', '198.18.1.2/32', {}, a))).code).toBe('not-found');
    expect(await nl.delAddr('v0', '2001:db8:9::9/128', { ignoreMissing: true }, a)).toBe(false);

    await nl.flushAddrs('v0', { family: 4 }, a);
    expect((await nl.listAddrs({ dev: 'v0', family: 4 }, a)).length).toBe(0);
    expect((await nl.listAddrs({ dev: 'v0', family: 6 }, a)).map((x) => x.cidr)).toContain(
      '2001:db8:1::1/64',
    );
  });

  it('adds, replaces, looks up and deletes routes', async () => {
    const a = s.makeNetns('a');
    await nl.createVethPair({ name: 'v0', peerName: 'v1' }, a);
    await nl.batch(
      [linkSetArgs('v0', { up: true }), linkSetArgs('v1', { up: true }), addrAddArgs('v0', '198.18.2.1/24')],
      a,
    );

    await nl.addRoute({ dst: '198.18.3.0/24', gateway: '198.18.2.2', dev: 'v0', proto: 80, metric: 10 }, a);
    await nl.addRoute({ dst: '198.18.4.0/24', type: 'blackhole' }, a);
    await nl.addRoute({ dst: '198.18.5.0/24', dev: 'v0', table: 100 }, a);
    await nl.addRoute({ dst: '198.18.6.0/24', gateway: '198.18.9.9', dev: 'v0', onlink: true }, a);
    const main = await nl.listRoutes({ family: 4 }, a);
    expect(main).toContainEqual({
      family: 4,
      dst: '198.18.3.0/24',
      gateway: '198.18.2.2',
      dev: 'v0',
      proto: '80',
      metric: 10,
    });
    expect(main).toContainEqual({ family: 4, dst: '198.18.4.0/24', type: 'blackhole', proto: 'boot' });
    expect(main).toContainEqual(expect.objectContaining({ dst: '198.18.6.0/24', onlink: true }));
    expect(main.find((r) => r.dst === '198.18.5.0/24')).toBeUndefined();
    expect(await nl.listRoutes({ table: 100 }, a)).toEqual([
      { family: 4, dst: '198.18.5.0/24', dev: 'v0', table: '100', scope: 'link', proto: 'boot' },
    ]);

    expect(
      (
        await failure(
          nl.addRoute({ dst: '198.18.3.0/24', gateway: '198.18.2.2', dev: 'v0', proto: 80, metric: 10 }, a),
        )
      ).code,
    ).toBe('exists');
    await nl.replaceRoute(
      { dst: '198.18.3.0/24', gateway: '198.18.2.3', dev: 'v0', proto: 80, metric: 10 },
      a,
    );
    expect((await nl.getRoute('198.18.3.7', a)).gateway).toBe('198.18.2.3');
    expect((await failure(nl.getRoute('198.18.200.1', a))).code).toBe('not-found');

    expect(await nl.delRoute({ dst: '198.18.3.0/24', metric: 10 }, {}, a)).toBe(true);
    expect((await failure(nl.delRoute({ dst: '198.18.3.0/24', metric: 10 }, {}, a))).code).toBe('not-found');
    expect(await nl.delRoute({ dst: '198.18.3.0/24' }, { ignoreMissing: true }, a)).toBe(false);
  });

  it('a failing batch leaves the commands before it applied and names the failed one', async () => {
    const a = s.makeNetns('a');
    await nl.createVethPair({ name: 'v0', peerName: 'v1' }, a);
    const err = await failure(
      nl.batch(
        [
          linkSetArgs('v0', { up: true }),
          routeArgs('add', { dst: '198.18.7.0/24', dev: 'v0' }),
          routeArgs('add', { dst: '198.18.7.0/24', dev: 'v0' }),
          routeArgs('add', { dst: '198.18.8.0/24', dev: 'v0' }),
        ],
        a,
      ),
    );
    expect(err).toBeInstanceOf(NetlinuxBatchError);
    expect(err.code).toBe('exists');
    expect((err as NetlinuxBatchError).index).toBe(2);
    const dsts = (await nl.listRoutes({ family: 4 }, a)).map((r) => r.dst);
    expect(dsts).toContain('198.18.7.0/24');
    expect(dsts).not.toContain('198.18.8.0/24');
  });

  it('classifies kernel errors', async () => {
    const a = s.makeNetns('a');
    const del = await failure(nl.deleteLink('nosuch0', {}, a));
    expect(del.code).toBe('not-found');
    expect(del.detail).toContain('Cannot find device "nosuch0"');
    expect(del.command).toEqual(['ip', 'link', 'del', 'dev', 'nosuch0']);
    expect(del.netns).toBe(a);
    expect(await nl.deleteLink('nosuch0', { ignoreMissing: true }, a)).toBe(false);
    expect((await failure(nl.getLink('nosuch0', a))).code).toBe('not-found');

    await nl.createBridge({ name: 'br0' }, a);
    const dup = await failure(nl.createBridge({ name: 'br0' }, a));
    expect(dup.code).toBe('exists');
    expect(dup.detail).toContain('File exists');
    expect((await failure(nl.createVethPair({ name: 'br0', peerName: 'x0' }, a))).code).toBe('exists');

    // The namespace itself is missing: by name (ip -n) and by path (nsenter).
    const gone = s.netnsName('gone');
    expect((await failure(nl.listLinks(gone))).code).toBe('not-found');
    expect((await failure(nl.listLinks(`/proc/999999999/ns/net`))).code).toBe('not-found');
    expect(await nl.deleteLink('eth0', { ignoreMissing: true }, `/proc/999999999/ns/net`)).toBe(false);

    // A route through a gateway the namespace cannot reach.
    await nl.createVethPair({ name: 'v0', peerName: 'v1' }, a);
    await nl.setLinkUp('v0', a);
    expect(
      (await failure(nl.addRoute({ dst: '198.18.9.0/24', gateway: '198.18.77.1', dev: 'v0' }, a))).code,
    ).toBe('invalid');
    expect((await failure(nl.createVxlan({ name: 'vx0', vni: 1, port: 4789, dev: 'nosuch0' }, a))).code).toBe(
      'not-found',
    );
  });

  it('leaves the caller namespace alone', async () => {
    const before = execFileSync('ip', ['-json', 'link', 'show'], { encoding: 'utf8' });
    const a = s.makeNetns('a');
    await nl.createVethPair({ name: 'v0', peerName: 'v1' }, a);
    await nl.deleteLink('v0', {}, a);
    expect(execFileSync('ip', ['-json', 'link', 'show'], { encoding: 'utf8' })).toBe(before);
  });
});
