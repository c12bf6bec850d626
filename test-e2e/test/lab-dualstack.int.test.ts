/**
 * The lab in dual stack: `lab up --nodes 3 --ip-family dual --mode bgp|vxlan` (Kubernetes datastore), one namespace, a pod
 * on each node. Observed: every Node registered an IPv4 and an IPv6 address, both default pools
 * exist, every pod has an address of each family and reaches every other pod over IPv4 and over
 * IPv6 (TCP and UDP); in bgp mode BIRD's IPv6 sessions are Established and each kernel routes the
 * other nodes' IPv6 blocks via their fabric addresses (proto bird); in vxlan mode each node has an
 * IPv6 tunnel address and routes the other nodes' IPv6 blocks via them over vxlan-v6.calico. A
 * policy with IPv6 `nets` allows and denies what it says, over IPv6 only; `lab down` leaves nothing.
 * Needs root, ip, nsenter, etcd, bird, kubectl, openssl and kube-apiserver; under CI=true their
 * absence fails the test instead of skipping. Also `--ip-family 6` (bgp, 2 nodes): IPv6-only pods.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  alive,
  blockOf,
  blockOf6,
  kernelRoutes,
  kernelRoutes6,
  LabDriver,
  missingPrerequisites,
  netnsList,
} from './lab-driver.js';

const ci = process.env.CI === 'true';
const missing = missingPrerequisites();
if (missing.length > 0) {
  describe('lab end to end, dual stack', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const PODS = ['dual/a', 'dual/b', 'dual/c'];
const MODES = ['bgp', 'vxlan'] as const;

interface NodeJson {
  metadata: { name: string };
  spec: {
    bgp?: { ipv4Address?: string; ipv6Address?: string };
    ipv4VXLANTunnelAddr?: string;
    ipv6VXLANTunnelAddr?: string;
  };
}

describe.each(missing.length === 0 ? MODES : [])('lab end to end: 3 nodes, dual stack, %s', (mode) => {
  const name = `ds${mode === 'vxlan' ? 'x' : 'b'}${Math.random().toString(16).slice(2, 6)}`;
  let dir: string;
  let lab: LabDriver;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-e2e-dualstack-'));
    lab = new LabDriver(name, join(dir, 'state'));
    const up = await lab.run('up', '--nodes', '3', '--mode', mode, '--ip-family', 'dual');
    expect(up.code, up.stdout + up.stderr).toBe(0);
    console.log(`lab up (dual stack, ${mode}) took ${(up.ms / 1000).toFixed(1)} s`);
    expect(up.stdout).toContain('IP family dual');
    await lab.ok('ns', 'create', 'dual');
    for (const [i, pod] of PODS.entries()) {
      const created = await lab.ok(
        'pod',
        'create',
        pod,
        '--node',
        `n${i + 1}`,
        '--labels',
        `app=${pod.slice(5)}`,
      );
      // Both addresses are printed: the IPv4 one from the pool, then the IPv6 one.
      expect(created.stdout).toMatch(/: 198\.19\.\d+\.\d+ fd00:19::[0-9a-f:]+ \(endpoint/);
    }
  }, 240_000);

  afterAll(async () => {
    if (lab && existsSync(join(lab.stateDir, 'state.json'))) await lab.run('down');
    if (dir) await rm(dir, { recursive: true, force: true });
    if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
  }, 60_000);

  it('every Node has an IPv4 and an IPv6 address; both default pools exist', async () => {
    const nodes = JSON.parse((await lab.ok('calicoctl', 'get', 'nodes', '-o', 'json')).stdout) as {
      items: NodeJson[];
    };
    expect(
      nodes.items.map((n) => [n.metadata.name, n.spec.bgp?.ipv4Address, n.spec.bgp?.ipv6Address]),
    ).toEqual([
      ['n1', '198.18.0.11/24', 'fd00:18::11/64'],
      ['n2', '198.18.0.12/24', 'fd00:18::12/64'],
      ['n3', '198.18.0.13/24', 'fd00:18::13/64'],
    ]);
    const pools = JSON.parse((await lab.ok('calicoctl', 'get', 'ippools', '-o', 'json')).stdout) as {
      items: { metadata: { name: string }; spec: { cidr: string; blockSize: number; vxlanMode?: string } }[];
    };
    const byName = new Map(pools.items.map((p) => [p.metadata.name, p.spec]));
    expect(byName.get('default-ipv4-ippool')).toMatchObject({ cidr: '198.19.0.0/16', blockSize: 26 });
    expect(byName.get('default-ipv6-ippool')).toMatchObject({
      cidr: 'fd00:19::/64',
      blockSize: 122,
      vxlanMode: mode === 'vxlan' ? 'Always' : 'Never',
    });
  });

  it('every pod reaches every other over IPv4 and over IPv6, TCP and UDP', async () => {
    const s = lab.state();
    for (const family of [4, 6] as const) {
      for (const protocol of ['tcp', 'udp'] as const) {
        const report = await lab.connectivity(protocol, 30_000, family);
        const what = `IPv${family} ${protocol}`;
        expect(
          report.cells.filter((c) => !c.reachable).map((c) => `${c.from}->${c.to} (${c.toIP}): ${c.error}`),
          what,
        ).toEqual([]);
        expect(report.families, what).toEqual([family]);
        // Six ordered pairs, each answered by the pod aimed at, at its address of this family.
        expect(report.cells.length, what).toBe(6);
        for (const c of report.cells) {
          const to = s.pods.find((p) => `${p.namespace}/${p.name}` === c.to)!;
          expect([c.family, c.answeredBy, c.toIP], what).toEqual([
            family,
            c.to,
            family === 4 ? to.ip : to.ip6,
          ]);
        }
      }
    }
    // Without --family: both families in one report.
    const both = await lab.connectivity('tcp', 30_000);
    expect(both.families).toEqual([4, 6]);
    expect([both.cells.length, both.reachable]).toEqual([12, 12]);
  }, 180_000);

  if (mode === 'bgp') {
    it("BIRD's IPv6 sessions are Established; each kernel routes the other nodes' IPv6 blocks (proto bird)", async () => {
      const status = JSON.parse((await lab.ok('status', '-o', 'json')).stdout) as {
        nodes: { name: string; peers?: { peerIP: string; established: boolean }[] }[];
      };
      for (const n of status.nodes) {
        const v6 = (n.peers ?? []).filter((p) => p.peerIP.includes(':'));
        expect(v6.map((p) => [p.peerIP, p.established]).sort(), `${n.name}'s IPv6 sessions`).toEqual(
          ['fd00:18::11', 'fd00:18::12', 'fd00:18::13']
            .filter((ip) => ip !== `fd00:18::${10 + Number(n.name.slice(1))}`)
            .map((ip) => [ip, true]),
        );
      }
      const s = lab.state();
      for (const node of s.plan.nodes) {
        const routes = kernelRoutes6(node.netns);
        for (const pod of s.pods.filter((p) => p.node !== node.name)) {
          const owner = s.plan.nodes.find((n) => n.name === pod.node)!;
          expect(
            routes.find((r) => r.dst === blockOf6(pod.ip6!)),
            `${node.name}: route to ${pod.name}'s IPv6 block`,
          ).toMatchObject({
            gateway: owner.ip6,
            dev: 'eth0',
            protocol: 'bird',
          });
        }
        // The IPv4 blocks are still routed the same way.
        for (const pod of s.pods.filter((p) => p.node !== node.name)) {
          expect(kernelRoutes(node.netns).find((r) => r.dst === blockOf(pod.ip))).toMatchObject({
            protocol: 'bird',
          });
        }
      }
    });
  } else {
    it("each node has an IPv6 VXLAN tunnel address and routes the other nodes' IPv6 blocks over vxlan-v6.calico", async () => {
      const nodes = JSON.parse((await lab.ok('calicoctl', 'get', 'nodes', '-o', 'json')).stdout) as {
        items: NodeJson[];
      };
      const vtep6 = new Map(nodes.items.map((n) => [n.metadata.name, n.spec.ipv6VXLANTunnelAddr]));
      for (const n of ['n1', 'n2', 'n3']) expect(vtep6.get(n), n).toMatch(/^fd00:19::[0-9a-f:]+$/);
      const s = lab.state();
      for (const node of s.plan.nodes) {
        const routes = kernelRoutes6(node.netns);
        for (const pod of s.pods.filter((p) => p.node !== node.name)) {
          expect(
            routes.find((r) => r.dst === blockOf6(pod.ip6!)),
            `${node.name}: route to ${pod.name}'s IPv6 block`,
          ).toMatchObject({
            gateway: vtep6.get(pod.node),
            dev: 'vxlan-v6.calico',
          });
        }
        expect(routes.some((r) => r.protocol === 'bird')).toBe(false);
        // IPv6 VXLAN packets are accepted only from the other nodes' IPv6 addresses.
        const set = spawnSync(
          'ip',
          ['netns', 'exec', node.netns, 'nft', '-j', 'list', 'set', 'ip6', 'calico', 'cali60all-vxlan-net'],
          { encoding: 'utf8' },
        );
        expect(set.status, set.stderr).toBe(0);
        const elems = (
          JSON.parse(set.stdout) as { nftables: { set?: { elem?: unknown[] } }[] }
        ).nftables.find((x) => x.set)?.set?.elem;
        expect([...(elems ?? [])].map(String).sort(), `${node.name}'s IPv6 VXLAN sources`).toEqual(
          s.plan.nodes.filter((n) => n.name !== node.name).map((n) => n.ip6!),
        );
      }
    });
  }

  it('a policy with IPv6 nets allows and denies as written, over IPv6 only', async () => {
    const everyone = () => true;
    expect(await lab.reachabilityMatches(everyone), 'before the policy').toEqual([]);
    const c = lab.state().pods.find((p) => p.name === 'c')!;
    // Pod a takes, over IPv6, what the pool's range sends, except from pod c; nothing over IPv4.
    await lab.applyYaml(
      'calicoctl',
      dir,
      'v6-nets',
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: v6-nets
  namespace: dual
spec:
  selector: app == 'a'
  types:
  - Ingress
  ingress:
  - action: Deny
    source:
      nets: ['${c.ip6}/128']
  - action: Allow
    source:
      nets: ['fd00:19::/64']
`,
    );
    const allowed = (from: string, to: string, family: 4 | 6) =>
      to !== 'dual/a' || (family === 6 && from !== 'dual/c');
    expect(await lab.reachabilityMatches(allowed), 'with the policy').toEqual([]);
    await lab.ok('calicoctl', 'delete', 'networkpolicy', 'v6-nets', '-n', 'dual');
    expect(await lab.reachabilityMatches(everyone), 'after deleting the policy').toEqual([]);
  }, 120_000);

  it('lab down leaves no namespace and no recorded process alive', async () => {
    const s = lab.state();
    const recorded = [...Object.values(s.processes), ...s.pods.map((p) => p.listener)];
    // The IPv6 BIRDs, which calico-node started (their PIDs in its run directory), go too.
    const bird6 = s.plan.nodes.map((n) => ({
      pid: existsSync(join(n.runDir, 'bird6.pid'))
        ? readFileSync(join(n.runDir, 'bird6.pid'), 'utf8').trim()
        : '',
      socket: join(n.runDir, 'bird6.ctl'),
    }));
    const running = (b: { pid: string; socket: string }) => {
      try {
        return readFileSync(`/proc/${b.pid}/cmdline`, 'utf8').includes(b.socket);
      } catch {
        return false;
      }
    };
    expect(bird6.filter(running).length, 'the IPv6 BIRDs run before lab down').toBe(mode === 'bgp' ? 3 : 0);
    await lab.ok('down');
    expect(netnsList().filter((ns) => ns.startsWith(`${name}-`))).toEqual([]);
    expect(recorded.filter(alive)).toEqual([]);
    expect(bird6.filter(running)).toEqual([]);
    expect(existsSync(lab.stateDir)).toBe(false);
  }, 60_000);
});

describe.each(missing.length === 0 ? ['6'] : [])('lab end to end: 2 nodes, --ip-family %s, bgp', () => {
  const name = `ds6${Math.random().toString(16).slice(2, 6)}`;
  let dir: string;
  let lab: LabDriver;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-e2e-ipv6-'));
    lab = new LabDriver(name, join(dir, 'state'));
    const up = await lab.run('up', '--nodes', '2', '--ip-family', '6');
    expect(up.code, up.stdout + up.stderr).toBe(0);
    console.log(`lab up (IPv6 only, bgp) took ${(up.ms / 1000).toFixed(1)} s`);
    await lab.ok('ns', 'create', 'six');
    await lab.ok('pod', 'create', 'six/a', '--node', 'n1');
    await lab.ok('pod', 'create', 'six/b', '--node', 'n2');
  }, 240_000);

  afterAll(async () => {
    if (lab && existsSync(join(lab.stateDir, 'state.json'))) await lab.run('down');
    if (dir) await rm(dir, { recursive: true, force: true });
    if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
  }, 60_000);

  it('the pods have IPv6 addresses only and reach each other over IPv6; there is no IPv4 pool', async () => {
    const s = lab.state();
    expect(s.pods.map((p) => [p.ip, p.ip6?.startsWith('fd00:19::')])).toEqual([
      [undefined, true],
      [undefined, true],
    ]);
    const report = await lab.connectivity('tcp', 30_000);
    expect(report.families).toEqual([6]);
    expect(report.cells.map((c) => [c.family, c.from, c.to, c.reachable])).toEqual([
      [6, 'six/a', 'six/b', true],
      [6, 'six/b', 'six/a', true],
    ]);
    const pools = JSON.parse((await lab.ok('calicoctl', 'get', 'ippools', '-o', 'json')).stdout) as {
      items: { spec: { cidr: string } }[];
    };
    expect(pools.items.map((p) => p.spec.cidr)).toEqual(['fd00:19::/64']);
    // Asking for a family the lab's pods do not have is an error naming it.
    const v4 = await lab.run('connectivity', '--family', '4');
    expect(v4.code).toBe(2);
    expect(v4.stderr).toContain('--family 4: the lab');
  }, 120_000);

  it('lab down leaves no namespace and no recorded process alive', async () => {
    const s = lab.state();
    const recorded = [...Object.values(s.processes), ...s.pods.map((p) => p.listener)];
    await lab.ok('down');
    expect(netnsList().filter((ns) => ns.startsWith(`${name}-`))).toEqual([]);
    expect(recorded.filter(alive)).toEqual([]);
  }, 60_000);
});
