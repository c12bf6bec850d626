import { DatastoreError } from '@calico-ts/datastore';
import { describe, expect, test } from 'vitest';
import { kddCreateNotFound, kddRefusal, kddStoreReason } from './kdd-rules.js';

describe('Kubernetes datastore rules', () => {
  test('Nodes are updated, never created or deleted; Profiles are read-only; other kinds pass', () => {
    expect(kddRefusal('create', 'Node', 'n1')).toMatch(
      /^operation create is not supported on Node\(n1\) in the Kubernetes datastore: /,
    );
    expect(kddRefusal('delete', 'Node', 'n1')).toBe(
      'operation delete is not supported on Node(n1) in the Kubernetes datastore: delete the Kubernetes Node with kubectl (kubectl delete node n1)',
    );
    for (const action of ['apply', 'replace'] as const)
      expect(kddRefusal(action, 'Node', 'n1')).toBeUndefined();
    for (const action of ['create', 'apply', 'replace', 'delete'] as const) {
      expect(kddRefusal(action, 'Profile', 'kns.a')).toMatch(
        new RegExp(
          `^operation ${action} is not supported on Profile\\(kns\\.a\\) in the Kubernetes datastore: profiles there are derived`,
        ),
      );
      expect(kddRefusal(action, 'IPPool', 'p')).toBeUndefined();
      expect(kddRefusal(action, 'WorkloadEndpoint', 'w')).toBeUndefined();
    }
  });

  test('store reasons lose the key they start with, also when wrapped', () => {
    const inner = new DatastoreError(
      'unsupported',
      '/calico/resources/v3/projectcalico.org/profiles/kns.a: read-only here',
    );
    expect(kddStoreReason(inner)).toBe('read-only here');
    expect(kddStoreReason(new DatastoreError('not-found', 'Profile "x" not found', { cause: inner }))).toBe(
      'read-only here',
    );
    expect(kddStoreReason(new DatastoreError('invalid', 'no key here'))).toBe('no key here');
  });

  test('a create that finds nothing: the CRD is not served, or the Pod is missing', () => {
    const e = new DatastoreError('not-found', 'IPPool "p" not found');
    expect(kddCreateNotFound(e, 'IPPool', 'p')).toBe(
      'cannot create IPPool(p): the Kubernetes API server does not serve ippools.crd.projectcalico.org; install the Calico CRDs first (kubectl apply -f calico-crds.yaml)',
    );
    const pod = new DatastoreError('not-found', 'WorkloadEndpoint "ns/w" not found', {
      cause: new DatastoreError(
        'not-found',
        '/calico/resources/v3/projectcalico.org/workloadendpoints/ns/w: the Kubernetes Pod ns/web does not exist',
      ),
    });
    expect(kddCreateNotFound(pod, 'WorkloadEndpoint', 'w', 'ns')).toBe(
      'cannot create WorkloadEndpoint(ns/w): the Kubernetes Pod ns/web does not exist (in the Kubernetes datastore a WorkloadEndpoint is its Pod)',
    );
  });
});
