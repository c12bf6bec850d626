/**
 * The manifests and the chart against a real kube-apiserver: each applies with
 * `--dry-run=server`, then for real (the CRDs become Established; RBAC, ConfigMaps, the DaemonSet
 * and the Deployment are accepted), `helm install --dry-run=server` takes the chart, and the
 * ClusterRoles grant what the programs need and no more (`kubectl auth can-i` as each account).
 * No controller-manager or scheduler runs: nothing is scheduled, objects are only stored.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  etcdAvailable,
  findKubectl,
  type KubeApiServer,
  kubeApiServerAvailable,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chartDir, findHelm, MANIFESTS, root } from '../scripts/helm.mjs';
import { find, manifestPath, podSpec, readManifest, resolveEnv } from './manifest-docs.js';

const CALICO_NODE = join(root, 'apps/calico-node/bin/calico-node');
const CALICO_IPAM = join(root, 'packages/cni-plugin/bin/calico-ipam');
const KUBE_CONTROLLERS = join(root, 'apps/kube-controllers/bin/calico-kube-controllers');
const CALICOCTL = join(root, 'packages/ctl/bin/calicoctl');

const run = promisify(execFile);

function missingPrerequisites(): string[] {
  const missing: string[] = [];
  if (!kubeApiServerAvailable()) missing.push('kube-apiserver (run scripts/setup.sh)');
  if (!etcdAvailable()) missing.push('etcd');
  if (!findKubectl()) missing.push('kubectl');
  if (!findHelm()) missing.push('helm (run scripts/setup.sh)');
  if (
    !existsSync(join(root, 'apps/calico-node/dist/main.js')) ||
    !existsSync(join(root, 'apps/kube-controllers/dist/main.js')) ||
    !existsSync(CALICO_IPAM) ||
    !existsSync(CALICOCTL)
  ) {
    missing.push('the built calico-node, kube-controllers, CNI plugin and calicoctl (pnpm build)');
  }
  return missing;
}
const missing = missingPrerequisites();
if (missing.length > 0) {
  describe('deploy on a real API server', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const SA = (name: string) => `system:serviceaccount:kube-system:${name}`;

/** `kubectl auth can-i` as a service account: true for yes, false for no. */
async function canI(api: KubeApiServer, as: string, ...args: string[]): Promise<boolean> {
  const r = await run(findKubectl()!, [
    '--kubeconfig',
    api.kubeconfigPath,
    'auth',
    'can-i',
    '--as',
    SA(as),
    ...args,
  ]).then(
    (x) => x.stdout,
    (e: { stdout?: string; code?: number }) => {
      if (e.code !== 1) throw e;
      return e.stdout ?? '';
    },
  );
  return r.trim() === 'yes';
}

describe.skipIf(missing.length > 0).each(MANIFESTS)(
  'deploy/manifests/$file on a real API server',
  (manifest) => {
    const etcd = manifest.values.includes('values-etcd.yaml');
    const policyOnly = manifest.values.includes('values-policy-only.yaml');
    let api: KubeApiServer;
    const kubectl = (...args: string[]) =>
      run(findKubectl()!, ['--kubeconfig', api.kubeconfigPath, ...args]).then((r) => r.stdout);
    const helm = (...args: string[]) =>
      run(findHelm()!, ['--kubeconfig', api.kubeconfigPath, ...args], {
        env: {
          ...process.env,
          HELM_CACHE_HOME: `${api.dir}/helm-cache`,
          HELM_CONFIG_HOME: `${api.dir}/helm-config`,
        },
      }).then((r) => r.stdout);

    let dir: string;
    beforeAll(async () => {
      api = await startKubeApiServer();
      dir = await mkdtemp(join(api.dir, 'run-'));
    }, 120_000);
    afterAll(async () => {
      await api?.stop();
    });

    /** A kubeconfig holding a fresh token of a kube-system service account, as its pod would have. */
    async function kubeconfigAs(account: string): Promise<string> {
      const token = (await kubectl('create', 'token', account, '-n', 'kube-system', '--duration=10m')).trim();
      const path = join(dir, `${account}.kubeconfig`);
      const config = {
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'test',
            cluster: {
              server: api.url,
              'certificate-authority-data': Buffer.from(api.caPem).toString('base64'),
            },
          },
        ],
        users: [{ name: account, user: { token } }],
        contexts: [{ name: account, context: { cluster: 'test', user: account } }],
        'current-context': account,
      };
      await writeFile(path, JSON.stringify(config), { mode: 0o600 });
      return path;
    }

    /**
     * Runs calico-kube-controllers until its readiness probe passes (or its output matches `until`);
     * its output has no forbidden request.
     */
    async function expectReady(
      env: Record<string, string>,
      until: RegExp | 'ready' = 'ready',
    ): Promise<void> {
      let output = '';
      const child: ChildProcess = spawn(process.execPath, [KUBE_CONTROLLERS], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout?.on('data', (b: Buffer) => {
        output += b.toString();
      });
      child.stderr?.on('data', (b: Buffer) => {
        output += b.toString();
      });
      try {
        const ready = () =>
          run(process.execPath, [KUBE_CONTROLLERS, '-r'], { env }).then(
            () => true,
            () => false,
          );
        const done = async () => (until === 'ready' ? ready() : until.test(output));
        const deadline = Date.now() + 30_000;
        while (!(await done()) && Date.now() < deadline && child.exitCode === null) {
          await new Promise((r) => setTimeout(r, 500));
        }
        expect(await done(), output).toBe(true);
        expect(output).not.toMatch(/forbidden/i);
      } finally {
        child.kill('SIGTERM');
      }
    }

    it('the chart installs with --dry-run=server', async () => {
      const values = manifest.values.flatMap((v) => ['--values', `${chartDir}/${v}`]);
      const out = await helm(
        'install',
        'calico-ts',
        chartDir,
        '--namespace',
        'kube-system',
        '--dry-run=server',
        ...values,
      );
      expect(out).toContain('STATUS: pending-install');
      expect(out).toContain('kind: DaemonSet');
    });

    it('applies with --dry-run=server, then for real', async () => {
      const file = manifestPath(manifest.file);
      const dry = await kubectl('apply', '--dry-run=server', '-f', file);
      expect(dry).toContain('daemonset.apps/calico-node created (server dry run)');
      const out = await kubectl('apply', '-f', file);
      const cniPlugin = [
        'serviceaccount/calico-cni-plugin created',
        'clusterrolebinding.rbac.authorization.k8s.io/calico-cni-plugin created',
      ];
      // Policy only installs no CNI plugin: no account or role for one.
      if (policyOnly) for (const line of cniPlugin) expect(out).not.toContain(line);
      for (const line of [
        'configmap/calico-config created',
        'clusterrole.rbac.authorization.k8s.io/calico-node created',
        ...(policyOnly ? [] : cniPlugin),
        'daemonset.apps/calico-node created',
        'deployment.apps/calico-kube-controllers created',
        'poddisruptionbudget.policy/calico-kube-controllers created',
      ]) {
        expect(out).toContain(line);
      }
      if (etcd) {
        expect(out).toContain('secret/calico-etcd-secrets created');
        expect(out).not.toContain('customresourcedefinition');
      } else {
        await kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all');
      }
      // What the API server keeps is what the manifest says: `kubectl diff` finds nothing (exit 0).
      expect(await kubectl('diff', '-f', file)).toBe('');
      const ds = JSON.parse(
        await kubectl('get', 'daemonset', 'calico-node', '-n', 'kube-system', '-o', 'json'),
      );
      expect(ds.spec.template.spec.priorityClassName).toBe('system-node-critical');
      expect(ds.spec.template.spec.tolerations).toEqual([{ operator: 'Exists' }]);
      if (policyOnly) {
        // What the API server keeps: no install-cni, the critical-pod annotation, Felix on the
        // other CNI's interfaces with no networking backend, probes without BIRD.
        const tpl = ds.spec.template;
        expect(tpl.metadata.annotations).toEqual({ 'scheduler.alpha.kubernetes.io/critical-pod': '' });
        expect(tpl.spec.initContainers).toBeUndefined();
        const node = tpl.spec.containers[0];
        const env = Object.fromEntries(
          (node.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]),
        );
        expect(env).toMatchObject({ FELIX_INTERFACEPREFIX: 'eni', IP: 'none', NO_DEFAULT_POOLS: 'true' });
        expect(node.readinessProbe.exec.command).toEqual(['/usr/bin/calico-node', '-felix-ready']);
        expect(node.livenessProbe.exec.command).toEqual(['/usr/bin/calico-node', '-felix-live']);
        const config = JSON.parse(
          await kubectl('get', 'configmap', 'calico-config', '-n', 'kube-system', '-o', 'json'),
        );
        expect(config.data.calico_backend).toBe('none');
      }
    });

    it(etcd ? 'installs no CRDs' : 'the CRDs are Established and serve Calico resources', async () => {
      const crds = JSON.parse(await kubectl('get', 'crd', '-o', 'json')).items as {
        metadata: { name: string };
        status: { conditions: { type: string; status: string }[] };
      }[];
      const calico = crds.filter((c) => c.metadata.name.endsWith('.crd.projectcalico.org'));
      if (etcd) {
        expect(calico).toEqual([]);
        return;
      }
      expect(calico.length).toBeGreaterThan(20);
      for (const c of calico) {
        expect(c.status.conditions.find((x) => x.type === 'Established')?.status, c.metadata.name).toBe(
          'True',
        );
      }
      expect(await kubectl('get', 'ippools.crd.projectcalico.org')).toBe('');
    });

    it(
      policyOnly
        ? 'there is no CNI plugin account to act as'
        : 'the CNI plugin’s account may do what the plugin does, and nothing else',
      async () => {
        const can = (...a: string[]) => canI(api, 'calico-cni-plugin', ...a);
        if (policyOnly) {
          // No account, no binding: nothing is allowed to calico-cni-plugin.
          expect(await can('get', 'pods', '-n', 'default')).toBe(false);
          expect(await can('get', 'ipamblocks.crd.projectcalico.org')).toBe(false);
          return;
        }
        expect(await can('get', 'pods', '-n', 'default')).toBe(true);
        expect(await can('get', 'namespaces')).toBe(true);
        expect(await can('get', 'secrets', '-n', 'kube-system')).toBe(false);
        expect(await can('list', 'pods', '-A')).toBe(false);
        expect(await can('delete', 'pods', '-n', 'default')).toBe(false);
        expect(await can('create', 'serviceaccounts/token', '-n', 'kube-system')).toBe(false);
        // On the Kubernetes datastore the endpoint is the Pod and IPAM is in CRDs.
        expect(await can('update', 'pods', '-n', 'default')).toBe(!etcd);
        for (const r of ['ipamblocks', 'blockaffinities', 'ipamhandles']) {
          for (const verb of ['get', 'list', 'create', 'update', 'delete']) {
            expect(await can(verb, `${r}.crd.projectcalico.org`), `${verb} ${r}`).toBe(!etcd);
          }
        }
        expect(await can('get', 'ippools.crd.projectcalico.org')).toBe(!etcd);
        expect(await can('create', 'ippools.crd.projectcalico.org')).toBe(false);
        expect(await can('update', 'globalnetworkpolicies.crd.projectcalico.org')).toBe(false);
      },
    );

    it(
      policyOnly
        ? 'calico-node may get no account’s token'
        : 'calico-node may get the plugin’s token and no other account’s',
      async () => {
        const can = (...a: string[]) => canI(api, 'calico-node', ...a);
        expect(
          await can(
            'create',
            'serviceaccounts/calico-cni-plugin',
            '--subresource=token',
            '-n',
            'kube-system',
          ),
        ).toBe(!policyOnly);
        expect(
          await can('create', 'serviceaccounts/calico-node', '--subresource=token', '-n', 'kube-system'),
        ).toBe(false);
        expect(
          await can('create', 'serviceaccounts/default', '--subresource=token', '-n', 'kube-system'),
        ).toBe(false);
        expect(await can('update', 'nodes')).toBe(!etcd);
        expect(await can('watch', 'globalnetworkpolicies.crd.projectcalico.org')).toBe(!etcd);
        expect(await can('delete', 'ippools.crd.projectcalico.org')).toBe(false);
        expect(await can('create', 'pods', '-n', 'default')).toBe(false);
        // BGP password Secrets only through the Role node.bgpPasswordSecrets makes (none by default).
        expect(await can('get', 'secrets', '-n', 'kube-system')).toBe(false);
        expect(await can('list', 'secrets', '-A')).toBe(false);
      },
    );

    it('calico-kube-controllers may read what its controllers watch', async () => {
      const can = (...a: string[]) => canI(api, 'calico-kube-controllers', ...a);
      expect(await can('watch', 'nodes')).toBe(true);
      expect(await can('list', 'networkpolicies.networking.k8s.io', '-A')).toBe(etcd);
      expect(await can('delete', 'ipamblocks.crd.projectcalico.org')).toBe(!etcd);
      expect(await can('get', 'secrets', '-n', 'kube-system')).toBe(false);
    });

    // Policy only: calico-node starts with no address, no pool and no IPAM of Calico's.
    if (policyOnly) {
      it('calico-node starts up as its own account with the DaemonSet’s environment: a Node, and no pool, no IPAM', async () => {
        const objects = readManifest(manifest.file);
        const spec = podSpec(find(objects, 'DaemonSet', 'calico-node'));
        await writeFile(
          join(dir, 'node.json'),
          JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' } }),
        );
        await kubectl('create', '-f', join(dir, 'node.json'));
        const env = {
          ...resolveEnv(objects, spec.containers[0]!, 'node-1'),
          KUBECONFIG: await kubeconfigAs('calico-node'),
          CALICO_VAR_LIB_DIR: dir,
          CALICO_VAR_RUN_DIR: dir,
          PATH: process.env.PATH ?? '',
        };
        const startup = await run(process.execPath, [CALICO_NODE, '-startup'], { env }).then(
          () => '',
          (e: { stderr: string }) => e.stderr,
        );
        expect(startup).toBe('');
        expect((await readFile(join(dir, 'nodename'), 'utf8')).trim()).toBe('node-1');
        const node = JSON.parse(await kubectl('get', 'node', 'node-1', '-o', 'json'));
        // No BGP address: the node takes no part in Calico's networking.
        expect(node.metadata.annotations?.['projectcalico.org/IPv4Address']).toBeUndefined();
        for (const kind of ['ippools', 'ipamblocks', 'ipamhandles', 'blockaffinities']) {
          expect(await kubectl('get', `${kind}.crd.projectcalico.org`, '-o', 'name'), kind).toBe('');
        }
        const info = JSON.parse(
          await kubectl('get', 'clusterinformations.crd.projectcalico.org', 'default', '-o', 'json'),
        );
        expect(info.spec.datastoreReady).toBe(true);
      });
    }

    // The Kubernetes datastore only: there the accounts' grants are what the programs run on.
    if (!etcd && !policyOnly) {
      it('calico-node starts up as its own account with the DaemonSet’s environment, and the CNI plugin’s account allocates from the pool it made', async () => {
        const objects = readManifest(manifest.file);
        const spec = podSpec(find(objects, 'DaemonSet', 'calico-node'));
        await writeFile(
          join(dir, 'node.json'),
          JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' } }),
        );
        await kubectl('create', '-f', join(dir, 'node.json'));

        // calico-node -startup as the DaemonSet runs it on node-1 (its address given, not autodetected).
        const env = {
          ...resolveEnv(objects, spec.containers[0]!, 'node-1'),
          IP: '198.18.0.11/24',
          KUBECONFIG: await kubeconfigAs('calico-node'),
          CALICO_VAR_LIB_DIR: dir,
          CALICO_VAR_RUN_DIR: dir,
          PATH: process.env.PATH ?? '',
        };
        const startup = await run(process.execPath, [CALICO_NODE, '-startup'], { env }).then(
          () => '',
          (e: { stderr: string }) => e.stderr,
        );
        expect(startup).toBe('');
        expect((await readFile(join(dir, 'nodename'), 'utf8')).trim()).toBe('node-1');
        const pool = JSON.parse(
          await kubectl('get', 'ippools.crd.projectcalico.org', 'default-ipv4-ippool', '-o', 'json'),
        );
        expect(pool.spec).toMatchObject({ cidr: '192.168.0.0/16', ipipMode: 'Always', natOutgoing: true });

        // calico-ipam ADD and DEL with the network config install-cni writes, through the plugin's token.
        const template = (find(objects, 'ConfigMap', 'calico-config').data as Record<string, string>)
          .cni_network_config!;
        const kubeconfig = await kubeconfigAs('calico-cni-plugin');
        const conflist = JSON.parse(
          template
            .replaceAll('__KUBECONFIG_FILEPATH__', kubeconfig)
            .replaceAll('__KUBERNETES_NODE_NAME__', 'node-1')
            .replaceAll('__CNI_MTU__', '1440'),
        );
        // No plugin service on this host: the plugin talks to the API server itself.
        const conf = {
          ...conflist.plugins[0],
          name: conflist.name,
          cniVersion: conflist.cniVersion,
          service_socket: '',
        };
        await kubectl('create', 'namespace', 'shop');
        const ipam = (command: string) =>
          new Promise<{ code: number; out: string }>((resolve) => {
            const child = execFile(
              CALICO_IPAM,
              [],
              {
                env: {
                  PATH: process.env.PATH ?? '',
                  CNI_COMMAND: command,
                  CNI_CONTAINERID: 'c0ffee',
                  CNI_NETNS: '/var/run/netns/none',
                  CNI_IFNAME: 'eth0',
                  CNI_PATH: dir,
                  CNI_ARGS: 'K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1',
                },
              },
              (err, stdout) =>
                resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout }),
            );
            child.stdin?.end(JSON.stringify(conf));
          });
        const handleNames = async () =>
          (
            JSON.parse(await kubectl('get', 'ipamhandles.crd.projectcalico.org', '-o', 'json')).items as {
              metadata: { name: string };
            }[]
          ).map((h) => h.metadata.name);
        const add = await ipam('ADD');
        expect(add.code, add.out).toBe(0);
        expect(JSON.parse(add.out).ips[0].address).toMatch(/^192\.168\.\d+\.\d+\/26$/);
        const blocks = JSON.parse(
          await kubectl('get', 'ipamblocks.crd.projectcalico.org', '-o', 'json'),
        ).items;
        expect(blocks.map((b: { spec: { affinity: string } }) => b.spec.affinity)).toEqual(['host:node-1']);
        expect(await handleNames()).toEqual(['ipip-tunnel-addr-node-1', 'k8s-pod-network.c0ffee']);
        const del = await ipam('DEL');
        expect(del.code, del.out).toBe(0);
        // The pod's handle is gone; the node's IPIP tunnel address, from start-up, stays.
        expect(await handleNames()).toEqual(['ipip-tunnel-addr-node-1']);
      });
    }

    if (!etcd) {
      it('calico-kube-controllers turns ready as its own account with the Deployment’s environment', async () => {
        const objects = readManifest(manifest.file);
        const container = podSpec(find(objects, 'Deployment', 'calico-kube-controllers')).containers[0]!;
        // Metrics off, so the test needs no fixed port on a shared host.
        await writeFile(
          join(dir, 'kcc.json'),
          JSON.stringify({
            apiVersion: 'crd.projectcalico.org/v1',
            kind: 'KubeControllersConfiguration',
            metadata: { name: 'default' },
            spec: { prometheusMetricsPort: 0, controllers: { node: { reconcilerPeriod: '5m' } } },
          }),
        );
        await kubectl('create', '-f', join(dir, 'kcc.json'));
        const env = {
          ...resolveEnv(objects, container, 'node-1'),
          KUBECONFIG: await kubeconfigAs('calico-kube-controllers'),
          STATUS_FILE: join(dir, 'kube-controllers-status.json'),
          PATH: process.env.PATH ?? '',
        };
        await expectReady(env);
      }, 60_000);
    }

    // The etcd datastore: the programs keep Calico's data in a real etcd and read Kubernetes as
    // their own accounts.
    if (etcd) {
      it('calico-node starts up with the DaemonSet’s environment, and calico-kube-controllers copies Kubernetes into etcd as its own account', async () => {
        const calicoEtcd = await startEtcd();
        try {
          const objects = readManifest(manifest.file);
          const etcdEnv = { ETCD_ENDPOINTS: calicoEtcd.endpoints.join(','), PATH: process.env.PATH ?? '' };
          const nodeEnv = {
            ...resolveEnv(
              objects,
              podSpec(find(objects, 'DaemonSet', 'calico-node')).containers[0]!,
              'node-1',
            ),
            ...etcdEnv,
            IP: '198.18.0.11/24',
            CALICO_VAR_LIB_DIR: dir,
            CALICO_VAR_RUN_DIR: dir,
          };
          const startup = await run(process.execPath, [CALICO_NODE, '-startup'], { env: nodeEnv }).then(
            () => '',
            (e: { stderr: string }) => e.stderr,
          );
          expect(startup).toBe('');
          const ctl = (...args: string[]) =>
            run(process.execPath, [CALICOCTL, ...args], {
              env: { ...etcdEnv, DATASTORE_TYPE: 'etcdv3' },
            }).then((r) => r.stdout);
          expect(await ctl('get', 'ippool', 'default-ipv4-ippool', '-o', 'json')).toContain('192.168.0.0/16');
          // Metrics off, so the test needs no fixed port on a shared host.
          await writeFile(
            join(dir, 'kcc.yaml'),
            'apiVersion: projectcalico.org/v3\nkind: KubeControllersConfiguration\nmetadata:\n  name: default\nspec:\n  prometheusMetricsPort: 0\n  controllers:\n    node:\n      reconcilerPeriod: 5m\n',
          );
          await ctl('create', '-f', join(dir, 'kcc.yaml'));
          const container = podSpec(find(objects, 'Deployment', 'calico-kube-controllers')).containers[0]!;
          // Until the controllers have copied the namespaces and service accounts into etcd. Not
          // until ready: its policy controller also lists crd.projectcalico.org policies from the
          // API server, which an etcd install has no CRDs for, and stays unready there.
          await expectReady(
            {
              ...resolveEnv(objects, container, 'node-1'),
              ...etcdEnv,
              KUBECONFIG: await kubeconfigAs('calico-kube-controllers'),
              STATUS_FILE: join(dir, 'kube-controllers-status.json'),
            },
            /created":"kns\.kube-system"[\s\S]*created":"ksa\.kube-system\.calico-node"|created":"ksa\.kube-system\.calico-node"[\s\S]*created":"kns\.kube-system"/,
          );
          expect(await ctl('get', 'profile', 'kns.kube-system', '-o', 'yaml')).toContain('kns.kube-system');
        } finally {
          await calicoEtcd.stop();
        }
      }, 90_000);
    }
  },
);
