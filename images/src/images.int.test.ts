/**
 * The four images, built here from the working tree (base, then node, cni, kube-controllers and ctl
 * in parallel, as `pnpm images` does) and run with podman as their DaemonSet and Deployment run
 * them: one shared runtime layer, calicoctl's version, calico-node's programs and native module,
 * install-cni in a container against a scratch host directory and a real kube-apiserver (the
 * installed plugin then runs with the installed config; a malformed config exits non-zero and keeps
 * the previous one; a rotated token rewrites the kubeconfig), kube-controllers turning ready for
 * its `check-status -r` probe.
 *
 * Containers that reach the API server use the host network and talk to it on 127.0.0.1 only.
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  findKubectl,
  type KubeApiServer,
  kubeApiServerAvailable,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageLayers } from './buildah.mjs';
import { IMAGES, imageRef, ROOT } from './definitions.mjs';
import { podmanRun } from './podman.mjs';

const run = promisify(execFile);
const BUILD = join(ROOT, 'images/src/build.mjs');
const CRDS = join(ROOT, 'deploy/crds/calico-crds.yaml');
const NAMES = Object.keys(IMAGES);

function missingPrerequisites(): string[] {
  const missing: string[] = [];
  for (const tool of ['buildah', 'podman', 'runc', 'debootstrap']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
      missing.push(`${tool} (run scripts/setup.sh)`);
  }
  if (process.getuid?.() !== 0) missing.push('root');
  if (!kubeApiServerAvailable()) missing.push('kube-apiserver (run scripts/setup.sh)');
  if (!findKubectl()) missing.push('kubectl');
  for (const def of Object.values(IMAGES)) {
    for (const p of def.needs) if (!existsSync(join(ROOT, p))) missing.push(`${p} (pnpm build)`);
  }
  return missing;
}
const missing = missingPrerequisites();
if (missing.length > 0) {
  describe('container images', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function podman(args: string[], timeoutMs = 120_000): Promise<Ran> {
  return new Promise((resolve) => {
    execFile('podman', args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const runImage = (flags: string[], image: string, args: string[] = []) =>
  podman([...podmanRun(), '--rm', ...flags, imageRef(image), ...args]);

async function until<T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.skipIf(missing.length > 0)('container images', () => {
  let api: KubeApiServer;
  let dir: string;
  const containers: string[] = [];
  let kubectl: (...args: string[]) => Promise<string>;

  beforeAll(async () => {
    const build = (name: string) =>
      run(process.execPath, [BUILD, name], { maxBuffer: 16 * 1024 * 1024, timeout: 25 * 60_000 }).catch(
        (e) => {
          throw new Error(`building ${name}: ${e.stderr || e.message}`);
        },
      );
    const [server] = await Promise.all([
      startKubeApiServer(),
      build('base').then(() => Promise.all(NAMES.map(build))),
    ]);
    api = server;
    dir = await mkdtemp(join(tmpdir(), 'calico-ts-images-'));
    const k = findKubectl()!;
    kubectl = async (...args) => (await run(k, ['--kubeconfig', api.kubeconfigPath, ...args])).stdout;
    await kubectl('apply', '--server-side', '-f', CRDS);
    const objects = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } },
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'calico-node', namespace: 'kube-system' },
      },
      // calico-node may ask for a token of calico-node-absent, which does not exist: install-cni
      // then falls back to the pod's own token.
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'cni-token', namespace: 'kube-system' },
        rules: [
          {
            apiGroups: [''],
            resources: ['serviceaccounts/token'],
            resourceNames: ['calico-node-absent'],
            verbs: ['create'],
          },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'cni-token', namespace: 'kube-system' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cni-token' },
        subjects: [{ kind: 'ServiceAccount', name: 'calico-node', namespace: 'kube-system' }],
      },
    ];
    await writeFile(
      join(dir, 'objects.json'),
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
    );
    await kubectl('apply', '-f', join(dir, 'objects.json'));
  }, 30 * 60_000);

  afterAll(async () => {
    for (const c of containers) await podman(['rm', '-f', '-t', '0', c]);
    await api?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('every image is the shared base plus one layer of its programs', async () => {
    const base = await imageLayers(imageRef('base'));
    for (const name of NAMES) {
      const layers = await imageLayers(imageRef(name));
      expect(layers.slice(0, base.length), name).toEqual(base);
      expect(layers.length, name).toBe(base.length + 1);
    }
  });

  it('calicoctl prints its version', async () => {
    const r = await runImage(['--network', 'none'], 'ctl', ['version']);
    expect(r.stdout).toMatch(/^Client Version: +v\d+\.\d+\.\d+\n/);
  });

  it('the operator prints its version and carries the manifest it renders calico-system from', async () => {
    expect((await runImage(['--network', 'none'], 'operator', ['-version'])).stdout).toBe(
      'Operator: v0.1.0 (calico-ts)\n',
    );
    const head = await runImage(['--network', 'none', '--entrypoint', 'head'], 'operator', [
      '-n1',
      '/usr/share/calico-ts/calico.yaml',
    ]);
    expect(head.stdout).toMatch(/^# calico-ts for the Kubernetes datastore/);
  });

  it('calico-apiserver prints its version, and refuses a command line without its certificate', async () => {
    expect((await runImage(['--network', 'none'], 'apiserver', ['--version'])).stdout).toBe(
      'calico-apiserver v0.1.0 (calico-ts)\n',
    );
    const r = await runImage(['--network', 'none'], 'apiserver', ['--secure-port=5443']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--tls-cert-file is required/);
  });

  it('calico-typha without a datastore says why and exits 1', async () => {
    const r = await runImage(['--network', 'none', '--env', 'TYPHA_DATASTORETYPE=bolt'], 'typha', []);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/TYPHA_DATASTORETYPE: "bolt" is not etcdv3 or kubernetes/);
  });

  it("calico-node's image runs calico-node, BIRD, nft and loads libnftables through koffi", async () => {
    expect((await runImage(['--network', 'none'], 'node', ['-v'])).stdout.trim()).toMatch(/^v\d+\.\d+\.\d+$/);
    const koffi = await runImage(['--network', 'none', '--entrypoint', 'node'], 'node', [
      '-e',
      "const k = require('/usr/lib/calico-ts/node_modules/koffi'); k.load('libnftables.so.1'); console.log('ok')",
    ]);
    expect(koffi).toMatchObject({ code: 0, stdout: 'ok\n' });
    expect(
      (await runImage(['--network', 'none', '--entrypoint', 'bird'], 'node', ['--version'])).stderr,
    ).toMatch(/^BIRD version 2\./);
    expect(
      (await runImage(['--network', 'none', '--entrypoint', 'nft'], 'node', ['--version'])).stdout,
    ).toMatch(/^nftables v1\./);
    // The readiness probe the DaemonSet runs: with nothing serving health, it fails and says why.
    const probe = await runImage(['--network', 'none'], 'node', ['-felix-ready']);
    expect(probe.code).not.toBe(0);
    expect(probe.stdout + probe.stderr).toMatch(/felix/i);
  });

  /** A node's directories and a pod's service account, as install-cni's container gets them. */
  async function cniHost(name: string) {
    const root = join(dir, name);
    const bin = join(root, 'opt/cni/bin');
    const net = join(root, 'etc/cni/net.d');
    const sa = join(root, 'sa');
    await Promise.all([bin, net, sa].map((d) => mkdir(d, { recursive: true })));
    await writeFile(
      join(sa, 'token'),
      (await kubectl('create', 'token', 'calico-node', '-n', 'kube-system', '--duration=1h')).trim(),
    );
    await writeFile(join(sa, 'ca.crt'), api.caPem);
    await writeFile(join(sa, 'namespace'), 'kube-system');
    const url = new URL(api.url);
    const flags = [
      '--network',
      'host',
      '-v',
      `${bin}:/host/opt/cni/bin`,
      '-v',
      `${net}:/host/etc/cni/net.d`,
      '-v',
      `${sa}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
      '-e',
      `KUBERNETES_SERVICE_HOST=${url.hostname}`,
      '-e',
      `KUBERNETES_SERVICE_PORT=${url.port}`,
      '-e',
      `KUBERNETES_NODE_NAME=${name}`,
      '-e',
      `CNI_NET_DIR=${net}`,
      '-e',
      // No calico-cni-plugin account here: the pod's own token, which a test then rotates.
      'CALICO_CNI_SERVICE_ACCOUNT=calico-node-absent',
    ];
    return { bin, net, sa, flags };
  }

  it('install-cni in a container installs plugins and a config the plugin runs with; a bad config keeps the old', async () => {
    const h = await cniHost('cni-init');
    const first = await runImage([...h.flags, '-e', 'SLEEP=false'], 'cni');
    expect(first.code, first.stderr + first.stdout).toBe(0);
    expect(await readlink(join(h.bin, 'calico-ipam'))).toBe('calico');
    for (const p of ['calico', 'portmap', 'host-local', 'loopback', 'bandwidth', 'tuning']) {
      expect(existsSync(join(h.bin, p)), p).toBe(true);
    }
    expect(existsSync(join(h.bin, 'install'))).toBe(false);
    const confText = await readFile(join(h.net, '10-calico.conflist'), 'utf8');
    const conf = JSON.parse(confText);
    expect(conf.plugins[0]).toMatchObject({
      type: 'calico',
      nodename: 'cni-init',
      kubernetes: { kubeconfig: join(h.net, 'calico-kubeconfig') },
    });

    // The installed plugin, on this host (no Node.js needed), answers VERSION as a runtime asks it.
    await chmod(join(h.bin, 'calico'), 0o755);
    const version = spawnSync(join(h.bin, 'calico'), [], {
      env: { CNI_COMMAND: 'VERSION' },
      input: '',
      timeout: 60_000,
    });
    expect(version.status, String(version.stderr)).toBe(0);
    expect(JSON.parse(String(version.stdout)).supportedVersions).toContain('1.0.0');

    const bad = await runImage(
      [...h.flags, '-e', 'SLEEP=false', '-e', 'CNI_NETWORK_CONFIG={"type": "calico",'],
      'cni',
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/CNI_NETWORK_CONFIG is not valid JSON after substitution/);
    expect(await readFile(join(h.net, '10-calico.conflist'), 'utf8')).toBe(confText);
  }, 180_000);

  it('install-cni as a sidecar rewrites the kubeconfig when the pod token is rotated', async () => {
    const h = await cniHost('cni-sidecar');
    const name = `calico-ts-test-cni-${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
    containers.push(name);
    const started = await podman([...podmanRun(), '-d', '--rm', '--name', name, ...h.flags, imageRef('cni')]);
    expect(started.code, started.stderr).toBe(0);
    const kubeconfig = join(h.net, 'calico-kubeconfig');
    const tokenIn = async () =>
      /token: "([^"]+)"/.exec(await readFile(kubeconfig, 'utf8').catch(() => ''))?.[1];
    const first = await until('the first kubeconfig', tokenIn);
    expect(first).toBe((await readFile(join(h.sa, 'token'), 'utf8')).trim());
    const rotated = (
      await kubectl('create', 'token', 'calico-node', '-n', 'kube-system', '--duration=2h')
    ).trim();
    expect(rotated).not.toBe(first);
    await writeFile(join(h.sa, 'token'), rotated);
    await until(
      'the rotated token in the kubeconfig',
      async () => ((await tokenIn()) === rotated ? true : undefined),
      60_000,
    );
    const logs = await podman(['logs', name]);
    expect(logs.stdout).toContain("this pod's token was rotated");
    expect(logs.stdout + logs.stderr).not.toContain(rotated);
  }, 120_000);

  it('kube-controllers turns ready for its check-status -r probe', async () => {
    const name = `calico-ts-test-kc-${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
    containers.push(name);
    const notYet = await runImage(
      ['--network', 'none', '--entrypoint', '/usr/bin/check-status'],
      'kube-controllers',
      ['-r'],
    );
    expect(notYet.code).not.toBe(0);
    const started = await podman([
      ...podmanRun(),
      '-d',
      '--rm',
      '--name',
      name,
      '--network',
      'host',
      '-v',
      `${api.kubeconfigPath}:/kubeconfig:ro`,
      '-e',
      'KUBECONFIG=/kubeconfig',
      '-e',
      'DATASTORE_TYPE=kubernetes',
      '-e',
      'ENABLED_CONTROLLERS=node',
      imageRef('kube-controllers'),
    ]);
    expect(started.code, started.stderr).toBe(0);
    await until(
      'check-status -r to pass',
      async () =>
        (await podman(['exec', name, '/usr/bin/check-status', '-r'])).code === 0 ? true : undefined,
      60_000,
    );
    expect((await podman(['exec', name, '/usr/bin/check-status', '-l'])).code).toBe(0);
  }, 120_000);
});
