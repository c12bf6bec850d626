import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isNetlinuxError, NetlinuxBatchError, type NetlinuxError } from './errors.js';
import { routeArgs } from './ip-commands.js';
import { Netlinux } from './netlinux.js';
import { ScriptedCommandRunner } from './testing/index.js';

async function failure(p: Promise<unknown>): Promise<NetlinuxError> {
  try {
    await p;
  } catch (e) {
    if (isNetlinuxError(e)) return e;
    throw e;
  }
  throw new Error('expected a NetlinuxError');
}

const fail = (stderr: string) => ({ exitCode: 1, stderr });

describe('Netlinux with a scripted runner', () => {
  let runner: ScriptedCommandRunner;
  let nl: Netlinux;
  beforeEach(() => {
    runner = new ScriptedCommandRunner();
    nl = new Netlinux({ runner });
  });

  describe('namespaces', () => {
    it('runs ip with -n for a name and nsenter for a path', async () => {
      runner.onCall(() => ({
        stdout: '[{"ifindex":2,"ifname":"eth0","mtu":1440,"flags":["UP"],"address":"0a:00:00:00:00:01"}]',
      }));
      const a = await nl.getLink('eth0', 'pod-1');
      const b = await nl.getLink('eth0', '/proc/4242/ns/net');
      expect(a).toEqual(b);
      expect(a).toMatchObject({ name: 'eth0', index: 2, mtu: 1440, up: true });
      expect(runner.commandLines()).toEqual([
        'ip -n pod-1 -d -json link show dev eth0',
        'nsenter --net=/proc/4242/ns/net ip -d -json link show dev eth0',
      ]);
    });

    it('refuses a bad namespace before running anything', async () => {
      expect((await failure(nl.listLinks('../x'))).code).toBe('invalid');
      expect((await failure(nl.createNetns('/run/netns/x'))).code).toBe('invalid');
      expect(runner.calls).toEqual([]);
    });

    it('deletes namespaces idempotently', async () => {
      runner.onCall(() =>
        fail('Cannot remove namespace file "/run/netns/gone": No such file or directory\n'),
      );
      await expect(nl.deleteNetns('gone')).resolves.toBe(false);
      runner.onCall(() => fail('Cannot remove namespace file "/run/netns/x": Device or resource busy\n'));
      expect((await failure(nl.deleteNetns('x'))).code).toBe('busy');
    });

    it('creating an existing namespace fails with exists', async () => {
      runner.onCall(() => fail('Cannot create namespace file "/run/netns/a": File exists\n'));
      const e = await failure(nl.createNetns('a'));
      expect(e.code).toBe('exists');
      expect(e.command).toEqual(['ip', 'netns', 'add', 'a']);
      expect(e.message).toBe('ip netns add a: Cannot create namespace file "/run/netns/a": File exists');
    });

    it('lists namespace names', async () => {
      runner.onCall(() => ({ stdout: '[{"name":"b","id":1},{"name":"a"}]' }));
      expect(await nl.listNetns()).toEqual(['b', 'a']);
      expect(runner.commandLines()).toEqual(['ip -json netns list']);
    });

    it('netnsExists looks at the file without running anything', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'netlinux-netns-'));
      try {
        writeFileSync(join(dir, 'plain'), '');
        const local = new Netlinux({ runner, netnsDir: dir });
        expect(await local.netnsExists('plain')).toBe(false);
        expect(await local.netnsExists('missing')).toBe(false);
        expect(await local.netnsExists(join(dir, 'plain'))).toBe(false);
        expect(await local.netnsExists('/proc/self/ns/net')).toBe(true);
        expect(await local.netnsExists(`${join(dir, 'plain')}/below-a-file`)).toBe(false);
        expect(runner.calls).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('links', () => {
    it('getLink of a missing device is not-found; findLink gives undefined', async () => {
      runner.onCall(() => fail('Device "nosuch" does not exist.\n'));
      const e = await failure(nl.getLink('nosuch', 'pod'));
      expect(e.code).toBe('not-found');
      expect(e.detail).toBe('Device "nosuch" does not exist.\n');
      expect(e.netns).toBe('pod');
      await expect(nl.findLink('nosuch', 'pod')).resolves.toBeUndefined();
    });

    it('deleteLink ignores a missing device or namespace only when asked', async () => {
      runner.onCall(() => fail('Cannot find device "cali1"\n'));
      expect((await failure(nl.deleteLink('cali1'))).code).toBe('not-found');
      await expect(nl.deleteLink('cali1', { ignoreMissing: true })).resolves.toBe(false);
      runner.onCall(() => fail('nsenter: cannot open /proc/77/ns/net: No such file or directory\n'));
      await expect(nl.deleteLink('eth0', { ignoreMissing: true }, '/proc/77/ns/net')).resolves.toBe(false);
      runner.onCall(() => fail('RTNETLINK answers: Operation not permitted\n'));
      expect((await failure(nl.deleteLink('eth0', { ignoreMissing: true }))).code).toBe('permission');
      runner.onCall(() => undefined);
      await expect(nl.deleteLink('eth0', { ignoreMissing: true })).resolves.toBe(true);
    });

    it('builds each link operation into one command', async () => {
      await nl.createVethPair({
        name: 'cali1',
        peerName: 'eth0',
        peerNetns: 'pod',
        mac: 'ee:ee:ee:ee:ee:ee',
        mtu: 1440,
      });
      await nl.createBridge({ name: 'br0' }, 'lab');
      await nl.createVxlan({ name: 'vxlan.calico', vni: 4096, port: 4789, local: '198.18.0.1' });
      await nl.setLinkUp('cali1');
      await nl.setLinkDown('eth0', 'pod');
      await nl.setLinkMtu('eth0', 1400, 'pod');
      await nl.setLinkMac('eth0', '02:00:00:00:00:01', 'pod');
      await nl.setLinkMaster('v0', 'br0');
      await nl.moveLinkToNetns('eth9', '/proc/9/ns/net');
      await nl.renameLink('tmp0', 'eth0', 'pod');
      expect(runner.commandLines()).toEqual([
        'ip link add cali1 address ee:ee:ee:ee:ee:ee mtu 1440 type veth peer name eth0 mtu 1440 netns pod',
        'ip -n lab link add br0 type bridge',
        'ip link add vxlan.calico type vxlan id 4096 dstport 4789 local 198.18.0.1 nolearning',
        'ip link set dev cali1 up',
        'ip -n pod link set dev eth0 down',
        'ip -n pod link set dev eth0 mtu 1400',
        'ip -n pod link set dev eth0 address 02:00:00:00:00:01',
        'ip link set dev v0 master br0',
        'ip link set dev eth9 netns /proc/9/ns/net',
        'ip -n pod link set dev tmp0 name eth0',
      ]);
    });

    it('creating an existing device fails with exists', async () => {
      runner.onCall(() => fail('RTNETLINK answers: File exists\n'));
      const e = await failure(nl.createBridge({ name: 'br0' }));
      expect(e.code).toBe('exists');
      expect(e.message).toBe('ip link add br0 type bridge: RTNETLINK answers: File exists');
    });
  });

  describe('addresses, routes, neighbours', () => {
    it('builds address operations', async () => {
      await nl.addAddr('eth0', '198.18.0.5', undefined, 'pod');
      await nl.addAddr('eth0', '2001:db8::5/128', { noDad: true }, 'pod');
      await nl.replaceAddr('lo', '198.18.0.1/32', { scope: 'host' });
      await nl.delAddr('eth0', '198.18.0.5/32', {}, 'pod');
      await nl.flushAddrs('eth0', { family: 6, scope: 'global' }, 'pod');
      runner.onCall(() => ({ stdout: '[]' }));
      await nl.listAddrs({ dev: 'eth0', family: 4 }, 'pod');
      expect(runner.commandLines()).toEqual([
        'ip -n pod addr add 198.18.0.5/32 dev eth0',
        'ip -n pod addr add 2001:db8::5/128 dev eth0 nodad',
        'ip addr replace 198.18.0.1/32 dev lo scope host',
        'ip -n pod addr del 198.18.0.5/32 dev eth0',
        'ip -n pod -6 addr flush dev eth0 scope global',
        'ip -n pod -4 -json addr show dev eth0',
      ]);
    });

    it('delAddr of a missing address is not-found unless ignored', async () => {
      runner.onCall(() => fail('Error: ipv4: Address not found.\n'));
      expect((await failure(nl.delAddr('eth0', '198.18.0.9'))).code).toBe('not-found');
      await expect(nl.delAddr('eth0', '198.18.0.9', { ignoreMissing: true })).resolves.toBe(false);
    });

    it('lists one table of both families from one dump', async () => {
      runner.onCall(() => ({
        stdout: JSON.stringify([
          { dst: 'default', gateway: '169.254.1.1', dev: 'eth0', flags: [] },
          { dst: '198.18.11.0/24', dev: 'v0', table: '100', flags: [] },
          { type: 'local', dst: '198.18.0.1', dev: 'v0', table: 'local', flags: [] },
          { dst: 'default', gateway: 'fe80::ecee:eeff:feee:eeee', dev: 'eth0', flags: [], pref: 'medium' },
        ]),
      }));
      const main = await nl.listRoutes({}, 'pod');
      expect(main.map((r) => r.dst)).toEqual(['0.0.0.0/0', '::/0']);
      const t100 = await nl.listRoutes({ table: 100 }, 'pod');
      expect(t100.map((r) => r.dst)).toEqual(['198.18.11.0/24']);
      expect(await nl.listRoutes({ table: 'all' }, 'pod')).toHaveLength(4);
      expect(runner.commandLines()).toEqual([
        'ip -n pod -json route show table all',
        'ip -n pod -json route show table all',
        'ip -n pod -json route show table all',
      ]);
    });

    it('lists one family with a family filter', async () => {
      runner.onCall(() => ({ stdout: '[{"dst":"default","dev":"eth0","flags":[]}]' }));
      const routes = await nl.listRoutes({ family: 6, dev: 'eth0' });
      expect(routes).toEqual([{ family: 6, dst: '::/0', dev: 'eth0', proto: 'boot' }]);
      expect(runner.commandLines()).toEqual(['ip -6 -json route show table main dev eth0']);
    });

    it('builds route changes', async () => {
      await nl.addRoute({ dst: '169.254.1.1', dev: 'eth0', scope: 'link' }, 'pod');
      await nl.replaceRoute({ dst: '198.18.0.5', dev: 'cali1', scope: 'link' });
      runner.onCall(() => fail('RTNETLINK answers: No such process\n'));
      await expect(
        nl.delRoute({ dst: '198.18.0.5/32', dev: 'cali1' }, { ignoreMissing: true }),
      ).resolves.toBe(false);
      expect((await failure(nl.delRoute({ dst: '198.18.0.5/32' }))).code).toBe('not-found');
      expect(runner.commandLines().slice(0, 3)).toEqual([
        'ip -n pod route add 169.254.1.1/32 dev eth0 scope link',
        'ip route replace 198.18.0.5/32 dev cali1 scope link',
        'ip route del 198.18.0.5/32 dev cali1',
      ]);
    });

    it('getRoute reads the chosen route; an unreachable one is not-found', async () => {
      runner.onCall(() => ({
        stdout:
          '[{"dst":"198.18.9.5","gateway":"198.18.0.2","dev":"v0","prefsrc":"198.18.0.1","flags":[],"uid":0,"cache":[]}]',
      }));
      expect(await nl.getRoute('198.18.9.5', 'pod')).toEqual({
        family: 4,
        dst: '198.18.9.5/32',
        gateway: '198.18.0.2',
        dev: 'v0',
        src: '198.18.0.1',
      });
      expect(runner.commandLines()).toEqual(['ip -n pod -4 -json route get 198.18.9.5']);
      runner.onCall(() => fail('RTNETLINK answers: Network is unreachable\n'));
      expect((await failure(nl.getRoute('198.18.200.1'))).code).toBe('not-found');
      expect((await failure(nl.getRoute('198.18.0.0/24'))).code).toBe('invalid');
    });

    it('builds neighbour and FDB operations; FDB goes through the bridge tool', async () => {
      await nl.addNeighbour({ dst: '198.18.4.0', lladdr: '66:77:88:99:aa:bb', dev: 'vxlan.calico' });
      await nl.replaceNeighbour(
        { dst: '198.18.4.0', lladdr: '66:77:88:99:aa:bc', dev: 'vxlan.calico' },
        'n1',
      );
      await nl.delNeighbour({ dst: '198.18.4.0', dev: 'vxlan.calico' }, {}, 'n1');
      await nl.addFdb({ mac: '66:77:88:99:aa:bb', dev: 'vxlan.calico', dst: '198.18.0.2' }, 'n1');
      await nl.replaceFdb(
        { mac: '66:77:88:99:aa:bb', dev: 'vxlan.calico', dst: '198.18.0.3' },
        '/proc/5/ns/net',
      );
      await nl.appendFdb({ mac: '00:00:00:00:00:00', dev: 'vxlan.calico', dst: '198.18.0.4' });
      await nl.delFdb({ mac: '66:77:88:99:aa:bb', dev: 'vxlan.calico', dst: '198.18.0.3' });
      runner.onCall(() => ({
        stdout: '[{"mac":"66:77:88:99:aa:bb","dst":"198.18.0.2","flags":["self"],"state":"permanent"}]',
      }));
      expect(await nl.listFdb('vxlan.calico', 'n1')).toEqual([
        {
          mac: '66:77:88:99:aa:bb',
          dev: 'vxlan.calico',
          dst: '198.18.0.2',
          flags: ['self'],
          state: 'permanent',
        },
      ]);
      runner.onCall(() => ({ stdout: '[]' }));
      await nl.listNeighbours({ family: 4, dev: 'eth0' }, 'n1');
      expect(runner.commandLines()).toEqual([
        'ip neigh add 198.18.4.0 lladdr 66:77:88:99:aa:bb dev vxlan.calico nud permanent',
        'ip -n n1 neigh replace 198.18.4.0 lladdr 66:77:88:99:aa:bc dev vxlan.calico nud permanent',
        'ip -n n1 neigh del 198.18.4.0 dev vxlan.calico',
        'bridge -n n1 fdb add 66:77:88:99:aa:bb dev vxlan.calico dst 198.18.0.2 self permanent',
        'nsenter --net=/proc/5/ns/net bridge fdb replace 66:77:88:99:aa:bb dev vxlan.calico dst 198.18.0.3 self permanent',
        'bridge fdb append 00:00:00:00:00:00 dev vxlan.calico dst 198.18.0.4 self permanent',
        'bridge fdb del 66:77:88:99:aa:bb dev vxlan.calico dst 198.18.0.3 self',
        'bridge -n n1 -json fdb show dev vxlan.calico',
        'ip -n n1 -4 -json neigh show dev eth0',
      ]);
    });
  });

  describe('batch', () => {
    const commands = [
      ['addr', 'add', '198.18.0.5/32', 'dev', 'eth0'],
      routeArgs('add', { dst: '169.254.1.1', dev: 'eth0', scope: 'link' }),
      routeArgs('add', { dst: 'default', gateway: '169.254.1.1', dev: 'eth0' }),
    ];

    it('sends all commands to one ip -batch process', async () => {
      await nl.batch(commands, 'pod');
      expect(runner.calls).toHaveLength(1);
      expect(runner.calls[0]!.argv).toEqual(['ip', '-n', 'pod', '-batch', '-']);
      expect(runner.calls[0]!.input).toBe(
        'addr add 198.18.0.5/32 dev eth0\nroute add 169.254.1.1/32 dev eth0 scope link\nroute add 0.0.0.0/0 via 169.254.1.1 dev eth0\n',
      );
    });

    it('runs nothing for no commands', async () => {
      await nl.batch([]);
      expect(runner.calls).toEqual([]);
    });

    it('names the failed command and its index', async () => {
      runner.onCall(() => fail('RTNETLINK answers: File exists\nCommand failed -:2\n'));
      const e = await failure(nl.batch(commands, 'pod'));
      expect(e).toBeInstanceOf(NetlinuxBatchError);
      expect(e.code).toBe('exists');
      expect((e as NetlinuxBatchError).index).toBe(1);
      expect(e.command).toEqual(['ip', 'route', 'add', '169.254.1.1/32', 'dev', 'eth0', 'scope', 'link']);
      expect(e.message).toBe(
        'ip route add 169.254.1.1/32 dev eth0 scope link (batch command 2 of 3) (netns pod): RTNETLINK answers: File exists',
      );
    });
  });

  describe('sysctls in a namespace', () => {
    it('reads through nsenter cat, keeping dotted interface names', async () => {
      runner.onCall(() => ({ stdout: '1\n' }));
      expect(await nl.readSysctl('net.ipv4.conf.eth0.100.proxy_arp', 'pod')).toBe('1');
      expect(runner.commandLines()).toEqual([
        'nsenter --net=/run/netns/pod cat /proc/sys/net/ipv4/conf/eth0.100/proxy_arp',
      ]);
    });

    it('writes through nsenter tee, one process per distinct value', async () => {
      await nl.writeSysctls(
        [
          ['net.ipv6.conf.all.disable_ipv6', 0],
          ['net.ipv4.ip_forward', '1'],
          ['net.ipv6.conf.eth0.accept_dad', 0],
        ],
        '/proc/7/ns/net',
      );
      expect(runner.calls.map((c) => [c.argv.join(' '), c.input])).toEqual([
        [
          'nsenter --net=/proc/7/ns/net tee /proc/sys/net/ipv6/conf/all/disable_ipv6 /proc/sys/net/ipv6/conf/eth0/accept_dad',
          '0',
        ],
        ['nsenter --net=/proc/7/ns/net tee /proc/sys/net/ipv4/ip_forward', '1'],
      ]);
    });

    it('classifies a missing sysctl', async () => {
      runner.onCall(() =>
        fail('tee: /proc/sys/net/ipv4/conf/nosuch/forwarding: No such file or directory\n'),
      );
      expect((await failure(nl.writeSysctl('net.ipv4.conf.nosuch.forwarding', 1, 'pod'))).code).toBe(
        'not-found',
      );
    });

    it('refuses values with newlines', async () => {
      expect((await failure(nl.writeSysctl('net.ipv4.ip_forward', '1\n0', 'pod'))).code).toBe('invalid');
      expect(runner.calls).toEqual([]);
    });
  });
});

describe('sysctls in the caller namespace (files under procSys)', () => {
  let dir: string;
  let nl: Netlinux;
  let runner: ScriptedCommandRunner;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'netlinux-sysctl-'));
    await mkdir(join(dir, 'net/ipv4/conf/eth0.100'), { recursive: true });
    await writeFile(join(dir, 'net/ipv4/conf/eth0.100/proxy_arp'), '0\n');
    runner = new ScriptedCommandRunner();
    nl = new Netlinux({ runner, procSys: dir });
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads and writes files without running a program', async () => {
    expect(await nl.readSysctl('net.ipv4.conf.eth0.100.proxy_arp')).toBe('0');
    await nl.writeSysctl('net/ipv4/conf/eth0.100/proxy_arp', 1);
    expect(await readFile(join(dir, 'net/ipv4/conf/eth0.100/proxy_arp'), 'utf8')).toBe('1\n');
    expect(runner.calls).toEqual([]);
  });

  it('does not create missing sysctls', async () => {
    const e = await failure(nl.writeSysctl('net.ipv4.conf.eth0.100.nosuch', 1));
    expect(e.code).toBe('not-found');
    expect((await failure(nl.readSysctl('net.ipv4.ip_forward'))).code).toBe('not-found');
  });
});
