/**
 * Kubernetes objects in the lab, pure. Two datastores, two jobs:
 *
 * On etcd the lab has no Kubernetes API server, so it writes what kube-controllers would derive from
 * Kubernetes objects (upstream's converter):
 *
 * - Namespace → Profile `kns.<ns>`: allow-all ingress and egress, labelsToApply `pcns.<label>` for
 *   each namespace label plus `pcns.projectcalico.org/name: <ns>`; and the namespace's default
 *   service account → Profile `ksa.<ns>.default` with `pcsa.projectcalico.org/name: default`.
 * - Pod → its WorkloadEndpoint (made by the CNI plugin): labels = pod labels + namespace,
 *   orchestrator and service-account labels; profiles `kns.<ns>`, `ksa.<ns>.<sa>`.
 *
 * On the Kubernetes datastore those Calico resources are derived from the Kubernetes objects
 * themselves, so the lab makes what kubelet and kube-controller-manager would: a v1 Node per lab
 * node (before its calico-node starts), a Namespace with its `default` ServiceAccount, and a Pod
 * bound to its node (before CNI ADD, which annotates it with the pod's addresses).
 */
import type { Profile, WorkloadEndpoint } from '@calico-ts/api';
import { isDnsLabel, labelValueProblem, qualifiedNameProblem } from '@calico-ts/api';
import { LabError } from './errors.js';

export const NAMESPACE_LABEL_PREFIX = 'pcns.';
export const SERVICE_ACCOUNT_LABEL_PREFIX = 'pcsa.';
export const NAME_LABEL = 'projectcalico.org/name';
export const DEFAULT_SERVICE_ACCOUNT = 'default';

export function namespaceProfiles(namespace: string, labels: Readonly<Record<string, string>>): Profile[] {
  const toApply: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) toApply[`${NAMESPACE_LABEL_PREFIX}${k}`] = v;
  toApply[`${NAMESPACE_LABEL_PREFIX}${NAME_LABEL}`] = namespace;
  return [
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: `kns.${namespace}` },
      spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }], labelsToApply: toApply },
    } as Profile,
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: `ksa.${namespace}.${DEFAULT_SERVICE_ACCOUNT}` },
      spec: { labelsToApply: { [`${SERVICE_ACCOUNT_LABEL_PREFIX}${NAME_LABEL}`]: DEFAULT_SERVICE_ACCOUNT } },
    } as Profile,
  ];
}

/** The WorkloadEndpoint as kube-controllers' pod controller leaves it: labels and profiles replaced. */
export function podEndpoint(
  wep: WorkloadEndpoint,
  pod: { namespace: string; labels: Readonly<Record<string, string>>; serviceAccount?: string },
): WorkloadEndpoint {
  const sa = pod.serviceAccount ?? DEFAULT_SERVICE_ACCOUNT;
  const labels: Record<string, string> = {
    ...pod.labels,
    'projectcalico.org/namespace': pod.namespace,
    'projectcalico.org/orchestrator': 'k8s',
    'projectcalico.org/serviceaccount': sa,
  };
  return {
    ...wep,
    metadata: { ...wep.metadata, labels },
    spec: {
      ...wep.spec,
      serviceAccountName: sa,
      profiles: [`kns.${pod.namespace}`, `ksa.${pod.namespace}.${sa}`],
    },
  };
}

type KubeObject = Record<string, unknown>;

/** The v1 Node kubelet would register for a lab node. */
export function kubeNode(name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' },
    },
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

/** The image named in lab Pods: nothing pulls it (the lab runs its listener itself). */
export const LAB_POD_IMAGE = 'calico-lab.invalid/listener:latest';

/**
 * A Pod as the scheduler leaves it: bound to its node, the default service account, one container
 * with the listener's ports (TCP and UDP each). No kubelet runs, so it is deleted with a grace period
 * of 0 and never gets a status beyond Pending.
 */
export function kubePod(pod: {
  namespace: string;
  name: string;
  node: string;
  labels: Readonly<Record<string, string>>;
  ports: readonly number[];
}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: pod.name, namespace: pod.namespace, labels: { ...pod.labels } },
    spec: {
      nodeName: pod.node,
      serviceAccountName: DEFAULT_SERVICE_ACCOUNT,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: 'listener',
          image: LAB_POD_IMAGE,
          ports: pod.ports.flatMap((containerPort) => [
            { containerPort, protocol: 'TCP' },
            { containerPort, protocol: 'UDP' },
          ]),
        },
      ],
    },
  };
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
