/// <reference lib="esnext.disposable" />
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A private etcd 3.4 member for integration tests: loopback only, random free ports, its data in a
 * fresh temp dir, removed on `stop()`.
 *
 * Design: one child process per server, started with a fixed argument list so `restart()` brings the
 * same member back on the same ports and data. Only the PID this helper spawned is ever signalled.
 * A process-exit hook kills servers a crashed test left behind.
 */
export interface EtcdServer {
  /** Client URLs, e.g. `['http://127.0.0.1:41234']`. */
  readonly endpoints: string[];
  readonly clientUrl: string;
  /** Present with `tls: true`: the CA and the client certificate a client must present. */
  readonly tls?: EtcdTlsFiles;
  readonly dataDir: string;
  /** PID of the running member (changes on restart). */
  readonly pid: number | undefined;
  /** Kill the member (only the PID started here) and remove its temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Stop the member and start it again on the same ports with the same data; resolves when healthy. */
  restart(): Promise<void>;
  /** Compact history before `revision` (physical, so it is done when this resolves). */
  compact(revision: string | number): Promise<void>;
  /** Run the real `etcdctl` (API v3) against this member, with its TLS files when set. */
  etcdctl(args: string[], options?: { stdin?: string }): Promise<EtcdctlResult>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface EtcdTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

export interface EtcdctlResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface StartEtcdOptions {
  /** Serve clients over TLS and require client certificates signed by a CA made for this server. */
  tls?: boolean;
  /** How long to wait for the member to become healthy. Default 20 s. */
  startTimeoutMs?: number;
}

const ETCD_BIN = process.env.CALICO_TEST_ETCD_BIN ?? '/usr/bin/etcd';
const ETCDCTL_BIN = process.env.CALICO_TEST_ETCDCTL_BIN ?? '/usr/bin/etcdctl';

/**
 * Whether integration tests needing etcd should run. Under `CI=true` always true: there a missing
 * binary must make `startEtcd` throw and the test fail, never skip.
 */
export function etcdAvailable(): boolean {
  return process.env.CI === 'true' || (existsSync(ETCD_BIN) && existsSync(ETCDCTL_BIN));
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

export async function startEtcd(options: StartEtcdOptions = {}): Promise<EtcdServer> {
  for (const bin of [ETCD_BIN, ETCDCTL_BIN]) {
    if (!existsSync(bin)) {
      throw new Error(
        `etcd test server: ${bin} not found (install Debian package etcd-server / etcd-client)`,
      );
    }
  }
  installExitHook();
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const dir = await mkdtemp(join(base, 'calico-ts-etcd-'));
  try {
    const tls = options.tls ? await makeEtcdCertificates(dir) : undefined;
    // Ports are picked free, then bound by etcd; another process can take one in between, so a
    // start that fails is retried on new ports.
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const [clientPort, peerPort] = await freePorts(2);
      const server = new LocalEtcd(dir, clientPort!, peerPort!, tls, options.startTimeoutMs ?? 20_000);
      try {
        await server.start();
        return server;
      } catch (e) {
        lastError = e;
        await server.kill();
      }
    }
    throw lastError;
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

class LocalEtcd implements EtcdServer {
  readonly endpoints: string[];
  readonly clientUrl: string;
  readonly dataDir: string;
  private child: ChildProcess | undefined;
  private stderrTail = '';
  private stopped = false;

  constructor(
    private readonly dir: string,
    clientPort: number,
    private readonly peerPort: number,
    readonly tls: EtcdTlsFiles | undefined,
    private readonly startTimeoutMs: number,
  ) {
    this.clientUrl = `${tls ? 'https' : 'http'}://127.0.0.1:${clientPort}`;
    this.endpoints = [this.clientUrl];
    this.dataDir = join(dir, 'data');
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    const peerUrl = `http://127.0.0.1:${this.peerPort}`;
    const args = [
      '--name=calico-test',
      `--data-dir=${this.dataDir}`,
      `--listen-client-urls=${this.clientUrl}`,
      `--advertise-client-urls=${this.clientUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=calico-test=${peerUrl}`,
      '--initial-cluster-state=new',
      '--logger=zap',
      '--log-outputs=stderr',
      '--log-level=warn',
      '--enable-v2=false',
    ];
    if (this.tls) {
      args.push(
        `--cert-file=${join(this.dir, 'server.pem')}`,
        `--key-file=${join(this.dir, 'server-key.pem')}`,
        `--trusted-ca-file=${this.tls.caFile}`,
        '--client-cert-auth',
      );
    }
    this.stderrTail = '';
    const child = spawn(ETCD_BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    running.add(child);
    child.once('exit', () => running.delete(child));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-4000);
    });
    const exited = new Promise<never>((_, reject) => {
      child.once('error', reject);
      child.once('exit', (code, signal) =>
        reject(new Error(`etcd exited (${signal ?? code}) while starting:\n${this.stderrTail}`)),
      );
    });
    exited.catch(() => undefined);
    const deadline = Date.now() + this.startTimeoutMs;
    while (true) {
      const healthy = await Promise.race([this.healthy(), exited]);
      if (healthy) return;
      if (Date.now() > deadline) {
        throw new Error(`etcd did not become healthy within ${this.startTimeoutMs} ms:\n${this.stderrTail}`);
      }
      await Promise.race([sleep(50), exited]);
    }
  }

  /** GET /health on the client URL (with the client certificate under TLS). */
  private healthy(): Promise<boolean> {
    return new Promise((resolve) => {
      const url = `${this.clientUrl}/health`;
      const opts = this.tls
        ? { ca: this.tls.ca, cert: this.tls.cert, key: this.tls.key, timeout: 1000 }
        : { timeout: 1000 };
      const req = (this.tls ? httpsRequest : httpRequest)(url, opts, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve(res.statusCode === 200 && body.includes('"health":"true"')));
        res.on('error', () => resolve(false));
      });
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy());
      req.end();
    });
  }

  /** Signal our own child only; SIGKILL after 5 s if it does not exit. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }

  async restart(): Promise<void> {
    if (this.stopped) throw new Error('etcd test server: restart after stop');
    await this.kill();
    await this.start();
  }

  async compact(revision: string | number): Promise<void> {
    const r = await this.etcdctl(['compact', String(revision), '--physical']);
    if (r.code !== 0) throw new Error(`etcdctl compact ${revision} failed (${r.code}): ${r.stderr.trim()}`);
  }

  etcdctl(args: string[], options: { stdin?: string } = {}): Promise<EtcdctlResult> {
    const base = [`--endpoints=${this.clientUrl}`, '--dial-timeout=5s', '--command-timeout=10s'];
    if (this.tls) {
      base.push(`--cacert=${this.tls.caFile}`, `--cert=${this.tls.certFile}`, `--key=${this.tls.keyFile}`);
    }
    return run(ETCDCTL_BIN, [...base, ...args], { ...process.env, ETCDCTL_API: '3' }, options.stdin);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, stdin?: string): Promise<EtcdctlResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') {
        reject(error);
        return;
      }
      resolve({ stdout, stderr, code: error ? (error.code as number) : 0 });
    });
    if (stdin !== undefined) child.stdin?.end(stdin);
    else child.stdin?.end();
  });
}

async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const s = createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const a = s.address();
    if (a === null || typeof a === 'string') throw new Error('no port');
    return a.port;
  });
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export interface MakeEtcdCertificatesOptions {
  /** Addresses the server certificate is valid for besides 127.0.0.1 and localhost. */
  readonly serverIPs?: readonly string[];
  /** Default 2. */
  readonly validDays?: number;
  /** The server certificate's CN. Default `calico-ts test server`. */
  readonly serverCN?: string;
  /** The client certificate's CN. Default `calico-ts test client`. */
  readonly clientCN?: string;
}

/**
 * With openssl into `dir`: a CA (`ca.pem`), a server certificate (`server.pem`, `server-key.pem`)
 * for 127.0.0.1, localhost and `serverIPs`, and a client certificate (`client.pem`,
 * `client-key.pem`); EC P-256, so it takes milliseconds. Returns the client's files and contents.
 */
export async function makeEtcdCertificates(
  dir: string,
  options: MakeEtcdCertificatesOptions = {},
): Promise<EtcdTlsFiles> {
  const days = String(options.validDays ?? 2);
  const sans = ['IP:127.0.0.1', 'DNS:localhost', ...(options.serverIPs ?? []).map((ip) => `IP:${ip}`)];
  const p = (name: string) => join(dir, name);
  const openssl = async (...args: string[]) => {
    const r = await run('openssl', args, process.env);
    if (r.code !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr}`);
  };
  const newKey = (file: string) =>
    openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', p(file));
  await Promise.all([newKey('ca-key.pem'), newKey('server-key.pem'), newKey('client-key.pem')]);
  await openssl(
    'req',
    '-x509',
    '-new',
    '-key',
    p('ca-key.pem'),
    '-subj',
    '/CN=calico-ts test CA',
    '-days',
    days,
    '-out',
    p('ca.pem'),
  );
  await writeFile(
    p('server.ext'),
    `subjectAltName=${sans.join(',')}\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n`,
  );
  await writeFile(
    p('client.ext'),
    'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
  );
  const cns = {
    server: options.serverCN ?? 'calico-ts test server',
    client: options.clientCN ?? 'calico-ts test client',
  };
  for (const who of ['server', 'client'] as const) {
    await openssl(
      'req',
      '-new',
      '-key',
      p(`${who}-key.pem`),
      '-subj',
      `/CN=${cns[who]}`,
      '-out',
      p(`${who}.csr`),
    );
    await openssl(
      'x509',
      '-req',
      '-in',
      p(`${who}.csr`),
      '-CA',
      p('ca.pem'),
      '-CAkey',
      p('ca-key.pem'),
      '-CAcreateserial',
      '-days',
      days,
      '-extfile',
      p(`${who}.ext`),
      '-out',
      p(`${who}.pem`),
    );
  }
  const [ca, cert, key] = await Promise.all([
    readFile(p('ca.pem')),
    readFile(p('client.pem')),
    readFile(p('client-key.pem')),
  ]);
  return { caFile: p('ca.pem'), certFile: p('client.pem'), keyFile: p('client-key.pem'), ca, cert, key };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
