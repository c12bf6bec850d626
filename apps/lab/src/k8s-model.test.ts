import type { WorkloadEndpoint } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import {
  kubeNamespace,
  kubeNode,
  kubePod,
  kubeServiceAccount,
  LAB_POD_IMAGE,
  namespaceProfiles,
  parseLabels,
  podEndpoint,
} from './k8s-model.js';

describe('what kube-controllers would write', () => {
  it('a namespace becomes kns.<ns> (allow all, pcns. labels) and ksa.<ns>.default', () => {
    expect(namespaceProfiles('team-a', { env: 'prod' })).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'Profile',
        metadata: { name: 'kns.team-a' },
        spec: {
          ingress: [{ action: 'Allow' }],
          egress: [{ action: 'Allow' }],
          labelsToApply: { 'pcns.env': 'prod', 'pcns.projectcalico.org/name': 'team-a' },
        },
      },
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'Profile',
        metadata: { name: 'ksa.team-a.default' },
        spec: { labelsToApply: { 'pcsa.projectcalico.org/name': 'default' } },
      },
    ]);
  });
  it("a pod's endpoint gets the pod labels plus the namespace, orchestrator and service account ones", () => {
    const wep = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: {
        name: 'n1-k8s-web-eth0',
        namespace: 'team-a',
        resourceVersion: '42',
        labels: { 'projectcalico.org/namespace': 'team-a', 'projectcalico.org/orchestrator': 'k8s' },
      },
      spec: {
        node: 'n1',
        pod: 'web',
        endpoint: 'eth0',
        profiles: ['kns.team-a'],
        ipNetworks: ['198.19.0.5/32'],
      },
    } as unknown as WorkloadEndpoint;
    const out = podEndpoint(wep, { namespace: 'team-a', labels: { app: 'web' } });
    expect(out.metadata).toEqual({
      name: 'n1-k8s-web-eth0',
      namespace: 'team-a',
      resourceVersion: '42',
      labels: {
        app: 'web',
        'projectcalico.org/namespace': 'team-a',
        'projectcalico.org/orchestrator': 'k8s',
        'projectcalico.org/serviceaccount': 'default',
      },
    });
    expect(out.spec).toMatchObject({
      serviceAccountName: 'default',
      profiles: ['kns.team-a', 'ksa.team-a.default'],
      ipNetworks: ['198.19.0.5/32'],
    });
  });
  it('labels are checked as Kubernetes checks them', () => {
    expect(parseLabels(['a=1,b=', 'example.com/x=y'])).toEqual({ a: '1', b: '', 'example.com/x': 'y' });
    expect(() => parseLabels(['a=b c'])).toThrow(/label value "b c"/);
    expect(() => parseLabels(['-a=b'])).toThrow(/label key "-a"/);
  });
});

describe('what kubelet, the scheduler and kube-controller-manager would make (Kubernetes datastore)', () => {
  it('a v1 Node per lab node, a Namespace with its labels and its default ServiceAccount', () => {
    expect(kubeNode('n2')).toEqual({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n2', labels: { 'kubernetes.io/hostname': 'n2', 'kubernetes.io/os': 'linux' } },
    });
    expect(kubeNamespace('team-a', { env: 'prod' })).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team-a', labels: { env: 'prod' } },
    });
    expect(kubeServiceAccount('team-a')).toEqual({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'default', namespace: 'team-a' },
    });
  });
  it('a Pod bound to its node, with the listener ports for TCP and UDP', () => {
    expect(
      kubePod({ namespace: 'a', name: 'web', node: 'n1', labels: { app: 'web' }, ports: [80, 8080] }),
    ).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'a', labels: { app: 'web' } },
      spec: {
        nodeName: 'n1',
        serviceAccountName: 'default',
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: 'listener',
            image: LAB_POD_IMAGE,
            ports: [
              { containerPort: 80, protocol: 'TCP' },
              { containerPort: 80, protocol: 'UDP' },
              { containerPort: 8080, protocol: 'TCP' },
              { containerPort: 8080, protocol: 'UDP' },
            ],
          },
        ],
      },
    });
  });
});
