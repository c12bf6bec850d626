/**
 * The lab's podman calls for `lab up --images` (I/O; what each container is, is containers.ts).
 *
 *   checkContainerTools, checkImages   before anything is made: podman and runc, the three images
 *   startContainer                     `nsenter --net=<netns> podman run -d --network host …`;
 *                                      recorded by its main process (PID and start time), as
 *                                      a process the lab started itself is
 *   runContainerOnce                   install-cni: `podman run --rm`, its output returned
 *   execInContainer                    a probe: `nsenter --net=<netns> podman exec NAME …`
 *   removeLabContainers                `podman rm -f` of what the state records and of every
 *                                      container labelled with this lab's state directory
 *
 * podman runs a container "with the host network" in the namespace podman itself runs in, so
 * each call that starts or enters one is made through `nsenter --net` (never `ip netns exec`,
 * which remounts /sys and breaks runc). `podman exec` in such a container joins no network
 * namespace of its own: it too must be started inside the node's.
 */
import { podmanRun } from '@calico-ts/images/podman';
import { type ContainerSpec, LAB_LABEL, podmanRunArgs, STATE_DIR_LABEL } from './containers.js';
import { LabError } from './errors.js';
import type { LabPlan } from './plan.js';
import { type ProcRecord, procStat, run, runAsync } from './processes.js';

const PATH = process.env.PATH || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const ENV = { PATH, LC_ALL: 'C' };

const inNetns = (netns: string | undefined) => (netns ? ['nsenter', `--net=/run/netns/${netns}`] : []);

/** podman and runc on PATH; a `prerequisite` error naming what is missing otherwise. */
export function checkContainerTools(): void {
  const missing = ['podman', 'runc', 'buildah'].filter(
    (tool) => run(['sh', '-c', `command -v ${tool}`], { env: ENV, timeoutMs: 10_000 }).status !== 0,
  );
  if (missing.length > 0) {
    throw new LabError(
      'prerequisite',
      `lab up --images needs ${missing.join(', ')} (\`apt-get install podman buildah runc\`, or ` +
        './scripts/setup.sh), then the images: `pnpm images`',
    );
  }
}

/** Every image is in local container storage; else a `prerequisite` error saying to build them. */
export async function checkImages(refs: readonly string[]): Promise<void> {
  const missing: string[] = [];
  await Promise.all(
    refs.map(async (ref) => {
      const r = await runAsync(['podman', 'image', 'exists', ref], { env: ENV, timeoutMs: 60_000 });
      if (r.status !== 0) missing.push(ref);
    }),
  );
  if (missing.length > 0) {
    throw new LabError(
      'prerequisite',
      `lab up --images runs images that are not in local container storage: ${missing.sort().join(', ')}. ` +
        'Build them with `pnpm images` (a few minutes the first time), then run lab up again',
    );
  }
}

function failure(what: string, r: { status: number; stdout: string; stderr: string }): string {
  return `${what} failed (exit ${r.status}): ${(r.stderr || r.stdout).trim().split('\n').slice(-6).join('\n')}`;
}

/** Starts a detached container; resolves to its main process, recorded like a spawned one. */
export async function startContainer(spec: ContainerSpec): Promise<ProcRecord> {
  const argv = [...inNetns(spec.netns), 'podman', ...podmanRunArgs(spec, podmanRun())];
  const r = await runAsync(argv, { env: ENV, timeoutMs: 120_000 });
  if (r.status !== 0) throw new LabError('setup', failure(`podman run ${spec.name}`, r));
  const pid = await containerPid(spec.name);
  const stat = pid ? procStat(pid) : undefined;
  if (!pid || !stat) {
    throw new LabError(
      'setup',
      `container ${spec.name} exited at once; \`podman logs ${spec.name}\`${spec.log ? ` or ${spec.log}` : ''}`,
    );
  }
  return {
    pid,
    startTime: stat.startTime,
    cmd: `container ${spec.name} (${spec.image})`,
    ...(spec.log ? { log: spec.log } : {}),
  };
}

/** The host PID of the container's main process, or undefined when it does not run. */
export async function containerPid(name: string): Promise<number | undefined> {
  const r = await runAsync(['podman', 'container', 'inspect', '--format', '{{.State.Pid}}', name], {
    env: ENV,
    timeoutMs: 60_000,
  });
  const pid = Number(r.stdout.trim());
  return r.status === 0 && Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Runs a container to completion (`--rm`); its exit status and output. */
export function runContainerOnce(
  spec: ContainerSpec,
  timeoutMs = 180_000,
): Promise<{ status: number; stdout: string; stderr: string }> {
  return runAsync([...inNetns(spec.netns), 'podman', ...podmanRunArgs(spec, podmanRun())], {
    env: ENV,
    timeoutMs,
  });
}

/** `podman exec NAME argv` inside the container's network namespace. */
export function execInContainer(
  netns: string,
  name: string,
  argv: readonly string[],
  timeoutMs = 10_000,
): Promise<{ status: number; stdout: string; stderr: string }> {
  return runAsync([...inNetns(netns), 'podman', 'exec', name, ...argv], { env: ENV, timeoutMs });
}

/**
 * This lab's containers: the recorded names and every container labelled with its state directory
 * (and its name: another lab's are never touched, even if its state directory were reused).
 */
async function labContainers(plan: LabPlan, recorded: readonly string[]): Promise<string[]> {
  const r = await runAsync(
    [
      'podman',
      'ps',
      '-a',
      '--filter',
      `label=${STATE_DIR_LABEL}=${plan.stateDir}`,
      '--format',
      `{{.Names}} {{index .Labels "${LAB_LABEL}"}}`,
    ],
    { env: ENV, timeoutMs: 60_000 },
  );
  const labelled =
    r.status === 0
      ? r.stdout
          .split('\n')
          .map((l) => l.trim().split(/\s+/))
          .filter(([name, lab]) => name && lab === plan.name)
          .map(([name]) => name!)
      : [];
  return [...new Set([...recorded, ...labelled])];
}

/**
 * Stops (SIGTERM, then SIGKILL after `graceSeconds`) and removes this lab's containers; resolves to
 * the names removed. A recorded name that no longer exists is skipped.
 */
export async function removeLabContainers(
  plan: LabPlan,
  recorded: readonly string[],
  graceSeconds = 5,
): Promise<string[]> {
  const names = await labContainers(plan, recorded);
  if (names.length === 0) return [];
  const r = await runAsync(['podman', 'rm', '-f', '--ignore', '-t', String(graceSeconds), ...names], {
    env: ENV,
    timeoutMs: (graceSeconds + 60) * 1000,
  });
  if (r.status !== 0) {
    throw new LabError(
      'command',
      `${failure(`podman rm -f ${names.join(' ')}`, r)}; remove them with \`podman rm -f NAME\``,
    );
  }
  // podman prints each container it removed, as it was named on the command line.
  const removed = new Set(r.stdout.split('\n').map((l) => l.trim()));
  return names.filter((n) => removed.has(n));
}
