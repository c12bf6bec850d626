/**
 * `lab ns create`, `lab pod create|delete|exec` on a `--kubelet` lab: the same commands, done the
 * way a user does them on a cluster, through the API server. A lab pod is a Pod bound to its node
 * (`spec.nodeName`) running the httpd workload image on each of its `--ports` (TCP); kubelet,
 * containerd and the calico CNI plugin do the rest, and the command waits for the Pod to be Ready.
 * The Pod is pure (`clusterPod`); the commands are kubectl calls.
 */
import { imageRef } from '@calico-ts/images/definitions';
import { LabError } from '../errors.js';
import { type PodPort, podMetadata } from '../k8s-model.js';
import { runKubectl } from '../kube.js';
import { kubectlPath } from '../prereqs.js';
import type { Progress } from '../progress.js';
import type { LabState } from '../state.js';

/** The Pod `lab pod create` makes on a cluster: bound to its node, httpd on every port. */
export function clusterPod(pod: {
  namespace: string;
  name: string;
  node?: string;
  labels: Readonly<Record<string, string>>;
  annotations?: Readonly<Record<string, string>>;
  serviceAccount?: string;
  ports: readonly PodPort[];
}): Record<string, unknown> {
  const ports = pod.ports.length > 0 ? pod.ports : [{ port: 80 }];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: podMetadata(pod),
    spec: {
      ...(pod.node ? { nodeName: pod.node } : {}),
      ...(pod.serviceAccount ? { serviceAccountName: pod.serviceAccount } : {}),
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'web',
          image: imageRef('httpd'),
          // The image's entry writes the page (the pod's name) and runs this.
          args: [
            '/bin/sh',
            '-c',
            `for p in ${ports.map((p) => p.port).join(' ')}; do httpd -f -p "$p" -h /www & done; wait`,
          ],
          ports: ports.map((p) => ({
            ...(p.name ? { name: p.name } : {}),
            containerPort: p.port,
            protocol: 'TCP',
          })),
        },
      ],
    },
  };
}

type KubectlRun = (
  args: string[],
  input?: string,
) => Promise<{ status: number; stdout: string; stderr: string }>;

function kubectlOf(state: LabState): KubectlRun {
  const bin = kubectlPath();
  return (args, input) =>
    runKubectl(state.plan, bin, args, { ...(input !== undefined ? { input } : {}), timeoutMs: 120_000 });
}

async function must(k: KubectlRun, args: string[], input?: string): Promise<string> {
  const r = await k(args, input);
  if (r.status !== 0)
    throw new LabError('command', `kubectl ${args.join(' ')}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

export async function clusterNsCreate(
  state: LabState,
  namespace: string,
  labels: Readonly<Record<string, string>>,
  out: Progress,
): Promise<void> {
  const k = kubectlOf(state);
  const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { ...labels } } };
  await must(k, ['apply', '-f', '-'], JSON.stringify(ns));
  out.step(
    `namespace ${namespace}${
      Object.keys(labels).length > 0
        ? ` (${Object.entries(labels)
            .map(([a, b]) => `${a}=${b}`)
            .join(',')})`
        : ''
    }`,
  );
}

export async function clusterPodCreate(
  state: LabState,
  pod: Parameters<typeof clusterPod>[0],
  out: Progress,
  timeoutS = 120,
): Promise<void> {
  if (pod.node && !state.plan.nodes.some((n) => n.name === pod.node))
    throw new LabError(
      'usage',
      `--node ${pod.node}: the lab has nodes ${state.plan.nodes.map((n) => n.name).join(', ')}`,
    );
  const k = kubectlOf(state);
  await must(k, ['apply', '-f', '-'], JSON.stringify(clusterPod(pod)));
  const ref = `${pod.namespace}/${pod.name}`;
  const r = await k([
    'wait',
    '-n',
    pod.namespace,
    '--for=condition=Ready',
    `pod/${pod.name}`,
    `--timeout=${timeoutS}s`,
  ]);
  if (r.status !== 0) {
    const why = await k([
      'get',
      'pod',
      '-n',
      pod.namespace,
      pod.name,
      '-o',
      'jsonpath={.status.phase} {.status.containerStatuses[*].state}',
    ]);
    throw new LabError(
      'setup',
      `pod ${ref} not Ready in ${timeoutS} s (${why.stdout.trim() || r.stderr.trim()}); see \`pnpm lab kubectl describe pod -n ${pod.namespace} ${pod.name}\``,
    );
  }
  const got = JSON.parse(await must(k, ['get', 'pod', '-n', pod.namespace, pod.name, '-o', 'json'])) as {
    spec: { nodeName?: string };
    status: { podIPs?: { ip: string }[] };
  };
  out.step(`pod ${ref} on ${got.spec.nodeName}: ${(got.status.podIPs ?? []).map((x) => x.ip).join(', ')}`);
}

export async function clusterPodDelete(
  state: LabState,
  namespace: string,
  name: string,
  out: Progress,
): Promise<void> {
  await must(kubectlOf(state), ['delete', 'pod', '-n', namespace, name, '--wait=true']);
  out.step(`pod ${namespace}/${name} deleted (kubelet ran CNI DEL)`);
}

/** `lab pod exec NS/NAME -- ARGV`: `kubectl exec`, its output and exit status passed through. */
export function clusterPodExecArgs(namespace: string, name: string, argv: readonly string[]): string[] {
  return ['exec', '-n', namespace, name, '--', ...argv];
}
