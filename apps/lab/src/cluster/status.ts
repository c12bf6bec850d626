/**
 * `lab status` of a `--kubelet` lab: the processes the lab runs (control plane; containerd, kubelet
 * and kube-proxy per node) and what Kubernetes says (each Node's Ready condition, the calico-node
 * pod on it, the DaemonSet's counts). Gathering is I/O (`clusterStatus`); the table is pure
 * (`renderClusterStatus`).
 */
import { isAlive } from '../processes.js';
import type { LabState } from '../state.js';
import { byOperator } from './cluster-plan.js';
import { type DaemonSetCounts, daemonSetCounts, nodeReadiness } from './install.js';

export interface ClusterStatus {
  readonly name: string;
  readonly status: LabState['status'];
  readonly install: string;
  readonly controlPlane: readonly { name: string; pid?: number; running: boolean }[];
  readonly nodes: readonly {
    name: string;
    ip: string;
    containerd: boolean;
    kubelet: boolean;
    kubeProxy: boolean;
    ready: string;
    calicoNode: string;
  }[];
  readonly daemonSet?: DaemonSetCounts;
}

type Kubectl = (args: string[]) => Promise<{ status: number; stdout: string; stderr: string }>;

interface PodList {
  items?: {
    spec?: { nodeName?: string };
    status?: { phase?: string; containerStatuses?: { ready?: boolean }[] };
  }[];
}

export async function clusterStatus(state: LabState, kubectl: Kubectl): Promise<ClusterStatus> {
  const p = state.processes;
  // The operator runs Calico in calico-system, the manifests and the chart in kube-system.
  const ns = byOperator(state.plan.cluster?.install) ? 'calico-system' : 'kube-system';
  const [nodes, pods, ds] = await Promise.all([
    kubectl(['get', 'nodes', '-o', 'json']),
    kubectl(['get', 'pods', '-n', ns, '-l', 'k8s-app=calico-node', '-o', 'json']),
    kubectl(['get', 'daemonset', 'calico-node', '-n', ns, '-o', 'json']),
  ]);
  const ready = nodes.status === 0 ? nodeReadiness(JSON.parse(nodes.stdout)) : new Map<string, string>();
  const calico = new Map<string, string>();
  if (pods.status === 0) {
    for (const pod of (JSON.parse(pods.stdout) as PodList).items ?? []) {
      const cs = pod.status?.containerStatuses ?? [];
      calico.set(
        pod.spec?.nodeName ?? '?',
        `${pod.status?.phase ?? '?'} ${cs.filter((c) => c.ready).length}/${cs.length}`,
      );
    }
  }
  return {
    name: state.name,
    status: state.status,
    install: state.plan.cluster?.install ?? '?',
    controlPlane: ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'].map((name) => ({
      name,
      ...(p[name] ? { pid: p[name].pid } : {}),
      running: isAlive(p[name]),
    })),
    nodes: state.plan.nodes.map((n) => ({
      name: n.name,
      ip: n.ip,
      containerd: isAlive(p[`containerd/${n.name}`]),
      kubelet: isAlive(p[`kubelet/${n.name}`]),
      kubeProxy: isAlive(p[`kube-proxy/${n.name}`]),
      ready: ready.get(n.name) ?? 'not registered',
      calicoNode: calico.get(n.name) ?? 'none',
    })),
    ...(ds.status === 0 ? { daemonSet: daemonSetCounts(JSON.parse(ds.stdout)) } : {}),
  };
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function renderClusterStatus(s: ClusterStatus): string {
  const yes = (b: boolean) => (b ? 'running' : 'not running');
  const ds = s.daemonSet;
  return [
    `lab "${s.name}": ${s.status}, a Kubernetes cluster (--kubelet), Calico installed by: ${s.install}`,
    '',
    table([
      ['CONTROL PLANE', 'PROCESS'],
      ...s.controlPlane.map((c) => [c.name, c.running ? `running (${c.pid})` : 'not running']),
    ]),
    '',
    table([
      ['NODE', 'ADDRESS', 'CONTAINERD', 'KUBELET', 'KUBE-PROXY', 'READY', 'CALICO-NODE POD'],
      ...s.nodes.map((n) => [
        n.name,
        n.ip,
        yes(n.containerd),
        yes(n.kubelet),
        yes(n.kubeProxy),
        n.ready === 'True' ? 'Ready' : n.ready === 'False' ? 'NotReady' : n.ready,
        n.calicoNode,
      ]),
    ]),
    '',
    ds
      ? `daemonset calico-node: DESIRED ${ds.desired} CURRENT ${ds.current} READY ${ds.ready} UP-TO-DATE ${ds.upToDate}`
      : 'daemonset calico-node: not installed',
  ].join('\n');
}
