/**
 * Looking at a running lab: `connectivity` (every pod tries every other pod's listener, from inside
 * its own network namespace) and `status` (the control plane: etcd, kube-apiserver with its
 * /readyz, calico-kube-controllers with its `-r` probe; each node's processes, readiness and BGP
 * sessions over BIRD's control socket; pods).
 */
import { join } from 'node:path';
import { BirdControlClient } from '@calico-ts/bird-bridge';
import { bgpPeersOf } from '@calico-ts/calico-node/bgp-health';
import {
  bgpRoleOf,
  isRouteReflectorSession,
  type LabBgpPeer,
  peerLabel,
  sessionWordsOf,
} from './bgp-roles.js';
import { errorMessage } from './errors.js';
import { kubeControllersProbe, runKubectl } from './kube.js';
import { type LabPlan, labFamilies, type NodePlan, usesBird } from './plan.js';
import { type Artifacts, kubectlPath } from './prereqs.js';
import { childNamed, isAlive, type ProcRecord, recordFromPidFile, runAsync } from './processes.js';
import { kubeControllersEnv } from './program-config.js';
import {
  type ConnectivityReport,
  connectivityReport,
  mergeConnectivityReports,
  type PodTarget,
  type ProbeResult,
  table,
} from './render.js';
import type { LabState } from './state.js';
import { nodeReadiness, nsenter } from './up.js';

const PATH = process.env.PATH || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Every pod tries every other pod, once per family in `families` (default: every family the lab's
 * pods have), each family's attempts to the pods' addresses of that family.
 */
export async function measureConnectivity(
  state: LabState,
  arts: Artifacts,
  opts: { protocol: 'tcp' | 'udp'; port: number; timeoutMs: number; families?: readonly (4 | 6)[] },
): Promise<ConnectivityReport> {
  const families = opts.families ?? labFamilies(state.plan);
  const reports: ConnectivityReport[] = [];
  for (const family of families) reports.push(await measureFamily(state, arts, opts, family));
  return mergeConnectivityReports(reports);
}

async function measureFamily(
  state: LabState,
  arts: Artifacts,
  opts: { protocol: 'tcp' | 'udp'; port: number; timeoutMs: number },
  family: 4 | 6,
): Promise<ConnectivityReport> {
  const addressOf = (p: LabState['pods'][number]) => (family === 4 ? p.ip : p.ip6);
  const pods = state.pods.filter((p) => addressOf(p) !== undefined);
  const targets: PodTarget[] = pods.map((p) => ({ id: `${p.namespace}/${p.name}`, ip: addressOf(p)! }));
  const results = new Map<string, ProbeResult[] | Error>();
  await Promise.all(
    pods.map(async (src) => {
      const id = `${src.namespace}/${src.name}`;
      const spec = {
        protocol: opts.protocol,
        timeoutMs: opts.timeoutMs,
        targets: targets.filter((t) => t.id !== id).map((t) => ({ ...t, port: opts.port })),
      };
      const r = await runAsync([...nsenter(src.netns), process.execPath, arts.prober, JSON.stringify(spec)], {
        env: { PATH },
        timeoutMs: opts.timeoutMs + 10_000,
      });
      try {
        if (r.status !== 0) throw new Error((r.stderr || r.stdout).trim() || `probe exited ${r.status}`);
        results.set(id, JSON.parse(r.stdout) as ProbeResult[]);
      } catch (e) {
        results.set(id, e instanceof Error ? e : new Error(String(e)));
      }
    }),
  );
  return connectivityReport(opts.protocol, opts.port, targets, results, family);
}

export interface NodeStatus {
  readonly name: string;
  readonly netns: string;
  readonly ip: string;
  /** The node's IPv6 fabric address, in a lab with IPv6 pods. */
  readonly ip6?: string;
  readonly calicoNode: { pid?: number; running: boolean };
  readonly bird?: { pid?: number; running: boolean };
  readonly ready: boolean;
  readonly readyDetail: string;
  /** Every BGP session of the node's BIRD, with its peer's lab node name and role. */
  readonly peers?: readonly LabBgpPeer[];
  readonly peersError?: string;
  /** `route reflector (clients n2, n3)`, `rr client of n1`, `full mesh`, when one applies. */
  readonly bgpRole?: string;
}

export interface LabStatus {
  readonly name: string;
  readonly mode: string;
  readonly status: string;
  readonly createdAt: string;
  readonly upSeconds?: number;
  readonly stateDir: string;
  readonly datastore: 'etcdv3' | 'kubernetes';
  readonly etcd: { url: string; pid?: number; running: boolean };
  /** The lab's API server; ready = `/readyz` answers ok. */
  readonly apiServer?: {
    url: string;
    pid?: number;
    running: boolean;
    ready: boolean;
    readyDetail: string;
    kubeconfig: string;
  };
  /** calico-kube-controllers; ready = its `-r` probe passes (its status file). */
  readonly kubeControllers?: {
    pid?: number;
    running: boolean;
    ready: boolean;
    readyDetail: string;
    controllers: readonly string[];
    log: string;
  };
  readonly nodes: readonly NodeStatus[];
  readonly namespaces: readonly string[];
  readonly pods: readonly {
    id: string;
    node: string;
    ip?: string;
    ip6?: string;
    netns: string;
    ports: readonly number[];
    namedPorts?: Readonly<Record<string, number>>;
    serviceAccount: string;
    labels: Readonly<Record<string, string>>;
    listener: { pid?: number; running: boolean };
  }[];
}

async function apiServerReady(state: LabState): Promise<{ ready: boolean; readyDetail: string }> {
  try {
    const r = await runKubectl(state.plan, kubectlPath(), ['get', '--raw=/readyz'], { timeoutMs: 10_000 });
    const text = (r.stdout || r.stderr).trim();
    return r.status === 0 && text === 'ok'
      ? { ready: true, readyDetail: 'ready' }
      : { ready: false, readyDetail: text.split('\n').slice(-3).join('; ') || `kubectl exit ${r.status}` };
  } catch (e) {
    return { ready: false, readyDetail: errorMessage(e) };
  }
}

/**
 * The node's BIRD: through the pid file calico-node keeps, or, in a container (`--images`), where
 * that pid is the container's own, as the child of the container's calico-node.
 */
export function birdRecord(state: LabState, node: NodePlan): ProcRecord | undefined {
  if (state.plan.images) {
    const calicoNode = state.processes[`node/${node.name}`];
    return calicoNode ? childNamed(calicoNode, 'bird') : undefined;
  }
  return recordFromPidFile(join(node.runDir, 'bird.pid'), join(node.runDir, 'bird.ctl'));
}

async function nodeStatus(state: LabState, arts: Artifacts, node: NodePlan): Promise<NodeStatus> {
  const plan: LabPlan = state.plan;
  const proc = state.processes[`node/${node.name}`];
  const r = await nodeReadiness(plan, arts, node);
  const base = {
    name: node.name,
    netns: node.netns,
    ip: node.ip,
    ...(node.ip6 !== undefined ? { ip6: node.ip6 } : {}),
    calicoNode: { ...(proc ? { pid: proc.pid } : {}), running: isAlive(proc) },
    ready: r.ok,
    readyDetail: r.ok ? 'ready' : r.message,
  };
  if (!usesBird(plan.mode)) return base;
  const bird = birdRecord(state, node);
  const nodeAt = new Map(
    plan.nodes.flatMap((n) => [[n.ip, n.name] as const, ...(n.ip6 ? [[n.ip6, n.name] as const] : [])]),
  );
  try {
    // Both BIRDs' sessions with IPv6 pods: bird6.ctl is the IPv6 one (upstream's bird6).
    const sockets = ['bird.ctl', ...(labFamilies(plan).includes(6) ? ['bird6.ctl'] : [])];
    const peers: LabBgpPeer[] = [];
    for (const socket of sockets) peers.push(...(await peersOver(join(node.runDir, socket), nodeAt)));
    return { ...base, bird: { ...(bird ? { pid: bird.pid } : {}), running: isAlive(bird) }, peers };
  } catch (e) {
    return { ...base, bird: { running: isAlive(bird) }, peersError: errorMessage(e) };
  }
}

async function peersOver(socket: string, nodeAt: ReadonlyMap<string, string>): Promise<LabBgpPeer[]> {
  const client = new BirdControlClient(socket);
  return Promise.all(
    bgpPeersOf(await client.showProtocols()).map(async (p): Promise<LabBgpPeer> => {
      // `show protocols all` tells whether BIRD reflects routes to this peer.
      const all = await client.command(`show protocols all "${p.protocol}"`).catch(() => undefined);
      const session = all ? sessionWordsOf(all.lines.map((l) => l.text)) : undefined;
      const name = nodeAt.get(p.peerIP);
      return {
        ...p,
        ...(name ? { node: name } : {}),
        rrClient: isRouteReflectorSession(session),
        ...(session ? { session } : {}),
      };
    }),
  );
}

export async function labStatus(state: LabState, arts: Artifacts): Promise<LabStatus> {
  const etcd = state.processes.etcd;
  const api = state.processes['kube-apiserver'];
  const kc = state.processes['kube-controllers'];
  const kube = state.plan.kube?.controllersStatusFile ? state.plan.kube : undefined;
  const [nodes, apiReady, kcReady] = await Promise.all([
    Promise.all(state.plan.nodes.map((n) => nodeStatus(state, arts, n))),
    kube && isAlive(api) ? apiServerReady(state) : undefined,
    kube && isAlive(kc) ? kubeControllersProbe(state.plan, arts, '-r') : undefined,
  ]);
  return {
    name: state.name,
    mode: state.mode,
    status: state.status,
    createdAt: state.createdAt,
    ...(state.upSeconds !== undefined ? { upSeconds: state.upSeconds } : {}),
    stateDir: state.stateDir,
    datastore: state.plan.datastore,
    etcd: { url: state.plan.etcdUrl, ...(etcd ? { pid: etcd.pid } : {}), running: isAlive(etcd) },
    ...(kube
      ? {
          apiServer: {
            url: kube.apiServerUrl,
            ...(api ? { pid: api.pid } : {}),
            running: isAlive(api),
            ...(apiReady ?? { ready: false, readyDetail: 'not running' }),
            kubeconfig: kube.kubeconfig,
          },
          kubeControllers: {
            ...(kc ? { pid: kc.pid } : {}),
            running: isAlive(kc),
            ready: kcReady?.ok ?? false,
            readyDetail: kcReady ? kcReady.message : 'not running',
            controllers: (kubeControllersEnv(state.plan, PATH).ENABLED_CONTROLLERS ?? '').split(','),
            log: kube.controllersLog,
          },
        }
      : {}),
    nodes: withRoles(nodes),
    namespaces: Object.keys(state.k8sNamespaces),
    pods: state.pods.map((p) => ({
      id: `${p.namespace}/${p.name}`,
      node: p.node,
      ...(p.ip ? { ip: p.ip } : {}),
      ...(p.ip6 ? { ip6: p.ip6 } : {}),
      netns: p.netns,
      ports: p.ports,
      ...(p.namedPorts ? { namedPorts: p.namedPorts } : {}),
      serviceAccount: p.serviceAccount ?? 'default',
      labels: p.labels,
      listener: { ...(p.listener ? { pid: p.listener.pid } : {}), running: isAlive(p.listener) },
    })),
  };
}

function withRoles(nodes: NodeStatus[]): NodeStatus[] {
  return nodes.map((n) => {
    const role = bgpRoleOf(n, nodes);
    return role ? { ...n, bgpRole: role } : n;
  });
}

const proc = (p: { pid?: number; running: boolean } | undefined) =>
  p === undefined ? '-' : p.running ? `running (${p.pid})` : p.pid ? `DEAD (${p.pid})` : 'not running';

export function renderStatus(s: LabStatus): string {
  const lines: string[] = [];
  lines.push(
    `lab "${s.name}": ${s.status}, ${s.nodes.length} nodes, mode ${s.mode}, since ${s.createdAt}` +
      (s.upSeconds !== undefined ? ` (up in ${s.upSeconds} s)` : ''),
  );
  lines.push(
    s.datastore === 'kubernetes'
      ? `datastore: kubernetes (Calico's data in the API server)    state: ${s.stateDir}`
      : `datastore: etcdv3 (Calico's data under /calico/ in etcd)    state: ${s.stateDir}`,
  );
  lines.push('');
  const ready = (p: { running: boolean; ready: boolean; readyDetail: string }) =>
    p.running ? (p.ready ? 'yes' : `no: ${p.readyDetail}`) : '-';
  lines.push(
    table(
      ['CONTROL PLANE', 'PROCESS', 'READY', 'DETAIL'],
      [
        ['etcd', proc(s.etcd), s.etcd.running ? 'yes' : '-', s.etcd.url],
        ...(s.apiServer
          ? [
              [
                'kube-apiserver',
                proc(s.apiServer),
                ready(s.apiServer),
                `${s.apiServer.url}, kubeconfig ${s.apiServer.kubeconfig}`,
              ],
            ]
          : []),
        ...(s.kubeControllers
          ? [
              [
                'calico-kube-controllers',
                proc(s.kubeControllers),
                ready(s.kubeControllers),
                `controllers ${s.kubeControllers.controllers.join(',')}, log ${s.kubeControllers.log}`,
              ],
            ]
          : []),
      ],
    ),
  );
  lines.push('');
  lines.push(
    table(
      ['NODE', 'NETNS', 'ADDRESS', 'CALICO-NODE', 'BIRD', 'READY', 'BGP ROLE', 'BGP PEERS'],
      s.nodes.map((n) => [
        n.name,
        n.netns,
        n.ip6 !== undefined ? `${n.ip} ${n.ip6}` : n.ip,
        proc(n.calicoNode),
        proc(n.bird),
        n.ready ? 'yes' : 'no',
        n.bgpRole ?? '-',
        n.peers ? (n.peers.length === 0 ? 'none' : n.peers.map(peerLabel).join(', ')) : (n.peersError ?? '-'),
      ]),
    ),
  );
  for (const n of s.nodes.filter((x) => !x.ready)) lines.push(`  ${n.name} not ready: ${n.readyDetail}`);
  lines.push('');
  lines.push(
    `namespaces: ${s.namespaces.length > 0 ? s.namespaces.join(', ') : 'none (pnpm lab ns create NAME)'}`,
  );
  if (s.pods.length === 0) lines.push('pods: none (pnpm lab pod create NS/NAME --node n1)');
  else
    lines.push(
      table(
        ['POD', 'NODE', 'IP', 'PORTS', 'SERVICE ACCOUNT', 'LABELS', 'LISTENER'],
        s.pods.map((p) => [
          p.id,
          p.node,
          [p.ip, p.ip6].filter(Boolean).join(' ') || '-',
          p.ports
            .map((port) => {
              const name = Object.entries(p.namedPorts ?? {}).find(([, v]) => v === port)?.[0];
              return name ? `${name}=${port}` : String(port);
            })
            .join(','),
          p.serviceAccount,
          Object.entries(p.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(',') || '-',
          proc(p.listener),
        ]),
      ),
    );
  return lines.join('\n');
}
