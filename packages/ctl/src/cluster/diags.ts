/**
 * What `calicoctl cluster diags` collects, and from where (pure): every Calico resource through the
 * datastore (`calico/<plural>.yaml`), the Kubernetes view of the cluster through `kubectl`
 * (`kubernetes/<file>`), and the logs of up to `--max-logs` pods of each Calico component
 * (`logs/<namespace>/<pod>.log`), pods on `--focus-nodes` first.
 *
 * No Secret, ConfigMap or pod spec is read: a pod spec's environment can hold passwords
 * (`CALICO_BGP_PASSWORD_*`) and a kubeconfig or calicoctl.cfg holds credentials, and the bundle is
 * meant to be handed to others. Pods are listed `-o wide` (names, nodes, addresses, states).
 */
import { CtlError } from '../errors.js';

/** One kubectl invocation and the file under `kubernetes/` that gets its output. */
export interface KubectlDump {
  readonly file: string;
  readonly title: string;
  /** The arguments after `kubectl` (and its `--kubeconfig`). */
  readonly args: readonly string[];
}

/** The namespaces Calico's own workloads run in, with the manifests' and the operator's layout. */
export const CALICO_NAMESPACES = ['kube-system', 'calico-system'] as const;

/** The Calico components whose pods' logs are collected, by their `k8s-app` label. */
export const CALICO_COMPONENTS = ['calico-node', 'calico-kube-controllers', 'calico-typha'] as const;

export const KUBECTL_DUMPS: readonly KubectlDump[] = [
  { file: 'version', title: 'Kubernetes version', args: ['version', '-o', 'yaml'] },
  { file: 'nodes', title: 'nodes', args: ['get', 'nodes', '-o', 'wide'] },
  { file: 'nodes.yaml', title: 'nodes (YAML)', args: ['get', 'nodes', '-o', 'yaml'] },
  { file: 'namespaces', title: 'namespaces', args: ['get', 'namespaces'] },
  { file: 'pods', title: 'pods of every namespace', args: ['get', 'pods', '--all-namespaces', '-o', 'wide'] },
  ...CALICO_NAMESPACES.map((ns) => ({
    file: `workloads-${ns}`,
    title: `daemon sets, deployments and services in ${ns}`,
    args: ['get', 'daemonsets,deployments,services', '-n', ns, '-o', 'wide'],
  })),
  {
    file: 'networkpolicies',
    title: 'Kubernetes network policies',
    args: ['get', 'networkpolicies', '--all-namespaces', '-o', 'wide'],
  },
  {
    file: 'events',
    title: 'events',
    args: ['get', 'events', '--all-namespaces', '--sort-by=.lastTimestamp'],
  },
];

/** `--since`: a relative duration in seconds, minutes or hours, as kubectl logs takes it. */
export function parseSince(text: string): string {
  if (!/^[0-9]+[smh]$/.test(text))
    throw new CtlError('usage', `invalid --since "${text}": use a relative duration such as 10s, 5m or 1h`);
  return text;
}

/** `--max-logs`: how many pods of each component to take logs from (0 or more). */
export function parseMaxLogs(text: string): number {
  if (!/^[0-9]+$/.test(text))
    throw new CtlError('usage', `invalid --max-logs "${text}": use a whole number of pods, such as 5`);
  return Number(text);
}

/** `--focus-nodes`: comma-separated node names, blanks dropped. */
export function parseFocusNodes(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** A pod as `kubectl get pods -o json` describes it: only what choosing logs needs. */
export interface PodSummary {
  readonly namespace: string;
  readonly name: string;
  readonly nodeName: string;
  readonly component: string;
}

/** The pods of `kubectl get pods -o json` output whose `k8s-app` label names a Calico component. */
export function calicoPods(list: unknown): PodSummary[] {
  const items = (list as { items?: unknown[] })?.items;
  if (!Array.isArray(items)) return [];
  const out: PodSummary[] = [];
  for (const item of items) {
    const p = item as {
      metadata?: { namespace?: string; name?: string; labels?: Record<string, string> };
      spec?: { nodeName?: string };
    };
    const component = p.metadata?.labels?.['k8s-app'] ?? '';
    if (!(CALICO_COMPONENTS as readonly string[]).includes(component)) continue;
    if (!p.metadata?.name || !p.metadata.namespace) continue;
    out.push({
      namespace: p.metadata.namespace,
      name: p.metadata.name,
      nodeName: p.spec?.nodeName ?? '',
      component,
    });
  }
  return out;
}

/**
 * Up to `maxLogs` pods of each component, those on a focus node first (in the order the nodes were
 * given), then the rest by node and name, so the choice is the same on every run.
 */
export function choosePodsForLogs(
  pods: readonly PodSummary[],
  focusNodes: readonly string[],
  maxLogs: number,
): PodSummary[] {
  const rank = (p: PodSummary) => {
    const i = focusNodes.indexOf(p.nodeName);
    return i < 0 ? focusNodes.length : i;
  };
  const out: PodSummary[] = [];
  for (const component of CALICO_COMPONENTS) {
    const mine = pods
      .filter((p) => p.component === component)
      .sort(
        (a, b) =>
          rank(a) - rank(b) ||
          a.nodeName.localeCompare(b.nodeName) ||
          a.namespace.localeCompare(b.namespace) ||
          a.name.localeCompare(b.name),
      );
    out.push(...mine.slice(0, maxLogs));
  }
  return out;
}

/** `kubectl logs` arguments for one pod: every container, timestamps, and `--since` when given. */
export function logArgs(p: PodSummary, since: string | undefined): string[] {
  return [
    'logs',
    '-n',
    p.namespace,
    p.name,
    '--all-containers',
    '--timestamps',
    ...(since ? [`--since=${since}`] : []),
  ];
}

/** `cluster-diags-YYYYMMDD_HHMMSS.tar.gz` for `now` (UTC). */
export function clusterBundleName(now: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `cluster-diags-${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}_${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}.tar.gz`;
}
