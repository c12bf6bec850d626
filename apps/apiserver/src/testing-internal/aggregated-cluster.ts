/**
 * A control plane with the aggregation layer, in a network namespace of its own (root):
 *
 *   netns cts-apisrv-<random> (lo up, 198.18.x.y/32 on lo)
 *     etcd 127.0.0.1:2379 ◄── kube-apiserver 198.18.x.y:6443 (the harness' certificates and flags,
 *                              aggregator routing to endpoint addresses)
 *                                 │ front-proxy certificate + X-Remote-*
 *                                 ▼
 *                              calico-apiserver 198.18.x.y:5443, as ServiceAccount
 *                              calico-apiserver/calico-apiserver with exactly `apiServerRbac`
 *
 * Endpoints may not be loopback addresses, hence the namespace and its own address. Every program
 * is started with `nsenter --net=` (which execs it, so the PID is the program's) and every command
 * a test runs there goes through `exec`. `stop()` signals only the PIDs started here, deletes the
 * namespace and the temp dir; it is idempotent and safe after a failed start.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adminKubeconfig,
  findKubectl,
  kubeApiServerArgs,
  kubeApiServerBinary,
  makeKubeCertificates,
} from '@calico-ts/datastore/testing';
import { apiServerRbac } from '../rbac.js';
import { issue, makeCa, type Pem } from './certs.js';

export const ROOT = join(import.meta.dirname, '../../../..');
export const CRDS = join(ROOT, 'deploy/crds/calico-crds.yaml');
export const APISERVER_BIN = join(ROOT, 'apps/apiserver/bin/calico-apiserver');
export const APISERVER_MAIN = join(ROOT, 'apps/apiserver/dist/main.js');
const ETCD_BIN = process.env.CALICO_TEST_ETCD_BIN ?? '/usr/bin/etcd';

export const NAMESPACE = 'calico-apiserver';
export const SERVICE = 'calico-api';
const API_PORT = 6443;
export const APISERVER_PORT = 5443;

export interface ExecResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface AggregatedCluster {
  readonly netns: string;
  readonly ip: string;
  readonly dir: string;
  readonly adminKubeconfig: string;
  /** The CA of kube-apiserver's certificates, and its key (to issue users' certificates). */
  readonly ca: Pem;
  /** The CA of calico-apiserver's serving certificate (the APIService's caBundle). */
  readonly servingCa: Pem;
  readonly apiServerLog: string;
  /** A command in the namespace. */
  exec(
    argv: readonly string[],
    o?: { input?: string; env?: Record<string, string>; timeoutMs?: number },
  ): Promise<ExecResult>;
  /** kubectl in the namespace (admin unless `kubeconfig`). */
  kubectl(args: readonly string[], o?: { input?: string; kubeconfig?: string }): Promise<ExecResult>;
  /** A long-running command in the namespace (a watch), stopped by `stop()` at the latest. */
  spawnIn(argv: readonly string[]): ChildProcess;
  stop(): Promise<void>;
}

function run(
  argv: readonly string[],
  o: { input?: string; env?: Record<string, string>; timeoutMs?: number } = {},
) {
  return new Promise<ExecResult>((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...(o.env ?? {}) },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    // A program that exits before reading its input is no error of the caller's.
    child.stdin.on('error', () => undefined);
    child.stdin.end(o.input ?? '');
  });
}

async function must(what: string, r: Promise<ExecResult>): Promise<string> {
  const x = await r;
  if (x.code !== 0) throw new Error(`${what} failed (${x.code}): ${x.stderr || x.stdout}`);
  return x.stdout;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(
  what: string,
  timeoutMs: number,
  check: () => Promise<string | undefined>,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last: string | undefined;
  for (;;) {
    last = await check();
    if (last === undefined) return;
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs / 1000} s: ${last}`);
    await sleep(250);
  }
}

async function tail(file: string): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.slice(-3000);
}

export async function startAggregatedCluster(): Promise<AggregatedCluster> {
  const suffix = randomBytes(3).toString('hex');
  const netns = `cts-apisrv-${suffix}`;
  const ip = `198.18.${200 + (randomBytes(1)[0]! % 50)}.${1 + (randomBytes(1)[0]! % 254)}`;
  const dir = await mkdtemp(join(tmpdir(), 'calico-apiserver-int-'));
  const children: ChildProcess[] = [];
  const kubectlBin = findKubectl()!;
  const nsenter = ['nsenter', `--net=/run/netns/${netns}`];
  const adminConfig = join(dir, 'admin.kubeconfig');
  const apiServerLog = join(dir, 'calico-apiserver.log');
  let netnsMade = false;

  const spawnIn = (argv: readonly string[], log?: string, env?: Record<string, string>): ChildProcess => {
    const fd = log ? openSync(log, 'a') : undefined;
    try {
      const child = spawn(nsenter[0]!, [...nsenter.slice(1), ...argv], {
        stdio: ['ignore', fd ?? 'pipe', fd ?? 'pipe'],
        env: { ...process.env, ...(env ?? {}) },
      });
      children.push(child);
      return child;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  };
  const exec: AggregatedCluster['exec'] = (argv, o) => run([...nsenter, ...argv], o);
  const kubectl: AggregatedCluster['kubectl'] = (args, o = {}) =>
    exec([kubectlBin, `--kubeconfig=${o.kubeconfig ?? adminConfig}`, ...args], {
      ...(o.input !== undefined ? { input: o.input } : {}),
    });
  const stop = async () => {
    for (const child of children.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    children.length = 0;
    if (netnsMade) await run(['ip', 'netns', 'del', netns]);
    netnsMade = false;
    await rm(dir, { recursive: true, force: true });
  };

  try {
    await must('ip netns add', run(['ip', 'netns', 'add', netns]));
    netnsMade = true;
    await must('lo up', run(['ip', '-n', netns, 'link', 'set', 'lo', 'up']));
    await must('address', run(['ip', '-n', netns, 'addr', 'add', `${ip}/32`, 'dev', 'lo']));

    const certs = await makeKubeCertificates(dir, { serverIPs: [ip] });
    await writeFile(adminConfig, adminKubeconfig({ server: `https://${ip}:${API_PORT}`, ...certs }), {
      mode: 0o600,
    });
    const peer = 'http://127.0.0.1:2380';
    spawnIn(
      [
        ETCD_BIN,
        '--name=default',
        `--data-dir=${join(dir, 'etcd')}`,
        '--listen-client-urls=http://127.0.0.1:2379',
        '--advertise-client-urls=http://127.0.0.1:2379',
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=default=${peer}`,
        '--log-level=warn',
      ],
      join(dir, 'etcd.log'),
    );
    const apiArgs = kubeApiServerArgs({
      dir,
      etcdServers: 'http://127.0.0.1:2379',
      address: ip,
      port: API_PORT,
    });
    const kubeApi = spawnIn([kubeApiServerBinary(), ...apiArgs], join(dir, 'kube-apiserver.log'));
    await until('kube-apiserver /readyz', 90_000, async () => {
      if (kubeApi.exitCode !== null)
        throw new Error(`kube-apiserver exited: ${await tail(join(dir, 'kube-apiserver.log'))}`);
      const r = await kubectl(['get', '--raw=/readyz']);
      return r.code === 0 && r.stdout.trim() === 'ok' ? undefined : r.stderr || r.stdout;
    });

    await must('CRDs', kubectl(['apply', '-f', CRDS]));
    await must(
      'CRDs established',
      kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']),
    );
    const rbac = apiServerRbac(NAMESPACE, 'calico-apiserver');
    const objects = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'calico-apiserver', namespace: NAMESPACE },
      },
      ...rbac,
    ];
    await must(
      'namespace, service account, RBAC',
      kubectl(['apply', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
      }),
    );
    const token = (
      await must('token', kubectl(['create', 'token', 'calico-apiserver', '-n', NAMESPACE, '--duration=2h']))
    ).trim();
    const saConfig = join(dir, 'calico-apiserver.kubeconfig');
    await writeFile(
      saConfig,
      `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://${ip}:${API_PORT}
    certificate-authority-data: ${Buffer.from(certs.caPem).toString('base64')}
users:
- name: sa
  user:
    token: ${token}
contexts:
- name: c
  context: {cluster: c, user: sa}
current-context: c
`,
      { mode: 0o600 },
    );

    const servingCa = await makeCa(dir, 'calico-api-ca');
    const serving = await issue(dir, servingCa, 'calico-api', {
      subject: `/CN=${SERVICE}.${NAMESPACE}.svc`,
      serverNames: [`DNS:${SERVICE}.${NAMESPACE}.svc`, `IP:${ip}`],
    });
    const apiserver = spawnIn(
      [
        process.execPath,
        APISERVER_BIN,
        `--secure-port=${APISERVER_PORT}`,
        `--bind-address=${ip}`,
        `--tls-cert-file=${serving.certFile}`,
        `--tls-private-key-file=${serving.keyFile}`,
        `--kubeconfig=${saConfig}`,
      ],
      apiServerLog,
      { DATASTORE_TYPE: 'kubernetes', LOG_LEVEL: 'debug' },
    );
    await until('calico-apiserver /readyz', 30_000, async () => {
      if (apiserver.exitCode !== null)
        throw new Error(`calico-apiserver exited: ${await tail(apiServerLog)}`);
      const r = await exec([
        'curl',
        '-sS',
        '--cacert',
        servingCa.certFile,
        `https://${ip}:${APISERVER_PORT}/readyz`,
      ]);
      return r.stdout === 'ok' ? undefined : r.stdout || r.stderr;
    });

    const registration = [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: SERVICE, namespace: NAMESPACE },
        spec: { ports: [{ name: 'https', port: 443, targetPort: APISERVER_PORT, protocol: 'TCP' }] },
      },
      {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name: SERVICE, namespace: NAMESPACE },
        subsets: [{ addresses: [{ ip }], ports: [{ name: 'https', port: APISERVER_PORT, protocol: 'TCP' }] }],
      },
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: `${SERVICE}-1`,
          namespace: NAMESPACE,
          labels: { 'kubernetes.io/service-name': SERVICE },
        },
        addressType: 'IPv4',
        endpoints: [{ addresses: [ip], conditions: { ready: true } }],
        ports: [{ name: 'https', port: APISERVER_PORT, protocol: 'TCP' }],
      },
      {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: 'v3.projectcalico.org' },
        spec: {
          group: 'projectcalico.org',
          version: 'v3',
          groupPriorityMinimum: 1500,
          versionPriority: 200,
          service: { name: SERVICE, namespace: NAMESPACE, port: 443 },
          caBundle: Buffer.from(servingCa.cert).toString('base64'),
        },
      },
    ];
    await must(
      'APIService',
      kubectl(['apply', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: registration }),
      }),
    );
    const available = await kubectl([
      'wait',
      '--for=condition=Available',
      '--timeout=60s',
      'apiservice/v3.projectcalico.org',
    ]);
    if (available.code !== 0) {
      const status = await kubectl(['get', 'apiservice', 'v3.projectcalico.org', '-o', 'yaml']);
      throw new Error(
        `APIService not Available: ${available.stderr}\n${status.stdout}\ncalico-apiserver: ${await tail(apiServerLog)}`,
      );
    }
    const caKey = await readFile(join(dir, 'ca-key.pem'), 'utf8');
    return {
      netns,
      ip,
      dir,
      adminKubeconfig: adminConfig,
      ca: { certFile: join(dir, 'ca.pem'), keyFile: join(dir, 'ca-key.pem'), cert: certs.caPem, key: caKey },
      servingCa,
      apiServerLog,
      exec,
      kubectl,
      spawnIn: (argv) => spawnIn(argv),
      stop,
    };
  } catch (e) {
    const logs = await tail(apiServerLog);
    await stop();
    throw new Error(`${(e as Error).message}${logs ? `\ncalico-apiserver log:\n${logs}` : ''}`);
  }
}

/** A kubeconfig for `user` (a client certificate from the cluster CA, in `groups`). */
export async function userKubeconfig(
  c: AggregatedCluster,
  user: string,
  groups: readonly string[] = [],
): Promise<{ path: string; cert: Pem }> {
  const subject = `${groups.map((g) => `/O=${g}`).join('')}/CN=${user}`;
  const cert = await issue(c.dir, c.ca, `user-${user}`, { subject });
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const path = join(c.dir, `${user}.kubeconfig`);
  await writeFile(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://${c.ip}:${API_PORT}
    certificate-authority-data: ${b64(c.ca.cert)}
users:
- name: u
  user:
    client-certificate-data: ${b64(cert.cert)}
    client-key-data: ${b64(cert.key)}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`,
    { mode: 0o600 },
  );
  return { path, cert };
}
