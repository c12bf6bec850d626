/// <reference lib="esnext.disposable" />
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { type EtcdServer, etcdAvailable, startEtcd } from './etcd-server.js';

/**
 * A real kube-apiserver for integration tests: loopback only, a random free port, its own private
 * etcd, and certificates and service-account keys made with openssl in a fresh temp dir that
 * `stop()` removes. No controller-manager and no scheduler: objects are stored and served, nothing
 * reconciles them (a deleted namespace stays Terminating, no `default` ServiceAccount appears).
 *
 * ```
 *   test ──kubectl --kubeconfig──► kube-apiserver ──► etcd (startEtcd, own temp dir)
 *         (admin client cert,        https://127.0.0.1:<free port>
 *          O=system:masters)         authn: client CA; authz: Node,RBAC
 * ```
 *
 * Design: one child process, started with a fixed argument list so `restart()` brings it back on the
 * same port against the same etcd. Only the PIDs this helper spawned are ever signalled (etcd by its
 * own helper). A process-exit hook kills servers a crashed test left behind. The binary is built
 * from the Go module `k8s.io/kubernetes` by scripts/setup.sh and cached outside the repo.
 *
 * The pieces are exported for a server that lives elsewhere and longer (the lab runs one in its etcd
 * namespace, detached): `makeKubeCertificates`, `kubeApiServerArgs`, `adminKubeconfig`,
 * `kubeApiServerBinary`.
 */
export interface KubeApiServer {
  /** e.g. `https://127.0.0.1:41234` */
  readonly url: string;
  /** Admin kubeconfig (certificate data embedded), in the server's temp dir. */
  readonly kubeconfigPath: string;
  /** CA that signed the serving certificate and the admin client certificate. */
  readonly caPem: string;
  /** Admin client certificate (CN=calico-ts-admin, O=system:masters) and its key. */
  readonly clientCertPem: string;
  readonly clientKeyPem: string;
  /** The private etcd behind this API server; stopped by `stop()`. */
  readonly etcd: EtcdServer;
  /** The temp dir holding certificates, keys, kubeconfig and the server log. */
  readonly dir: string;
  /** kube-apiserver's own log (stderr), appended across restarts. */
  readonly logPath: string;
  /** PID of the running kube-apiserver (changes on restart). */
  readonly pid: number | undefined;
  /** Stop the API server process and start it again on the same port and etcd; resolves when ready. */
  restart(): Promise<void>;
  /** Kill the API server (only the PID started here), stop its etcd, remove the temp dir. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface StartKubeApiServerOptions {
  /** How long to wait for `/readyz` to answer ok. Default 45 s, inside vitest's 60 s hook timeout. */
  startTimeoutMs?: number;
  /**
   * More kube-apiserver flags, appended after the ones set here: a later scalar flag wins, a repeated
   * list flag (e.g. `--disable-admission-plugins`) adds to the earlier one.
   */
  extraArgs?: string[];
}

/** Where scripts/setup.sh caches it; the version follows `k8s.io/kubernetes` in tools/kubernetes/go.mod. */
const KUBERNETES_VERSION = 'v1.36.3';
const CACHE_BIN = '/var/cache/calico-ts/bin';
const KUBE_APISERVER_BIN =
  process.env.CALICO_TEST_KUBE_APISERVER_BIN ?? join(CACHE_BIN, `kube-apiserver-${KUBERNETES_VERSION}`);
/** Inside the benchmarking range 198.18.0.0/15, away from the lab's nodes (198.18.0.0/24). */
const SERVICE_CLUSTER_IP_RANGE = '198.18.128.0/24';
const KUBERNETES_SERVICE_IP = '198.18.128.1';

/**
 * The kube-apiserver executable: `CALICO_TEST_KUBE_APISERVER_BIN`, else the one scripts/setup.sh
 * builds and caches. It may not exist; callers report that with the setup hint.
 */
export function kubeApiServerBinary(): string {
  return KUBE_APISERVER_BIN;
}

/**
 * Whether integration tests needing kube-apiserver should run. Under `CI=true` always true: there a
 * missing binary must make `startKubeApiServer` throw and the test fail, never skip.
 */
export function kubeApiServerAvailable(): boolean {
  return (
    process.env.CI === 'true' ||
    (existsSync(KUBE_APISERVER_BIN) && etcdAvailable() && findOnPath('openssl') !== undefined)
  );
}

/**
 * The kubectl to drive a test server with: `CALICO_TEST_KUBECTL_BIN`, else the machine's `kubectl`
 * on PATH. Undefined if there is none.
 */
export function findKubectl(): string | undefined {
  return process.env.CALICO_TEST_KUBECTL_BIN || findOnPath('kubectl');
}

export interface KubePrerequisites {
  /** The test needs root. */
  readonly root?: boolean;
  /** The test drives the server with kubectl. Default true. */
  readonly kubectl?: boolean;
  /** The CRD manifest (deploy/crds/calico-crds.yaml) the test installs. */
  readonly crds?: string;
  /** Programs that must be on PATH (`ip`, `nsenter`, …). */
  readonly tools?: readonly string[];
  /** Other files the test needs, each with what to say when it is missing (`[path, 'pnpm build']`). */
  readonly files?: readonly (readonly [path: string, what: string])[];
}

/**
 * What a test on a real kube-apiserver (and its etcd) lacks here, each named for the message of the
 * test's "has its prerequisites" case; empty when it can run. Under `CI=true` the server itself
 * counts as present (see `kubeApiServerAvailable`), so a missing binary fails the test instead.
 */
export function missingKubePrerequisites(needs: KubePrerequisites = {}): string[] {
  const missing: string[] = [];
  if (needs.root && process.getuid?.() !== 0) missing.push('root');
  if (!kubeApiServerAvailable()) missing.push('kube-apiserver (run scripts/setup.sh), etcd or openssl');
  if (needs.kubectl !== false && findKubectl() === undefined) missing.push('kubectl');
  if (needs.crds !== undefined && !existsSync(needs.crds)) missing.push(`the CRDs in ${needs.crds}`);
  for (const tool of needs.tools ?? []) if (findOnPath(tool) === undefined) missing.push(tool);
  for (const [path, what] of needs.files ?? []) if (!existsSync(path)) missing.push(`${path} (${what})`);
  return missing;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of running) {
      if (child.pid !== undefined && child.exitCode === null) {
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
}

export async function startKubeApiServer(options: StartKubeApiServerOptions = {}): Promise<KubeApiServer> {
  if (!existsSync(KUBE_APISERVER_BIN)) {
    throw new Error(
      `kube-apiserver test server: ${KUBE_APISERVER_BIN} not found; run scripts/setup.sh ` +
        '(it builds kube-apiserver from its Go module once and caches it there)',
    );
  }
  installExitHook();
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const dir = await mkdtemp(join(base, 'calico-ts-kube-apiserver-'));
  let etcd: EtcdServer | undefined;
  try {
    // Both at once; an etcd that started is stopped below even when the certificates failed.
    const [certs, started] = await Promise.allSettled([makeKubeCertificates(dir), startEtcd()]);
    if (started.status === 'fulfilled') etcd = started.value;
    if (certs.status === 'rejected') throw certs.reason;
    if (started.status === 'rejected') throw started.reason;
    const files = certs.value;
    const etcdServer = started.value;
    // The port is picked free, then bound by kube-apiserver; another process can take it in
    // between, so a start that fails to bind is retried on a new port.
    for (let attempt = 0; ; attempt++) {
      const port = await freePort();
      const server = new LocalKubeApiServer(dir, port, files, etcdServer, options);
      try {
        await server.writeKubeconfig();
        await server.start();
        return server;
      } catch (e) {
        await server.kill();
        const bindFailed = (await logTail(server.logPath)).includes('address already in use');
        if (!bindFailed || attempt >= 2) throw e;
      }
    }
  } catch (e) {
    await etcd?.stop();
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

/** What `makeKubeCertificates` made (the PEM texts; the files are in its directory). */
export interface KubeCertificates {
  readonly caPem: string;
  readonly clientCertPem: string;
  readonly clientKeyPem: string;
}

export interface MakeKubeCertificatesOptions {
  /** More addresses the serving certificate is valid for, besides 127.0.0.1 and the service IP. */
  serverIPs?: readonly string[];
  /** Validity of every certificate in days. Default 2 (a test server). */
  validDays?: number;
}

class LocalKubeApiServer implements KubeApiServer {
  readonly url: string;
  readonly kubeconfigPath: string;
  readonly logPath: string;
  readonly caPem: string;
  readonly clientCertPem: string;
  readonly clientKeyPem: string;
  private child: ChildProcess | undefined;
  private stopped = false;
  private readonly startTimeoutMs: number;
  private readonly extraArgs: string[];

  constructor(
    readonly dir: string,
    private readonly port: number,
    files: KubeCertificates,
    readonly etcd: EtcdServer,
    options: StartKubeApiServerOptions,
  ) {
    this.url = `https://127.0.0.1:${port}`;
    this.kubeconfigPath = join(dir, 'kubeconfig');
    this.logPath = join(dir, 'kube-apiserver.log');
    this.caPem = files.caPem;
    this.clientCertPem = files.clientCertPem;
    this.clientKeyPem = files.clientKeyPem;
    this.startTimeoutMs = options.startTimeoutMs ?? 45_000;
    this.extraArgs = options.extraArgs ?? [];
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async writeKubeconfig(): Promise<void> {
    const { url: server, caPem, clientCertPem, clientKeyPem } = this;
    await writeFile(this.kubeconfigPath, adminKubeconfig({ server, caPem, clientCertPem, clientKeyPem }), {
      mode: 0o600,
    });
  }

  private args(): string[] {
    return kubeApiServerArgs({
      dir: this.dir,
      etcdServers: this.etcd.clientUrl,
      address: '127.0.0.1',
      port: this.port,
      extraArgs: this.extraArgs,
    });
  }

  async start(): Promise<void> {
    const log = openSync(this.logPath, 'a');
    let child: ChildProcess;
    try {
      child = spawn(KUBE_APISERVER_BIN, this.args(), { stdio: ['ignore', log, log] });
    } finally {
      closeSync(log);
    }
    this.child = child;
    running.add(child);
    child.once('exit', () => running.delete(child));
    const exited = new Promise<never>((_, reject) => {
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        void logTail(this.logPath).then((tail) =>
          reject(new Error(`kube-apiserver exited (${signal ?? code}) while starting:\n${tail}`)),
        );
      });
    });
    exited.catch(() => undefined);
    const deadline = Date.now() + this.startTimeoutMs;
    while (true) {
      const ready = await Promise.race([this.ready(), exited]);
      if (ready) return;
      if (Date.now() > deadline) {
        throw new Error(
          `kube-apiserver did not answer /readyz ok within ${this.startTimeoutMs} ms:\n` +
            (await logTail(this.logPath)),
        );
      }
      await Promise.race([sleep(100), exited]);
    }
  }

  /** GET /readyz as the admin: ok once storage, RBAC bootstrap and every post-start hook are done. */
  private ready(): Promise<boolean> {
    return new Promise((resolve) => {
      const req = httpsRequest(
        `${this.url}/readyz`,
        { ca: this.caPem, cert: this.clientCertPem, key: this.clientKeyPem, timeout: 2000 },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve(res.statusCode === 200 && body.trim() === 'ok'));
          res.on('error', () => resolve(false));
        },
      );
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy());
      req.end();
    });
  }

  /** Signal our own child only; SIGKILL after 10 s if it does not exit. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  async restart(): Promise<void> {
    if (this.stopped) throw new Error('kube-apiserver test server: restart after stop');
    await this.kill();
    await this.start();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.kill();
    await this.etcd.stop();
    await rm(this.dir, { recursive: true, force: true });
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/** An admin kubeconfig (certificates embedded) for the API server at `server`. */
export function adminKubeconfig(o: {
  readonly server: string;
  readonly caPem: string;
  readonly clientCertPem: string;
  readonly clientKeyPem: string;
  /** Cluster, user and context name stem. Default `calico-ts-test`. */
  readonly name?: string;
}): string {
  const b64 = (pem: string) => Buffer.from(pem).toString('base64');
  const name = o.name ?? 'calico-ts-test';
  const user = o.name ? `${o.name}-admin` : 'calico-ts-admin';
  return `apiVersion: v1
kind: Config
clusters:
- name: ${name}
  cluster:
    server: ${o.server}
    certificate-authority-data: ${b64(o.caPem)}
users:
- name: ${user}
  user:
    client-certificate-data: ${b64(o.clientCertPem)}
    client-key-data: ${b64(o.clientKeyPem)}
contexts:
- name: ${name}
  context:
    cluster: ${name}
    user: ${user}
current-context: ${name}
`;
}

export interface KubeApiServerArgsOptions {
  /** Where `makeKubeCertificates` wrote the certificates and keys (also `--cert-dir`). */
  readonly dir: string;
  /** `--etcd-servers`, e.g. `http://127.0.0.1:2379`. */
  readonly etcdServers: string;
  /** The address it binds and advertises. */
  readonly address: string;
  readonly port: number;
  /** Appended last: a later scalar flag wins, a repeated list flag adds. */
  readonly extraArgs?: readonly string[];
  /**
   * Keep the ServiceAccount admission plugin (it gives pods their token volume): for a cluster
   * whose controller-manager makes the `default` ServiceAccounts. Default false.
   */
  readonly serviceAccountAdmission?: boolean;
}

/**
 * kube-apiserver's arguments: TLS from `makeKubeCertificates`' files, client-certificate
 * authentication, Node+RBAC authorization, service accounts signed with its key, services in a
 * range inside 198.18.0.0/15, the aggregation layer (front-proxy certificate, X-Remote-* headers,
 * routing to endpoint addresses), and no ServiceAccount admission (nothing makes `default`
 * accounts) unless `serviceAccountAdmission`.
 */
export function kubeApiServerArgs(o: KubeApiServerArgsOptions): string[] {
  const p = (name: string) => join(o.dir, name);
  return [
    `--etcd-servers=${o.etcdServers}`,
    `--bind-address=${o.address}`,
    `--advertise-address=${o.address}`,
    `--secure-port=${o.port}`,
    `--cert-dir=${o.dir}`,
    `--tls-cert-file=${p('server.pem')}`,
    `--tls-private-key-file=${p('server-key.pem')}`,
    `--client-ca-file=${p('ca.pem')}`,
    '--authorization-mode=Node,RBAC',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${p('sa.pub')}`,
    `--service-account-signing-key-file=${p('sa-key.pem')}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    // The aggregation layer: requests for an APIService's group are proxied with the front-proxy
    // client certificate and the user in X-Remote-* headers, straight to the Service's endpoint
    // addresses (no kube-proxy needs to run beside the API server).
    `--requestheader-client-ca-file=${p('front-proxy-ca.pem')}`,
    '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${p('front-proxy-client.pem')}`,
    `--proxy-client-key-file=${p('front-proxy-client-key.pem')}`,
    '--enable-aggregator-routing=true',
    // With no controller-manager no `default` ServiceAccount is ever made, and this plugin would
    // reject every pod that names none.
    ...(o.serviceAccountAdmission ? [] : ['--disable-admission-plugins=ServiceAccount']),
    '--allow-privileged=true',
    '--profiling=false',
    '--v=1',
    ...(o.extraArgs ?? []),
  ];
}

/**
 * With openssl into `dir`: a CA; a serving certificate for 127.0.0.1, localhost, the in-cluster
 * `kubernetes` service names and `serverIPs`; an admin client certificate in group system:masters;
 * the service-account signing key pair; and for the aggregation layer a front-proxy CA
 * (`front-proxy-ca.pem`) with the client certificate kube-apiserver proxies with
 * (`front-proxy-client.pem`, CN=front-proxy-client). EC P-256 throughout, so it takes milliseconds.
 */
export async function makeKubeCertificates(
  dir: string,
  options: MakeKubeCertificatesOptions = {},
): Promise<KubeCertificates> {
  const days = String(options.validDays ?? 2);
  const p = (name: string) => join(dir, name);
  const openssl = async (...args: string[]) => {
    const r = await run('openssl', args);
    if (r.code !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr}`);
  };
  const newKey = (file: string) =>
    openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', p(file));
  await Promise.all(
    [
      'ca-key.pem',
      'server-key.pem',
      'admin-key.pem',
      'sa-key.pem',
      'front-proxy-ca-key.pem',
      'front-proxy-client-key.pem',
    ].map(newKey),
  );
  const serverNames = [
    ...(options.serverIPs ?? []).filter((ip) => ip !== '127.0.0.1').map((ip) => `IP:${ip}`),
    'IP:127.0.0.1',
    `IP:${KUBERNETES_SERVICE_IP}`,
    'DNS:localhost',
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    'DNS:kubernetes.default.svc.cluster.local',
  ];
  await Promise.all([
    openssl(
      'req',
      '-x509',
      '-new',
      '-key',
      p('ca-key.pem'),
      '-subj',
      '/CN=calico-ts test kubernetes CA',
      '-days',
      days,
      '-out',
      p('ca.pem'),
    ),
    // The aggregation layer's own CA: it signs only the certificate kube-apiserver presents when
    // it proxies a request to an extension API server (with the user in X-Remote-* headers).
    openssl(
      'req',
      '-x509',
      '-new',
      '-key',
      p('front-proxy-ca-key.pem'),
      '-subj',
      '/CN=calico-ts test front-proxy CA',
      '-days',
      days,
      '-out',
      p('front-proxy-ca.pem'),
    ),
    openssl('pkey', '-in', p('sa-key.pem'), '-pubout', '-out', p('sa.pub')),
    writeFile(
      p('server.ext'),
      `subjectAltName=${serverNames.join(',')}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n`,
    ),
    writeFile(p('client.ext'), 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n'),
  ]);
  const issued = [
    { who: 'server', subject: '/CN=kube-apiserver', ca: 'ca', ext: 'server', serial: '1' },
    { who: 'admin', subject: '/O=system:masters/CN=calico-ts-admin', ca: 'ca', ext: 'client', serial: '2' },
    {
      who: 'front-proxy-client',
      subject: '/CN=front-proxy-client',
      ca: 'front-proxy-ca',
      ext: 'client',
      serial: '1',
    },
  ];
  await Promise.all(
    issued.map(async ({ who, subject, ca, ext, serial }) => {
      await openssl('req', '-new', '-key', p(`${who}-key.pem`), '-subj', subject, '-out', p(`${who}.csr`));
      await openssl(
        'x509',
        '-req',
        '-in',
        p(`${who}.csr`),
        '-CA',
        p(`${ca}.pem`),
        '-CAkey',
        p(`${ca}-key.pem`),
        '-set_serial',
        serial,
        '-days',
        days,
        '-extfile',
        p(`${ext}.ext`),
        '-out',
        p(`${who}.pem`),
      );
    }),
  );
  const [caPem, clientCertPem, clientKeyPem] = await Promise.all([
    readFile(p('ca.pem'), 'utf8'),
    readFile(p('admin.pem'), 'utf8'),
    readFile(p('admin-key.pem'), 'utf8'),
  ]);
  return { caPem, clientCertPem, clientKeyPem };
}

/** The last 4000 characters of a log file, or '' when there is none. */
async function logTail(file: string): Promise<string> {
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  try {
    fh = await open(file, 'r');
    const { size } = await fh.stat();
    const length = Math.min(size, 4000);
    const buf = Buffer.alloc(length);
    await fh.read(buf, 0, length, size - length);
    return buf.toString('utf8');
  } catch {
    return '';
  } finally {
    await fh?.close();
  }
}

function findOnPath(name: string): string | undefined {
  for (const d of (process.env.PATH ?? '').split(delimiter)) {
    if (d && existsSync(join(d, name))) return join(d, name);
  }
  return undefined;
}

function run(cmd: string, args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') {
        reject(error);
        return;
      }
      resolve({ stdout, stderr, code: error ? (error.code as number) : 0 });
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a !== null && typeof a !== 'string' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
