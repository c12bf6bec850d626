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
 * the restart over for the peer and the route there, sent by the new BIRD. Then the same when
 * calico-node's BGP side on node-b is stopped (its BIRD killed) and started anew (a new supervisor
 * and bridge, as a restarted calico-node): the new BIRD must start in recovery, as it finds the old
 * one's routes in the kernel. Needs root, ip, nsenter, ping, bird and etcd.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { etcdAvailable } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { BirdControlClient } from './bird/bird-control-client.js';
import type { BirdSupervisor } from './bird/bird-supervisor.js';
import type { BirdBridge } from './bridge.js';
import { ip, pidAlive, privilegedTestsCanRun, until } from './testing-internal/netns.js';
import { NODES, type Side, TwoNodes } from './testing-internal/two-nodes.js';

interface KernelRoute {
  dst: string;
  gateway?: string;
  protocol?: string;
}

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
  const lab = new TwoNodes({ prefix: 'bbgr', vethPrefix: 'bg', timestampLogs: true });
  const { tag, ns, logs } = lab;
  const pods = { a: `bbgr-${tag}-pa`, b: `bbgr-${tag}-pb` };
  const children = new Set<ChildProcess>();
  const bridges: Partial<Record<Side, BirdBridge>> = {};
  const sup: Partial<Record<Side, BirdSupervisor>> = {};
  const clients: Partial<Record<Side, BirdControlClient>> = {};

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

  /** Starts calico-node's BGP side on `side` (see `TwoNodes.startNode`): a restart after a stop. */
  async function startNode(side: Side): Promise<void> {
    const started = await lab.startNode(side);
    sup[side] = started.supervisor;
    clients[side] = started.client;
    bridges[side] = started.bridge;
  }

  /** Waits until `side`'s BIRD has its session up again and the peer is done with the restart. */
  async function recovered(side: Side, t0: number): Promise<{ establishedMs: number; freshMs: number }> {
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
    return { establishedMs, freshMs: Date.now() - t0 };
  }

  /** The peer saw the session close without a Cease and keeps `side`'s routes for its restart. */
  async function peerKeeps(side: Side, t0: number): Promise<number> {
    await until(
      `${other(side)} keeps ${side}'s routes for its restart`,
      () => keepingForRestart(other(side)),
      10_000,
    );
    expect(await birdHasPeerRoute(other(side))).toBe(true);
    return Date.now() - t0;
  }

  interface TrafficReport {
    samples: number;
    maxGapMs: number;
    missing: string[];
    ping: string;
    pingSent: number;
    pingReceived: number;
    echoes: number;
    clientOther: string[];
  }

  /**
   * Runs `body` under traffic from pod-a to pod-b (ping every 20 ms, a TCP connection echoing
   * every 50 ms) while both kernels are read every 100 ms for the route to the other block.
   */
  async function underTraffic(port: number, body: () => Promise<void>): Promise<TrafficReport> {
    const server = spawnIn(pods.b, process.execPath, ['-e', ECHO_SERVER_SRC, String(port)]);
    const serverOut = lines(server);
    await until('echo server listening', () => serverOut.includes('ready'), 10_000);
    const client = spawnIn(pods.a, process.execPath, ['-e', ECHO_CLIENT_SRC, NODES[1].pod, String(port)]);
    const clientOut = lines(client);
    await until('echo client connected', () => clientOut.includes('connected'), 10_000);
    const ping = spawnIn(pods.a, 'ping', ['-i', '0.02', '-W', '1', '-q', NODES[1].pod]);
    const pingOut = lines(ping);

    let samples = 0;
    let maxGapMs = 0;
    const missing: string[] = [];
    let polling = true;
    const poller = (async () => {
      let last = Date.now();
      while (polling) {
        const t = Date.now();
        const [a, b] = await Promise.all([peerRoute('a'), peerRoute('b')]);
        samples++;
        if (!a) missing.push(`${t} a`);
        if (!b) missing.push(`${t} b`);
        maxGapMs = Math.max(maxGapMs, Date.now() - last);
        last = Date.now();
        await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - t))));
      }
    })();
    try {
      await new Promise((r) => setTimeout(r, 1000));
      await body();
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
    for (const c of [client, server]) c.kill('SIGKILL');
    return {
      samples,
      maxGapMs,
      missing,
      ping: summary,
      pingSent: Number(sent),
      pingReceived: Number(received),
      echoes: Number(echoLine?.split(' ')[1]),
      clientOther: clientOut.filter((l) => !l.startsWith('echoes')),
    };
  }

  /** Nothing missed: every kernel sample had the route, every ping came back, the TCP connection lived. */
  function expectUnbroken(t: TrafficReport): void {
    expect(t.samples).toBeGreaterThan(30);
    expect(t.missing).toEqual([]);
    expect(t.pingSent).toBeGreaterThan(200);
    expect(t.pingReceived).toBe(t.pingSent);
    expect(t.clientOther).toEqual(['connected']);
    expect(t.echoes).toBeGreaterThan(60);
  }

  beforeAll(async () => {
    await lab.wire();
    for (const n of NODES) {
      const s = n.side;
      lab.addNetns(pods[s]);
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
      // As the CNI plugin sets them: proxy ARP answered at once (the kernel's default delays each
      // proxied answer by up to 0.8 s, which a first ping can outlast twice over, once per side).
      for (const key of [
        'net.ipv4.ip_forward=1',
        `net.ipv4.conf.${cali}.proxy_arp=1`,
        `net.ipv4.neigh.${cali}.proxy_delay=0`,
      ]) {
        await new Promise<void>((resolve, reject) => {
          const c = spawn('ip', ['netns', 'exec', ns[s], 'sysctl', '-qw', key], { stdio: 'ignore' });
          c.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sysctl ${key}: ${code}`))));
        });
      }
    }
    await lab.seed();
    for (const n of NODES) await startNode(n.side);
    for (const s of ['a', 'b'] as const) {
      await until(`${s}'s kernel routes the other block via BIRD`, () => peerRoute(s), 60_000);
    }
  }, 120_000);

  afterAll(async () => {
    for (const c of [...children])
      if (c.pid !== undefined && c.exitCode === null) process.kill(c.pid, 'SIGKILL');
    await lab.close();
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
    const kills: { side: Side; keptMs: number; backMs: number; establishedMs: number; freshMs: number }[] =
      [];
    const traffic = await underTraffic(7070, async () => {
      for (const side of ['b', 'a'] as const) {
        const s = sup[side]!;
        const oldPid = s.pid!;
        const t0 = Date.now();
        process.kill(oldPid, 'SIGKILL');
        const keptMs = await peerKeeps(side, t0);
        await until(
          `${side}'s BIRD started again`,
          () => (s.pid !== undefined && s.pid !== oldPid ? s.pid : undefined),
          30_000,
        );
        const backMs = Date.now() - t0;
        kills.push({ side, keptMs, backMs, ...(await recovered(side, t0)) });
        // Past a scan of the kernel protocol (2 s) of the new BIRD.
        await new Promise((r) => setTimeout(r, 3000));
      }
    });
    console.log(JSON.stringify({ kills, traffic }));
    expect(sup.a!.status().restarts).toBe(1);
    expect(sup.b!.status().restarts).toBe(1);
    expectUnbroken(traffic);
  }, 240_000);

  test("calico-node's BGP side killed and started again on node-b: the new BIRD recovers, traffic never stops", async () => {
    let restart = { keptMs: 0, backMs: 0, establishedMs: 0, freshMs: 0 };
    const traffic = await underTraffic(7071, async () => {
      const t0 = Date.now();
      // How calico-node ends: its BIRD is killed (no Cease), the routes stay in the kernel.
      const oldPid = sup.b!.pid!;
      await bridges.b!.stop();
      expect(pidAlive(oldPid)).toBe(false);
      const keptMs = await peerKeeps('b', t0);
      await new Promise((r) => setTimeout(r, 1000));
      await startNode('b');
      const backMs = Date.now() - t0;
      restart = { keptMs, backMs, ...(await recovered('b', t0)) };
      await new Promise((r) => setTimeout(r, 3000));
    });
    console.log(JSON.stringify({ restart, traffic }));
    // A first start for this supervisor, on a kernel holding the old BIRD's routes: recovery on.
    expect(sup.b!.status().restarts).toBe(0);
    expect(logs.filter((l) => / node-b info BIRD started /.test(l)).at(-1)).toContain(
      '"gracefulRestartRecovery":true',
    );
    expectUnbroken(traffic);
  }, 240_000);
});
