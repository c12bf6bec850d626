/**
 * An external BGP router on the lab's fabric: GoBGP (AS 65001) in its own network namespace at
 * 198.18.0.50, on a veth into the fabric bridge, with every node as a neighbor (peer-as 64512),
 * and a global BGPPeer (peerIP 198.18.0.50, asNumber 65001) written with `lab calicoctl`.
 * Observed: each node's BIRD has `Global_198_18_0_50` Established; GoBGP's RIB (`gobgp global rib`
 * on its gRPC API, bound to a random port on its namespace's loopback) holds exactly the blocks
 * affine to the nodes in etcd, each sent by its own node with that node as next hop and AS path
 * 64512, and nothing else (no pod /32s, no fabric or default route); `lab status` shows the
 * session; a BGPFilter the BGPPeer names keeps exactly the prefix it rejects out of GoBGP's RIB;
 * deleting the BGPPeer ends the sessions and empties GoBGP's RIB.
 *
 * BGP password (TCP MD5): GoBGP requires one on every neighbor, and the BGPPeer takes it from the
 * Secret `bgp-secrets` (key `gobgp`) in kube-system, which calico-node reads and watches through
 * the lab's API server on both datastores (on etcd with the lab's kubeconfig, as a pod would with
 * its in-cluster config). The sessions above are only Established because both sides agree; a
 * wrong value in the Secret keeps every session down, and correcting it brings them back.
 *
 * As upstream, every node also re-advertises the blocks it learned over the mesh: upstream's
 * `calico_export_to_bgp_peers` accepts any route inside a pool, whatever its source, and BIRD sets
 * itself as next hop toward a multihop eBGP peer (global peers are `multihop`). So GoBGP holds
 * each block once per node, and its best path may lead through another node.
 *
 * Own lab name and state directory; afterAll stops gobgpd (by its PID), removes its namespace and
 * takes the lab down, also when a test failed.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyYaml, bgpSessions, blockAffinities, labStatus, sessionLines, until } from './bgp-observe.js';
import { DATASTORES, LabDriver, missingPrerequisites, netnsList } from './lab-driver.js';

const GOBGPD = '/usr/bin/gobgpd';
const GOBGP = '/usr/bin/gobgp';
const missing = [
  ...missingPrerequisites(),
  ...[GOBGPD, GOBGP].filter((p) => !existsSync(p)).map((p) => p.slice(p.lastIndexOf('/') + 1)),
];
const ci = process.env.CI === 'true';

if (missing.length > 0) {
  describe('lab external BGP peer', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const PEER_IP = '198.18.0.50';
const PEER_AS = 65001;
const CLUSTER_AS = 64512;
/** The Secret the BGPPeer's password names, in calico-node's NAMESPACE (kube-system in the lab). */
const SECRET = 'bgp-secrets';
const SECRET_KEY = 'gobgp';

interface RibPath {
  nlri: { prefix: string };
  best: boolean;
  'neighbor-ip': string;
  attrs: { type: number; nexthop?: string; as_paths?: { asns: number[] }[] }[];
}

describe.each(missing.length > 0 ? [] : DATASTORES)(
  'lab: an external BGP peer (GoBGP) on the fabric, %s',
  (datastore) => {
    const name = `e2x${datastore === 'kubernetes' ? 'k' : ''}${Math.random().toString(16).slice(2, 6)}`;
    const peerNetns = `${name}-gobgp`;
    const apiPort = 20_000 + Math.floor(Math.random() * 40_000);
    let dir: string;
    let lab: LabDriver;
    let gobgpd: ChildProcess | undefined;
    let gobgpdLog = '';
    let madeNetns = false;
    const t0 = Date.now();

    /** `gobgp -p <port> ARGS -j` inside the peer's namespace, parsed. */
    const gobgp = <T>(...args: string[]): T => {
      const r = spawnSync('ip', ['netns', 'exec', peerNetns, GOBGP, '-p', String(apiPort), ...args, '-j'], {
        encoding: 'utf8',
        timeout: 10_000,
      });
      if (r.status !== 0) throw new Error(`gobgp ${args.join(' ')}: ${r.stderr || r.stdout}`);
      return JSON.parse(r.stdout) as T;
    };
    const rib = () => gobgp<Record<string, RibPath[]>>('global', 'rib');
    const password = `pw-${Math.random().toString(36).slice(2, 10)}`;
    /** The BGPPeer, its password from the Secret, with these BGPFilters. */
    const peerYaml = (filters: string[] = []) =>
      [
        'apiVersion: projectcalico.org/v3',
        'kind: BGPPeer',
        'metadata:',
        '  name: external-gobgp',
        'spec:',
        `  peerIP: ${PEER_IP}`,
        `  asNumber: ${PEER_AS}`,
        '  password:',
        '    secretKeyRef:',
        `      name: ${SECRET}`,
        `      key: ${SECRET_KEY}`,
        ...(filters.length > 0 ? ['  filters:', ...filters.map((f) => `  - ${f}`)] : []),
        '',
      ].join('\n');
    /** Writes the Secret through the lab's API server (kubectl), `undefined`: deletes it. */
    const setSecret = async (value: string | undefined) => {
      if (value === undefined) {
        await lab.ok('kubectl', '-n', 'kube-system', 'delete', 'secret', SECRET, '--ignore-not-found');
        return;
      }
      const file = join(dir, 'bgp-secret.yaml');
      writeFileSync(
        file,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: SECRET, namespace: 'kube-system' },
          type: 'Opaque',
          stringData: { [SECRET_KEY]: value },
        }),
      );
      await lab.ok('kubectl', 'apply', '-f', file);
    };
    /** The password lines of a node's BIRD configuration files (beside its run directory). */
    const birdPasswords = (runDir: string) =>
      readdirSync(join(dirname(runDir), 'bird'))
        .filter((f) => f.endsWith('.cfg'))
        .flatMap((f) => readFileSync(join(dirname(runDir), 'bird', f), 'utf8').split('\n'))
        .filter((l) => l.includes('password'))
        .map((l) => l.trim());
    const gobgpStates = () =>
      gobgp<{ conf: { neighbor_address: string }; state: { session_state: number } }[]>('neighbor').map(
        (x) => x.state.session_state,
      );
    const nextHop = (p: RibPath) => p.attrs.find((a) => a.type === 3)?.nexthop;
    const asPath = (p: RibPath) => p.attrs.find((a) => a.type === 2)?.as_paths?.flatMap((s) => s.asns) ?? [];

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-ext-'));
      lab = new LabDriver(name, join(dir, 'state'));
      const up = await lab.run('up', '--nodes', '3', '--mode', 'bgp', '--datastore', datastore);
      expect(up.code, up.stdout + up.stderr).toBe(0);
      await lab.ok('ns', 'create', 'ext');
      for (const n of ['n1', 'n2', 'n3']) await lab.ok('pod', 'create', `ext/on-${n}`, '--node', n);
      const s = lab.state();

      // The router's namespace: a veth into the lab's fabric bridge, like a node's, at .50.
      const ip = (...a: string[]) => {
        const r = spawnSync('ip', a, { encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`ip ${a.join(' ')}: ${r.stderr}`);
      };
      expect(netnsList()).not.toContain(peerNetns);
      ip('netns', 'add', peerNetns);
      madeNetns = true;
      ip('-n', peerNetns, 'link', 'set', 'lo', 'up');
      ip(
        '-n',
        s.plan.fabricNetns,
        'link',
        'add',
        'gobgp',
        'type',
        'veth',
        'peer',
        'name',
        'eth0',
        'netns',
        peerNetns,
      );
      ip('-n', s.plan.fabricNetns, 'link', 'set', 'gobgp', 'master', 'br0', 'up');
      ip('-n', peerNetns, 'addr', 'add', `${PEER_IP}/24`, 'dev', 'eth0');
      ip('-n', peerNetns, 'link', 'set', 'eth0', 'up');

      const config = [
        '[global.config]',
        `  as = ${PEER_AS}`,
        `  router-id = "${PEER_IP}"`,
        ...s.plan.nodes.flatMap((n) => [
          '[[neighbors]]',
          '  [neighbors.config]',
          `    neighbor-address = "${n.ip}"`,
          `    peer-as = ${CLUSTER_AS}`,
          `    auth-password = "${password}"`,
        ]),
        '',
      ].join('\n');
      writeFileSync(join(dir, 'gobgpd.toml'), config);
      // nsenter execs gobgpd, so the child's PID is gobgpd's own. Its gRPC API listens on the
      // namespace's loopback only; nothing else runs in that namespace, so the random port is free.
      gobgpd = spawn(
        'nsenter',
        [
          `--net=/run/netns/${peerNetns}`,
          GOBGPD,
          '-f',
          join(dir, 'gobgpd.toml'),
          '-t',
          'toml',
          `--api-hosts=127.0.0.1:${apiPort}`,
          '--pprof-disable',
          '-p',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      for (const stream of [gobgpd.stdout!, gobgpd.stderr!]) {
        stream.on('data', (d: Buffer) => {
          gobgpdLog += d.toString();
        });
      }
      await until('gobgpd API', () => gobgp<unknown[]>('neighbor').length === 3, 20_000);

      await setSecret(password);
      await applyYaml(lab, dir, 'external-gobgp', peerYaml());
    }, 150_000);

    afterAll(async () => {
      if (gobgpd?.pid !== undefined && gobgpd.exitCode === null && gobgpd.signalCode === null) {
        const exited = new Promise((r) => gobgpd!.once('exit', r));
        gobgpd.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (gobgpd.exitCode === null && gobgpd.signalCode === null) gobgpd.kill('SIGKILL');
      }
      if (madeNetns) spawnSync('ip', ['netns', 'del', peerNetns]);
      if (dir && existsSync(join(dir, 'state', 'state.json'))) {
        const down = await lab.run('down');
        if (down.code !== 0) console.log(down.stdout + down.stderr);
      }
      if (dir) await rm(dir, { recursive: true, force: true });
      console.log(`external-peer scenario: ${((Date.now() - t0) / 1000).toFixed(1)} s in all`);
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'), gobgpdLog);
    }, 60_000);

    it('BIRD on every node has Global_198_18_0_50 Established, beside its mesh sessions', async () => {
      const t = Date.now();
      for (const n of lab.state().plan.nodes) {
        await until(`${n.name}: Global_198_18_0_50 Established`, async () =>
          sessionLines(await bgpSessions(n.runDir)).includes('Global_198_18_0_50 Established'),
        );
        expect(sessionLines(await bgpSessions(n.runDir)), n.name).toEqual([
          'Global_198_18_0_50 Established',
          ...lab
            .state()
            .plan.nodes.filter((o) => o.name !== n.name)
            .map((o) => `Mesh_${o.ip.replaceAll('.', '_')} Established`),
        ]);
      }
      console.log(`BGPPeer applied → every Global_198_18_0_50 Established in ${Date.now() - t} ms`);
      const neighbors =
        gobgp<{ conf: { neighbor_address: string }; state: { session_state: number } }[]>('neighbor');
      // GoBGP's session_state 6 = ESTABLISHED.
      expect(neighbors.map((x) => [x.conf.neighbor_address, x.state.session_state]).sort()).toEqual(
        lab
          .state()
          .plan.nodes.map((n) => [n.ip, 6])
          .sort(),
      );
    }, 60_000);

    it("GoBGP learned every node's affine blocks from that node, next hop the node, and nothing else", async () => {
      const s = lab.state();
      const blocks = await blockAffinities(lab);
      expect([...blocks.keys()].sort()).toEqual(['n1', 'n2', 'n3']);
      const wanted = s.plan.nodes.flatMap((n) => blocks.get(n.name)!.map((cidr) => ({ node: n, cidr })));
      await until('every block from its own node in GoBGP', () => {
        const r = rib();
        return wanted.every(({ node, cidr }) => r[cidr]?.some((p) => p['neighbor-ip'] === node.ip));
      });
      const r = rib();
      for (const { node, cidr } of wanted) {
        const own = r[cidr]!.find((p) => p['neighbor-ip'] === node.ip)!;
        expect([nextHop(own), asPath(own)], `${cidr} from ${node.name}`).toEqual([node.ip, [CLUSTER_AS]]);
      }
      // Only pool blocks are exported: no pod /32, no fabric subnet, no default route.
      expect(Object.keys(r).sort()).toEqual(wanted.map((w) => w.cidr).sort());
      // Each node re-advertises the others' blocks too, always with itself as next hop.
      for (const paths of Object.values(r)) {
        expect(paths.map((p) => p['neighbor-ip']).sort()).toEqual(s.plan.nodes.map((n) => n.ip));
        for (const p of paths) expect([nextHop(p), asPath(p)]).toEqual([p['neighbor-ip'], [CLUSTER_AS]]);
      }
      console.log(
        Object.entries(r)
          .map(
            ([cidr, paths]) =>
              `${cidr}: ${paths.map((p) => `${p.best ? '*>' : '* '} from ${p['neighbor-ip']} nh ${nextHop(p)}`).join('; ')}`,
          )
          .join('\n'),
      );
    }, 60_000);

    it('lab status shows the external session on every node', async () => {
      const { json, table } = await labStatus(lab);
      for (const n of json.nodes) {
        expect(
          n.peers!.filter((p) => p.type === 'global').map((p) => [p.peerIP, p.node, p.bgpState]),
          n.name,
        ).toEqual([[PEER_IP, undefined, 'Established']]);
      }
      for (const n of ['n1', 'n2', 'n3']) {
        expect(table.split('\n').find((l) => l.startsWith(`${n} `))).toContain(
          `${PEER_IP} global Established`,
        );
      }
    });

    it("a BGPFilter on the peer rejecting n1's block keeps it out of GoBGP's table, until the peer drops it", async () => {
      const blocks = await blockAffinities(lab);
      const n1Block = blocks.get('n1')![0]!;
      const others = [...blocks.values()].flat().filter((c) => c !== n1Block);
      const peer = peerYaml;
      await applyYaml(
        lab,
        dir,
        'keep-n1-in',
        [
          'apiVersion: projectcalico.org/v3',
          'kind: BGPFilter',
          'metadata:',
          '  name: keep-n1-in',
          'spec:',
          '  exportV4:',
          '  - action: Reject',
          '    matchOperator: Equal',
          `    cidr: ${n1Block}`,
          '',
        ].join('\n'),
      );
      await applyYaml(lab, dir, 'external-gobgp-filtered', peer(['keep-n1-in']));
      await until(`${n1Block} withdrawn from GoBGP`, () => !(n1Block in rib()), 30_000);
      // Only that prefix: the others stay, from every node, and the sessions stay up.
      const r = rib();
      expect(Object.keys(r).sort()).toEqual([...others].sort());
      for (const cidr of others) expect(r[cidr]!.length, cidr).toBe(lab.state().plan.nodes.length);
      expect(
        gobgp<{ state: { session_state: number } }[]>('neighbor').map((x) => x.state.session_state),
      ).toEqual([6, 6, 6]);
      await applyYaml(lab, dir, 'external-gobgp-unfiltered', peer([]));
      await until(`${n1Block} back in GoBGP`, () => n1Block in rib(), 30_000);
    }, 90_000);

    it('the password from the Secret: the same as GoBGP keeps the sessions up, a wrong one keeps them down until corrected', async () => {
      const nodes = lab.state().plan.nodes;
      const established = async () =>
        (
          await Promise.all(
            nodes.map(async (n) =>
              sessionLines(await bgpSessions(n.runDir)).includes('Global_198_18_0_50 Established'),
            ),
          )
        ).every(Boolean) && gobgpStates().every((st) => st === 6);
      const noneEstablished = async () =>
        (
          await Promise.all(
            nodes.map(async (n) =>
              sessionLines(await bgpSessions(n.runDir)).every(
                (l) => !l.startsWith('Global_198_18_0_50 Established'),
              ),
            ),
          )
        ).every(Boolean) && gobgpStates().every((st) => st !== 6);
      const meshUp = async () => {
        for (const n of nodes) {
          const mesh = sessionLines(await bgpSessions(n.runDir)).filter((l) => l.startsWith('Mesh_'));
          expect(mesh, n.name).toEqual(
            nodes
              .filter((o) => o.name !== n.name)
              .map((o) => `Mesh_${o.ip.replaceAll('.', '_')} Established`),
          );
        }
      };

      // Both sides agree: every node's BIRD carries GoBGP's password, every session is up.
      for (const n of nodes) expect(birdPasswords(n.runDir), n.name).toEqual([`password "${password}";`]);
      await until('every session Established with the password', established, 30_000);

      // A wrong value in the Secret: calico-node sees the change and re-renders; no session comes up.
      const wrong = `${password}-wrong`;
      await setSecret(wrong);
      for (const n of nodes) {
        await until(`${n.name}: BIRD has the new password`, () =>
          birdPasswords(n.runDir).includes(`password "${wrong}";`),
        );
      }
      await until('every external session down', noneEstablished, 30_000);
      const t = Date.now();
      while (Date.now() - t < 15_000) {
        expect(
          await noneEstablished(),
          `an external session came up with a wrong password after ${Date.now() - t} ms`,
        ).toBe(true);
        await new Promise((r) => setTimeout(r, 500));
      }
      await meshUp();

      // Corrected: the sessions come back.
      const t1 = Date.now();
      await setSecret(password);
      await until('every session Established again', established, 60_000);
      console.log(`Secret corrected → every external session Established in ${Date.now() - t1} ms`);

      // No Secret at all: the sessions are kept down (`disabled on`, logged by calico-node), never
      // brought up without a password.
      await setSecret(undefined);
      for (const n of nodes)
        await until(`${n.name}: sessions disabled, no password`, () => {
          const lines = birdPasswords(n.runDir);
          return lines.length > 0 && lines.every((l) => l.startsWith('disabled on;'));
        });
      await until('every external session down without the Secret', noneEstablished, 30_000);
      await setSecret(password);
      await until('every session Established once the Secret is back', established, 60_000);
      await meshUp();
    }, 240_000);

    it('deleting the BGPPeer ends the sessions and empties GoBGP of the cluster routes', async () => {
      await lab.ok('calicoctl', 'delete', 'bgppeer', 'external-gobgp');
      for (const n of lab.state().plan.nodes) {
        await until(`${n.name}: no Global_ session`, async () =>
          (await bgpSessions(n.runDir)).every((x) => !x.name.startsWith('Global_')),
        );
      }
      await until('GoBGP RIB empty', () => Object.keys(rib()).length === 0, 20_000);
    }, 60_000);
  },
);
