/**
 * A lab node as a host for kubelet (I/O): its mount namespace, its cgroup root, and running a
 * program inside both and its network namespace.
 *
 *   <state>/mntns          bound on itself and made private (as `ip netns` does /run/netns), so a
 *                          mount-namespace file can be bound inside it
 *   <state>/mntns/<node>   the node's mount namespace: the machine's mounts, with each of
 *                          NODE_HOST_PATHS bound to the node's own directory
 *   /sys/fs/cgroup/<each v1 hierarchy>/calico-lab-<lab>-<node>[/system]
 *
 * Every program of the node starts through `nodeCommand`: a shell that moves itself into the
 * node's `system` cgroup in every hierarchy and then becomes the program, so nothing it starts
 * (containerd's shims, containers) is ever outside the node's cgroup root. Teardown kills what is
 * left in that root, then removes it.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage, LabError } from '../errors.js';
import { runAsync } from '../processes.js';
import type { ClusterNodePaths } from './plan.js';

const CGROUP_FS = '/sys/fs/cgroup';

/** The mount points of the cgroup v1 hierarchies (`cpu`, `memory`, …, `systemd`). */
export function cgroupV1Hierarchies(mounts = readFileSync('/proc/mounts', 'utf8')): string[] {
  return cgroupMounts(mounts, 'cgroup');
}

/**
 * Every cgroup hierarchy mounted under /sys/fs/cgroup, the hybrid layout's cgroup2 (`unified`)
 * included: runc makes each container's cgroup there too, so teardown looks in all of them.
 */
export function cgroupAllHierarchies(mounts = readFileSync('/proc/mounts', 'utf8')): string[] {
  return [...cgroupMounts(mounts, 'cgroup'), ...cgroupMounts(mounts, 'cgroup2')];
}

function cgroupMounts(mounts: string, type: 'cgroup' | 'cgroup2'): string[] {
  return mounts
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f[2] === type && f[1]?.startsWith(`${CGROUP_FS}/`))
    .map((f) => f[1]!);
}

async function sh(script: string, args: string[] = [], what = 'a shell step'): Promise<string> {
  const r = await runAsync(['sh', '-c', script, 'sh', ...args], { timeoutMs: 60_000 });
  if (r.status !== 0)
    throw new LabError('setup', `${what} failed (exit ${r.status}): ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

/** `<state>/mntns`, bound on itself and private, once per lab. */
export async function makeMntnsDir(dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  await sh(
    'mountpoint -q "$1" || mount --bind "$1" "$1"; mount --make-private "$1"',
    [dir],
    `making ${dir} a private mount`,
  );
}

export async function removeMntnsDir(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  await sh('if mountpoint -q "$1"; then umount "$1"; fi', [dir], `unmounting ${dir}`).catch(() => {});
}

/**
 * The node's mount namespace, bound to `p.mntns`: private propagation (nothing the node mounts
 * reaches the machine, and the reverse), the machine's /run/netns and the mntns directory dropped
 * inside it (it would otherwise hold every lab namespace open), then each host path bound to the
 * node's directory. Targets the machine lacks are made first; the ones made are returned, so
 * teardown can remove them.
 */
export async function makeNodeMountNamespace(p: ClusterNodePaths, mntnsDir: string): Promise<string[]> {
  const made: string[] = [];
  for (const { target, source } of p.hostPaths) {
    mkdirSync(source, { recursive: true });
    if (!existsSync(target)) {
      mkdirSync(target, { recursive: true });
      made.push(target);
    }
  }
  writeFileSync(p.mntns, '');
  const binds = p.hostPaths.flatMap(({ target, source }) => [source, target]);
  await sh(
    [
      'set -e',
      'ns=$1; dir=$2; shift 2',
      'exec unshare --mount="$ns" --propagation private sh -c \'',
      '  set -e',
      '  umount -l "$0" 2>/dev/null || true',
      '  if mountpoint -q /run/netns; then umount -l /run/netns; fi',
      '  while [ $# -gt 0 ]; do mount --bind "$1" "$2"; shift 2; done',
      '\' "$dir" "$@"',
    ].join('\n'),
    [p.mntns, mntnsDir, ...binds],
    `making the mount namespace ${p.mntns}`,
  );
  return made;
}

/** Unbinds the node's mount-namespace file: the namespace ends with its last process. */
export async function removeNodeMountNamespace(p: ClusterNodePaths): Promise<void> {
  if (!existsSync(p.mntns)) return;
  await sh('umount "$1" 2>/dev/null || umount -l "$1" 2>/dev/null || true; rm -f "$1"', [p.mntns]);
}

/** The node's cgroup root and its `system` child in every v1 hierarchy (cpuset's filled from the parent). */
export function makeNodeCgroups(p: ClusterNodePaths, hierarchies = cgroupV1Hierarchies()): void {
  for (const h of hierarchies) {
    for (const dir of [join(h, p.cgroupRoot), join(h, p.cgroupRoot, 'system')]) {
      mkdirSync(dir, { recursive: true });
      // A new cpuset cgroup has no CPUs or memory nodes: no task could join it.
      if (h.endsWith('/cpuset')) {
        for (const f of ['cpuset.cpus', 'cpuset.mems']) {
          const parent = readFileSync(join(dir, '..', f), 'utf8').trim();
          writeFileSync(join(dir, f), parent);
        }
      }
    }
  }
}

/** Every process in the node's cgroup root, in any of `hierarchies`. */
export function nodeCgroupPids(p: ClusterNodePaths, hierarchies = cgroupAllHierarchies()): number[] {
  const pids = new Set<number>();
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n'))
      if (line.trim() !== '') pids.add(Number(line));
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
  };
  for (const h of hierarchies) walk(join(h, p.cgroupRoot));
  return [...pids];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Kills every process left in the node's cgroup root (all of them the node's: containerd, its
 * shims, containers, kubelet, kube-proxy), then removes the cgroups, deepest first. Returns how
 * many processes it killed.
 */
export async function removeNodeCgroups(
  p: ClusterNodePaths,
  hierarchies = cgroupAllHierarchies(),
): Promise<number> {
  let killed = 0;
  for (let round = 0; round < 50; round++) {
    const pids = nodeCgroupPids(p, hierarchies);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // gone meanwhile
      }
    }
    await sleep(100);
  }
  const problems: string[] = [];
  for (const h of hierarchies) {
    const root = join(h, p.cgroupRoot);
    if (!existsSync(root)) continue;
    const dirs: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
      dirs.push(dir);
    };
    walk(root);
    for (const d of dirs) {
      for (let i = 0; ; i++) {
        try {
          rmdirSync(d);
          break;
        } catch (e) {
          // A cgroup whose last task just died stays busy for a moment.
          if (i >= 20) {
            problems.push(`${d}: ${errorMessage(e)}`);
            break;
          }
          await sleep(100);
        }
      }
    }
  }
  if (problems.length > 0) throw new LabError('setup', `cgroups left behind: ${problems.join('; ')}`);
  return killed;
}

/**
 * The argv that runs `argv` as a process of the node: in its network and mount namespaces, moved
 * into `<cgroupRoot>/system` in every hierarchy before it starts.
 */
export function nodeCommand(
  netns: string,
  p: ClusterNodePaths,
  argv: readonly string[],
  hierarchies = cgroupV1Hierarchies(),
): string[] {
  const procs = hierarchies.map((h) => join(h, p.cgroupRoot, 'system', 'cgroup.procs'));
  return [
    'nsenter',
    `--net=/run/netns/${netns}`,
    `--mount=${p.mntns}`,
    '--',
    'sh',
    '-c',
    `for f in ${procs.map((x) => `'${x}'`).join(' ')}; do echo $$ > "$f"; done; exec "$@"`,
    'node-process',
    ...argv,
  ];
}
