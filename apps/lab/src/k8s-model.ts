/**
 * Kubernetes objects in the lab, pure: what kubelet, the scheduler and kube-controller-manager would
 * make, since none of them runs. A v1 Node per lab node (before its calico-node starts), a Namespace
 * with its `default` ServiceAccount, and a Pod bound to its node with its containers' ports, then
 * its status once the CNI plugin has wired it. The Calico side (Profiles `kns.*` / `ksa.*`,
 * endpoint labels, policies from NetworkPolicies) follows from these objects: on the Kubernetes
 * datastore by conversion, on etcd through calico-kube-controllers and the CNI plugin, which read
 * them from the API server. The lab writes none of it itself.
 *
 * Also here: the command-line syntax of labels, annotations, port lists and Kubernetes names.
 */
import { isDnsLabel, labelValueProblem, qualifiedNameProblem } from '@calico-ts/api/net';
import { LabError } from './errors.js';

export const DEFAULT_SERVICE_ACCOUNT = 'default';

type KubeObject = Record<string, unknown>;

/** The v1 Node kubelet would register for a lab node. */
export function kubeNode(name: string, podCidr?: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' },
    },
    // The node's pod range, as kube-controller-manager's node IPAM allocates it (policy-only).
    ...(podCidr !== undefined ? { spec: { podCIDR: podCidr, podCIDRs: [podCidr] } } : {}),
  };
}

/** A Namespace with the lab's labels (the API server adds `kubernetes.io/metadata.name`). */
export function kubeNamespace(name: string, labels: Readonly<Record<string, string>>): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { ...labels } } };
}

/** The `default` ServiceAccount kube-controller-manager would make in every namespace. */
export function kubeServiceAccount(namespace: string, name = DEFAULT_SERVICE_ACCOUNT): KubeObject {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } };
}

/** The labels a pod's WorkloadEndpoint carries (upstream's converter: pod labels + three of Calico's). */
export function expectedEndpointLabels(pod: {
  namespace: string;
  labels: Readonly<Record<string, string>>;
  serviceAccount?: string;
}): Record<string, string> {
  return {
    ...pod.labels,
    'projectcalico.org/namespace': pod.namespace,
    'projectcalico.org/orchestrator': 'k8s',
    'projectcalico.org/serviceaccount': pod.serviceAccount ?? DEFAULT_SERVICE_ACCOUNT,
  };
}

/** The image named in lab Pods: nothing pulls it (the lab runs its listener itself). */
export const LAB_POD_IMAGE = 'calico-lab.invalid/listener:latest';

/** A container port of a lab pod: the listener answers on it over TCP and UDP. */
export interface PodPort {
  readonly port: number;
  /** The TCP port's name (`--ports http=80`), for NetworkPolicies on named ports. */
  readonly name?: string;
}

/** A lab pod's metadata: its name, namespace, labels and (when any) annotations. */
export function podMetadata(pod: {
  namespace: string;
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations?: Readonly<Record<string, string>>;
}): KubeObject {
  const annotations = pod.annotations ?? {};
  return {
    name: pod.name,
    namespace: pod.namespace,
    labels: { ...pod.labels },
    ...(Object.keys(annotations).length > 0 ? { annotations: { ...annotations } } : {}),
  };
}

/**
 * A Pod as the scheduler leaves it: bound to its node, its service account, one container with the
 * listener's ports: each twice, TCP (named when a name was given) and UDP (never named: a pod's port
 * names must be unique). Deleted with a grace period of 0 (no kubelet finishes a graceful delete).
 */
export function kubePod(pod: {
  namespace: string;
  name: string;
  node: string;
  labels: Readonly<Record<string, string>>;
  annotations?: Readonly<Record<string, string>>;
  serviceAccount?: string;
  ports: readonly PodPort[];
}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: podMetadata(pod),
    spec: {
      nodeName: pod.node,
      serviceAccountName: pod.serviceAccount ?? DEFAULT_SERVICE_ACCOUNT,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: 'listener',
          image: LAB_POD_IMAGE,
          ports: pod.ports.flatMap((p) => [
            { ...(p.name ? { name: p.name } : {}), containerPort: p.port, protocol: 'TCP' },
            { containerPort: p.port, protocol: 'UDP' },
          ]),
        },
      ],
    },
  };
}

/**
 * The status kubelet reports once the pod's sandbox is up and its container runs: phase Running,
 * Ready, the pod's addresses and its node's. `started` is an RFC 3339 time.
 */
export function kubePodStatus(s: { podIPs: readonly string[]; hostIP: string; started: string }): KubeObject {
  const condition = (type: string) => ({ type, status: 'True', lastTransitionTime: s.started });
  return {
    phase: 'Running',
    conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map(condition),
    hostIP: s.hostIP,
    hostIPs: [{ ip: s.hostIP }],
    ...(s.podIPs.length > 0 ? { podIP: s.podIPs[0], podIPs: s.podIPs.map((ip) => ({ ip })) } : {}),
    startTime: s.started,
    containerStatuses: [
      {
        name: 'listener',
        image: LAB_POD_IMAGE,
        imageID: '',
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: s.started } },
      },
    ],
  };
}

/**
 * `--ports 80,http=8080` (comma-separated, repeatable): port numbers, each optionally named. A name
 * is an IANA service name as Kubernetes wants it: ≤ 15 lower-case letters, digits and single dashes,
 * at least one letter.
 */
export function parsePorts(values: readonly string[]): PodPort[] {
  const out = new Map<number, PodPort>();
  const names = new Set<string>();
  for (const value of values) {
    for (const item of value.split(',')) {
      const t = item.trim();
      if (t === '') continue;
      const eq = t.indexOf('=');
      const name = eq >= 0 ? t.slice(0, eq) : undefined;
      const num = eq >= 0 ? t.slice(eq + 1) : t;
      if (!/^[0-9]+$/.test(num) || Number(num) < 1 || Number(num) > 65535)
        throw new LabError('usage', `--ports: "${t}" must be a port from 1 to 65535, or NAME=PORT`);
      if (name !== undefined) {
        if (
          !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(name) ||
          name.length > 15 ||
          !/[a-z]/.test(name) ||
          name.includes('--')
        )
          throw new LabError(
            'usage',
            `--ports: port name "${name}" must be at most 15 lower-case letters, digits and single dashes, with a letter`,
          );
        if (names.has(name)) throw new LabError('usage', `--ports: port name "${name}" given twice`);
        names.add(name);
      }
      const port = Number(num);
      const prev = out.get(port);
      if (prev?.name && name && prev.name !== name)
        throw new LabError('usage', `--ports: port ${port} named twice (${prev.name}, ${name})`);
      out.set(port, { port, ...((name ?? prev?.name) ? { name: (name ?? prev?.name)! } : {}) });
    }
  }
  return [...out.values()];
}

/**
 * `--annotations k=v,...` (repeatable): a comma inside brackets, braces or quotes belongs to the
 * value, so `cni.projectcalico.org/ipAddrs=["198.19.5.5"]` and JSON lists pass whole.
 */
export function parseAnnotations(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values) {
    const parts: string[] = [];
    let depth = 0;
    let quote = false;
    let cur = '';
    for (const ch of value) {
      if (ch === '"') quote = !quote;
      else if (!quote && (ch === '[' || ch === '{')) depth++;
      else if (!quote && (ch === ']' || ch === '}')) depth--;
      if (ch === ',' && depth === 0 && !quote) {
        parts.push(cur);
        cur = '';
      } else cur += ch;
    }
    parts.push(cur);
    for (const pair of parts) {
      if (pair.trim() === '') continue;
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new LabError('usage', `annotation "${pair}" must be key=value`);
      const k = pair.slice(0, eq).trim();
      const kp = qualifiedNameProblem(k);
      if (kp) throw new LabError('usage', `annotation key "${k}": ${kp}`);
      out[k] = pair.slice(eq + 1);
    }
  }
  return out;
}

/** `k=v` pairs from --labels (comma-separated, repeatable), checked as Kubernetes label syntax. */
export function parseLabels(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values) {
    for (const pair of value.split(',')) {
      if (pair.trim() === '') continue;
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new LabError('usage', `label "${pair}" must be key=value`);
      const k = pair.slice(0, eq).trim();
      const v = pair.slice(eq + 1).trim();
      const kp = qualifiedNameProblem(k);
      if (kp) throw new LabError('usage', `label key "${k}": ${kp}`);
      const vp = labelValueProblem(v);
      if (vp) throw new LabError('usage', `label value "${v}": ${vp}`);
      out[k] = v;
    }
  }
  return out;
}

/** A Kubernetes namespace or pod name: a DNS label (lower-case, digits, dashes, ≤ 63). */
export function checkKubeName(what: string, name: string): string {
  if (!isDnsLabel(name)) {
    throw new LabError(
      'usage',
      `${what} "${name}" must be lower-case letters, digits and dashes (at most 63)`,
    );
  }
  return name;
}

/** `ns/name` → parts, each a DNS label. */
export function parsePodRef(ref: string): { namespace: string; name: string } {
  const parts = ref.split('/');
  if (parts.length !== 2) throw new LabError('usage', `pod "${ref}" must be given as NAMESPACE/NAME`);
  return { namespace: checkKubeName('namespace', parts[0]!), name: checkKubeName('pod name', parts[1]!) };
}
