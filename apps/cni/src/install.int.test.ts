/**
 * install-cni against a scratch host directory and a real kube-apiserver, as the calico-node
 * DaemonSet runs it: the plugins and a network config the installed plugin then runs with (CNI
 * STATUS through the written kubeconfig), a token for `calico-cni-plugin` obtained with the pod's
 * own token, renewal and etcd-secret rotation in the sidecar, and a malformed template that exits
 * 1 and leaves the previous config in place.
 */

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  chmod,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Logger, loggerOf } from '@calico-ts/api/log';
import {
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostPaths } from './install.js';
import { main } from './main.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const PLUGIN = join(here, '../../../packages/cni-plugin/bin/calico.mjs');
const CRDS = join(here, '../../../deploy/crds/calico-crds.yaml');
const PORTMAP = '/usr/lib/cni/portmap';

const missing = missingKubePrerequisites({
  files: [
    [PLUGIN, 'the built CNI plugin (pnpm build)'],
    [PORTMAP, 'containernetworking-plugins'],
  ],
});
if (missing.length > 0) {
  describe('install-cni', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

/** A log that keeps its lines, so a test can assert on them (and on what they must not hold). */
function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const tag = { error: 'ERROR', warn: 'WARN', info: 'INFO', debug: 'DEBUG' } as const;
  return { lines, ...loggerOf((level, msg) => lines.push(`${tag[level]} ${msg}`)) };
}

const TEMPLATE = JSON.stringify({
  name: 'k8s-pod-network',
  cniVersion: '1.1.0',
  plugins: [
    {
      type: 'calico',
      log_level: '__LOG_LEVEL__',
      datastore_type: 'kubernetes',
      nodename: '__KUBERNETES_NODE_NAME__',
      mtu: '__CNI_MTU__',
      ipam: { type: 'calico-ipam' },
      policy: { type: 'k8s' },
      kubernetes: { kubeconfig: '__KUBECONFIG_FILEPATH__' },
    },
    { type: 'portmap', snat: true, capabilities: { portMappings: true } },
  ],
}).replace('"__CNI_MTU__"', '__CNI_MTU__');

async function until<T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(missing.length > 0)('install-cni', () => {
  let api: KubeApiServer;
  let dir: string;
  let kubectl: (...args: string[]) => Promise<string>;

  beforeAll(async () => {
    api = await startKubeApiServer();
    dir = await mkdtemp(join(tmpdir(), 'install-cni-'));
    const k = findKubectl()!;
    kubectl = async (...args) => (await run(k, ['--kubeconfig', api.kubeconfigPath, ...args])).stdout;
    await kubectl('apply', '--server-side', '-f', CRDS);
    await kubectl(
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/clusterinformations.crd.projectcalico.org',
    );
    const objects = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } },
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'calico-node', namespace: 'kube-system' },
      },
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'calico-cni-plugin', namespace: 'kube-system' },
      },
      // calico-node may only mint tokens for the plugin's account.
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'calico-cni-plugin-token', namespace: 'kube-system' },
        rules: [
          {
            apiGroups: [''],
            resources: ['serviceaccounts/token'],
            // no-such-account: allowed but absent, for the fallback case.
            resourceNames: ['calico-cni-plugin', 'no-such-account'],
            verbs: ['create'],
          },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'calico-cni-plugin-token', namespace: 'kube-system' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'calico-cni-plugin-token' },
        subjects: [{ kind: 'ServiceAccount', name: 'calico-node', namespace: 'kube-system' }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'calico-cni-plugin-test' },
        rules: [{ apiGroups: ['crd.projectcalico.org'], resources: ['*'], verbs: ['get', 'list', 'watch'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'calico-cni-plugin-test' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'calico-cni-plugin-test',
        },
        subjects: [{ kind: 'ServiceAccount', name: 'calico-cni-plugin', namespace: 'kube-system' }],
      },
      {
        apiVersion: 'crd.projectcalico.org/v1',
        kind: 'ClusterInformation',
        metadata: { name: 'default' },
        spec: {
          datastoreReady: true,
          clusterGUID: 'b7d4a1c0f3e24a6b9d1e2f3a4b5c6d7e',
          calicoVersion: 'v3.32.1',
        },
      },
      {
        apiVersion: 'crd.projectcalico.org/v1',
        kind: 'IPPool',
        metadata: { name: 'default-ipv4-ippool' },
        spec: {
          cidr: '198.19.0.0/16',
          blockSize: 26,
          ipipMode: 'Never',
          vxlanMode: 'Never',
          nodeSelector: 'all()',
        },
      },
    ];
    const file = join(dir, 'objects.json');
    await writeFile(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    await kubectl('apply', '-f', file);
  }, 120_000);

  afterAll(async () => {
    await api?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A node's filesystem as install-cni's container sees it, and the image's plugins. */
  async function scratchHost(name: string) {
    const root = join(dir, name);
    const paths: HostPaths = {
      sourceBinDir: join(root, 'image/opt/cni/bin'),
      hostBinDirs: [join(root, 'host/opt/cni/bin'), join(root, 'host/secondary-bin-dir')],
      hostNetDir: join(root, 'host/etc/cni/net.d'),
      serviceAccountDir: join(root, 'sa'),
    };
    await Promise.all([
      mkdir(paths.sourceBinDir, { recursive: true }),
      mkdir(paths.hostBinDirs[0]!, { recursive: true }),
      mkdir(paths.hostNetDir, { recursive: true }),
      mkdir(paths.serviceAccountDir, { recursive: true }),
      mkdir(join(root, 'secrets'), { recursive: true }),
    ]);
    await copyFile(PLUGIN, join(paths.sourceBinDir, 'calico'));
    await chmod(join(paths.sourceBinDir, 'calico'), 0o755);
    await symlink('calico', join(paths.sourceBinDir, 'calico-ipam'));
    await copyFile(PORTMAP, join(paths.sourceBinDir, 'portmap'));
    await writeFile(join(paths.sourceBinDir, 'install'), '#!/bin/sh\n', { mode: 0o755 });
    // The pod's own service account, as kubelet mounts it.
    const token = (
      await kubectl('create', 'token', 'calico-node', '-n', 'kube-system', '--duration=1h')
    ).trim();
    await writeFile(join(paths.serviceAccountDir, 'token'), token);
    await writeFile(join(paths.serviceAccountDir, 'ca.crt'), api.caPem);
    await writeFile(join(paths.serviceAccountDir, 'namespace'), 'kube-system');
    const url = new URL(api.url);
    const env: Record<string, string> = {
      KUBERNETES_SERVICE_HOST: url.hostname,
      KUBERNETES_SERVICE_PORT: url.port,
      KUBERNETES_NODE_NAME: `${name}-node`,
      CNI_NET_DIR: paths.hostNetDir,
      CNI_MTU: '1440',
      TLS_ASSETS_DIR: join(root, 'secrets'),
      SLEEP: 'false',
    };
    return { root, paths, env };
  }

  const tokenOf = (kubeconfig: string) => /token: "([^"]+)"/.exec(kubeconfig)?.[1];

  it('installs the plugins and a network config the plugin runs with, through a token of calico-cni-plugin', async () => {
    const { paths, env } = await scratchHost('init');
    const log = recordingLog();
    expect(
      await main({ ...env, CNI_NETWORK_CONFIG: TEMPLATE, SKIP_CNI_BINARIES: 'bandwidth' }, { paths, log }),
    ).toBe(0);

    const bin = paths.hostBinDirs[0]!;
    expect((await stat(join(bin, 'calico'))).mode & 0o777).toBe(0o755);
    expect(await readlink(join(bin, 'calico-ipam'))).toBe('calico');
    expect((await stat(join(bin, 'portmap'))).size).toBe((await stat(PORTMAP)).size);
    expect(existsSync(join(bin, 'install'))).toBe(false);
    // The second bin dir does not exist on this host: skipped, not created.
    expect(existsSync(paths.hostBinDirs[1]!)).toBe(false);

    const confPath = join(paths.hostNetDir, '10-calico.conflist');
    expect((await stat(confPath)).mode & 0o777).toBe(0o600);
    const conf = JSON.parse(await readFile(confPath, 'utf8'));
    expect(conf.plugins[0]).toMatchObject({
      nodename: 'init-node',
      mtu: 1440,
      log_level: 'info',
      kubernetes: { kubeconfig: join(paths.hostNetDir, 'calico-kubeconfig') },
    });

    const kubeconfigPath = join(paths.hostNetDir, 'calico-kubeconfig');
    expect((await stat(kubeconfigPath)).mode & 0o777).toBe(0o600);
    const kubeconfig = await readFile(kubeconfigPath, 'utf8');
    const token = tokenOf(kubeconfig)!;
    const mounted = await readFile(join(paths.serviceAccountDir, 'token'), 'utf8');
    expect(token).not.toBe(mounted);
    const whoami = await run(findKubectl()!, [
      '--kubeconfig',
      kubeconfigPath,
      'auth',
      'whoami',
      '-o',
      'jsonpath={.status.userInfo.username}',
    ]);
    expect(whoami.stdout).toBe('system:serviceaccount:kube-system:calico-cni-plugin');
    // Nothing secret in the log.
    expect(log.lines.join('\n')).not.toContain(token);
    expect(log.lines.join('\n')).not.toContain(mounted);

    // The installed plugin, given the installed config as a runtime would, reaches the datastore.
    const pluginConf = { ...conf.plugins[0], name: conf.name, cniVersion: conf.cniVersion };
    const status = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = execFile(
        join(bin, 'calico'),
        [],
        { env: { PATH: process.env.PATH ?? '', CNI_COMMAND: 'STATUS', CNI_PATH: bin } },
        (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      );
      child.stdin?.end(JSON.stringify(pluginConf));
    });
    expect(status).toEqual({ code: 0, out: '' });
  });

  it('exits 1 on a malformed CNI_NETWORK_CONFIG and leaves the previous config in place', async () => {
    const { paths, env } = await scratchHost('bad');
    expect(await main({ ...env, CNI_NETWORK_CONFIG: TEMPLATE }, { paths, log: recordingLog() })).toBe(0);
    const confPath = join(paths.hostNetDir, '10-calico.conflist');
    const before = await readFile(confPath, 'utf8');
    const errors: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => {
      errors.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    let code: number;
    try {
      code = await main(
        { ...env, CNI_NETWORK_CONFIG: '{"type": "calico", "mtu": __CNI_MTU__,' },
        { paths, log: recordingLog() },
      );
    } finally {
      process.stderr.write = write;
    }
    expect(code).toBe(1);
    expect(errors.join('')).toMatch(/CNI_NETWORK_CONFIG is not valid JSON after substitution/);
    expect(await readFile(confPath, 'utf8')).toBe(before);
    expect(existsSync(`${confPath}.tmp`)).toBe(false);
  });

  it('keeps plugins already on the host with UPDATE_CNI_BINARIES=false, and renames the config', async () => {
    const { paths, env } = await scratchHost('keep');
    const bin = paths.hostBinDirs[0]!;
    await writeFile(join(bin, 'portmap'), 'host-own');
    await writeFile(join(paths.hostNetDir, '10-calico.conf'), '{}');
    const code = await main(
      {
        ...env,
        UPDATE_CNI_BINARIES: 'false',
        CNI_CONF_NAME: '05-calico.conflist',
        CNI_OLD_CONF_NAME: '10-calico.conf',
      },
      { paths, log: recordingLog() },
    );
    expect(code).toBe(0);
    expect(await readFile(join(bin, 'portmap'), 'utf8')).toBe('host-own');
    expect((await lstat(join(bin, 'calico'))).isFile()).toBe(true);
    expect(existsSync(join(paths.hostNetDir, '10-calico.conf'))).toBe(false);
    const conf = JSON.parse(await readFile(join(paths.hostNetDir, '05-calico.conflist'), 'utf8'));
    expect(conf.plugins.map((p: { type: string }) => p.type)).toEqual(['calico', 'portmap']);
  });

  it("installs the seeds' single-plugin config as 10-calico.conf, with the API root and token filled in", async () => {
    const { paths, env } = await scratchHost('seed');
    await writeFile(join(paths.hostNetDir, '10-calico.conflist'), '{}');
    const seedConfig = `{
        "name": "k8s-pod-network",
        "cniVersion": "0.1.0",
        "type": "calico",
        "etcd_endpoints": "__ETCD_ENDPOINTS__",
        "etcd_key_file": "__ETCD_KEY_FILE__",
        "etcd_cert_file": "__ETCD_CERT_FILE__",
        "etcd_ca_cert_file": "__ETCD_CA_CERT_FILE__",
        "log_level": "info",
        "mtu": 1500,
        "ipam": { "type": "calico-ipam" },
        "policy": {
            "type": "k8s",
            "k8s_api_root": "https://__KUBERNETES_SERVICE_HOST__:__KUBERNETES_SERVICE_PORT__",
            "k8s_auth_token": "__SERVICEACCOUNT_TOKEN__"
        },
        "kubernetes": { "kubeconfig": "__KUBECONFIG_FILEPATH__" }
    }`;
    const code = await main(
      { ...env, ETCD_ENDPOINTS: 'https://198.18.0.2:2379', CNI_NETWORK_CONFIG: seedConfig },
      { paths, log: recordingLog() },
    );
    expect(code).toBe(0);
    expect(existsSync(join(paths.hostNetDir, '10-calico.conflist'))).toBe(false);
    const conf = JSON.parse(await readFile(join(paths.hostNetDir, '10-calico.conf'), 'utf8'));
    const token = tokenOf(await readFile(join(paths.hostNetDir, 'calico-kubeconfig'), 'utf8'));
    const url = new URL(api.url);
    expect(conf).toMatchObject({
      type: 'calico',
      etcd_endpoints: 'https://198.18.0.2:2379',
      etcd_key_file: '',
      policy: { type: 'k8s', k8s_api_root: `https://${url.hostname}:${url.port}`, k8s_auth_token: token },
      kubernetes: { kubeconfig: join(paths.hostNetDir, 'calico-kubeconfig') },
    });
  });

  it("falls back to the pod's own token when calico-cni-plugin does not exist, with a warning", async () => {
    const { paths, env } = await scratchHost('fallback');
    const log = recordingLog();
    expect(await main({ ...env, CALICO_CNI_SERVICE_ACCOUNT: 'no-such-account' }, { paths, log })).toBe(0);
    const kubeconfig = await readFile(join(paths.hostNetDir, 'calico-kubeconfig'), 'utf8');
    expect(tokenOf(kubeconfig)).toBe((await readFile(join(paths.serviceAccountDir, 'token'), 'utf8')).trim());
    expect(
      log.lines.some((l) => /^WARN service account kube-system\/no-such-account not found/.test(l)),
    ).toBe(true);
  });

  it('as a sidecar renews the token and copies a rotated etcd secret again, until stopped', async () => {
    const { root, paths, env } = await scratchHost('sidecar');
    await writeFile(join(root, 'secrets/etcd-ca'), 'CA-1');
    await writeFile(join(root, 'secrets/etcd-cert'), 'CERT-1');
    await writeFile(join(root, 'secrets/etcd-key'), 'KEY-1');
    const ac = new AbortController();
    const log = recordingLog();
    const done = main(
      {
        ...env,
        SLEEP: 'true',
        CNI_NETWORK_CONFIG:
          '{"type":"calico","etcd_cert_file":"__ETCD_CERT_FILE__","token":"__SERVICEACCOUNT_TOKEN__"}',
      },
      { paths, log, signal: ac.signal, checkIntervalMs: 100, tokenRefreshMs: 1000 },
    );
    try {
      const kubeconfigPath = join(paths.hostNetDir, 'calico-kubeconfig');
      // One plugin, not a list: 10-calico.conf.
      const confPath = join(paths.hostNetDir, '10-calico.conf');
      const first = await until('the first kubeconfig', async () =>
        existsSync(kubeconfigPath) ? tokenOf(await readFile(kubeconfigPath, 'utf8')) : undefined,
      );
      expect(await readFile(join(paths.hostNetDir, 'calico-tls/etcd-cert'), 'utf8')).toBe('CERT-1');
      expect(JSON.parse(await readFile(confPath, 'utf8')).etcd_cert_file).toBe(
        join(paths.hostNetDir, 'calico-tls/etcd-cert'),
      );

      await writeFile(join(root, 'secrets/etcd-cert'), 'CERT-2');
      await until('the rotated certificate', async () =>
        (await readFile(join(paths.hostNetDir, 'calico-tls/etcd-cert'), 'utf8').catch(() => '')) === 'CERT-2'
          ? true
          : undefined,
      );
      const second = await until('a renewed token', async () => {
        const t = tokenOf(await readFile(kubeconfigPath, 'utf8'));
        return t !== first ? t : undefined;
      });
      // The template names the token, so the config follows it.
      await until('the config with the renewed token', async () =>
        JSON.parse(await readFile(confPath, 'utf8')).token === second ? true : undefined,
      );
    } finally {
      ac.abort();
    }
    expect(await done).toBe(0);
  });
});
