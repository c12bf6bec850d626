/**
 * NAT outgoing as a host outside the cluster sees it: real Felix, real CNI pods, real nftables,
 * real packets. The fabric namespace plays a server that is not a node; it answers each TCP
 * connection and UDP datagram with the source address and port it saw, and logs every UDP source
 * (a pod that keeps its own address cannot get an answer back: the outside has no route to pods).
 *
 *   pod in nat-pool (natOutgoing)  ─┐                        fabric netns (the outside)
 *   pod in the default pool        ─┴─ node netns (Felix) ══ 198.18.0.1: "<source> <port>"
 *
 * Checked: the node's address as the source for the NAT pool, the pod's own for the other pool;
 * FelixConfiguration natPortRange (TCP and UDP source ports), natOutgoingAddress, and
 * natOutgoingExclusions IPPoolsAndHostIPs (a destination that is a node is not translated), each
 * applied to a running Felix and undone.
 */
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import type { Resource } from '@calico-ts/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bundleLabBinaries,
  eventually as eventuallyEvery,
  labPrerequisites,
  startLabFelix,
} from './testing-internal/felix-harness.js';
import { collectLines, FelixLab, firstLine, type Pod, runCapture } from './testing-internal/felix-lab.js';

const missing = labPrerequisites('NAT outgoing', ['ip', 'nsenter', 'nft']);

const V3 = 'projectcalico.org/v3';
const OUTSIDE = '198.18.0.1';
const NODE_IP = '198.18.0.2';
/** A second address of the node, for natOutgoingAddress. */
const NODE_IP2 = '198.18.0.3';
const NAT_POOL = '198.18.64.0/24';
/** The seed's default pool, without natOutgoing. */
const PLAIN_POOL = '198.19.0.0/16';
const PORT = 7070;

/** The outside: tells each TCP peer and UDP sender what source it saw; logs UDP sources. */
const OUTSIDE_SRC = `
const net = require('node:net'); const dgram = require('node:dgram');
const [host, port] = process.argv.slice(1);
net.createServer((c) => { c.end(c.remoteAddress + ' ' + c.remotePort + '\\n'); c.on('error', () => {}); })
  .listen(Number(port), host, () => {
    const u = dgram.createSocket('udp4');
    u.on('message', (m, r) => {
      process.stdout.write('udp ' + m + ' ' + r.address + ' ' + r.port + '\\n');
      u.send(r.address + ' ' + r.port, r.port, r.address);
    });
    u.bind(Number(port), host, () => process.stdout.write('ready\\n'));
  });
`;

/** From a pod: one TCP connection or UDP datagram to the outside; prints the answer, exit 1 if none. */
const ASK_SRC = `
const [proto, host, port, tag] = process.argv.slice(1);
setTimeout(() => { process.stderr.write('no answer within 1.5 s\\n'); process.exit(1); }, 1500);
if (proto === 'tcp') {
  const s = require('node:net').connect(Number(port), host);
  let got = ''; s.on('data', (d) => { got += d; }); s.on('end', () => { process.stdout.write(got); process.exit(0); });
  s.on('error', (e) => { process.stderr.write(e.message + '\\n'); process.exit(1); });
} else {
  const u = require('node:dgram').createSocket('udp4');
  u.on('message', (m) => { process.stdout.write(String(m) + '\\n'); process.exit(0); });
  u.send(tag, Number(port), host);
}
`;

/** `eventually` with this file's patience: 20 s, checking every 200 ms. */
const eventually = (what: string, f: () => Promise<boolean> | boolean, ms = 20_000) =>
  eventuallyEvery(what, f, ms, 200);

describe.skipIf(missing.length > 0)('NAT outgoing', () => {
  const lab = new FelixLab();
  const healthPort = randomInt(20_000, 30_000);
  let natPod: Pod;
  let plainPod: Pod;
  const outsideLines: string[] = [];
  let felixLines: string[] = [];
  let tagSeq = 0;

  /** What the outside answered a pod's TCP connection or UDP datagram: `{ addr, port }`. */
  async function ask(pod: Pod, proto: 'tcp' | 'udp'): Promise<{ addr: string; port: number } | undefined> {
    const r = await runCapture('nsenter', [
      `--net=/run/netns/${pod.netns}`,
      process.execPath,
      '-e',
      ASK_SRC,
      proto,
      OUTSIDE,
      String(PORT),
      `tag${++tagSeq}`,
    ]);
    if (r.code !== 0) {
      if (process.env.FELIX_IT_DEBUG) console.log(`${proto} from ${pod.ip}: ${r.stderr.trim()}`);
      return undefined;
    }
    const [addr, port] = r.stdout.trim().split(' ');
    return { addr: addr!, port: Number(port) };
  }

  /** The source the outside logged for a UDP datagram from the pod (answered or not). */
  async function udpSourceSeen(pod: Pod): Promise<string | undefined> {
    await ask(pod, 'udp');
    const tag = `tag${tagSeq}`;
    await eventually('the outside logged the datagram', () =>
      outsideLines.some((l) => l.startsWith(`udp ${tag} `)),
    );
    return outsideLines.find((l) => l.startsWith(`udp ${tag} `))!.split(' ')[2];
  }

  async function setFelixConfig(spec: Record<string, unknown>): Promise<void> {
    await lab.ds.apply({
      apiVersion: V3,
      kind: 'FelixConfiguration',
      metadata: { name: 'default' },
      spec,
    } as unknown as Resource & { kind: 'FelixConfiguration' });
  }

  beforeAll(async () => {
    await lab.start();
    const { cniBin, felixBin } = await bundleLabBinaries(lab);
    await lab.seed({ apps: {} });
    await lab.create({
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'nat-pool' },
      spec: { cidr: NAT_POOL, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', natOutgoing: true },
    });
    await setFelixConfig({});
    // The node's second address, for natOutgoingAddress.
    spawnSync('ip', ['-n', lab.node, 'addr', 'add', `${NODE_IP2}/24`, 'dev', 'eth0']);

    felixLines = startLabFelix(lab, felixBin, healthPort).lines;

    const outside = lab.spawnIn(lab.fabric, process.execPath, ['-e', OUTSIDE_SRC, OUTSIDE, String(PORT)]);
    collectLines(outside, outsideLines);
    await firstLine(outside, 'ready');

    natPod = await lab.addPod(cniBin, 'apps', 'nat-pod', { ipv4Pools: [NAT_POOL] });
    plainPod = await lab.addPod(cniBin, 'apps', 'plain-pod', { ipv4Pools: [PLAIN_POOL] });
    await eventually(
      'Felix is ready',
      async () => (await lab.httpGet(`http://127.0.0.1:${healthPort}/readiness`)).status === 200,
      30_000,
    );
  }, 120_000);

  afterAll(async () => {
    if (process.env.FELIX_IT_DEBUG) console.log(felixLines.slice(-40).join('\n'));
    await lab.close();
  }, 60_000);

  it('the pods have addresses from their pools', () => {
    expect(natPod.ip).toMatch(/^198\.18\.64\./);
    expect(plainPod.ip).toMatch(/^198\.19\./);
  });

  it('a pod in a natOutgoing pool reaches the outside with the node’s address as its source', async () => {
    await eventually('the NAT pod gets a TCP answer', async () => (await ask(natPod, 'tcp')) !== undefined);
    expect((await ask(natPod, 'tcp'))?.addr).toBe(NODE_IP);
    expect((await ask(natPod, 'udp'))?.addr).toBe(NODE_IP);
  });

  it('a pod in a pool without natOutgoing keeps its own address', async () => {
    expect(await udpSourceSeen(plainPod)).toBe(plainPod.ip);
    // And the NAT pod's datagrams, logged the same way, are the node's.
    expect(await udpSourceSeen(natPod)).toBe(NODE_IP);
  });

  it('natPortRange: TCP and UDP source ports come from the range', async () => {
    await setFelixConfig({ natPortRange: '40000:40009' });
    await eventually('the TCP source port is in 40000–40009', async () => {
      const a = await ask(natPod, 'tcp');
      return a !== undefined && a.port >= 40000 && a.port <= 40009;
    });
    for (let i = 0; i < 5; i++) {
      for (const proto of ['tcp', 'udp'] as const) {
        const a = await ask(natPod, proto);
        expect(a?.addr, proto).toBe(NODE_IP);
        expect(a!.port, proto).toBeGreaterThanOrEqual(40000);
        expect(a!.port, proto).toBeLessThanOrEqual(40009);
      }
    }
    expect(lab.nft(['list', 'chain', 'ip', 'calico', 'nat-cali-nat-outgoing'])).toContain(
      'masquerade to :40000-40009',
    );
  });

  it('natOutgoingAddress: the source is that address (with the port range still applied)', async () => {
    await setFelixConfig({ natPortRange: '40000:40009', natOutgoingAddress: NODE_IP2 });
    await eventually(
      'the source is the second address',
      async () => (await ask(natPod, 'tcp'))?.addr === NODE_IP2,
    );
    const a = await ask(natPod, 'udp');
    expect(a?.addr).toBe(NODE_IP2);
    expect(a!.port).toBeGreaterThanOrEqual(40000);
    expect(a!.port).toBeLessThanOrEqual(40009);
    await setFelixConfig({});
    await eventually(
      'masquerade to the node’s address again',
      async () => (await ask(natPod, 'tcp'))?.addr === NODE_IP,
    );
    expect(lab.nft(['list', 'chain', 'ip', 'calico', 'nat-cali-nat-outgoing'])).not.toContain(':40000');
  });

  it('natOutgoingExclusions IPPoolsAndHostIPs: traffic to a node’s address is not translated', async () => {
    // The outside becomes a Calico node.
    await lab.create({
      apiVersion: V3,
      kind: 'Node',
      metadata: { name: 'outside-host' },
      spec: { bgp: { ipv4Address: `${OUTSIDE}/24` } },
    });
    // IPPoolsOnly (the default): a node's address is translated like any other.
    expect(await udpSourceSeen(natPod)).toBe(NODE_IP);
    await setFelixConfig({ natOutgoingExclusions: 'IPPoolsAndHostIPs' });
    await eventually('the NAT pod’s datagrams keep its own address', async () => {
      return (await udpSourceSeen(natPod)) === natPod.ip;
    });
    expect(lab.nft(['list', 'set', 'ip', 'calico', 'cali40all-hosts-net'])).toContain(OUTSIDE);
    // A destination that is no node is still translated.
    await lab.ds.delete('Node', 'outside-host');
    await eventually(
      'translated again once the outside is no node',
      async () => (await ask(natPod, 'tcp'))?.addr === NODE_IP,
    );
    await setFelixConfig({});
  });
});
