import { describe, expect, it } from 'vitest';
import { calicoState, conditions, podProblems, sameConditions, workloadStatus } from './status.js';

const ds = (desired: number, updated: number, available: number) =>
  workloadStatus({
    kind: 'DaemonSet',
    metadata: { name: 'calico-node', namespace: 'calico-system', generation: 2 },
    status: {
      desiredNumberScheduled: desired,
      updatedNumberScheduled: updated,
      numberAvailable: available,
      observedGeneration: 2,
    },
  });
const dep = (replicas: number, available: number) =>
  workloadStatus({
    kind: 'Deployment',
    metadata: { name: 'calico-typha', namespace: 'calico-system', generation: 1 },
    spec: { replicas },
    status: { updatedReplicas: replicas, availableReplicas: available, observedGeneration: 1 },
  });
const names = ['DaemonSet calico-node', 'Deployment calico-typha'];

describe('calico status', () => {
  it('Available when every workload has all its pods', () => {
    expect(calicoState(names, [ds(3, 3, 3), dep(2, 2)], [])).toEqual({ available: true });
  });

  it('Progressing with what it waits for', () => {
    expect(calicoState(names, [ds(3, 1, 3), dep(2, 1)], [])).toEqual({
      available: false,
      progressing: {
        reason: 'ResourceNotReady',
        message:
          'DaemonSet "calico-system/calico-node" is rolling out (1 out of 3 updated); Deployment "calico-system/calico-typha" is not available (awaiting 1 of 2 pods)',
      },
    });
    expect(calicoState(names, [undefined, dep(2, 2)], []).progressing?.message).toBe(
      'DaemonSet calico-node does not exist yet',
    );
  });

  it('Degraded with the pod and the reason when an image cannot be pulled', () => {
    const problems = podProblems([
      {
        metadata: { name: 'calico-node-abc', namespace: 'calico-system' },
        status: {
          initContainerStatuses: [
            {
              name: 'install-cni',
              state: { waiting: { reason: 'ErrImageNeverPull', message: 'image not present' } },
            },
          ],
          containerStatuses: [{ name: 'calico-node', state: { waiting: { reason: 'PodInitializing' } } }],
        },
      },
    ]);
    expect(calicoState(names, [ds(3, 3, 0), dep(2, 2)], problems)).toEqual({
      available: false,
      degraded: {
        reason: 'PodFailure',
        message:
          'Pod calico-system/calico-node-abc container install-cni is ErrImageNeverPull: image not present: check the image name, the registry and imagePullSecrets',
      },
    });
  });

  it('keeps lastTransitionTime while a status holds, and moves it when it changes', () => {
    const t0 = '2026-01-01T00:00:00.000Z';
    const t1 = '2026-01-01T00:01:00.000Z';
    const progressing = conditions(
      { available: false, progressing: { reason: 'ResourceNotReady', message: 'x' } },
      [],
      t0,
    );
    expect(progressing.map((c) => [c.type, c.status])).toEqual([
      ['Available', 'False'],
      ['Progressing', 'True'],
      ['Degraded', 'False'],
    ]);
    const ready = conditions({ available: true }, progressing, t1);
    expect(ready.find((c) => c.type === 'Available')).toMatchObject({
      status: 'True',
      reason: 'AllObjectsAvailable',
      lastTransitionTime: t1,
    });
    expect(ready.find((c) => c.type === 'Degraded')?.lastTransitionTime).toBe(t0);
    expect(sameConditions(ready, conditions({ available: true }, ready, '2026-01-02T00:00:00.000Z'))).toBe(
      true,
    );
    expect(sameConditions(ready, progressing)).toBe(false);
  });

  it('stays Available while a change rolls out, as upstream, but not when something is degraded', () => {
    const t0 = '2026-01-01T00:00:00.000Z';
    const ready = conditions({ available: true }, [], t0);
    const rolling = conditions(
      { available: false, progressing: { reason: 'ResourceNotReady', message: 'rolling out' } },
      ready,
      '2026-01-01T00:05:00.000Z',
    );
    expect(rolling.map((c) => [c.type, c.status])).toEqual([
      ['Available', 'True'],
      ['Progressing', 'True'],
      ['Degraded', 'False'],
    ]);
    expect(rolling[0]!.lastTransitionTime).toBe(t0);
    const broken = conditions(
      { available: false, degraded: { reason: 'PodFailure', message: 'x' } },
      rolling,
      t0,
    );
    expect(broken[0]!.status).toBe('False');
  });
});
