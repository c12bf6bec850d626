/**
 * `calicoctl cluster diags` against a real kube-apiserver on the Kubernetes datastore: the bundle
 * holds the Calico resources, the Kubernetes view and the Calico pods' logs, chosen by
 * --focus-nodes and --max-logs; what cannot be had (there is no kubelet here, so no logs) is
 * recorded in its file and the command still succeeds; nothing secret gets in: not a Secret's
 * value, not a password in a pod's environment, not the kubeconfig's credentials. And on etcd
 * without kubectl: the Calico part alone, with the reason the rest is missing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  type EtcdServer,
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { calicoctlExecutable } from './testing-internal/executable.js';
import { CRDS, installCrds, kubectl } from './testing-internal/kube.js';

const missing = missingKubePrerequisites({ root: true, crds: CRDS });
if (missing.length > 0) {
  describe('calicoctl cluster diags', () => {
    test.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const EXE = calicoctlExecutable();
const SECRET_VALUE = 'diags-must-not-hold-this-7c1f';
const ENV_PASSWORD = 'env-password-must-not-leak-92ab';

function calicoPod(name: string, node: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'kube-system', labels: { 'k8s-app': 'calico-node' } },
    spec: {
      nodeName: node,
      containers: [
        {
          name: 'calico-node',
          image: 'calico-ts/node',
          env: [{ name: 'CALICO_BGP_PASSWORD_BGP_SECRETS_TOR', value: ENV_PASSWORD }],
        },
      ],
    },
  });
}

/** The bundle named on the last line of the output, unpacked: path → content. */
async function unpack(stdout: string, into: string): Promise<Map<string, string>> {
  const m = /Diags saved to (\S+)/.exec(stdout);
  expect(m, stdout).not.toBeNull();
  const tar = spawnSync('tar', ['-xzf', m![1]!, '-C', into], { encoding: 'utf8' });
  expect(tar.stderr).toBe('');
  expect(tar.status).toBe(0);
  const files = new Map<string, string>();
  const walk = async (dir: string, prefix: string) => {
    for (const d of await readdir(dir, { withFileTypes: true })) {
      if (d.isDirectory()) await walk(join(dir, d.name), `${prefix}${d.name}/`);
      else files.set(`${prefix}${d.name}`, await readFile(join(dir, d.name), 'utf8'));
    }
  };
  await walk(into, '');
  await rm(dirname(m![1]!), { recursive: true, force: true });
  return files;
}

beforeAll(async () => {
  if (missing.length === 0) await EXE.ensureBuilt();
}, 120_000);

describe.skipIf(missing.length > 0)(`${EXE.name} cluster diags`, () => {
  let api: KubeApiServer;
  let etcd: EtcdServer;
  let dir: string;
  let cfg: string;
  const PATH = `${dirname(findKubectl() ?? '/usr/bin/kubectl')}:${process.env.PATH ?? '/usr/bin:/bin'}`;

  beforeAll(async () => {
    api = await startKubeApiServer();
    await installCrds(api);
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-cluster-diags-'));
    cfg = join(dir, 'calicoctl.cfg');
    await writeFile(
      cfg,
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: kubernetes\n  kubeconfig: ${api.kubeconfigPath}\n`,
    );
    for (const n of ['n1', 'n2'])
      await kubectl(
        api,
        ['create', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: n } }),
      );
    await kubectl(api, ['create', '-f', '-'], calicoPod('calico-node-aaaaa', 'n1'));
    await kubectl(api, ['create', '-f', '-'], calicoPod('calico-node-bbbbb', 'n2'));
    await kubectl(api, [
      '-n',
      'kube-system',
      'create',
      'secret',
      'generic',
      'bgp-secrets',
      `--from-literal=tor=${SECRET_VALUE}`,
    ]);
    const pool =
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: diags-pool}\nspec: {cidr: 198.19.0.0/16}\n';
    expect((await EXE.run(['create', '-f', '-', '-c', cfg], { stdin: pool })).code).toBe(0);
  }, 180_000);
  afterAll(async () => {
    await api?.stop();
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('Kubernetes datastore: resources, cluster view and the focus node’s pod log; no secret inside', async () => {
    const r = await EXE.run(
      ['cluster', 'diags', '-c', cfg, '--max-logs', '1', '--focus-nodes', 'n2', '--since', '1h'],
      {
        env: { PATH, HOME: dir },
      },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Dumping Calico resources\n');
    expect(r.stdout).toContain('Collecting logs of 1 Calico pods (at most 1 of each component)\n');
    const files = await unpack(r.stdout, await mkdtemp(join(dir, 'out-')));

    expect(files.get('calico/ippools.yaml')).toContain('name: diags-pool');
    expect(files.get('calico/ippools.yaml')).toContain('cidr: 198.19.0.0/16');
    expect(files.has('calico/globalnetworkpolicies.yaml')).toBe(true);
    expect(files.get('kubernetes/nodes')).toMatch(/^n1\s/m);
    expect(files.get('kubernetes/nodes')).toMatch(/^n2\s/m);
    expect(files.get('kubernetes/pods')).toMatch(/kube-system\s+calico-node-bbbbb\s/);
    expect(files.get('kubernetes/workloads-kube-system')).toBeDefined();
    // Only the focus node's pod; with no kubelet its log is a recorded failure naming the command.
    const logs = [...files.keys()].filter((f) => f.startsWith('logs/'));
    expect(logs).toEqual(['logs/kube-system/calico-node-bbbbb.log']);
    expect(files.get('logs/kube-system/calico-node-bbbbb.log')).toMatch(
      /not collected: .*kubectl .*logs -n kube-system calico-node-bbbbb --all-containers --timestamps --since=1h/,
    );

    const kubeconfig = await readFile(api.kubeconfigPath, 'utf8');
    const credentials = [...kubeconfig.matchAll(/(?:client-key-data|token|password):\s*(\S+)/g)].map(
      (m) => m[1]!,
    );
    expect(credentials.length).toBeGreaterThan(0);
    for (const [name, text] of files) {
      expect(text.includes(SECRET_VALUE), name).toBe(false);
      expect(text.includes(ENV_PASSWORD), name).toBe(false);
      for (const c of credentials) expect(text.includes(c), name).toBe(false);
    }
  });

  test('bad options are refused before anything is collected', async () => {
    const r = await EXE.run(['cluster', 'diags', '-c', cfg, '--since', 'yesterday'], {
      env: { PATH, HOME: dir },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('invalid --since "yesterday": use a relative duration such as 10s, 5m or 1h');
    expect(r.stdout).not.toContain('Diags saved');
  });

  test('etcd datastore without kubectl: the Calico resources, and why the rest is missing', async () => {
    etcd = await startEtcd();
    const etcdCfg = join(dir, 'etcd.cfg');
    await writeFile(
      etcdCfg,
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: ${etcd.clientUrl}\n`,
    );
    const pool =
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: etcd-pool}\nspec: {cidr: 198.18.128.0/20}\n';
    expect((await EXE.run(['create', '-f', '-', '-c', etcdCfg], { stdin: pool })).code).toBe(0);
    const empty = await mkdtemp(join(dir, 'nobin-'));
    const r = await EXE.run(['cluster', 'diags', '-c', etcdCfg], { env: { PATH: empty, HOME: dir } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('kubectl (kubectl) is not installed');
    const files = await unpack(r.stdout, await mkdtemp(join(dir, 'out-')));
    expect(files.get('calico/ippools.yaml')).toContain('name: etcd-pool');
    expect(files.get('kubernetes/nodes')).toMatch(/^not collected: kubectl get nodes -o wide: /);
    expect([...files.keys()].filter((f) => f.startsWith('logs/'))).toEqual([]);
  });
});
