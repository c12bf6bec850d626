/**
 * The lab on the container images (`lab up --images`) against the lab on the built programs
 * (`lab up`), in bgp and vxlan modes: for each mode both labs come up side by side with the same
 * pods, and what a user sees must be the same — the TCP and UDP connectivity matrices, and the
 * matrix under a Calico NetworkPolicy (each also checked against what it must be, so two equally
 * broken labs do not pass). On the images lab, calico-node and kube-controllers run as containers
 * named after the lab and node, install-cni filled each node's CNI directories, and `lab down`
 * removes exactly this lab's containers, also one it never recorded (as after a crash). And
 * `podman run --rm calico-ts/ctl:v0.1.0 version` prints the version.
 *
 * The images are built first when they are missing or older than the build outputs they hold
 * (`node images/src/build.mjs …`, the base once, then the four in parallel); the time is printed.
 * Needs what the lab needs plus podman, buildah and runc (and debootstrap if the root filesystem is
 * not cached yet); under CI=true their absence fails the test instead of skipping.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IMAGES, imageRef } from '@calico-ts/images/definitions';
import { podmanRun } from '@calico-ts/images/podman';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureImages, sh } from './images.js';
import {
  alive,
  type ConnectivityReport,
  LabDriver,
  missingPrerequisites,
  netnsList,
  ROOT,
} from './lab-driver.js';

const ci = process.env.CI === 'true';

function missingForImages(): string[] {
  const missing = missingPrerequisites();
  for (const tool of ['podman', 'buildah', 'runc']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
      missing.push(`${tool} (scripts/setup.sh)`);
  }
  for (const def of Object.values(IMAGES))
    for (const p of def.needs) if (!existsSync(join(ROOT, p))) missing.push(`${p} (pnpm build)`);
  return missing;
}
const missing = missingForImages();
if (missing.length > 0) {
  describe('lab up --images', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

/** Same pods in both labs: two on n1, one on n2. */
const PODS = [
  { ref: 'blue/web', node: 'n1', labels: 'app=web' },
  { ref: 'blue/db', node: 'n2', labels: 'app=db' },
  { ref: 'blue/client', node: 'n1', labels: 'app=client' },
] as const;

/** Only `web` may reach `db`; everything else as before. */
const POLICY = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: e2e-db-from-web
  namespace: blue
spec:
  selector: app == 'db'
  types:
  - Ingress
  ingress:
  - action: Allow
    source:
      selector: app == 'web'
`;
const everyone = () => true;
const onlyWebToDb = (from: string, to: string) => to !== 'blue/db' || from === 'blue/web';

type Cell = [from: string, to: string, reachable: boolean];
const cellsOf = (r: ConnectivityReport): Cell[] =>
  r.cells
    .map((c): Cell => [c.from, c.to, c.reachable])
    .sort((a, b) => `${a[0]}>${a[1]}`.localeCompare(`${b[0]}>${b[1]}`));

async function matrix(lab: LabDriver, protocol: 'tcp' | 'udp'): Promise<Cell[]> {
  const r = await lab.ok('connectivity', '--protocol', protocol, '-o', 'json', '--timeout-ms', '1500');
  return cellsOf(JSON.parse(r.stdout) as ConnectivityReport);
}

describe.skipIf(missing.length > 0)('lab up --images', () => {
  beforeAll(async () => {
    console.log(await ensureImages());
  }, 30 * 60_000);

  it('podman run --rm calico-ts/ctl:v0.1.0 version prints the version', async () => {
    // With no datastore to ask, the cluster's half of the answer is an error; the client's is printed.
    const r = await sh('podman', [...podmanRun(), '--rm', '--network', 'none', imageRef('ctl'), 'version']);
    expect(r.stdout, r.stderr).toMatch(/^Client Version: +v\d+\.\d+\.\d+\n/);
    expect(imageRef('ctl')).toBe('calico-ts/ctl:v0.1.0');
  });

  it('refuses clearly, making nothing, when podman is not there', async () => {
    const name = `e2ir${Math.random().toString(16).slice(2, 6)}`;
    const dir = await mkdtemp(join(tmpdir(), 'calico-e2e-images-refuse-'));
    try {
      const r = spawnSync(
        process.execPath,
        [
          join(ROOT, 'apps/lab/scripts/lab.mjs'),
          '--name',
          name,
          '--state-dir',
          join(dir, 'state'),
          'up',
          '--images',
        ],
        // A PATH without podman (the lab's system programs are found by their absolute paths).
        { cwd: ROOT, encoding: 'utf8', env: { ...process.env, PATH: '/nonexistent' }, timeout: 60_000 },
      );
      expect(r.status, r.stdout + r.stderr).toBe(1);
      expect(r.stderr).toMatch(/lab up --images needs podman.*`pnpm images`/);
      expect(netnsList().filter((ns) => ns.startsWith(`${name}-`))).toEqual([]);
      expect(existsSync(join(dir, 'state', 'state.json'))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe.each(['bgp', 'vxlan'] as const)('%s: the same as lab up without images', (mode) => {
    const suffix = () => `${mode[0]}${Math.random().toString(16).slice(2, 6)}`;
    const plainName = `e2p${suffix()}`;
    const imagesName = `e2i${suffix()}`;
    let dir: string;
    let plain: LabDriver;
    let images: LabDriver;
    const both = () => [plain, images] as const;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), `calico-e2e-images-${mode}-`));
      plain = new LabDriver(plainName, join(dir, 'plain'));
      images = new LabDriver(imagesName, join(dir, 'images'));
      // Side by side: two separate labs, each with its own namespaces.
      const [p, i] = await Promise.all([
        plain.run('up', '--nodes', '2', '--mode', mode),
        images.run('up', '--nodes', '2', '--mode', mode, '--images'),
      ]);
      expect(p.code, p.stdout + p.stderr).toBe(0);
      expect(i.code, i.stdout + i.stderr).toBe(0);
      console.log(
        `lab up (${mode}) took ${(p.ms / 1000).toFixed(1)} s; with --images ${(i.ms / 1000).toFixed(1)} s`,
      );
      await Promise.all(
        both().map(async (lab) => {
          await lab.ok('ns', 'create', 'blue');
          for (const pod of PODS)
            await lab.ok('pod', 'create', pod.ref, '--node', pod.node, '--labels', pod.labels);
        }),
      );
    }, 360_000);

    afterAll(async () => {
      for (const lab of [plain, images])
        if (lab && existsSync(join(lab.stateDir, 'state.json'))) await lab.run('down');
      if (dir) await rm(dir, { recursive: true, force: true });
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log([...plain.log, ...images.log].join('\n'));
    }, 120_000);

    it("runs calico-node and kube-controllers as containers named per lab and node, the nodes' CNI from install-cni", async () => {
      const s = images.state();
      const ps = await sh('podman', [
        'ps',
        '--filter',
        `label=org.calico-ts.lab=${imagesName}`,
        '--format',
        '{{.Names}} {{.Image}}',
      ]);
      expect(ps.stdout.trim().split('\n').sort()).toEqual([
        `calico-lab-${imagesName}-kube-controllers localhost/calico-ts/kube-controllers:v0.1.0`,
        `calico-lab-${imagesName}-n1 localhost/calico-ts/node:v0.1.0`,
        `calico-lab-${imagesName}-n2 localhost/calico-ts/node:v0.1.0`,
      ]);
      // The recorded node process is the container's main process.
      for (const node of s.plan.nodes) {
        const [status, pid] = (
          await sh('podman', [
            'container',
            'inspect',
            '--format',
            '{{.State.Status}} {{.State.Pid}}',
            `calico-lab-${imagesName}-${node.name}`,
          ])
        ).stdout
          .trim()
          .split(' ');
        expect(status).toBe('running');
        expect(s.processes[`node/${node.name}`]?.pid).toBe(Number(pid));
        const dirOf = join(images.stateDir, 'nodes', node.name);
        const conf = JSON.parse(readFileSync(join(dirOf, 'net.d', '10-calico.conflist'), 'utf8'));
        expect(conf.plugins[0]).toMatchObject({
          type: 'calico',
          nodename: node.name,
          mtu: mode === 'vxlan' ? 1450 : 1500,
        });
        expect(existsSync(join(dirOf, 'cni-bin', 'calico'))).toBe(true);
        expect(readFileSync(join(dirOf, 'calico-node.log'), 'utf8')).toContain('"component":"felix"');
      }
      // The plain lab runs no container.
      const none = await sh('podman', ['ps', '-a', '-q', '--filter', `label=org.calico-ts.lab=${plainName}`]);
      expect(none.stdout.trim()).toBe('');
    });

    it('every pod reaches every other over TCP and UDP, as without images', async () => {
      for (const protocol of ['tcp', 'udp'] as const) {
        const [p, i] = await Promise.all(both().map((lab) => lab.connectivity(protocol)));
        expect(cellsOf(i!), protocol).toEqual(cellsOf(p!));
        expect(i!.cells).toHaveLength(6);
        expect(i!.cells.filter((c) => !c.reachable).map((c) => `${c.from}->${c.to}: ${c.error}`)).toEqual([]);
      }
    }, 90_000);

    it('a Calico NetworkPolicy gives the same matrix as without images', async () => {
      await Promise.all(both().map((lab) => lab.applyYaml('calicoctl', dir, `policy-${lab.name}`, POLICY)));
      const wrong = await Promise.all(both().map((lab) => lab.reachabilityMatches(onlyWebToDb)));
      expect(wrong[1], 'with images').toEqual([]);
      expect(wrong[0], 'without images').toEqual([]);
      const [p, i] = await Promise.all(both().map((lab) => matrix(lab, 'tcp')));
      expect(i).toEqual(p);
      expect(i!.filter((c) => !c[2])).toEqual([['blue/client', 'blue/db', false]]);
      await Promise.all(
        both().map((lab) => lab.ok('calicoctl', 'delete', 'networkpolicy', 'e2e-db-from-web', '-n', 'blue')),
      );
      expect(await images.reachabilityMatches(everyone), 'with images, the policy deleted').toEqual([]);
    }, 120_000);

    it('lab status reports the images lab as it reports the other', async () => {
      const statusOf = async (lab: LabDriver) =>
        JSON.parse((await lab.ok('status', '-o', 'json')).stdout) as {
          kubeControllers: { running: boolean; ready: boolean };
          nodes: {
            name: string;
            ready: boolean;
            calicoNode: { running: boolean };
            bird?: { running: boolean };
          }[];
        };
      const [p, i] = await Promise.all(both().map(statusOf));
      const shape = (s: typeof p) => ({
        kubeControllers: [s.kubeControllers.running, s.kubeControllers.ready],
        nodes: s.nodes.map((n) => [n.name, n.ready, n.calicoNode.running, n.bird?.running]),
      });
      expect(shape(i)).toEqual(shape(p));
      expect(shape(i)).toEqual({
        kubeControllers: [true, true],
        nodes: [
          ['n1', true, true, mode === 'bgp' ? true : undefined],
          ['n2', true, true, mode === 'bgp' ? true : undefined],
        ],
      });
    }, 60_000);

    it("lab down removes this lab's containers, also one it did not record, and no other", async () => {
      const stray = `calico-lab-${imagesName}-stray`;
      const other = `calico-lab-${imagesName}x-other`;
      const sleeper = (name: string, stateDir: string, lab: string) =>
        sh('podman', [
          ...podmanRun(),
          '-d',
          '--network',
          'none',
          '--name',
          name,
          '--label',
          `org.calico-ts.lab=${lab}`,
          '--label',
          `org.calico-ts.lab.state-dir=${stateDir}`,
          '--entrypoint',
          'sleep',
          imageRef('ctl'),
          '600',
        ]);
      try {
        // As a crash between starting a container and recording it would leave one behind.
        expect((await sleeper(stray, images.stateDir, imagesName)).code).toBe(0);
        // Another lab's (another state directory): never touched.
        expect((await sleeper(other, `${images.stateDir}x`, `${imagesName}x`)).code).toBe(0);
        const s = images.state();
        const recorded = [...Object.values(s.processes), ...s.pods.map((p) => p.listener)];
        expect(recorded.every(alive)).toBe(true);
        const r = await images.ok('down');
        expect(r.stdout).toContain('removed containers');
        const left = await sh('podman', ['ps', '-a', '--format', '{{.Names}}']);
        const names = left.stdout.split('\n');
        expect(names.filter((n) => n.startsWith(`calico-lab-${imagesName}-`))).toEqual([]);
        expect(names).toContain(other);
        expect(recorded.filter(alive)).toEqual([]);
        expect(netnsList().filter((ns) => ns.startsWith(`${imagesName}-`))).toEqual([]);
        expect(existsSync(images.stateDir)).toBe(false);
        await plain.ok('down');
      } finally {
        await sh('podman', ['rm', '-f', '--ignore', '-t', '0', stray, other]);
      }
    }, 120_000);
  });
});
