/**
 * The calico-kube-controllers program as its Deployment runs it: env configuration, a real
 * kube-apiserver and etcd, the status file and the -r/-l probes, a clean stop on SIGTERM.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  type EtcdServer,
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}
const here = dirname(fileURLToPath(import.meta.url));
const BIN = join(here, '../bin/calico-kube-controllers');
const CRDS = join(here, '../../../deploy/crds/calico-crds.yaml');

const missing = missingKubePrerequisites({
  files: [[join(here, '../dist/main.js'), 'the built program (pnpm build)']],
});
if (missing.length > 0) {
  describe('calico-kube-controllers', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

describe.skipIf(missing.length > 0)('calico-kube-controllers program', () => {
  let api: KubeApiServer;
  let etcd: EtcdServer;
  let dir: string;
  let child: ChildProcess | undefined;
  let env: Record<string, string>;
  let metricsPort: number;

  beforeAll(async () => {
    [api, etcd] = await Promise.all([startKubeApiServer(), startEtcd()]);
    dir = await mkdtemp(join(tmpdir(), 'kube-controllers-'));
    const kubectl = findKubectl()!;
    await run(kubectl, ['--kubeconfig', api.kubeconfigPath, 'apply', '--server-side', '-f', CRDS]);
    await run(kubectl, ['--kubeconfig', api.kubeconfigPath, 'create', 'namespace', 'web']);
    // Metrics on a free port of this test's choosing, through the configuration resource.
    metricsPort = await freePort();
    await etcd.etcdctl([
      'put',
      '/calico/resources/v3/projectcalico.org/kubecontrollersconfigurations/default',
      JSON.stringify({
        kind: 'KubeControllersConfiguration',
        apiVersion: 'projectcalico.org/v3',
        metadata: {
          name: 'default',
          uid: '7d1d0a3e-0000-4000-8000-000000000001',
          creationTimestamp: '2026-11-26T00:00:00Z',
        },
        spec: { prometheusMetricsPort: metricsPort, controllers: {} },
      }),
    ]);
    env = {
      METRICS_HOST: '127.0.0.1',
      PATH: process.env.PATH ?? '',
      DATASTORE_TYPE: 'etcdv3',
      ETCD_ENDPOINTS: etcd.endpoints.join(','),
      KUBECONFIG: api.kubeconfigPath,
      STATUS_FILE: join(dir, 'status.json'),
      LOG_LEVEL: 'info',
    };
  }, 120_000);

  afterAll(async () => {
    if (child?.pid && child.exitCode === null) child.kill('SIGKILL');
    await Promise.all([api?.stop(), etcd?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const probe = async (flag: string) =>
    run(process.execPath, [BIN, flag], { env }).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stderr: string }) => ({ code: e.code, out: e.stderr }),
    );

  it('writes kns.* Profiles into etcd, turns ready, says which asked-for controller it cannot run, stops on SIGTERM', async () => {
    expect((await probe('-r')).code).toBe(1);
    const lines: string[] = [];
    child = spawn(process.execPath, [BIN], {
      env: {
        ...env,
        ENABLED_CONTROLLERS: 'policy,namespace,serviceaccount,workloadendpoint,node,loadbalancer',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => lines.push(...d.toString().split('\n').filter(Boolean)));
    const deadline = Date.now() + 30_000;
    let value = '';
    while (Date.now() < deadline) {
      const r = await etcd.etcdctl([
        'get',
        '/calico/resources/v3/projectcalico.org/profiles/kns.web',
        '--print-value-only',
      ]);
      value = r.stdout.trim();
      if (value && (await probe('-r')).code === 0) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    expect(JSON.parse(value).spec.labelsToApply).toMatchObject({ 'pcns.projectcalico.org/name': 'web' });
    expect(await probe('-r')).toEqual({ code: 0, out: 'ready\n' });
    expect((await probe('-l')).code).toBe(0);
    const scraped = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(scraped).toMatch(/^kube_controllers_reconciles_total\{controller="namespace"\} [1-9]/m);
    expect(scraped).toMatch(/^process_resident_memory_bytes [1-9]\d+$/m);
    expect(lines.some((l) => l.includes('serving Prometheus metrics at /metrics'))).toBe(true);
    expect(lines.some((l) => l.includes('controller loadbalancer is not available in this version'))).toBe(
      true,
    );
    const exited = new Promise<number | null>((res) => child!.once('exit', (c) => res(c)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);

  it('refuses an unknown controller with a clear error and exit 1', async () => {
    const r = await run(process.execPath, [BIN], {
      env: { ...env, ENABLED_CONTROLLERS: 'namespace,bogus' },
    }).then(
      () => ({ code: 0, out: '' }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
    expect(r.code).toBe(1);
    expect(r.out).toContain('ENABLED_CONTROLLERS: unknown controller \\"bogus\\"');
  });

  it('refuses an AUTO_HOST_ENDPOINTS it does not understand, naming it', async () => {
    const r = await run(process.execPath, [BIN], {
      env: { ...env, ENABLED_CONTROLLERS: 'node', AUTO_HOST_ENDPOINTS: 'maybe' },
    }).then(
      () => ({ code: 0, out: '' }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
    expect(r.code).toBe(1);
    expect(r.out).toContain('AUTO_HOST_ENDPOINTS: expected enabled or disabled, got \\"maybe\\"');
  });
});
