/**
 * TigeraStatus conditions, as upstream's operator reports them (pure: what was observed in, the
 * conditions out). One TigeraStatus per component: `calico` (calico-node, calico-typha,
 * calico-kube-controllers), `ippools`, `apiserver`.
 *
 *   Degraded     True when a person must act: the Installation is invalid
 *                (InvalidConfigurationError), an object could not be written (ResourceUpdateError),
 *                a pod cannot start (PodFailure: image not pulled, crash loop, bad config)
 *   Progressing  True while a workload rolls out or waits for pods (ResourceNotReady)
 *   Available    True when nothing is degraded and every workload has all its pods available
 *                (AllObjectsAvailable); a rollout of a component that was Available leaves it so
 *
 * A condition's lastTransitionTime is kept from the previous status while its status is unchanged,
 * so `kubectl get tigerastatus`' SINCE is when Available last changed.
 */

export type ConditionType = 'Available' | 'Progressing' | 'Degraded';

export interface Condition {
  readonly type: ConditionType;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly lastTransitionTime: string;
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number;
}

/** What a component's state comes down to, before timestamps. */
export interface ComponentState {
  readonly available: boolean;
  readonly progressing?: { reason: string; message: string };
  readonly degraded?: { reason: string; message: string };
}

/** The status counts of a DaemonSet or Deployment, normalised. */
export interface WorkloadStatus {
  readonly kind: 'DaemonSet' | 'Deployment';
  readonly name: string;
  readonly desired: number;
  readonly updated: number;
  readonly available: number;
  readonly generation: number;
  readonly observedGeneration: number;
}

/** A pod of calico-system whose container cannot run, from its status. */
export interface PodProblem {
  readonly pod: string;
  readonly container: string;
  readonly reason: string;
  readonly message: string;
}

type Obj = Record<string, unknown>;
const num = (v: unknown) => (typeof v === 'number' ? v : 0);

/** A DaemonSet's or Deployment's counts from its object; undefined when it does not exist. */
export function workloadStatus(o: Obj | undefined): WorkloadStatus | undefined {
  if (!o) return undefined;
  const kind = o.kind === 'DaemonSet' ? 'DaemonSet' : 'Deployment';
  const s = (o.status as Obj | undefined) ?? {};
  const meta = (o.metadata as Obj | undefined) ?? {};
  const spec = (o.spec as Obj | undefined) ?? {};
  const ds = kind === 'DaemonSet';
  return {
    kind,
    name: `${String(meta.namespace)}/${String(meta.name)}`,
    desired: ds ? num(s.desiredNumberScheduled) : typeof spec.replicas === 'number' ? spec.replicas : 1,
    updated: num(ds ? s.updatedNumberScheduled : s.updatedReplicas),
    available: num(ds ? s.numberAvailable : s.availableReplicas),
    generation: num(meta.generation),
    observedGeneration: num(s.observedGeneration),
  };
}

const WAITING_FAILURES = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'ErrImageNeverPull',
  'InvalidImageName',
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** Containers of `pods` (a v1 PodList's items) waiting for a reason that needs a person. */
export function podProblems(pods: readonly Obj[]): PodProblem[] {
  const out: PodProblem[] = [];
  for (const p of pods) {
    const meta = (p.metadata as Obj | undefined) ?? {};
    const st = (p.status as Obj | undefined) ?? {};
    const statuses = [
      ...((st.initContainerStatuses as Obj[] | undefined) ?? []),
      ...((st.containerStatuses as Obj[] | undefined) ?? []),
    ];
    for (const c of statuses) {
      const waiting = (c.state as Obj | undefined)?.waiting as Obj | undefined;
      const reason = typeof waiting?.reason === 'string' ? waiting.reason : '';
      if (!WAITING_FAILURES.has(reason)) continue;
      out.push({
        pod: `${String(meta.namespace)}/${String(meta.name)}`,
        container: String(c.name),
        reason,
        message: typeof waiting?.message === 'string' ? waiting.message : '',
      });
    }
  }
  return out;
}

/** The `calico` component's state from its workloads and pods. */
export function calicoState(
  expected: readonly string[],
  workloads: readonly (WorkloadStatus | undefined)[],
  problems: readonly PodProblem[],
  writeError?: string,
): ComponentState {
  if (writeError)
    return { available: false, degraded: { reason: 'ResourceUpdateError', message: writeError } };
  if (problems.length > 0) {
    const p = problems[0]!;
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
    const image = p.reason.includes('Image')
      ? ': check the image name, the registry and imagePullSecrets'
      : '';
    return {
      available: false,
      degraded: {
        reason: 'PodFailure',
        message: `Pod ${p.pod} container ${p.container} is ${p.reason}${p.message ? `: ${p.message}` : ''}${image}${more}`,
      },
    };
  }
  const waiting: string[] = [];
  expected.forEach((name, i) => {
    const w = workloads[i];
    if (!w) waiting.push(`${name} does not exist yet`);
    else if (w.observedGeneration < w.generation)
      waiting.push(`${w.kind} "${w.name}" update is being processed`);
    else if (w.desired === 0) waiting.push(`${w.kind} "${w.name}" has no pods scheduled`);
    else if (w.updated < w.desired)
      waiting.push(`${w.kind} "${w.name}" is rolling out (${w.updated} out of ${w.desired} updated)`);
    else if (w.available < w.desired)
      waiting.push(
        `${w.kind} "${w.name}" is not available (awaiting ${w.desired - w.available} of ${w.desired} pods)`,
      );
  });
  if (waiting.length === 0) return { available: true };
  return { available: false, progressing: { reason: 'ResourceNotReady', message: waiting.join('; ') } };
}

/** The three conditions for `state`, timestamps kept from `previous` where a status did not change. */
export function conditions(
  state: ComponentState,
  previous: readonly Condition[],
  now: string,
  generation?: number,
): Condition[] {
  const make = (type: ConditionType, on: boolean, reason: string, message: string): Condition => {
    const status = on ? 'True' : 'False';
    const prev = previous.find((c) => c.type === type);
    return {
      type,
      status,
      lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : now,
      reason,
      message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    };
  };
  const ok = 'AllObjectsAvailable';
  // As upstream: a rollout (Progressing, nothing Degraded) leaves Available as it was, so a
  // component that was Available stays so while a change rolls out.
  const wasAvailable = previous.find((c) => c.type === 'Available')?.status === 'True';
  const available = state.available || (wasAvailable && state.progressing !== undefined && !state.degraded);
  return [
    make(
      'Available',
      available,
      available ? ok : ((state.degraded ?? state.progressing)?.reason ?? 'Unknown'),
      available ? 'All objects are available' : ((state.degraded ?? state.progressing)?.message ?? ''),
    ),
    make(
      'Progressing',
      state.progressing !== undefined,
      state.progressing?.reason ?? ok,
      state.progressing?.message ?? (state.available ? 'All objects are available' : ''),
    ),
    make(
      'Degraded',
      state.degraded !== undefined,
      state.degraded?.reason ?? ok,
      state.degraded?.message ?? '',
    ),
  ];
}

/** Are two condition lists the same apart from timestamps (no write needed)? */
export function sameConditions(a: readonly Condition[], b: readonly Condition[]): boolean {
  const key = (cs: readonly Condition[]) =>
    JSON.stringify(
      [...cs]
        .sort((x, y) => x.type.localeCompare(y.type))
        .map((c) => [c.type, c.status, c.reason, c.message]),
    );
  return key(a) === key(b);
}

/**
 * Why an APIService is not serving yet, from its Available condition (the aggregator's discovery
 * check: `FailedDiscoveryCheck`, `MissingEndpoints`, …); undefined when it is Available.
 */
export function apiServiceProblem(name: string, apiService: Obj | undefined): string | undefined {
  if (!apiService) return `APIService ${name} does not exist yet`;
  const conds = ((apiService.status as Obj | undefined)?.conditions as Obj[] | undefined) ?? [];
  const available = conds.find((c) => c.type === 'Available');
  if (available?.status === 'True') return undefined;
  if (!available) return `APIService ${name} has not been checked by the API server yet`;
  const why = [available.reason, available.message].filter((v) => typeof v === 'string' && v !== '');
  return `APIService ${name} is not available${why.length > 0 ? `: ${why.join(': ')}` : ''}`;
}
