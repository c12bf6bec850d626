/**
 * `lab down`: remove everything the state file records, in the reverse order it was made —
 * pod listeners, calico-node (which stops its BIRD), any BIRD a dead calico-node left (found
 * through the pid file calico-node keeps), kube-apiserver (a lab on the Kubernetes datastore), etcd,
 * then the namespaces, then the state directory (certificates and kubeconfig included).
 * Only recorded PIDs whose start time still matches are signalled. Works on a half-made lab too.
 *
 * A lab made with `--images` removes its containers (recorded, and any labelled with its state
 * directory) right after the pod listeners: calico-node's and kube-controllers' containers, and an
 * install-cni a crash left behind.
 */
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Netlinux } from '@calico-ts/netlinux';
import { removeMntnsDir, removeNodeCgroups, removeNodeMountNamespace } from './cluster/node-host.js';
import { clusterNodePaths } from './cluster/plan.js';
import { removeLabContainers } from './podman.js';
import { isAlive, type ProcRecord, recordFromPidFile, stopRecorded } from './processes.js';
import type { Progress } from './progress.js';
import { type LabState, readState, stateFile } from './state.js';

export interface DownSummary {
  readonly processes: number;
  readonly namespaces: number;
  readonly stateDir: string;
}

export async function tearDown(state: LabState, stateDir: string, out: Progress): Promise<DownSummary> {
  const net = new Netlinux();
  let stopped = 0;
  const stop = async (what: string, rec: ProcRecord | undefined, graceMs = 5000) => {
    if (!rec || !isAlive(rec)) return;
    await stopRecorded(rec, graceMs);
    stopped++;
    out.step(`stopped ${what} (pid ${rec.pid})`);
  };
  await Promise.all(
    state.pods.map((p) => stop(`listener of pod ${p.namespace}/${p.name}`, p.listener, 2000)),
  );
  if (state.plan.images) {
    // Their main processes, recorded too, are gone with them and not signalled again below.
    const removed = await removeLabContainers(state.plan, state.containers ?? []);
    stopped += removed.length;
    if (removed.length > 0) out.step(`removed containers ${removed.join(', ')}`);
  }
  if (state.plan.cluster) stopped += await tearDownClusterNodes(state, out, stop);
  const nodeProcs = Object.entries(state.processes).filter(([k]) => k.startsWith('node/'));
  await Promise.all(nodeProcs.map(([k, rec]) => stop(`calico-node ${k.slice(5)}`, rec, 8000)));
  for (const node of state.plan.nodes) {
    const bird = recordFromPidFile(join(node.runDir, 'bird.pid'), join(node.runDir, 'bird.ctl'));
    await stop(`BIRD of ${node.name}`, bird, 3000);
    const bird6 = recordFromPidFile(join(node.runDir, 'bird6.pid'), join(node.runDir, 'bird6.ctl'));
    await stop(`BIRD (IPv6) of ${node.name}`, bird6, 3000);
  }
  // The rest (kube-apiserver, etcd) in the reverse order they were started: a server before what
  // it stores its data in.
  for (const [k, rec] of Object.entries(state.processes).reverse()) {
    if (!k.startsWith('node/')) await stop(k, rec);
  }
  let removed = 0;
  for (const ns of [...state.namespaces].reverse()) {
    if (await net.deleteNetns(ns).catch(() => false)) removed++;
  }
  if (removed > 0)
    out.step(`removed ${removed} network namespaces (${[...state.namespaces].reverse().join(', ')})`);
  if (state.plan.cluster) {
    await removeMntnsDir(state.plan.cluster.mntnsDir);
    removeHostDirs(state, out);
  }
  rmSync(stateDir, { recursive: true, force: true });
  out.step(`removed ${stateDir}`);
  return { processes: stopped, namespaces: removed, stateDir };
}

export async function labDown(
  stateDir: string,
  name: string,
  out: Progress,
): Promise<DownSummary | undefined> {
  const state = readState(stateDir);
  if (!state) {
    out.line(`no lab named "${name}" is up (no ${stateFile(stateDir)}); nothing to remove`);
    return undefined;
  }
  out.step(
    `taking down lab "${name}" (${state.status}, ${state.plan.nodes.length} nodes, ${state.mode}, ` +
      `${state.plan.datastore})`,
  );
  const summary = await tearDown(state, stateDir, out);
  out.step(
    `lab "${name}" is down: ${summary.processes} processes stopped, ${summary.namespaces} namespaces removed`,
  );
  return summary;
}

/**
 * `--kubelet`: on every node, kubelet first (it would start containers again), kube-proxy, then
 * everything left in the node's cgroup root (containerd, its shims, the containers), the cgroups,
 * and the node's mount namespace (its pod network namespaces and mounts go with it).
 */
async function tearDownClusterNodes(
  state: LabState,
  out: Progress,
  stop: (what: string, rec: ProcRecord | undefined, graceMs?: number) => Promise<void>,
): Promise<number> {
  const cluster = state.plan.cluster!;
  let killed = 0;
  await Promise.all(
    state.plan.nodes.map(async (node) => {
      await stop(`kubelet ${node.name}`, state.processes[`kubelet/${node.name}`], 5000);
      await stop(`kube-proxy ${node.name}`, state.processes[`kube-proxy/${node.name}`], 3000);
      const p = clusterNodePaths(state.plan, cluster, node);
      const n = await removeNodeCgroups(p);
      if (n > 0)
        out.step(
          `${node.name}: killed ${n} processes left in cgroup ${p.cgroupRoot} (containerd, shims, containers)`,
        );
      killed += n;
      await removeNodeMountNamespace(p);
    }),
  );
  return killed;
}

/**
 * The empty mount points a `--kubelet` lab made on the machine for the nodes' host paths, unless
 * another `--kubelet` lab is up anywhere on the machine (a cgroup root of its nodes exists): its
 * nodes are mounted on them, and removing a directory that is a mount point in another mount
 * namespace detaches that mount there.
 */
function removeHostDirs(state: LabState, out: Progress): void {
  const made = (state as { hostDirsMade?: string[] }).hostDirsMade ?? [];
  if (made.length === 0) return;
  const ours = new Set(state.plan.nodes.map((n) => `calico-lab-${state.plan.name}-${n.name}`));
  const pids = '/sys/fs/cgroup/pids';
  const others = existsSync(pids)
    ? readdirSync(pids).filter((d) => d.startsWith('calico-lab-') && !ours.has(d))
    : [];
  if (others.length > 0) {
    out.step(
      `left the empty mount points ${made.join(', ')}: another lab's nodes use them (${others.join(', ')})`,
    );
    return;
  }
  const removed: string[] = [];
  for (const d of [...made].sort((a, b) => b.length - a.length)) {
    try {
      rmdirSync(d);
      removed.push(d);
    } catch {
      // not empty, or in use: left as it is
    }
  }
  if (removed.length > 0) out.step(`removed the mount points it made: ${removed.join(', ')}`);
}
