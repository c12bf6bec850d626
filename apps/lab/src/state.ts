/**
 * The lab's state file, `<state dir>/state.json`: everything the lab made, written before or right
 * after each thing is made, so `lab down` can remove all of it even after a crash or a failed
 * `lab up`. Written atomically (temp + rename). Mutating commands hold `<state dir>/lock`.
 */
import {
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { LabError } from './errors.js';
import type { LabDatastore, LabMode, LabPlan } from './plan.js';
import type { ProcRecord } from './processes.js';

export interface PodRecord {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  readonly netns: string;
  readonly containerId: string;
  /** The Pod's metadata.uid (K8S_POD_UID for the CNI plugin). */
  uid?: string;
  /** The pod's IPv4 address (none in an IPv6-only lab). */
  ip?: string;
  /** The pod's IPv6 address, in a lab with IPv6 pods. */
  ip6?: string;
  readonly ports: readonly number[];
  /** Named TCP ports (`--ports http=80`): name → port. */
  readonly namedPorts?: Readonly<Record<string, number>>;
  readonly labels: Readonly<Record<string, string>>;
  /** spec.serviceAccountName when not `default`. */
  readonly serviceAccount?: string;
  listener?: ProcRecord;
}

export interface LabState {
  readonly version: 1;
  readonly name: string;
  readonly mode: LabMode;
  readonly stateDir: string;
  readonly createdAt: string;
  status: 'creating' | 'up' | 'failed';
  readonly plan: LabPlan;
  /** Every network namespace the lab made, in the order made (removed in reverse). */
  readonly namespaces: string[];
  /**
   * Processes by role, in the order started: `etcd`, `kube-apiserver`, `kube-controllers`,
   * `node/<name>`. Pod listeners live on their pod.
   */
  readonly processes: Record<string, ProcRecord>;
  /**
   * `--images`: every container the lab started, by name, recorded before it is started (its main
   * process is in `processes` too, under its role).
   */
  readonly containers?: string[];
  readonly k8sNamespaces: Record<string, Record<string, string>>;
  readonly pods: PodRecord[];
  /** `--kubelet`: directories made on the machine as mount points for the nodes' host paths. */
  hostDirsMade?: string[];
  /** Seconds `lab up` took, once it finished. */
  upSeconds?: number;
}

export function stateFile(stateDir: string): string {
  return join(stateDir, 'state.json');
}

export function readState(stateDir: string): LabState | undefined {
  const path = stateFile(stateDir);
  if (!existsSync(path)) return undefined;
  let state: LabState;
  try {
    state = JSON.parse(readFileSync(path, 'utf8')) as LabState;
  } catch (e) {
    throw new LabError('state', `the state file ${path} cannot be read (${(e as Error).message})`);
  }
  // A lab made before the datastore could be chosen runs on etcd.
  if (state.plan && state.plan.datastore === undefined) {
    (state.plan as { datastore: LabDatastore }).datastore = 'etcdv3';
  }
  return state;
}

export function writeState(state: LabState): void {
  const path = stateFile(state.stateDir);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(tmp, path);
}

export function newState(plan: LabPlan): LabState {
  return {
    version: 1,
    name: plan.name,
    mode: plan.mode,
    stateDir: plan.stateDir,
    createdAt: new Date().toISOString(),
    status: 'creating',
    plan,
    namespaces: [],
    processes: {},
    ...(plan.images ? { containers: [] } : {}),
    k8sNamespaces: {},
    pods: [],
  };
}

/** The lab's state, or a clear error when it is not up. */
export function requireState(stateDir: string, name: string): LabState {
  const s = readState(stateDir);
  if (!s) throw new LabError('state', `no lab named "${name}" is up; start one with \`pnpm lab up\``);
  if (s.status !== 'up') {
    throw new LabError(
      'state',
      `the lab "${name}" did not finish starting (status ${s.status}); run \`pnpm lab down\`, then \`pnpm lab up\``,
    );
  }
  return s;
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Runs `fn` holding the lab's lock file (created exclusively; one left by a process that died is
 * taken over after 60 s).
 */
export async function withLock<T>(stateDir: string, fn: () => Promise<T>): Promise<T> {
  const lock = join(stateDir, 'lock');
  const end = Date.now() + 30_000;
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx'));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new LabError('state', `the lab's state directory ${stateDir} is gone`);
      }
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      try {
        if (Date.now() - statSync(lock).mtimeMs > 60_000) rmSync(lock, { force: true });
      } catch {
        // removed meanwhile
      }
      if (Date.now() > end) throw new LabError('state', `another lab command holds ${lock}; try again`);
      sleepSync(50);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}
