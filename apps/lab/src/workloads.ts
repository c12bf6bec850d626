/**
 * Namespaces and pods in the lab, made as Kubernetes makes them: the lab plays kube-controller-manager
 * (a Namespace's `default` ServiceAccount), the scheduler (a Pod's `spec.nodeName`) and kubelet (the
 * pod's sandbox, CNI ADD/DEL, its status). Everything Calico makes of them comes from the system
 * itself: on the Kubernetes datastore by conversion of the objects, on etcd from
 * calico-kube-controllers (Profiles kns.* / ksa.*, endpoint labels) and the CNI plugin (which reads
 * the Pod through the kubeconfig in its network config).
 *
 *   ns create   ─► Namespace (labels) + ServiceAccount default
 *                  ─► etcd: until kube-controllers has written Profile kns.<ns> with those labels
 *   pod create  ─► [ServiceAccount, when named and missing] ─► Pod bound to its node ─► pod netns
 *                  ─► CNI ADD on the node (K8S_POD_NAMESPACE/NAME/INFRA_CONTAINER_ID/UID)
 *                  ─► until the WorkloadEndpoint carries the pod's labels ─► listener
 *                  ─► Pod status: Running, podIP(s), hostIP (status subresource)
 *   pod delete  ─► listener stopped ─► CNI DEL ─► Pod deleted (grace period 0) ─► netns removed
 *
 * These commands connect to the lab's API server and datastore, so they run inside the etcd
 * namespace (main.ts re-enters it); everything else enters namespaces with nsenter.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkloadEndpoint } from '@calico-ts/api';
import type { Datastore } from '@calico-ts/datastore';
import { Netlinux } from '@calico-ts/netlinux';
import { CNI_CONF_NAME } from './containers.js';
import { errorMessage, LabError } from './errors.js';
import {
  DEFAULT_SERVICE_ACCOUNT,
  expectedEndpointLabels,
  kubeNamespace,
  kubePod,
  kubePodStatus,
  kubeServiceAccount,
  type PodPort,
} from './k8s-model.js';
import { type KubeApi, KubeApiError, withKubeApi } from './kube.js';
import { type LabPlan, type NodePlan, podNetns } from './plan.js';
import type { Artifacts } from './prereqs.js';
import { isAlive, type ProcRecord, run, spawnDetached, stopRecorded } from './processes.js';
import {
  cniConflist,
  etcdTlsClientConfig,
  labInterfacePrefix,
  nodeCniBinDir,
  pluginConfig,
} from './program-config.js';
import type { Progress } from './progress.js';
import { type LabState, type PodRecord, writeState } from './state.js';
import { nsenter } from './up.js';

const PATH = process.env.PATH || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long `ns create` and `pod create` wait for kube-controllers' part on etcd. */
export const CONTROLLER_WAIT_MS = 30_000;

/** A datastore client on the lab's datastore (loaded on demand: most commands never need one). */
export async function withDatastore<T>(plan: LabPlan, fn: (ds: Datastore) => Promise<T>): Promise<T> {
  const { createDatastore } = await import('@calico-ts/datastore');
  // A one-shot command: etcd over node:http2, which loads far faster than etcd3. Endpoints are
  // read with the pods' interface prefix, as calico-node reads them.
  const prefix = labInterfacePrefix(plan);
  const ds = await createDatastore(
    plan.datastore === 'kubernetes'
      ? { datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: plan.kube.kubeconfig }
      : { datastoreType: 'etcdv3', etcdEndpoints: [plan.etcdUrl], ...etcdTlsClientConfig(plan) },
    { transport: 'http2', ...(prefix !== undefined ? { interfacePrefix: prefix } : {}) },
  );
  try {
    return await fn(ds);
  } finally {
    await ds.close().catch(() => {});
  }
}

/** `fn` until it returns a value, or a `command` error saying `what` after `timeoutMs`. */
async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  lastSeen: () => string,
  timeoutMs = CONTROLLER_WAIT_MS,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end)
      throw new LabError(
        'command',
        `${what} did not happen in ${timeoutMs / 1000} s (${lastSeen()}); is calico-kube-controllers ` +
          'running? See `pnpm lab status` and its log in the state directory',
      );
    await sleep(200);
  }
}

const labelText = (labels: Readonly<Record<string, string>>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

export async function nsCreate(
  state: LabState,
  namespace: string,
  labels: Record<string, string>,
  out: Progress,
): Promise<void> {
  const existed = await withKubeApi(state.plan, (api) => applyNamespace(api, namespace, labels));
  if (state.plan.datastore === 'etcdv3') await waitNamespaceProfile(state.plan, namespace, labels);
  state.k8sNamespaces[namespace] = labels;
  writeState(state);
  out.line(
    `namespace ${namespace} ${existed ? 'updated' : 'created'}: Namespace and ServiceAccount default ` +
      `(Profiles kns.${namespace}, ksa.${namespace}.default follow)` +
      (Object.keys(labels).length > 0 ? ` (labels ${labelText(labels)})` : ''),
  );
}

/**
 * On etcd: until kube-controllers' namespace controller has written `kns.<ns>` with exactly these
 * labels (as `pcns.` labels to apply) and the service-account controller `ksa.<ns>.default`, so a
 * pod made right after is treated by its namespace's labels.
 */
async function waitNamespaceProfile(
  plan: LabPlan,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): Promise<void> {
  const ignored = new Set(['pcns.projectcalico.org/name', 'pcns.kubernetes.io/metadata.name']);
  let seen = 'no Profile yet';
  await withDatastore(plan, (ds) =>
    until(
      `kube-controllers writing Profile kns.${namespace} with the namespace's labels`,
      async () => {
        const [kns, ksa] = await Promise.all([
          ds.get('Profile', `kns.${namespace}`).catch(() => undefined),
          ds.get('Profile', `ksa.${namespace}.${DEFAULT_SERVICE_ACCOUNT}`).catch(() => undefined),
        ]);
        if (!kns) return undefined;
        const applied = Object.fromEntries(
          Object.entries(kns.spec.labelsToApply ?? {}).filter(([k]) => !ignored.has(k)),
        );
        seen = `kns.${namespace} applies ${labelText(applied) || 'no labels'}${ksa ? '' : `, no ksa.${namespace}.default`}`;
        const want = Object.fromEntries(Object.entries(labels).map(([k, v]) => [`pcns.${k}`, v]));
        const same =
          Object.keys(applied).length === Object.keys(want).length &&
          Object.entries(want).every(([k, v]) => applied[k] === v);
        return same && ksa ? true : undefined;
      },
      () => seen,
    ),
  );
}

/**
 * The Namespace with exactly these labels (besides the one the API server keeps), and its `default`
 * ServiceAccount, as kube-controller-manager would make it. Resolves whether the Namespace existed.
 */
async function applyNamespace(
  api: KubeApi,
  namespace: string,
  labels: Record<string, string>,
): Promise<boolean> {
  const path = `/api/v1/namespaces/${namespace}`;
  const existed = await (async () => {
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await api.get(path);
      if (!current) {
        if ((await api.create('/api/v1/namespaces', kubeNamespace(namespace, labels))) === 'created')
          return false;
        continue; // made meanwhile: update that one
      }
      const meta = current.metadata as { labels?: Record<string, string> };
      const kept = Object.fromEntries(
        Object.entries(meta.labels ?? {}).filter(([k]) => k === 'kubernetes.io/metadata.name'),
      );
      try {
        await api.request('PUT', path, { ...current, metadata: { ...meta, labels: { ...kept, ...labels } } });
        return true;
      } catch (e) {
        if (e instanceof KubeApiError && e.status === 409) continue; // changed in between
        throw e;
      }
    }
    throw new LabError('command', `namespace ${namespace} kept changing while it was updated; try again`);
  })();
  await api.create(`/api/v1/namespaces/${namespace}/serviceaccounts`, kubeServiceAccount(namespace));
  return existed;
}

function findPod(state: LabState, namespace: string, name: string): PodRecord | undefined {
  return state.pods.find((p) => p.namespace === namespace && p.name === name);
}

export function requirePod(state: LabState, namespace: string, name: string): PodRecord {
  const p = findPod(state, namespace, name);
  if (!p) throw new LabError('not-found', `no pod ${namespace}/${name} in the lab (see \`pnpm lab status\`)`);
  return p;
}

function pickNode(state: LabState, wanted: string | undefined): NodePlan {
  const nodes = state.plan.nodes;
  if (wanted !== undefined) {
    const n = nodes.find((x) => x.name === wanted);
    if (!n)
      throw new LabError(
        'usage',
        `--node ${wanted}: the lab's nodes are ${nodes.map((x) => x.name).join(', ')}`,
      );
    return n;
  }
  const load = (n: NodePlan) => state.pods.filter((p) => p.node === n.name).length;
  return [...nodes].sort((a, b) => load(a) - load(b))[0]!;
}

function cniEnv(
  plan: LabPlan,
  node: NodePlan,
  command: 'ADD' | 'DEL',
  pod: PodRecord,
): Record<string, string> {
  // policy-only: the plugin stands in for the cloud's CNI, which names its interfaces eni…; the
  // calico plugin takes its prefix from FELIX_INTERFACEPREFIX.
  const prefix = labInterfacePrefix(plan);
  return {
    PATH,
    ...(prefix !== undefined ? { FELIX_INTERFACEPREFIX: prefix } : {}),
    CNI_COMMAND: command,
    CNI_CONTAINERID: pod.containerId,
    CNI_NETNS: `/run/netns/${pod.netns}`,
    CNI_IFNAME: 'eth0',
    CNI_PATH: nodeCniBinDir(plan, node),
    CNI_ARGS:
      `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name};` +
      `K8S_POD_INFRA_CONTAINER_ID=${pod.containerId}${pod.uid ? `;K8S_POD_UID=${pod.uid}` : ''}`,
  };
}

/**
 * The node's network config: what the lab wrote, or, with `--images`, what install-cni installed in
 * the node's net.d (read as a runtime reads it).
 */
function nodeConflist(plan: LabPlan, node: NodePlan): Record<string, unknown> {
  if (!plan.images) return cniConflist(plan, node);
  const path = join(node.cniConfDir, CNI_CONF_NAME);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new LabError(
      'state',
      `the network config install-cni wrote, ${path}, cannot be read: ${errorMessage(e)}`,
    );
  }
}

/** Runs the node's CNI plugin inside the node's namespace, as the container runtime there would. */
function runCni(plan: LabPlan, node: NodePlan, command: 'ADD' | 'DEL', pod: PodRecord) {
  const conf = pluginConfig(nodeConflist(plan, node));
  return run([...nsenter(node.netns), join(nodeCniBinDir(plan, node), 'calico')], {
    env: cniEnv(plan, node, command, pod),
    input: conf,
    timeoutMs: 60_000,
  });
}

function cniFailure(stdout: string, stderr: string): string {
  try {
    const j = JSON.parse(stdout) as { msg?: string; details?: string; code?: number };
    return `CNI error ${j.code}: ${j.msg ?? ''}${j.details ? ` (${j.details})` : ''}`;
  } catch {
    return (stderr || stdout).trim() || 'no output';
  }
}

/**
 * The pod's WorkloadEndpoint once it carries the pod's labels. On the Kubernetes datastore it is
 * the Pod itself; on etcd the CNI plugin writes it and the labels come from the Pod through the
 * plugin or kube-controllers' workloadendpoint controller: this waits for them (bounded), so a
 * policy on them applies as soon as the command returns.
 */
async function podWorkloadEndpoint(plan: LabPlan, pod: PodRecord): Promise<WorkloadEndpoint> {
  const want = expectedEndpointLabels(pod);
  let seen = 'no WorkloadEndpoint';
  return withDatastore(plan, (ds) =>
    until(
      `the WorkloadEndpoint of ${pod.namespace}/${pod.name} getting the pod's labels`,
      async () => {
        const list = await ds.list('WorkloadEndpoint', { namespace: pod.namespace });
        const wep = list.items.find((w) => w.spec.pod === pod.name);
        if (!wep) {
          if (plan.datastore === 'kubernetes')
            throw new LabError(
              'command',
              `the CNI plugin made no WorkloadEndpoint for ${pod.namespace}/${pod.name}`,
            );
          return undefined;
        }
        const have = wep.metadata.labels ?? {};
        seen = `its labels: ${labelText(have) || 'none'}`;
        return Object.entries(want).every(([k, v]) => have[k] === v) ? wep : undefined;
      },
      () => seen,
    ),
  );
}

/**
 * The Pod's status as kubelet reports it once the pod runs (through the status subresource; a
 * write that raced another is retried on the newer object).
 */
async function reportPodStatus(api: KubeApi, pod: PodRecord, hostIP: string): Promise<void> {
  const path = `/api/v1/namespaces/${pod.namespace}/pods/${pod.name}`;
  for (let attempt = 0; ; attempt++) {
    const current = await api.get(path);
    if (!current) throw new LabError('command', `the Pod ${pod.namespace}/${pod.name} is gone`);
    const status = kubePodStatus({
      podIPs: [pod.ip, pod.ip6].filter((a): a is string => a !== undefined),
      hostIP,
      started: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    });
    try {
      await api.request('PUT', `${path}/status`, {
        ...current,
        status: { ...(current.status as object), ...status },
      });
      return;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 409 && attempt < 5) continue;
      throw e;
    }
  }
}

async function waitForLine(file: string, word: string, rec: ProcRecord, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (existsSync(file) && readFileSync(file, 'utf8').includes(word)) return;
    if (!isAlive(rec)) break;
    await sleep(25);
  }
  const text = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
  throw new LabError('command', `the pod's listener did not start${text ? `: ${text}` : ''}`);
}

export async function podCreate(
  state: LabState,
  arts: Artifacts,
  req: {
    namespace: string;
    name: string;
    node?: string;
    labels: Record<string, string>;
    annotations?: Record<string, string>;
    serviceAccount?: string;
    ports: readonly PodPort[];
  },
  out: Progress,
): Promise<PodRecord> {
  const { plan } = state;
  if (findPod(state, req.namespace, req.name)) {
    throw new LabError('state', `pod ${req.namespace}/${req.name} already exists; delete it first`);
  }
  const node = pickNode(state, req.node);
  const net = new Netlinux();
  const named = req.ports.filter((p) => p.name !== undefined);
  const pod: PodRecord = {
    namespace: req.namespace,
    name: req.name,
    node: node.name,
    netns: podNetns(plan.name, req.namespace, req.name),
    containerId: randomBytes(32).toString('hex'),
    ports: req.ports.map((p) => p.port),
    ...(named.length > 0 ? { namedPorts: Object.fromEntries(named.map((p) => [p.name!, p.port])) } : {}),
    labels: req.labels,
    ...(req.serviceAccount ? { serviceAccount: req.serviceAccount } : {}),
  };
  if ((await net.listNetns()).includes(pod.netns)) {
    throw new LabError(
      'state',
      `network namespace ${pod.netns} already exists and the lab did not make it; remove it first`,
    );
  }
  const notes: string[] = [];
  // The Pod exists before CNI ADD, bound to its node, as the scheduler and kubelet leave it.
  pod.uid = await withKubeApi(plan, async (api) => {
    if (!(await api.get(`/api/v1/namespaces/${req.namespace}`)))
      throw new LabError(
        'not-found',
        `namespace ${req.namespace} does not exist in the lab; create it first: pnpm lab ns create ${req.namespace}`,
      );
    const sa = req.serviceAccount ?? DEFAULT_SERVICE_ACCOUNT;
    if (
      (await api.create(
        `/api/v1/namespaces/${req.namespace}/serviceaccounts`,
        kubeServiceAccount(req.namespace, sa),
      )) === 'created' &&
      sa !== DEFAULT_SERVICE_ACCOUNT
    )
      notes.push(`ServiceAccount ${sa} created`);
    try {
      const made = await api.request(
        'POST',
        `/api/v1/namespaces/${req.namespace}/pods`,
        kubePod({ ...pod, ports: req.ports, annotations: req.annotations ?? {} }),
      );
      return String((made.metadata as { uid?: string } | undefined)?.uid ?? '');
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 409)
        throw new LabError(
          'state',
          `pod ${req.namespace}/${req.name} already exists in the API server and the lab did not make it; ` +
            `delete it first (pnpm lab kubectl delete pod -n ${req.namespace} ${req.name})`,
        );
      throw e;
    }
  });
  state.pods.push(pod);
  state.namespaces.push(pod.netns);
  writeState(state);
  try {
    await net.createNetns(pod.netns);
    await net.setLinkUp('lo', pod.netns);
    const add = runCni(plan, node, 'ADD', pod);
    if (add.status !== 0)
      throw new LabError('command', `CNI ADD on ${node.name} failed: ${cniFailure(add.stdout, add.stderr)}`);
    const result = JSON.parse(add.stdout) as { ips?: { address: string }[] };
    const addresses = (result.ips ?? []).map((i) => i.address.split('/')[0]!);
    pod.ip = addresses.find((a) => !a.includes(':'));
    pod.ip6 = addresses.find((a) => a.includes(':'));
    writeState(state);
    const wep = await podWorkloadEndpoint(plan, pod);
    const logDir = join(plan.stateDir, 'pods');
    mkdirSync(logDir, { recursive: true });
    const log = join(logDir, `${pod.namespace}.${pod.name}.log`);
    pod.listener = spawnDetached(
      [
        ...nsenter(pod.netns),
        process.execPath,
        arts.listener,
        '--name',
        `${pod.namespace}/${pod.name}`,
        '--ports',
        pod.ports.join(','),
        ...(pod.ip6 !== undefined ? ['--ipv6'] : []),
      ],
      { env: { PATH }, log },
    );
    writeState(state);
    await waitForLine(log, 'ready', pod.listener, 10_000);
    await withKubeApi(plan, (api) => reportPodStatus(api, pod, node.ip));
    out.line(
      `pod ${pod.namespace}/${pod.name} on ${node.name}: ${[pod.ip, pod.ip6].filter(Boolean).join(' ')} (endpoint ${wep.metadata.name}, ` +
        `interface ${wep.spec.interfaceName}), listening on tcp+udp ${req.ports
          .map((p) => (p.name ? `${p.name}=${p.port}` : String(p.port)))
          .join(',')}, Running` +
        (notes.length > 0 ? `; ${notes.join(', ')}` : ''),
    );
    return pod;
  } catch (e) {
    out.line(`pod create failed: ${errorMessage(e)}; removing the pod`);
    await podRemove(state, pod).catch(() => {});
    throw e;
  }
}

/** Listener, CNI DEL, the Pod, netns, state entry; each step tolerant of what is already gone. */
async function podRemove(state: LabState, pod: PodRecord): Promise<string[]> {
  const notes: string[] = [];
  if (pod.listener && isAlive(pod.listener)) {
    await stopRecorded(pod.listener, 2000);
    notes.push(`listener stopped (pid ${pod.listener.pid})`);
  }
  const node = state.plan.nodes.find((n) => n.name === pod.node);
  if (node) {
    const del = runCni(state.plan, node, 'DEL', pod);
    if (del.status === 0) notes.push('CNI DEL done');
    else notes.push(`CNI DEL failed: ${cniFailure(del.stdout, del.stderr)}`);
  }
  try {
    if (
      await withKubeApi(state.plan, (api) =>
        api.deleteNow(`/api/v1/namespaces/${pod.namespace}/pods/${pod.name}`),
      )
    )
      notes.push('Pod deleted');
  } catch (e) {
    notes.push(`Pod not deleted: ${errorMessage(e)}`);
  }
  if (await new Netlinux().deleteNetns(pod.netns).catch(() => false))
    notes.push(`netns ${pod.netns} removed`);
  const i = state.pods.indexOf(pod);
  if (i >= 0) state.pods.splice(i, 1);
  const j = state.namespaces.indexOf(pod.netns);
  if (j >= 0) state.namespaces.splice(j, 1);
  writeState(state);
  return notes;
}

export async function podDelete(
  state: LabState,
  namespace: string,
  name: string,
  out: Progress,
): Promise<void> {
  const pod = requirePod(state, namespace, name);
  const notes = await podRemove(state, pod);
  out.line(`pod ${namespace}/${name} deleted: ${notes.join(', ')}`);
}
