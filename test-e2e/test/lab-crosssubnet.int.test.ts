/**
 * VXLAN CrossSubnet for real: `lab up --nodes 3 --mode vxlan --topology two-subnets` puts n1 and n2
 * on 198.18.0.0/24 and n3 on 198.18.1.0/24, the fabric namespace routing between them, with a
 * CrossSubnet pool. Observed: every pod reaches every other; n1 routes n2's block straight over
 * eth0 and n3's through vxlan.calico (and n3 both of the others' through it); and the packet
 * counters of n1's vxlan.calico stay put for traffic to n2's pod and move for traffic to n3's.
 * Needs what the other lab tests need (Kubernetes datastore).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockOf, kernelRoutes, LabDriver, missingPrerequisites, netnsList } from './lab-driver.js';

const ci = process.env.CI === 'true';
const missing = missingPrerequisites('kubernetes');
if (missing.length > 0) {
  describe('lab: two subnets, VXLAN CrossSubnet', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

/** Packets vxlan.calico has sent, in a node's namespace. */
function vxlanTxPackets(netns: string): number {
  const r = spawnSync('ip', ['-n', netns, '-s', '-j', 'link', 'show', 'vxlan.calico'], { encoding: 'utf8' });
  const [link] = JSON.parse(r.stdout) as { stats64: { tx: { packets: number } } }[];
  return link!.stats64.tx.packets;
}

describe.skipIf(missing.length > 0)('lab: two subnets, VXLAN CrossSubnet', () => {
  const name = `e2x${Math.random().toString(16).slice(2, 6)}`;
  let dir: string;
  let lab: LabDriver;

  /** 5 pings from a pod's namespace to an address; true when they were answered. */
  function ping(pod: string, ip: string): boolean {
    const netns = `${name}-pod-blue-${pod}`;
    return (
      spawnSync('ip', ['netns', 'exec', netns, 'ping', '-c', '5', '-i', '0.2', '-W', '2', '-q', ip])
        .status === 0
    );
  }
  const podIp = (pod: string) => lab.state().pods.find((p) => p.name === pod)!.ip;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-e2e-xsubnet-'));
    lab = new LabDriver(name, join(dir, 'state'));
    const up = await lab.run('up', '--nodes', '3', '--mode', 'vxlan', '--topology', 'two-subnets');
    expect(up.code, up.stdout + up.stderr).toBe(0);
    console.log(`lab up (vxlan, two subnets) took ${(up.ms / 1000).toFixed(1)} s`);
    expect(up.stdout).toContain('bridge br1 198.18.1.1/24');
    await lab.ok('ns', 'create', 'blue');
    await lab.ok('pod', 'create', 'blue/a', '--node', 'n1');
    await lab.ok('pod', 'create', 'blue/b', '--node', 'n2');
    await lab.ok('pod', 'create', 'blue/c', '--node', 'n3');
  }, 180_000);

  afterAll(async () => {
    if (lab && existsSync(join(lab.stateDir, 'state.json'))) await lab.run('down');
    if (dir) await rm(dir, { recursive: true, force: true });
    if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
  }, 60_000);

  it('the nodes are on two subnets, and the pool is CrossSubnet', async () => {
    expect(lab.state().plan.nodes.map((n) => [n.name, n.ip])).toEqual([
      ['n1', '198.18.0.11'],
      ['n2', '198.18.0.12'],
      ['n3', '198.18.1.13'],
    ]);
    const pools = JSON.parse((await lab.ok('calicoctl', 'get', 'ippools', '-o', 'json')).stdout) as {
      items: { spec: { vxlanMode?: string } }[];
    };
    expect(pools.items.map((p) => p.spec.vxlanMode)).toEqual(['CrossSubnet']);
  });

  it('every pod reaches every other over TCP and UDP', async () => {
    for (const protocol of ['tcp', 'udp'] as const) {
      const report = await lab.connectivity(protocol);
      expect(
        report.cells.filter((c) => !c.reachable).map((c) => `${c.from}->${c.to}: ${c.error}`),
        protocol,
      ).toEqual([]);
      expect(report.reachable).toBe(6);
    }
  }, 60_000);

  it('same-subnet blocks are routed directly, other-subnet blocks through vxlan.calico', async () => {
    const nodes = JSON.parse((await lab.ok('calicoctl', 'get', 'nodes', '-o', 'json')).stdout) as {
      items: { metadata: { name: string }; spec: { ipv4VXLANTunnelAddr?: string } }[];
    };
    const vtep = new Map(nodes.items.map((n) => [n.metadata.name, n.spec.ipv4VXLANTunnelAddr]));
    const s = lab.state();
    const route = (netns: string, pod: string) =>
      kernelRoutes(netns).find((r) => r.dst === blockOf(s.pods.find((p) => p.name === pod)!.ip));
    const ns = (node: string) => s.plan.nodes.find((n) => n.name === node)!.netns;
    expect(route(ns('n1'), 'b'), 'n1 → n2').toMatchObject({ gateway: '198.18.0.12', dev: 'eth0' });
    expect(route(ns('n2'), 'a'), 'n2 → n1').toMatchObject({ gateway: '198.18.0.11', dev: 'eth0' });
    expect(route(ns('n1'), 'c'), 'n1 → n3').toMatchObject({ gateway: vtep.get('n3'), dev: 'vxlan.calico' });
    expect(route(ns('n3'), 'a'), 'n3 → n1').toMatchObject({ gateway: vtep.get('n1'), dev: 'vxlan.calico' });
    expect(route(ns('n3'), 'b'), 'n3 → n2').toMatchObject({ gateway: vtep.get('n2'), dev: 'vxlan.calico' });
  });

  it('packets to a pod on the same subnet leave unencapsulated, to the other subnet encapsulated', () => {
    const n1 = lab.state().plan.nodes.find((n) => n.name === 'n1')!.netns;
    const before = vxlanTxPackets(n1);
    expect(ping('a', podIp('b'))).toBe(true);
    const sameSubnet = vxlanTxPackets(n1) - before;
    expect(ping('a', podIp('c'))).toBe(true);
    const otherSubnet = vxlanTxPackets(n1) - before - sameSubnet;
    expect(sameSubnet, 'vxlan.calico packets for 5 pings to n2’s pod').toBe(0);
    expect(otherSubnet, 'vxlan.calico packets for 5 pings to n3’s pod').toBeGreaterThanOrEqual(5);
  });

  it('lab down leaves no namespace', async () => {
    await lab.ok('down');
    expect(netnsList().filter((n) => n.startsWith(`${name}-`))).toEqual([]);
  }, 60_000);
});
