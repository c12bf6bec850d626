/**
 * A small test lab for the CNI plugin: a private datastore (etcd, or a kube-apiserver with the
 * Calico CRDs for the Kubernetes datastore), "node" network namespaces that stand in for hosts,
 * pod namespaces, and a way to run the built plugin inside a node namespace, as a container
 * runtime on that host would. Nothing is created in the host's own network namespace.
 *
 * ```
 *  fabric netns: br0 198.18.0.1/24 ── vn<i> ══veth══ eth0 198.18.0.(10+i)/24  node netns <i>
 *                                                     default via 198.18.0.1 (so proxy ARP answers)
 *                                                     127.0.0.1:<P> ─ proxy ─┐
 *  test process: unix socket ◄────────────────────────────────────────────────┘ ─► datastore
 *     etcd:       P = 2379, the test's etcd on 127.0.0.1:<its port>
 *     kubernetes: P = the kube-apiserver's own port, so its admin kubeconfig works unchanged
 * ```
 *
 * The datastore listens on the test process's loopback; a node namespace cannot reach that, so
 * each node runs a tiny TCP→unix-socket forwarder on its own 127.0.0.1:<P>, and the test process
 * forwards the unix socket to the datastore (a unix socket is a file, visible from every network
 * namespace).
 *
 * Every name starts with `cnitest-<random>`; `close()` kills the processes it started (by PID),
 * deletes its namespaces and temp dir and stops the datastore, also after a failure.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKVStore, type Datastore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import { connectionFromKubeconfig, KubeHttp } from '@calico-ts/datastore/kube';
import {
  clusterSeed,
  type EtcdServer,
  findKubectl,
  type KubeApiServer,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { IpamStore } from '@calico-ts/ipam';
import { Netlinux } from '@calico-ts/netlinux';

/** The Calico CRDs a Kubernetes-datastore cluster has installed. */
export const CRDS = join(import.meta.dirname, '../../../deploy/crds/calico-crds.yaml');

export type LabDatastore = 'etcdv3' | 'kubernetes';

export const net = new Netlinux();

export interface NodeNs {
  name: string;
  /** Path usable as CNI_NETNS-style argument and by nsenter. */
  netns: string;
  ip: string;
  nodenameFile: string;
  /** This node's `ipam_lock_file` (each node is a host of its own). */
  lockFile: string;
  /** This node's `service_socket`: a plugin service listens there after `startServices()`. */
  serviceSocket: string;
}

export interface CniRun {
  code: number | null;
  stdout: string;
  stderr: string;
  // biome-ignore lint/suspicious/noExplicitAny: parsed JSON of the plugin's answer
  json: any;
}

const PROXY_SRC = `
const net = require('node:net');
const [sock, port] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u); u.pipe(c);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
}).listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

export class Lab {
  readonly id = `cnitest-${Math.random().toString(16).slice(2, 8)}`;
  readonly nodes: NodeNs[] = [];
  readonly pods: string[] = [];
  datastore: LabDatastore = 'etcdv3';
  /** The etcd datastore (etcdv3 labs). */
  etcd!: EtcdServer;
  /** The Kubernetes API server (kubernetes labs). */
  api!: KubeApiServer;
  tmp!: string;
  ds!: Datastore;
  ipam!: IpamStore;
  readonly #namespaces: string[] = [];
  readonly #children: ChildProcess[] = [];
  readonly #unixServers: Server[] = [];
  #autoPods = false;
  #podApi: Promise<KubeHttp> | undefined;
  #podSeq = 0;

  get fabric(): string {
    return `${this.id}-fab`;
  }

  /**
   * `kubeApi`: on an etcd lab, also a Kubernetes API server (no Calico CRDs), reachable from the
   * nodes on its own port, for a CNI plugin in Kubernetes mode that reads pods from it.
   * `autoPods`: before each ADD of a Kubernetes pod (K8S_POD_NAMESPACE/K8S_POD_NAME in CNI_ARGS)
   * that the API server does not have, `run` creates it, scheduled to that node, as the scheduler
   * would have before the kubelet ran the plugin (for tests about everything but the Pod).
   */
  async start(
    nodeCount: number,
    datastore: LabDatastore = 'etcdv3',
    opts: { kubeApi?: boolean; autoPods?: boolean } = {},
  ): Promise<void> {
    this.datastore = datastore;
    this.tmp = await mkdtemp(join(tmpdir(), `${this.id}-`));
    let kv: KVStore;
    /** The datastore's port on the test's loopback, and the one the nodes' forwarders listen on. */
    let port: number;
    let nodePort: number;
    if (datastore === 'kubernetes') {
      this.api = await startKubeApiServer();
      await this.kubectl(['apply', '--server-side', '-f', CRDS]);
      await this.kubectl(['wait', '--for', 'condition=established', '--timeout', '60s', 'crd', '--all']);
      kv = await createKVStore({
        datastoreType: 'kubernetes',
        etcdEndpoints: [],
        kubeconfig: this.api.kubeconfigPath,
      });
      port = Number(new URL(this.api.url).port);
      nodePort = port;
    } else {
      this.etcd = await startEtcd({ tls: true });
      const tls = this.etcd.tls!;
      kv = await createKVStore({
        datastoreType: 'etcdv3',
        etcdEndpoints: this.etcd.endpoints,
        etcdCACertFile: tls.caFile,
        etcdCertFile: tls.certFile,
        etcdKeyFile: tls.keyFile,
      });
      port = Number(new URL(this.etcd.clientUrl).port);
      nodePort = 2379;
    }
    this.ds = new KVDatastore(kv, { backend: datastore });
    this.#autoPods = opts.autoPods === true;
    this.ipam = new IpamStore(kv);

    const sock = await this.#forward(join(this.tmp, 'datastore.sock'), port);
    /** The extra API server of an etcd lab: its port, and the socket the nodes reach it through. */
    let apiForward: { sock: string; port: number } | undefined;
    if (opts.kubeApi && datastore !== 'kubernetes') {
      this.api = await startKubeApiServer();
      const apiPort = Number(new URL(this.api.url).port);
      apiForward = { sock: await this.#forward(join(this.tmp, 'kube-api.sock'), apiPort), port: apiPort };
    }

    await this.#addNetns(this.fabric);
    await net.createBridge({ name: 'br0' }, this.fabric);
    await net.addAddr('br0', '198.18.0.1/24', {}, this.fabric);
    await net.setLinkUp('br0', this.fabric);
    for (let i = 1; i <= nodeCount; i++) {
      const name = `${this.id}-n${i}`;
      await this.#addNetns(name);
      const ip = `198.18.0.${10 + i}`;
      await net.createVethPair({ name: `vn${i}`, peerName: 'eth0', peerNetns: name }, this.fabric);
      await net.setLink(`vn${i}`, { master: 'br0', up: true }, this.fabric);
      await net.addAddr('eth0', `${ip}/24`, {}, name);
      await net.setLinkUp('eth0', name);
      await net.addRoute({ dst: 'default', gateway: '198.18.0.1', dev: 'eth0' }, name);
      const nodenameFile = join(this.tmp, `${name}.nodename`);
      await writeFile(nodenameFile, name);
      await this.#startProxy(name, sock, nodePort);
      if (apiForward) await this.#startProxy(name, apiForward.sock, apiForward.port);
      this.nodes.push({
        name,
        netns: `/run/netns/${name}`,
        ip,
        nodenameFile,
        lockFile: join(this.tmp, `${name}.ipam.lock`),
        serviceSocket: join(this.tmp, `${name}.cni-plugin.sock`),
      });
    }
  }

  /** Cluster resources calico-node and calicoctl would have written. */
  async seed(): Promise<void> {
    for (const r of clusterSeed()) await this.ds.create(r as Parameters<Datastore['create']>[0]);
    for (const n of this.nodes) {
      if (this.datastore === 'kubernetes') {
        // The Calico Node is the Kubernetes Node (kubelet registers it), with calico-node's
        // annotations.
        await this.kubectl(
          ['apply', '-f', '-'],
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Node',
            metadata: { name: n.name, annotations: { 'projectcalico.org/IPv4Address': `${n.ip}/24` } },
          }),
        );
        continue;
      }
      await this.ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'Node',
        metadata: { name: n.name },
        spec: { bgp: { ipv4Address: `${n.ip}/24` } },
      } as Parameters<Datastore['create']>[0]);
    }
  }

  async addPod(): Promise<string> {
    const name = `${this.id}-p${++this.#podSeq}`;
    await this.#addNetns(name);
    await net.setLinkUp('lo', name);
    this.pods.push(name);
    return `/run/netns/${name}`;
  }

  /** The datastore fields of a network config pointing at this lab's etcd (through the node proxy). */
  etcdConf(): Record<string, string> {
    const tls = this.etcd.tls!;
    return {
      etcd_endpoints: 'https://127.0.0.1:2379',
      etcd_key_file: tls.keyFile,
      etcd_cert_file: tls.certFile,
      etcd_ca_cert_file: tls.caFile,
    };
  }

  /** The datastore fields of a network config for this lab's API server (Kubernetes datastore). */
  kubeConf(): Record<string, unknown> {
    return { datastore_type: 'kubernetes', kubernetes: { kubeconfig: this.api.kubeconfigPath } };
  }

  /** kubectl against this lab's API server; `input` goes to its stdin. Rejects with its stderr. */
  kubectl(args: string[], input?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        findKubectl() ?? 'kubectl',
        ['--kubeconfig', this.api.kubeconfigPath, ...args],
        { maxBuffer: 64 * 1024 * 1024 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
      );
      child.stdin!.end(input ?? '');
    });
  }

  /** Runs `program` (a path) in the node's network namespace, as a runtime on that node would. */
  async run(
    node: NodeNs,
    program: string,
    env: Record<string, string>,
    stdin: string,
    args: string[] = [],
  ): Promise<CniRun> {
    if (this.#autoPods && env.CNI_COMMAND === 'ADD') {
      const ns = /(?:^|;)K8S_POD_NAMESPACE=([^;]+)/.exec(env.CNI_ARGS ?? '')?.[1];
      const pod = /(?:^|;)K8S_POD_NAME=([^;]+)/.exec(env.CNI_ARGS ?? '')?.[1];
      if (ns && pod) await this.ensurePod(ns, pod, node);
    }
    return runIn(node.netns, program, args, env, stdin);
  }

  /** A Pod `namespace/name` scheduled to `node` (labels `app: <name>`), unless it exists. */
  async ensurePod(namespace: string, name: string, node: NodeNs): Promise<void> {
    this.#podApi ??= connectionFromKubeconfig(this.api.kubeconfigPath).then((c) => new KubeHttp(c));
    const api = await this.#podApi;
    const create = async (path: string, body: unknown) => {
      try {
        await api.request('POST', path, body);
      } catch (e) {
        if ((e as { code?: string }).code !== 'already-exists') throw e;
      }
    };
    await create('/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: namespace },
    });
    await create(`/api/v1/namespaces/${namespace}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace, labels: { app: name } },
      spec: { nodeName: node.name, containers: [{ name: 'c', image: 'registry.invalid/none' }] },
    });
  }

  async close(): Promise<void> {
    for (const c of this.#children) {
      if (c.pid !== undefined && c.exitCode === null) {
        try {
          process.kill(c.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    for (const ns of [...this.#namespaces].reverse()) {
      await net.deleteNetns(ns).catch(() => false);
    }
    for (const s of this.#unixServers) s.close();
    await this.#podApi?.then((a) => a.close()).catch(() => {});
    await this.ds?.close().catch(() => {});
    await this.etcd?.stop().catch(() => {});
    await this.api?.stop().catch(() => {});
    if (this.tmp) await rm(this.tmp, { recursive: true, force: true });
  }

  /** A unix socket at `path` forwarding to 127.0.0.1:`port` of the test process. */
  async #forward(path: string, port: number): Promise<string> {
    const server = createServer((c) => {
      const u = createConnection(port, '127.0.0.1');
      c.pipe(u);
      u.pipe(c);
      c.on('error', () => u.destroy());
      u.on('error', () => c.destroy());
    });
    this.#unixServers.push(server);
    await new Promise<void>((resolve) => server.listen(path, resolve));
    return path;
  }

  async #addNetns(name: string): Promise<void> {
    await net.createNetns(name);
    this.#namespaces.push(name);
    await net.setLinkUp('lo', name);
  }

  async #startProxy(ns: string, sock: string, port: number): Promise<void> {
    const child = spawn(
      'nsenter',
      [`--net=/run/netns/${ns}`, process.execPath, '-e', PROXY_SRC, sock, String(port)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    this.#children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`datastore proxy in ${ns} exited with ${code}`)));
      child.stdout!.once('data', () => resolve());
    });
  }

  /**
   * A plugin service (`<plugin> --serve=<socket>`) in every node namespace, as calico-node would run
   * one; resolves once each answers. `stop()` ends them with SIGTERM and resolves each one's
   * stderr (it reports how many invocations it served).
   */
  async startServices(plugin: string): Promise<{ stop(): Promise<string[]> }> {
    const children = this.nodes.map((n) => {
      const child = this.spawnIn(n.netns, plugin, [`--serve=${n.serviceSocket}`]);
      const err: Buffer[] = [];
      child.stderr!.on('data', (b: Buffer) => err.push(b));
      const exited = new Promise<string>((resolve) =>
        child.once('exit', () => resolve(Buffer.concat(err).toString('utf8'))),
      );
      return { child, node: n, exited };
    });
    for (const { child, node, exited } of children) {
      const deadline = Date.now() + 15_000;
      while (!(await answers(node.serviceSocket))) {
        if (child.exitCode !== null)
          throw new Error(`plugin service in ${node.name} exited: ${await exited}`);
        if (Date.now() > deadline) throw new Error(`plugin service in ${node.name} did not start`);
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    return {
      stop: async () => {
        for (const { child } of children) if (child.exitCode === null) child.kill('SIGTERM');
        return Promise.all(children.map((c) => c.exited));
      },
    };
  }

  /** Starts a long-running process in a namespace; killed by `close()`. */
  spawnIn(netnsPath: string, cmd: string, args: string[]): ChildProcess {
    const child = spawn('nsenter', [`--net=${netnsPath}`, cmd, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#children.push(child);
    return child;
  }
}

/** Something accepts connections on the unix socket `path`. */
export function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection(path);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

export function runIn(
  netnsPath: string,
  program: string,
  args: string[],
  env: Record<string, string>,
  stdin: string,
): Promise<CniRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('nsenter', [`--net=${netnsPath}`, program, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.stdin.on('error', () => {}); // a plugin that exits without reading: its exit code tells
    child.stdin.end(stdin);
    child.on('close', (code) => {
      const stdout = Buffer.concat(out).toString('utf8');
      let json: unknown;
      try {
        json = stdout.trim() ? JSON.parse(stdout) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr: Buffer.concat(err).toString('utf8'), json });
    });
  });
}
