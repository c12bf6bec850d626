/**
 * A one-node lab for Felix's integration test: a private etcd, a node network namespace with a
 * fabric link and default route (so proxy ARP answers for the pods' gateway), the real CNI plugin
 * run inside the node namespace to make pods, the bundled `calico-node -felix` run inside it too, and
 * small TCP/UDP echo agents in the pods. Nothing is created in the host's own network namespace.
 *
 * ```
 *  fabric netns: fab0 198.18.0.1/24 ══veth══ eth0 198.18.0.2/24  node netns (Felix, CNI, routes)
 *                                            127.0.0.1:2379 ─ proxy ─► unix socket ─► test ─► etcd
 *  pod netns ×N: eth0 198.19.x.y/32 ══veth══ cali…  (made by the CNI plugin)
 * ```
 *
 * Every name starts with `felixit-<random>`; `close()` kills the processes it started (by PID),
 * deletes its namespaces and temp dir and stops etcd, also after a failure.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import { createKVStore, type Datastore, KVDatastore } from '@calico-ts/datastore';
import { clusterSeed, type EtcdServer, startEtcd } from '@calico-ts/datastore/testing';

const V3 = 'projectcalico.org/v3';

const PROXY_SRC = `
const net = require('node:net');
const [sock, port] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u); u.pipe(c);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
}).listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

/** TCP and UDP echo on one port. */
const AGENT_SRC = `
const net = require('node:net'); const dgram = require('node:dgram');
const port = Number(process.argv[1]);
net.createServer((c) => { c.on('data', (d) => c.write(d)); c.on('error', () => {}); }).listen(port, '0.0.0.0', () => {
  const u = dgram.createSocket('udp4');
  u.on('message', (m, r) => u.send(m, r.port, r.address));
  u.bind(port, '0.0.0.0', () => process.stdout.write('ready\\n'));
});
`;

/** One probe: exit 0 when an echo comes back within the timeout. */
const PROBE_SRC = `
const [proto, host, port, ms] = process.argv.slice(1);
const done = (ok) => process.exit(ok ? 0 : 1);
setTimeout(() => done(false), Number(ms));
if (proto === 'tcp') {
  const s = require('node:net').connect(Number(port), host, () => s.write('x'));
  s.on('data', () => done(true)); s.on('error', () => done(false));
} else {
  const u = require('node:dgram').createSocket('udp4');
  u.on('message', () => done(true)); u.on('error', () => done(false));
  u.send('x', Number(port), host);
}
`;

/** A TCP client that keeps one connection and sends a byte every 100 ms; prints `echo` per reply. */
const LONG_CONN_SRC = `
const [host, port] = process.argv.slice(1);
const s = require('node:net').connect(Number(port), host, () => {
  process.stdout.write('connected\\n');
  setInterval(() => s.write('x'), 100);
});
s.on('data', (d) => process.stdout.write('echo ' + d.length + '\\n'));
s.on('error', (e) => { process.stdout.write('error ' + e.message + '\\n'); process.exit(2); });
s.on('close', () => { process.stdout.write('closed\\n'); process.exit(3); });
`;

/** Prints the status code, a newline, then the body; exit 1 when the request fails. */
const HTTP_GET_SRC = `
const req = require('node:http').get(process.argv[1], { timeout: 3000 }, (res) => {
  let body = '';
  res.setEncoding('utf8');
  res.on('data', (d) => { body += d; });
  res.on('end', () => process.stdout.write(res.statusCode + '\\n' + body));
});
req.on('timeout', () => req.destroy(new Error('timeout')));
req.on('error', (e) => { process.stderr.write(String(e)); process.exit(1); });
`;

export interface Pod {
  readonly namespace: string;
  readonly name: string;
  /** The pod's network namespace name (under /run/netns). */
  readonly netns: string;
  readonly ip: string;
  readonly iface: string;
  readonly wepName: string;
}

export class FelixLab {
  readonly id = `felixit-${randomBytes(3).toString('hex')}`;
  readonly nodeName = 'felix-node-1';
  etcd!: EtcdServer;
  ds!: Datastore;
  tmp!: string;
  readonly #namespaces: string[] = [];
  readonly #children = new Set<ChildProcess>();
  #unix: Server | undefined;
  #proxy: ChildProcess | undefined;
  #seq = 0;

  get node(): string {
    return `${this.id}-node`;
  }

  get fabric(): string {
    return `${this.id}-fab`;
  }

  async start(): Promise<void> {
    this.tmp = await mkdtemp(join(tmpdir(), `${this.id}-`));
    this.etcd = await startEtcd();
    const kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: this.etcd.endpoints });
    this.ds = new KVDatastore(kv, { backend: 'etcdv3' });

    const sock = join(this.tmp, 'etcd.sock');
    const port = Number(new URL(this.etcd.clientUrl).port);
    this.#unix = createServer((c) => {
      const u = createConnection(port, '127.0.0.1');
      c.pipe(u);
      u.pipe(c);
      c.on('error', () => u.destroy());
      u.on('error', () => c.destroy());
    });
    await new Promise<void>((resolve) => this.#unix!.listen(sock, resolve));

    this.#netns(this.fabric);
    this.#netns(this.node);
    vethToFabric(this.fabric, 'fab0', this.node);
    ip(['-n', this.fabric, 'addr', 'add', '198.18.0.1/24', 'dev', 'fab0']);
    ip(['-n', this.fabric, 'link', 'set', 'fab0', 'up']);
    ip(['-n', this.node, 'addr', 'add', '198.18.0.2/24', 'dev', 'eth0']);
    ip(['-n', this.node, 'link', 'set', 'eth0', 'up']);
    ip(['-n', this.node, 'route', 'add', 'default', 'via', '198.18.0.1']);
    await writeFile(join(this.tmp, 'nodename'), this.nodeName);
    this.#proxy = this.spawnIn(this.node, process.execPath, ['-e', PROXY_SRC, sock, '2379']);
    await firstLine(this.#proxy, 'ready');
  }

  /**
   * Cuts (`false`) or restores (`true`) the node's path to etcd without touching etcd: the proxy
   * in the node namespace is stopped (SIGSTOP) or continued, so connections through it go silent
   * as across a partition, while the test's own client (direct to etcd) can still write.
   */
  setEtcdLink(up: boolean): void {
    const pid = this.#proxy?.pid;
    if (pid === undefined) throw new Error('the lab is not started');
    process.kill(pid, up ? 'SIGCONT' : 'SIGSTOP');
  }

  /** Cluster resources calico-node, calicoctl and kube-controllers would have written. */
  async seed(namespaces: Record<string, Record<string, string>>): Promise<void> {
    for (const r of clusterSeed({ clusterGUID: randomBytes(16).toString('hex') })) {
      await this.ds.create(r as Resource & { kind: 'IPPool' });
    }
    await this.create({
      apiVersion: V3,
      kind: 'Node',
      metadata: { name: this.nodeName },
      spec: { bgp: { ipv4Address: '198.18.0.2/24' } },
    });
    for (const [ns, labels] of Object.entries(namespaces)) await this.putNamespace(ns, labels);
  }

  /** The Profile kube-controllers keeps for a Kubernetes namespace: allow-all, `pcns.` labels. */
  async putNamespace(ns: string, labels: Record<string, string>): Promise<void> {
    const labelsToApply: Record<string, string> = { 'pcns.projectcalico.org/name': ns };
    for (const [k, v] of Object.entries(labels)) labelsToApply[`pcns.${k}`] = v;
    await this.ds.apply({
      apiVersion: V3,
      kind: 'Profile',
      metadata: { name: `kns.${ns}` },
      spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }], labelsToApply },
    } as Resource & { kind: 'Profile' });
  }

  async create(r: Record<string, unknown>): Promise<void> {
    await this.ds.create(r as unknown as Resource & { kind: 'IPPool' });
  }

  /** A pod made by the real CNI plugin (ADD) run in the node namespace, as a runtime would. */
  async addPod(
    cniBin: string,
    namespace: string,
    name: string,
    opts: { ipv4Pools?: string[] } = {},
  ): Promise<Pod> {
    const netns = `${this.id}-p${++this.#seq}`;
    this.#netns(netns);
    const cid = randomBytes(16).toString('hex');
    const conf = JSON.stringify({
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'calico',
      log_level: 'warning',
      ipam: { type: 'calico-ipam', ...(opts.ipv4Pools ? { ipv4_pools: opts.ipv4Pools } : {}) },
      // No policy.type k8s: that makes the plugin read the Pod from a Kubernetes API, and this lab
      // has none. The namespace's profile is set below, as the plugin would from the Pod.
      nodename_file: join(this.tmp, 'nodename'),
      ipam_lock_file: join(this.tmp, 'ipam.lock'),
      etcd_endpoints: 'http://127.0.0.1:2379',
    });
    const r = await runCapture(
      'nsenter',
      [`--net=/run/netns/${this.node}`, join(cniBin, 'calico')],
      {
        PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: cid,
        CNI_NETNS: `/run/netns/${netns}`,
        CNI_IFNAME: 'eth0',
        CNI_PATH: cniBin,
        CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${name};K8S_POD_INFRA_CONTAINER_ID=${cid}`,
      },
      conf,
    );
    if (r.code !== 0)
      throw new Error(`CNI ADD of ${namespace}/${name} failed (${r.code}): ${r.stdout}${r.stderr}`);
    const result = JSON.parse(r.stdout) as { ips: { address: string }[]; interfaces: { name: string }[] };
    const weps = await this.ds.list('WorkloadEndpoint', { namespace });
    const wep = weps.items.find((w) => w.spec.pod === name);
    if (!wep) throw new Error(`no WorkloadEndpoint for ${namespace}/${name}`);
    wep.spec.profiles = [`kns.${namespace}`];
    await this.ds.update(wep as typeof wep & { kind: 'WorkloadEndpoint' });
    return {
      namespace,
      name,
      netns,
      ip: result.ips[0]!.address.split('/')[0]!,
      iface: result.interfaces[0]!.name,
      wepName: wep.metadata.name,
    };
  }

  /** What kube-controllers' pod controller does: copy the pod's labels (and named ports) to its WEP. */
  async setPodLabels(
    pod: Pod,
    labels: Record<string, string>,
    ports?: { name: string; protocol: 'TCP' | 'UDP'; port: number }[],
  ): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const wep = await this.ds.get('WorkloadEndpoint', pod.wepName, { namespace: pod.namespace });
      const keep = Object.fromEntries(
        Object.entries(wep.metadata.labels ?? {}).filter(([k]) => k.startsWith('projectcalico.org/')),
      );
      wep.metadata.labels = { ...keep, ...labels };
      if (ports) wep.spec.ports = ports;
      try {
        await this.ds.update(wep as typeof wep & { kind: 'WorkloadEndpoint' });
        return;
      } catch (e) {
        if (attempt > 5) throw e;
      }
    }
  }

  /** Starts a long-running process in a namespace; killed by `close()` (or `kill`). */
  spawnIn(netns: string, cmd: string, args: string[], env?: Record<string, string>): ChildProcess {
    const child = spawn('nsenter', [`--net=/run/netns/${netns}`, cmd, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(env ? { env } : {}),
    });
    this.#children.add(child);
    child.once('exit', () => this.#children.delete(child));
    return child;
  }

  /** Starts the TCP/UDP echo agent in a pod on `port`. */
  async startAgent(pod: Pod, port: number): Promise<void> {
    await firstLine(this.spawnIn(pod.netns, process.execPath, ['-e', AGENT_SRC, String(port)]), 'ready');
  }

  /** True when `proto` traffic from the pod to `host:port` gets its echo back within `ms`. */
  async reach(from: Pod, proto: 'tcp' | 'udp', host: string, port: number, ms = 700): Promise<boolean> {
    const r = await runCapture('nsenter', [
      `--net=/run/netns/${from.netns}`,
      process.execPath,
      '-e',
      PROBE_SRC,
      proto,
      host,
      String(port),
      String(ms),
    ]);
    return r.code === 0;
  }

  async ping(from: Pod, host: string): Promise<boolean> {
    const r = await runCapture('nsenter', [
      `--net=/run/netns/${from.netns}`,
      'ping',
      '-c',
      '1',
      '-w',
      '1',
      '-q',
      host,
    ]);
    return r.code === 0;
  }

  /** A kept-open TCP connection from the pod; its output lines are collected. */
  longConnection(from: Pod, host: string, port: number): { child: ChildProcess; lines: string[] } {
    const child = this.spawnIn(from.netns, process.execPath, ['-e', LONG_CONN_SRC, host, String(port)]);
    const lines: string[] = [];
    collectLines(child, lines);
    return { child, lines };
  }

  /** `nft …` inside the node namespace. */
  nft(args: string[]): string {
    return execFileSync('nsenter', [`--net=/run/netns/${this.node}`, 'nft', ...args], { encoding: 'utf8' });
  }

  /** HTTP GET from inside the node namespace: the status code and body (0 when nothing answered). */
  async httpGet(url: string): Promise<{ status: number; body: string }> {
    const r = await runCapture('nsenter', [
      `--net=/run/netns/${this.node}`,
      process.execPath,
      '-e',
      HTTP_GET_SRC,
      url,
    ]);
    const i = r.stdout.indexOf('\n');
    if (r.code !== 0 || i < 0) return { status: 0, body: r.stderr };
    return { status: Number(r.stdout.slice(0, i)), body: r.stdout.slice(i + 1) };
  }

  async close(): Promise<void> {
    for (const c of [...this.#children]) {
      if (c.pid !== undefined && c.exitCode === null && c.signalCode === null) {
        try {
          process.kill(c.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    for (const ns of [...this.#namespaces].reverse()) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {
        // already gone
      }
    }
    this.#unix?.close();
    await this.ds?.close().catch(() => {});
    await this.etcd?.stop().catch(() => {});
    if (this.tmp) await rm(this.tmp, { recursive: true, force: true });
  }

  #netns(name: string): void {
    execFileSync('ip', ['netns', 'add', name]);
    this.#namespaces.push(name);
    ip(['-n', name, 'link', 'set', 'lo', 'up']);
  }
}

/** A veth pair: `fabricIf` in namespace `fabric`, `eth0` in namespace `netns`. */
export function vethToFabric(fabric: string, fabricIf: string, netns: string): void {
  ip(['link', 'add', fabricIf, 'netns', fabric, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
}

function ip(args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

export function collectLines(child: ChildProcess, into: string[], log?: WriteStream): void {
  let buf = '';
  child.stdout?.on('data', (b: Buffer) => {
    log?.write(b);
    buf += b.toString('utf8');
    let i = buf.indexOf('\n');
    while (i >= 0) {
      into.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
      i = buf.indexOf('\n');
    }
  });
  child.stderr?.on('data', (b: Buffer) => {
    log?.write(b);
    into.push(
      ...b
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => `stderr: ${l}`),
    );
  });
}

export function logFile(path: string): WriteStream {
  return createWriteStream(path, { flags: 'a' });
}

/** Resolves when the child prints the line `want`; rejects when it exits first. */
export function firstLine(child: ChildProcess, want: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (b: Buffer) => {
      err += b.toString();
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`process exited (${code}) before "${want}": ${err}`)));
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes(want)) resolve();
    });
  });
}

export function runCapture(
  cmd: string,
  args: string[],
  env?: Record<string, string>,
  stdin?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      ...(env ? { env } : {}),
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    if (stdin !== undefined) {
      child.stdin!.on('error', () => {});
      child.stdin!.end(stdin);
    }
    child.on('close', (code) =>
      resolve({
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });
}
