/**
 * A two-node lab for the VXLAN integration test: a private etcd, a fabric namespace with a bridge,
 * two node namespaces on it, the real CNI plugin and the bundled `calico-node -felix` run inside each
 * node, and TCP/UDP echo agents in the pods. Nothing is created in the host's own namespace.
 *
 * ```
 *  fabric netns: br0 198.18.0.1/24 ─┬─ fab1 ══veth══ eth0 198.18.0.2/24  node-1 netns (Felix, CNI)
 *                                   └─ fab2 ══veth══ eth0 198.18.0.3/24  node-2 netns (Felix, CNI)
 *  each node: 127.0.0.1:2379 ─ proxy ─► unix socket ─► test process ─► etcd
 *  pod netns: eth0 198.19.x.y/32 ══veth══ cali… in its node (made by the CNI plugin)
 * ```
 *
 * Every name starts with `vxlanit-<random>`; `close()` kills the processes it started (by PID),
 * deletes its namespaces and temp dir and stops etcd, also after a failure.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import { createKVStore, type Datastore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import { type EtcdServer, startEtcd } from '@calico-ts/datastore/testing';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { FELIX_ARGS } from './felix-executable.js';
import { collectLines, logFile, runCapture, vethToFabric } from './felix-lab.js';

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

const AGENT_SRC = `
const net = require('node:net'); const dgram = require('node:dgram');
const port = Number(process.argv[1]);
net.createServer((c) => { c.on('data', (d) => c.write(d)); c.on('error', () => {}); }).listen(port, '0.0.0.0', () => {
  const u = dgram.createSocket('udp4');
  u.on('message', (m, r) => u.send(m, r.port, r.address));
  u.bind(port, '0.0.0.0', () => process.stdout.write('ready\\n'));
});
`;

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

export interface LabNode {
  readonly name: string;
  /** Network namespace name. */
  readonly netns: string;
  readonly ip: string;
  readonly dir: string;
}

export interface LabPod {
  readonly node: LabNode;
  readonly namespace: string;
  readonly name: string;
  readonly netns: string;
  readonly ip: string;
  readonly iface: string;
}

export class VxlanLab {
  readonly id = `vxlanit-${randomBytes(3).toString('hex')}`;
  etcd!: EtcdServer;
  kv!: KVStore;
  ds!: Datastore;
  ipam!: IpamClient;
  tmp!: string;
  readonly nodes: LabNode[] = [];
  readonly #namespaces: string[] = [];
  readonly #children = new Set<ChildProcess>();
  readonly logs = new Map<string, string[]>();
  #unix: Server | undefined;
  #seq = 0;

  get fabric(): string {
    return `${this.id}-fab`;
  }

  async start(nodeCount = 2): Promise<void> {
    this.tmp = await mkdtemp(join(tmpdir(), `${this.id}-`));
    this.etcd = await startEtcd();
    this.kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: this.etcd.endpoints });
    this.ds = new KVDatastore(this.kv, { backend: 'etcdv3' });
    this.ipam = new IpamClient(this.ds, new IpamStore(this.kv));

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
    ip(['-n', this.fabric, 'link', 'add', 'br0', 'type', 'bridge']);
    ip(['-n', this.fabric, 'addr', 'add', '198.18.0.1/24', 'dev', 'br0']);
    ip(['-n', this.fabric, 'link', 'set', 'br0', 'up']);
    for (let i = 1; i <= nodeCount; i++) {
      const netns = `${this.id}-n${i}`;
      const node: LabNode = {
        name: `node-${i}`,
        netns,
        ip: `198.18.0.${i + 1}`,
        dir: join(this.tmp, `node-${i}`),
      };
      await mkdir(node.dir);
      this.#attach(netns, `fab${i}`, node.ip);
      // A host has a default route; proxy ARP for the pods' gateway needs one to answer.
      ip(['-n', netns, 'route', 'add', 'default', 'via', '198.18.0.1']);
      await writeFile(join(node.dir, 'nodename'), node.name);
      const proxy = this.spawnIn(netns, process.execPath, ['-e', PROXY_SRC, sock, '2379']);
      await firstLine(proxy, 'ready');
      this.nodes.push(node);
    }
  }

  /** A namespace on the fabric at `address`/24 that runs nothing of Calico (another host). */
  addHost(suffix: string, address: string): string {
    const netns = `${this.id}-${suffix}`;
    this.#attach(netns, `fab-${suffix}`.slice(0, 15), address);
    return netns;
  }

  /** A new namespace whose `eth0` is at `address`/24 on the fabric bridge (its end: `fabricIf`). */
  #attach(netns: string, fabricIf: string, address: string): void {
    this.#netns(netns);
    vethToFabric(this.fabric, fabricIf, netns);
    ip(['-n', this.fabric, 'link', 'set', fabricIf, 'master', 'br0', 'up']);
    ip(['-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
    ip(['-n', netns, 'link', 'set', 'eth0', 'up']);
  }

  /** What calico-node and calicoctl would have written: cluster info, the pool, Nodes, namespaces. */
  async seed(pool: Record<string, unknown>, namespaces: string[]): Promise<void> {
    await this.create({
      apiVersion: V3,
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: {
        clusterGUID: randomBytes(16).toString('hex'),
        clusterType: 'k8s,bgp',
        calicoVersion: 'v3.32.1',
        datastoreReady: true,
      },
    });
    await this.create({
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'default-ipv4-ippool' },
      spec: pool,
    });
    for (const n of this.nodes) {
      await this.create({
        apiVersion: V3,
        kind: 'Node',
        metadata: { name: n.name },
        spec: { bgp: { ipv4Address: `${n.ip}/24` } },
      });
    }
    for (const ns of namespaces) {
      await this.create({
        apiVersion: V3,
        kind: 'Profile',
        metadata: { name: `kns.${ns}` },
        spec: {
          ingress: [{ action: 'Allow' }],
          egress: [{ action: 'Allow' }],
          labelsToApply: { 'pcns.projectcalico.org/name': ns },
        },
      });
    }
  }

  async create(r: Record<string, unknown>): Promise<void> {
    await this.ds.create(r as unknown as Resource & { kind: 'IPPool' });
  }

  /** Starts the bundled Felix in a node; its output lines are kept in `logs` and a file. */
  startFelix(node: LabNode, felixBin: string, extraEnv: Record<string, string> = {}): ChildProcess {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      FELIX_FELIXHOSTNAME: node.name,
      FELIX_ETCDENDPOINTS: 'http://127.0.0.1:2379',
      FELIX_REPORTINGINTERVALSECS: '0',
      FELIX_ROUTEREFRESHINTERVAL: '2',
      FELIX_MTUFILEPATH: join(node.dir, 'mtu'),
      ...extraEnv,
    };
    const child = this.spawnIn(node.netns, felixBin, [...FELIX_ARGS], env);
    const lines: string[] = [];
    this.logs.set(node.name, lines);
    collectLines(child, lines, logFile(join(node.dir, 'felix.log')));
    return child;
  }

  /** A pod made by the real CNI plugin (ADD) run in the node's namespace, as a runtime would. */
  async addPod(cniBin: string, node: LabNode, namespace: string, name: string): Promise<LabPod> {
    const netns = `${this.id}-p${++this.#seq}`;
    this.#netns(netns);
    const cid = randomBytes(16).toString('hex');
    const conf = JSON.stringify({
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'calico',
      log_level: 'warning',
      mtu: 1450,
      ipam: { type: 'calico-ipam' },
      // No policy.type k8s: that makes the plugin read the Pod from a Kubernetes API, and this lab
      // has none. The namespace's profile is set below, as the plugin would from the Pod.
      nodename_file: join(node.dir, 'nodename'),
      ipam_lock_file: join(node.dir, 'ipam.lock'),
      etcd_endpoints: 'http://127.0.0.1:2379',
    });
    const r = await runCapture(
      'nsenter',
      [`--net=/run/netns/${node.netns}`, join(cniBin, 'calico')],
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
    const wep = (await this.ds.list('WorkloadEndpoint', { namespace })).items.find(
      (w) => w.spec.pod === name,
    );
    if (!wep) throw new Error(`no WorkloadEndpoint for ${namespace}/${name}`);
    wep.spec.profiles = [`kns.${namespace}`];
    await this.ds.update(wep as typeof wep & { kind: 'WorkloadEndpoint' });
    return {
      node,
      namespace,
      name,
      netns,
      ip: result.ips[0]!.address.split('/')[0]!,
      iface: result.interfaces[0]!.name,
    };
  }

  spawnIn(netns: string, cmd: string, args: string[], env?: Record<string, string>): ChildProcess {
    const child = spawn('nsenter', [`--net=/run/netns/${netns}`, cmd, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(env ? { env } : {}),
    });
    this.#children.add(child);
    child.once('exit', () => this.#children.delete(child));
    return child;
  }

  async startAgent(pod: LabPod, port: number): Promise<void> {
    await firstLine(this.spawnIn(pod.netns, process.execPath, ['-e', AGENT_SRC, String(port)]), 'ready');
  }

  async reach(from: LabPod, proto: 'tcp' | 'udp', host: string, port: number, ms = 1000): Promise<boolean> {
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

  async ping(from: LabPod, host: string, count = 1): Promise<boolean> {
    const r = await runCapture('nsenter', [
      `--net=/run/netns/${from.netns}`,
      'ping',
      '-c',
      String(count),
      '-i',
      '0.2',
      '-w',
      String(count + 1),
      '-q',
      host,
    ]);
    return r.code === 0;
  }

  /** `ip -json …` (or `bridge -json …`) inside a node, parsed. */
  json<T = Record<string, unknown>[]>(node: LabNode, tool: 'ip' | 'bridge', args: string[]): T {
    const out = execFileSync(tool, ['-n', node.netns, '-json', ...args], { encoding: 'utf8' });
    return JSON.parse(out === '' ? '[]' : out) as T;
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

function ip(args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function firstLine(child: ChildProcess, want: string): Promise<void> {
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
