/**
 * Namespaces and pods in the lab, done as Kubernetes would have them done. On etcd:
 *
 *   ns create   ─► Profiles kns.<ns> / ksa.<ns>.default (kube-controllers' namespace and
 *                  service-account controllers)
 *   pod create  ─► pod netns ─► CNI ADD by the node's runtime (the calico plugin run inside the
 *                  node's namespace with K8S_POD_NAMESPACE/NAME) ─► WorkloadEndpoint labels and
 *                  profiles (kube-controllers' pod controller) ─► a TCP+UDP listener in the pod
 *   pod delete  ─► listener stopped ─► CNI DEL ─► netns removed
 *
 * On the Kubernetes datastore the Calico resources follow from Kubernetes objects, so the lab makes
 * those instead (k8s-model.ts):
 *
 *   ns create   ─► Namespace (labels) + ServiceAccount default   (Profiles kns.* / ksa.* follow)
 *   pod create  ─► Pod bound to its node ─► pod netns ─► CNI ADD (annotates the Pod with its
 *                  addresses: that is its WorkloadEndpoint) ─► listener
 *   pod delete  ─► listener stopped ─► CNI DEL ─► Pod deleted (grace period 0) ─► netns removed
 *
 * Datastore writes connect to the lab's etcd or API server, so those commands run inside the etcd
 * namespace (main.ts re-enters it); everything else enters namespaces with nsenter.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkloadEndpoint } from '@calico-ts/api';
import type { Datastore } from '@calico-ts/datastore';
import { Netlinux } from '@calico-ts/netlinux';
import { errorMessage, LabError } from './errors.js';
import { kubeNamespace, kubePod, kubeServiceAccount, namespaceProfiles, podEndpoint } from './k8s-model.js';
import { type KubeApi, KubeApiError, withKubeApi } from './kube.js';
import { cniConflist, type LabPlan, type NodePlan, pluginConfig, podNetns } from './plan.js';
import type { Artifacts } from './prereqs.js';
import { isAlive, type ProcRecord, run, spawnDetached, stopRecorded } from './processes.js';
import type { Progress } from './progress.js';
import { type LabState, type PodRecord, writeState } from './state.js';
import { nsenter } from './up.js';

const PATH = process.env.PATH || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A datastore client on the lab's datastore (loaded on demand: most commands never need one). */
export async function withDatastore<T>(plan: LabPlan, fn: (ds: Datastore) => Promise<T>): Promise<T> {
  const { createDatastore } = await import('@calico-ts/datastore');
  // A one-shot command: etcd over node:http2, which loads far faster than etcd3.
  const ds = await createDatastore(
    plan.kube
      ? { datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig: plan.kube.kubeconfig }
      : { datastoreType: 'etcdv3', etcdEndpoints: [plan.etcdUrl] },
    { transport: 'http2' },
  );
  try {
    return await fn(ds);
  } finally {
    await ds.close().catch(() => {});
  }
}

export async function nsCreate(
  state: LabState,
  namespace: string,
  labels: Record<string, string>,
  out: Progress,
): Promise<void> {
  let made: string;
  let existed: boolean;
  if (state.plan.kube) {
    existed = await withKubeApi(state.plan, (api) => applyNamespace(api, namespace, labels));
    made = `Namespace and ServiceAccount default (Profiles kns.${namespace}, ksa.${namespace}.default follow)`;
  } else {
    const profiles = namespaceProfiles(namespace, labels);
    await withDatastore(state.plan, async (ds) => {
      for (const p of profiles) await ds.apply(p);
    });
    existed = namespace in state.k8sNamespaces;
    made = `Profiles ${profiles.map((p) => p.metadata.name).join(', ')}`;
  }
  state.k8sNamespaces[namespace] = labels;
  writeState(state);
  out.line(
    `namespace ${namespace} ${existed ? 'updated' : 'created'}: ${made}` +
      (Object.keys(labels).length > 0
        ? ` (labels ${Object.entries(labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(',')})`
        : ''),
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

function cniEnv(plan: LabPlan, command: 'ADD' | 'DEL', pod: PodRecord): Record<string, string> {
  return {
    PATH,
    CNI_COMMAND: command,
    CNI_CONTAINERID: pod.containerId,
    CNI_NETNS: `/run/netns/${pod.netns}`,
    CNI_IFNAME: 'eth0',
    CNI_PATH: plan.cniBinDir,
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name};K8S_POD_INFRA_CONTAINER_ID=${pod.containerId}`,
  };
}

/** Runs the node's CNI plugin inside the node's namespace, as the container runtime there would. */
function runCni(plan: LabPlan, node: NodePlan, command: 'ADD' | 'DEL', pod: PodRecord) {
  const conf = pluginConfig(cniConflist(plan, node));
  return run([...nsenter(node.netns), join(plan.cniBinDir, 'calico')], {
    env: cniEnv(plan, command, pod),
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
 * The pod's WorkloadEndpoint as the CNI plugin left it. On etcd its labels and profiles are then set
 * as kube-controllers' pod controller would; on the Kubernetes datastore they come from the Pod.
 */
async function podWorkloadEndpoint(plan: LabPlan, pod: PodRecord): Promise<WorkloadEndpoint> {
  return withDatastore(plan, async (ds) => {
    for (let attempt = 0; ; attempt++) {
      const list = await ds.list('WorkloadEndpoint', { namespace: pod.namespace });
      const wep = list.items.find((w) => w.spec.pod === pod.name && w.spec.containerID === pod.containerId);
      if (!wep)
        throw new LabError(
          'command',
          `the CNI plugin made no WorkloadEndpoint for ${pod.namespace}/${pod.name}`,
        );
      if (plan.kube) return wep;
      try {
        return await ds.update(podEndpoint(wep, { namespace: pod.namespace, labels: pod.labels }));
      } catch (e) {
        if ((e as { code?: string }).code === 'conflict' && attempt < 5) continue;
        throw e;
      }
    }
  });
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
    ports: readonly number[];
  },
  out: Progress,
): Promise<PodRecord> {
  const { plan } = state;
  const noNamespace = () =>
    new LabError(
      'not-found',
      `namespace ${req.namespace} does not exist in the lab; create it first: pnpm lab ns create ${req.namespace}`,
    );
  if (!plan.kube && !(req.namespace in state.k8sNamespaces)) throw noNamespace();
  if (findPod(state, req.namespace, req.name)) {
    throw new LabError('state', `pod ${req.namespace}/${req.name} already exists; delete it first`);
  }
  const node = pickNode(state, req.node);
  const net = new Netlinux();
  const pod: PodRecord = {
    namespace: req.namespace,
    name: req.name,
    node: node.name,
    netns: podNetns(plan.name, req.namespace, req.name),
    containerId: randomBytes(32).toString('hex'),
    ports: req.ports,
    labels: req.labels,
  };
  if ((await net.listNetns()).includes(pod.netns)) {
    throw new LabError(
      'state',
      `network namespace ${pod.netns} already exists and the lab did not make it; remove it first`,
    );
  }
  if (plan.kube) {
    // The Pod exists before CNI ADD, bound to its node, as the scheduler and kubelet leave it.
    await withKubeApi(plan, async (api) => {
      if (!(await api.get(`/api/v1/namespaces/${req.namespace}`))) throw noNamespace();
      const made = await api.create(`/api/v1/namespaces/${req.namespace}/pods`, kubePod(pod));
      if (made === 'exists') {
        throw new LabError(
          'state',
          `pod ${req.namespace}/${req.name} already exists in the API server and the lab did not make it; ` +
            `delete it first (pnpm lab kubectl delete pod -n ${req.namespace} ${req.name})`,
        );
      }
    });
  }
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
    pod.ip = result.ips?.[0]?.address.split('/')[0];
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
      ],
      { env: { PATH }, log },
    );
    writeState(state);
    await waitForLine(log, 'ready', pod.listener, 10_000);
    out.line(
      `pod ${pod.namespace}/${pod.name} on ${node.name}: ${pod.ip} (endpoint ${wep.metadata.name}, ` +
        `interface ${wep.spec.interfaceName}), listening on tcp+udp ${pod.ports.join(',')}`,
    );
    return pod;
  } catch (e) {
    out.line(`pod create failed: ${errorMessage(e)}; removing the pod`);
    await podRemove(state, pod).catch(() => {});
    throw e;
  }
}

/** Listener, CNI DEL, the Pod (Kubernetes datastore), netns, state entry; each step tolerant of what is already gone. */
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
  if (state.plan.kube) {
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
