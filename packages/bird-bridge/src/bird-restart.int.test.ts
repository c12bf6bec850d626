/**
 * BIRD killed under traffic, with graceful restart. Two nodes as in bridge.int.test.ts (namespaces
 * joined by a veth, a private etcd, a BirdBridge and a real BIRD 2 per node), and on each node a
 * pod: a namespace with one address in the node's block, wired as the CNI plugin wires it (a /32
 * route to a `cali` veth, proxy ARP on the node side, forwarding on).
 *
 * ```
 *  pod-a 198.19.0.5 ── caliA ─ node-a 198.18.0.1 ══ veth ══ 198.18.0.2 node-b ─ caliB ── pod-b 198.19.0.70
 *                              BIRD  ◄──── BGP mesh ────►  BIRD
 * ```
 *
 * While ping runs pod to pod every 20 ms and a TCP connection echoes every 50 ms, BIRD is SIGKILLed
 * on node-b, then on node-a (by PID, as calico-node's end kills it); the supervisor starts it again.
 * Every 100 ms both kernels are read: the route to the other node's block must be there at every
 * sample, no ping may be lost, the connection must live. The peer is seen keeping the routes for
 * the restart (`Neighbor graceful restart active`); afterwards the session is Established again,
 * the restart over for the peer and the route there, sent by the new BIRD. Needs root, ip, nsenter, ping, bird and etcd.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IpamStore, KVDatastore } from '@calico-ts/datastore';
import { EtcdKVStore } from '@calico-ts/datastore/etcd3';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BirdControlClient } from './bird/bird-control-client.js';
import { type BirdLogger, BirdSupervisor } from './bird/bird-supervisor.js';
import { BirdBridge, nodeAffinitySource } from './bridge.js';
import { node, pool } from './render/testdata/golden-cases.js';
import {
  addNetns,
  deleteNetns,
  ip,
  nsenterPrefix,
  pidAlive,
  privilegedTestsCanRun,
  uniqueTag,
  until,
} from './testing-internal/netns.js';

interface KernelRoute {
  dst: string;
  gateway?: string;
  protocol?: string;
}

const NODES = [
  { name: 'node-a', side: 'a', addr: '198.18.0.1', block: '198.19.0.0/26', pod: '198.19.0.5' },
  { name: 'node-b', side: 'b', addr: '198.18.0.2', block: '198.19.0.64/26', pod: '198.19.0.70' },
] as const;
type Side = 'a' | 'b';

/** A TCP echo server and a client that sends a byte every 50 ms; the client prints what happens. */
const ECHO_SERVER_SRC = `
require('node:net').createServer((c) => { c.on('data', (d) => c.write(d)); c.on('error', () => {}); })
  .listen(Number(process.argv[1]), '0.0.0.0', () => process.stdout.write('ready\\n'));
`;
const ECHO_CLIENT_SRC = `
const [host, port] = process.argv.slice(1);
let echoes = 0;
const s = require('node:net').connect(Number(port), host, () => {
  process.stdout.write('connected\\n');
  setInterval(() => s.write('x'), 50);
});
s.on('data', (d) => { echoes += d.length; });
setInterval(() => process.stdout.write('echoes ' + echoes + '\\n'), 200);
s.on('error', (e) => { process.stdout.write('error ' + e.message + '\\n'); process.exit(2); });
s.on('close', () => { process.stdout.write('closed\\n'); process.exit(3); });
`;

describe.runIf(privilegedTestsCanRun() && etcdAvailable())('BIRD killed and restarted under traffic', () => {
  const tag = uniqueTag();
  const ns = { a: `bbgr-${tag}-a`, b: `bbgr-${tag}-b` };
  const pods = { a: `bbgr-${tag}-pa`, b: `bbgr-${tag}-pb` };
  const created: string[] = [];
  const children = new Set<ChildProcess>();
  let dir: string;
  let etcd: EtcdServer | undefined;
  const stores: EtcdKVStore[] = [];
  const bridges: BirdBridge[] = [];
  const sup: Partial<Record<Side, BirdSupervisor>> = {};
  const clients: Partial<Record<Side, BirdControlClient>> = {};
  const logs: string[] = [];

  const other = (s: Side): Side => (s === 'a' ? 'b' : 'a');
  const nodeOf = (s: Side) => NODES.find((n) => n.side === s)!;

  /** The route in `side`'s kernel to the other node's block, via that node, as BIRD puts it. */
  async function peerRoute(side: Side): Promise<KernelRoute | undefined> {
    const routes = JSON.parse(await ip(['-n', ns[side], '-j', 'route', 'show'])) as KernelRoute[];
    const want = nodeOf(other(side));
    return routes.find((r) => r.dst === want.block && r.gateway === want.addr && r.protocol === 'bird');
  }

  function spawnIn(netns: string, cmd: string, args: string[]): ChildProcess {
    const child = spawn('nsenter', [`--net=/run/netns/${netns}`, cmd, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    child.once('exit', () => children.delete(child));
    return child;
  }

  function lines(child: ChildProcess): string[] {
    const out: string[] = [];
    let buf = '';
    child.stdout?.on('data', (b: Buffer) => {
      buf += b.toString('utf8');
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      out.push(...parts);
    });
    return out;
  }

  const meshName = (s: Side) => `Mesh_${nodeOf(s).addr.replaceAll('.', '_')}`;

  /** `side`'s BIRD holds a route to the other node's block learnt from the mesh session. */
  async function birdHasPeerRoute(side: Side): Promise<boolean> {
    const r = await clients[side]!.command(`show route for ${nodeOf(other(side)).block}`);
    return r.lines.some((l) => l.text.includes(`[${meshName(other(side))} `));
  }

  /** `side`'s BIRD is keeping the other node's routes through its restart (RFC 4724 receiver). */
  async function keepingForRestart(side: Side): Promise<boolean> {
    const r = await clients[side]!.command(`show protocols all "${meshName(other(side))}"`);
    return r.lines.some((l) => l.text.includes('Neighbor graceful restart active'));
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bbgr-'));
    for (const n of NODES) {
      created.push(addNetns(ns[n.side]));
      created.push(addNetns(pods[n.side]));
    }
    await ip([
      'link',
      'add',
      `bg${tag}a`,
      'netns',
      ns.a,
      'type',
      'veth',
      'peer',
      'name',
      `bg${tag}b`,
      'netns',
      ns.b,
    ]);
    for (const n of NODES) {
      const s = n.side;
      await ip(['-n', ns[s], 'addr', 'add', `${n.addr}/24`, 'dev', `bg${tag}${s}`]);
      await ip(['-n', ns[s], 'link', 'set', `bg${tag}${s}`, 'up']);
      // The pod, wired as the CNI plugin does: /32 on its eth0, everything via eth0, a host route
      // to it on the node's cali end, which answers ARP by proxy.
      const cali = `cali${tag}${s}`;
      await ip([
        'link',
        'add',
        cali,
        'netns',
        ns[s],
        'type',
        'veth',
        'peer',
        'name',
        'eth0',
        'netns',
        pods[s],
      ]);
      await ip(['-n', pods[s], 'addr', 'add', `${n.pod}/32`, 'dev', 'eth0']);
      await ip(['-n', pods[s], 'link', 'set', 'eth0', 'up']);
      await ip(['-n', pods[s], 'route', 'add', 'default', 'dev', 'eth0']);
      await ip(['-n', ns[s], 'link', 'set', cali, 'up']);
      await ip(['-n', ns[s], 'route', 'add', `${n.pod}/32`, 'dev', cali]);
      for (const key of ['net.ipv4.ip_forward=1', `net.ipv4.conf.${cali}.proxy_arp=1`]) {
        await new Promise<void>((resolve, reject) => {
          const c = spawn('ip', ['netns', 'exec', ns[s], 'sysctl', '-qw', key], { stdio: 'ignore' });
          c.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sysctl ${key}: ${code}`))));
        });
      }
    }

    etcd = await startEtcd();
    const adminKv = new EtcdKVStore({ endpoints: etcd.endpoints });
    stores.push(adminKv);
    const admin = new KVDatastore(adminKv, { backend: 'etcdv3' });
    const ipam = new IpamStore(adminKv);
    await admin.create(
      pool('default-ipv4-ippool', { cidr: '198.19.0.0/16', ipipMode: 'Never', vxlanMode: 'Never' }),
    );
    for (const n of NODES) {
      await admin.create(node(n.name, { ipv4Address: `${n.addr}/24` }));
      await ipam.createAffinity({ host: n.name, cidr: n.block, state: 'confirmed', deleted: false });
    }
    for (const n of NODES) {
      const kv = new EtcdKVStore({ endpoints: etcd.endpoints });
      stores.push(kv);
      const log: BirdLogger = (level, message, fields) =>
        logs.push(`${Date.now()} ${n.name} ${level} ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`);
      const s = new BirdSupervisor({
        configDir: join(dir, n.side, 'config'),
        socketPath: join(dir, n.side, 'bird.ctl'),
        commandPrefix: nsenterPrefix(ns[n.side]),
        log,
      });
      sup[n.side] = s;
      clients[n.side] = new BirdControlClient(join(dir, n.side, 'bird.ctl'));
      const bridge = new BirdBridge({
        datastore: new KVDatastore(kv, { backend: 'etcdv3' }),
        affinities: nodeAffinitySource(kv, n.name),
        nodeName: n.name,
        targets: { 4: s },
        log,
      });
      bridges.push(bridge);
      await bridge.start();
    }
    for (const s of ['a', 'b'] as const) {
      await until(`${s}'s kernel routes the other block via BIRD`, () => peerRoute(s), 60_000);
    }
  }, 120_000);

  afterAll(async () => {
    for (const c of [...children])
      if (c.pid !== undefined && c.exitCode === null) process.kill(c.pid, 'SIGKILL');
    for (const b of bridges) await b.stop().catch(() => undefined);
    for (const s of Object.values(sup)) {
      const pid = s.pid;
      if (pid !== undefined && pidAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    for (const s of stores) await s.close().catch(() => undefined);
    await etcd?.stop();
    deleteNetns(created);
    if (dir) await rm(dir, { recursive: true, force: true });
    if (process.env.BIRD_IT_DEBUG) console.log(logs.join('\n'));
  }, 60_000);

  test('pod to pod works over the BGP routes', async () => {
    const r = await new Promise<number | null>((resolve) => {
      const c = spawnIn(pods.a, 'ping', ['-c', '3', '-i', '0.2', '-W', '1', '-q', NODES[1].pod]);
      c.once('exit', resolve);
    });
    expect(r).toBe(0);
  });

  test('BIRD SIGKILLed on each node in turn: the peer keeps the routes (graceful restart), traffic never stops', async () => {
    const server = spawnIn(pods.b, process.execPath, ['-e', ECHO_SERVER_SRC, '7070']);
    const serverOut = lines(server);
    await until('echo server listening', () => serverOut.includes('ready'), 10_000);
    const client = spawnIn(pods.a, process.execPath, ['-e', ECHO_CLIENT_SRC, NODES[1].pod, '7070']);
    const clientOut = lines(client);
    await until('echo client connected', () => clientOut.includes('connected'), 10_000);
    const ping = spawnIn(pods.a, 'ping', ['-i', '0.02', '-W', '1', '-q', NODES[1].pod]);
    const pingOut = lines(ping);

    const samples = { a: 0, b: 0 };
    const missing: string[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const t = Date.now();
        for (const s of ['a', 'b'] as const) {
          samples[s]++;
          if (!(await peerRoute(s))) missing.push(`${t} ${s}`);
        }
        await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - t))));
      }
    })();

    const kills: {
      side: Side;
      oldPid: number;
      newPid: number;
      keptMs: number;
      backMs: number;
      establishedMs: number;
      freshMs: number;
    }[] = [];
    try {
      await new Promise((r) => setTimeout(r, 1000));
      for (const side of ['b', 'a'] as const) {
        const s = sup[side]!;
        const oldPid = s.pid!;
        const t0 = Date.now();
        process.kill(oldPid, 'SIGKILL');
        // The peer saw the session close without a Cease and keeps the routes for the restart.
        await until(
          `${other(side)} keeps ${side}'s routes for its restart`,
          () => keepingForRestart(other(side)),
          10_000,
        );
        expect(await birdHasPeerRoute(other(side))).toBe(true);
        const keptMs = Date.now() - t0;
        const newPid = await until(
          `${side}'s BIRD started again`,
          () => (s.pid !== undefined && s.pid !== oldPid ? s.pid : undefined),
          30_000,
        );
        const backMs = Date.now() - t0;
        const peerName = meshName(other(side));
        await until(
          `${side}'s session Established again`,
          async () =>
            (await clients[side]!.showProtocols()).some(
              (p) => p.name === peerName && p.info.startsWith('Established'),
            ),
          60_000,
        );
        const establishedMs = Date.now() - t0;
        // The restart is over for the peer (End-of-RIB received, what was not sent again flushed),
        // and its route to this node's block is one the new session sent.
        await until(
          `${other(side)} done with ${side}'s restart`,
          async () => !(await keepingForRestart(other(side))),
          60_000,
        );
        expect(await birdHasPeerRoute(other(side))).toBe(true);
        const freshMs = Date.now() - t0;
        kills.push({ side, oldPid, newPid, keptMs, backMs, establishedMs, freshMs });
        // Past a scan of the kernel protocol (2 s) of the new BIRD.
        await new Promise((r) => setTimeout(r, 3000));
      }
    } finally {
      polling = false;
      await poller;
    }
    const pingDone = new Promise((r) => ping.once('exit', r));
    ping.kill('SIGINT');
    await pingDone;
    const summary = pingOut.find((l) => /packets transmitted/.test(l)) ?? '';
    const [, sent, received] = /(\d+) packets transmitted, (\d+) received/.exec(summary) ?? [];
    const echoLine = clientOut.filter((l) => l.startsWith('echoes')).at(-1);
    const clientOther = clientOut.filter((l) => !l.startsWith('echoes'));
    console.log(JSON.stringify({ kills, samples, missing, ping: summary, echoLine, clientOther }));

    expect(kills.map((k) => k.newPid !== k.oldPid)).toEqual([true, true]);
    expect(sup.a!.status().restarts + sup.b!.status().restarts).toBe(2);
    expect(samples.a).toBeGreaterThan(50);
    expect(missing).toEqual([]);
    expect(Number(sent)).toBeGreaterThan(300);
    expect(Number(received)).toBe(Number(sent));
    expect(clientOther).toEqual(['connected']);
    expect(Number(echoLine?.split(' ')[1])).toBeGreaterThan(100);
  }, 240_000);
});
