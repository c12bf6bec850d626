/**
 * VXLAN between two nodes, as a user sees it: two node namespaces on one fabric bridge, a private
 * etcd with a VXLAN pool (vxlanMode Always), tunnel addresses given by `ensureVxlanTunnelAddress`,
 * the bundled `calico-node -felix` in each node, and one pod per node from the real CNI plugin. Asserted:
 * the device, routes, neighbours and FDB entries in each node's kernel, ping and TCP/UDP across
 * nodes, the packets going through vxlan.calico (its counters), VXLAN from a host that is not a
 * node dropped unless FelixConfiguration lists it, and a deleted Node's routes leaving the other node. Needs root, etcd, ip, bridge, nsenter, ping, nft; see testing-internal/vxlan-lab.ts.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { etcdAvailable } from '@calico-ts/datastore/testing';
import { ensureVxlanTunnelAddress, vtepMacFor } from '@calico-ts/felix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleFelix } from './testing-internal/felix-executable.js';
import type { LabNode, LabPod } from './testing-internal/vxlan-lab.js';
import { VxlanLab } from './testing-internal/vxlan-lab.js';

function missingPrerequisites(): string[] {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root');
  if (!etcdAvailable()) missing.push('etcd');
  for (const tool of ['ip', 'bridge', 'nsenter', 'ping', 'nft']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) missing.push(tool);
  }
  return missing;
}
const missing = missingPrerequisites();
if (missing.length > 0) {
  describe('VXLAN integration', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const PORT = 8080;

async function eventually(what: string, f: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await f()) return;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

interface JsonRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  flags?: string[];
  type?: string;
}

describe.skipIf(missing.length > 0)('VXLAN integration', () => {
  const lab = new VxlanLab();
  let n1: LabNode;
  let n2: LabNode;
  let pod1: LabPod;
  let pod2: LabPod;
  const tunnel = new Map<string, string>();

  const routes = (n: LabNode) => lab.json<JsonRoute[]>(n, 'ip', ['-4', 'route', 'show']);
  const vxlanStats = (n: LabNode) => {
    const [l] = lab.json<{ stats64: { rx: { packets: number }; tx: { packets: number } } }[]>(n, 'ip', [
      '-s',
      'link',
      'show',
      'dev',
      'vxlan.calico',
    ]);
    return { rx: l!.stats64.rx.packets, tx: l!.stats64.tx.packets };
  };
  const blockOf = (ip: string) =>
    `${ip.split('.').slice(0, 3).join('.')}.${Number(ip.split('.')[3]) & ~63}/26`;

  beforeAll(async () => {
    await lab.start(2);
    [n1, n2] = lab.nodes as [LabNode, LabNode];
    // @ts-expect-error: a plain .mjs build script without type declarations
    const { bundle: bundleCni } = await import('../../../packages/cni-plugin/scripts/bundle.mjs');
    const cniBin = join(lab.tmp, 'cni-bin');
    await bundleCni(cniBin);
    const felixBin: string = await bundleFelix();
    await lab.seed(
      {
        cidr: '198.19.0.0/16',
        blockSize: 26,
        vxlanMode: 'Always',
        ipipMode: 'Never',
        natOutgoing: false,
        nodeSelector: 'all()',
      },
      ['alpha'],
    );
    // What calico-node does at start-up, before Felix runs.
    for (const n of lab.nodes) {
      const r = await ensureVxlanTunnelAddress(lab.ds, lab.ipam, n.name);
      if (!r.address) throw new Error(`no tunnel address for ${n.name}`);
      tunnel.set(n.name, r.address);
    }
    for (const n of lab.nodes) lab.startFelix(n, felixBin);
    pod1 = await lab.addPod(cniBin, n1, 'alpha', 'pod-1');
    pod2 = await lab.addPod(cniBin, n2, 'alpha', 'pod-2');
    for (const p of [pod1, pod2]) await lab.startAgent(p, PORT);
  }, 240_000);

  afterAll(async () => {
    if (process.env.FELIX_IT_DEBUG) {
      for (const [name, lines] of lab.logs) console.log(`--- ${name}\n${lines.slice(-40).join('\n')}`);
    }
    await lab.close();
  }, 60_000);

  it('gives each node a tunnel address in its own block, recorded in its Node', async () => {
    for (const n of lab.nodes) {
      const node = await lab.ds.get('Node', n.name);
      expect(node.spec.ipv4VXLANTunnelAddr).toBe(tunnel.get(n.name));
      const held = await lab.ipam.getAssignmentAttributes(tunnel.get(n.name)!);
      expect(held).toMatchObject({
        handleId: `vxlan-tunnel-addr-${n.name}`,
        attrs: { node: n.name, type: 'vxlanTunnelAddress' },
      });
    }
    expect(blockOf(tunnel.get('node-1')!)).not.toBe(blockOf(tunnel.get('node-2')!));
  });

  it('programs vxlan.calico, the route via the other node’s VTEP, its neighbour and FDB entry, in both nodes', async () => {
    for (const [self, other] of [
      [n1, n2],
      [n2, n1],
    ] as const) {
      const otherTunnel = tunnel.get(other.name)!;
      const otherMac = vtepMacFor(other.name);
      await eventually(`${self.name} routes ${blockOf(otherTunnel)} through the tunnel`, () =>
        routes(self).some((r) => r.dst === blockOf(otherTunnel) && r.dev === 'vxlan.calico'),
      );
      const [link] = lab.json<
        {
          mtu: number;
          address: string;
          flags: string[];
          linkinfo: {
            info_kind: string;
            info_data: { id: number; port: number; local: string; link: string };
          };
        }[]
      >(self, 'ip', ['-d', 'link', 'show', 'dev', 'vxlan.calico']);
      expect(link).toMatchObject({
        mtu: 1450,
        address: vtepMacFor(self.name),
        linkinfo: { info_kind: 'vxlan', info_data: { id: 4096, port: 4789, local: self.ip, link: 'eth0' } },
      });
      expect(link!.flags).toContain('UP');
      const addrs = lab.json<{ addr_info: { local: string; prefixlen: number }[] }[]>(self, 'ip', [
        '-4',
        'addr',
        'show',
        'dev',
        'vxlan.calico',
      ]);
      expect(addrs[0]!.addr_info.map((a) => `${a.local}/${a.prefixlen}`)).toEqual([
        `${tunnel.get(self.name)}/32`,
      ]);

      const tunnelRoute = routes(self).find((r) => r.dst === blockOf(otherTunnel));
      expect(tunnelRoute).toMatchObject({ gateway: otherTunnel, dev: 'vxlan.calico', protocol: '80' });
      expect(tunnelRoute!.flags).toContain('onlink');
      // The node's own block is a blackhole, so its unused addresses go nowhere else.
      expect(routes(self).find((r) => r.dst === blockOf(tunnel.get(self.name)!))).toMatchObject({
        type: 'blackhole',
        protocol: '80',
      });

      const neigh = lab.json<{ dst: string; lladdr: string; state: string[] }[]>(self, 'ip', [
        'neigh',
        'show',
        'dev',
        'vxlan.calico',
      ]);
      expect(neigh).toEqual([
        expect.objectContaining({ dst: otherTunnel, lladdr: otherMac, state: ['PERMANENT'] }),
      ]);
      const fdb = lab.json<{ mac: string; dst?: string; state: string }[]>(self, 'bridge', [
        'fdb',
        'show',
        'dev',
        'vxlan.calico',
      ]);
      expect(fdb.filter((f) => f.dst !== undefined)).toEqual([
        expect.objectContaining({ mac: otherMac, dst: other.ip, state: 'permanent' }),
      ]);
    }
  });

  it('pods on different nodes ping each other and talk TCP and UDP, encapsulated through vxlan.calico', async () => {
    await eventually('pod-1 reaches pod-2 over TCP', () => lab.reach(pod1, 'tcp', pod2.ip, PORT));
    const before1 = vxlanStats(n1);
    const before2 = vxlanStats(n2);
    expect(await lab.ping(pod1, pod2.ip, 5)).toBe(true);
    expect(await lab.ping(pod2, pod1.ip, 5)).toBe(true);
    expect(await lab.reach(pod1, 'tcp', pod2.ip, PORT)).toBe(true);
    expect(await lab.reach(pod2, 'tcp', pod1.ip, PORT)).toBe(true);
    expect(await lab.reach(pod1, 'udp', pod2.ip, PORT)).toBe(true);
    const after1 = vxlanStats(n1);
    const after2 = vxlanStats(n2);
    // 10 echo requests and 10 replies each way at least, plus the TCP and UDP exchanges.
    expect(after1.tx - before1.tx).toBeGreaterThanOrEqual(10);
    expect(after1.rx - before1.rx).toBeGreaterThanOrEqual(10);
    expect(after2.tx - before2.tx).toBeGreaterThanOrEqual(10);
    expect(after2.rx - before2.rx).toBeGreaterThanOrEqual(10);
    // The kernel's own choice of path to the other pod is the tunnel.
    const [got] = lab.json<{ dev: string; gateway?: string }[]>(n1, 'ip', ['route', 'get', pod2.ip]);
    expect(got).toMatchObject({ dev: 'vxlan.calico', gateway: tunnel.get('node-2') });
  });

  it('repairs a tunnel route, neighbour and FDB entry deleted by hand', async () => {
    const t2 = tunnel.get('node-2')!;
    spawnSync('ip', ['-n', n1.netns, 'route', 'del', blockOf(t2), 'dev', 'vxlan.calico']);
    spawnSync('ip', ['-n', n1.netns, 'neigh', 'del', t2, 'dev', 'vxlan.calico']);
    spawnSync('bridge', [
      '-n',
      n1.netns,
      'fdb',
      'del',
      vtepMacFor('node-2'),
      'dev',
      'vxlan.calico',
      'dst',
      n2.ip,
      'self',
    ]);
    expect(routes(n1).some((r) => r.dst === blockOf(t2))).toBe(false);
    await eventually('the route resync puts them back', () => {
      const neigh = lab.json(n1, 'ip', ['neigh', 'show', 'dev', 'vxlan.calico']);
      const fdb = lab.json<{ dst?: string }[]>(n1, 'bridge', ['fdb', 'show', 'dev', 'vxlan.calico']);
      return (
        routes(n1).some((r) => r.dst === blockOf(t2)) &&
        neigh.length === 1 &&
        fdb.some((f) => f.dst === n2.ip)
      );
    });
    expect(await lab.ping(pod1, pod2.ip)).toBe(true);
  });

  it('drops VXLAN from a host that is not a node, until FelixConfiguration externalNodesList names it', async () => {
    // Another host on the fabric with its own VTEP, set up to send pod-1 a packet as node-2 would:
    // encapsulated to node-1's VTEP. node-1 routes the answer back to it directly, so a reply
    // means the packet got through.
    const host = lab.addHost('ext', '198.18.0.50');
    const inner = '198.18.250.1';
    const t1 = tunnel.get('node-1')!;
    const mac1 = vtepMacFor('node-1');
    const sh = (cmd: string, args: string[]) => {
      const r = spawnSync(cmd, args, { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
    };
    sh('ip', [
      ...['-n', host, 'link', 'add', 'vx0', 'address', '66:00:00:00:00:50', 'type', 'vxlan'],
      ...['id', '4096', 'local', '198.18.0.50', 'dev', 'eth0', 'dstport', '4789', 'nolearning'],
    ]);
    sh('ip', ['-n', host, 'link', 'set', 'vx0', 'up']);
    sh('ip', ['-n', host, 'addr', 'add', `${inner}/32`, 'dev', 'vx0']);
    sh('ip', ['-n', host, 'neigh', 'add', t1, 'lladdr', mac1, 'dev', 'vx0', 'nud', 'permanent']);
    sh('bridge', ['-n', host, 'fdb', 'add', mac1, 'dev', 'vx0', 'dst', n1.ip, 'self', 'permanent']);
    sh('ip', ['-n', host, 'route', 'add', `${pod1.ip}/32`, 'via', t1, 'dev', 'vx0', 'onlink']);
    sh('ip', ['-n', n1.netns, 'route', 'add', `${inner}/32`, 'via', '198.18.0.50', 'dev', 'eth0']);
    const hostPing = () =>
      spawnSync('ip', ['netns', 'exec', host, 'ping', '-n', '-q', '-c', '1', '-W', '1', pod1.ip]).status ===
      0;
    const vxlanRx = vxlanStats(n1).rx;

    expect(hostPing()).toBe(false);
    expect(hostPing()).toBe(false);
    // Dropped before decapsulation: node-1's VTEP never saw them.
    expect(vxlanStats(n1).rx).toBe(vxlanRx);
    // node-2, a node, still gets through.
    expect(await lab.ping(pod2, pod1.ip, 2)).toBe(true);

    await lab.ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'FelixConfiguration',
      metadata: { name: 'default' },
      spec: { externalNodesList: ['198.18.0.50/32'] },
    } as unknown as Parameters<typeof lab.ds.create>[0]);
    try {
      await eventually('the external host gets a reply from pod-1', hostPing);
      expect(vxlanStats(n1).rx).toBeGreaterThan(vxlanRx);
    } finally {
      await lab.ds.delete('FelixConfiguration', 'default');
    }
    await eventually('the external host is refused again', () => !hostPing() && !hostPing());
  }, 60_000);

  it('deleting node-2’s Node resource takes its route, neighbour and FDB entry out of node-1', async () => {
    const t2 = tunnel.get('node-2')!;
    await lab.ds.delete('Node', 'node-2');
    await eventually('node-1 forgets node-2', () => {
      const neigh = lab.json(n1, 'ip', ['neigh', 'show', 'dev', 'vxlan.calico']);
      const fdb = lab.json<{ dst?: string }[]>(n1, 'bridge', ['fdb', 'show', 'dev', 'vxlan.calico']);
      return !routes(n1).some((r) => r.dst === blockOf(t2)) && neigh.length === 0 && !fdb.some((f) => f.dst);
    });
    expect(routes(n1).filter((r) => r.dev === 'vxlan.calico')).toEqual([]);
    expect(await lab.reach(pod1, 'tcp', pod2.ip, PORT)).toBe(false);
  });
});
