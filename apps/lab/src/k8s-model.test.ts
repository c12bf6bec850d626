import { describe, expect, it } from 'vitest';
import {
  expectedEndpointLabels,
  kubeNamespace,
  kubeNode,
  kubePod,
  kubePodStatus,
  kubeServiceAccount,
  LAB_POD_IMAGE,
  parseAnnotations,
  parseLabels,
  parsePorts,
} from './k8s-model.js';

describe('command-line syntax', () => {
  it('labels are checked as Kubernetes checks them', () => {
    expect(parseLabels(['a=1,b=', 'example.com/x=y'])).toEqual({ a: '1', b: '', 'example.com/x': 'y' });
    expect(() => parseLabels(['a=b c'])).toThrow(/label value "b c"/);
    expect(() => parseLabels(['-a=b'])).toThrow(/label key "-a"/);
  });
  it('ports: numbers, optionally named; a name is an IANA service name', () => {
    expect(parsePorts(['80,http=8080', '443'])).toEqual([
      { port: 80 },
      { port: 8080, name: 'http' },
      { port: 443 },
    ]);
    expect(parsePorts(['80', 'web=80'])).toEqual([{ port: 80, name: 'web' }]);
    expect(() => parsePorts(['0'])).toThrow(/"0" must be a port from 1 to 65535/);
    expect(() => parsePorts(['HTTP=80'])).toThrow(/port name "HTTP"/);
    expect(() => parsePorts(['80=80'])).toThrow(/port name "80"/);
    expect(() => parsePorts(['a=80,a=81'])).toThrow(/"a" given twice/);
    expect(() => parsePorts(['a=80,b=80'])).toThrow(/port 80 named twice/);
  });
  it('annotations: a comma inside brackets or quotes belongs to the value', () => {
    expect(
      parseAnnotations([
        'cni.projectcalico.org/ipAddrs=["198.19.9.9"],x=1',
        'cni.projectcalico.org/ipv4pools=["a","b"]',
      ]),
    ).toEqual({
      'cni.projectcalico.org/ipAddrs': '["198.19.9.9"]',
      x: '1',
      'cni.projectcalico.org/ipv4pools': '["a","b"]',
    });
    expect(() => parseAnnotations(['novalue'])).toThrow(/annotation "novalue" must be key=value/);
  });
});

describe('what kubelet, the scheduler and kube-controller-manager would make', () => {
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
      kubePod({
        namespace: 'a',
        name: 'web',
        node: 'n1',
        labels: { app: 'web' },
        ports: [{ port: 80 }, { port: 8080 }],
      }),
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
  it('a named port names the TCP port only; service account and annotations as given', () => {
    const pod = kubePod({
      namespace: 'a',
      name: 'web',
      node: 'n2',
      labels: {},
      annotations: { 'cni.projectcalico.org/ipAddrs': '["198.19.9.9"]' },
      serviceAccount: 'robot',
      ports: [{ port: 8080, name: 'http' }],
    }) as { metadata: object; spec: { serviceAccountName: string; containers: { ports: object[] }[] } };
    expect(pod.metadata).toEqual({
      name: 'web',
      namespace: 'a',
      labels: {},
      annotations: { 'cni.projectcalico.org/ipAddrs': '["198.19.9.9"]' },
    });
    expect(pod.spec.serviceAccountName).toBe('robot');
    expect(pod.spec.containers[0]!.ports).toEqual([
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { containerPort: 8080, protocol: 'UDP' },
    ]);
  });
  it("the status kubelet reports: Running, Ready, the pod's and the node's addresses", () => {
    const t = '2026-11-26T20:00:00Z';
    expect(kubePodStatus({ podIPs: ['198.19.0.5'], hostIP: '198.18.0.11', started: t })).toMatchObject({
      phase: 'Running',
      podIP: '198.19.0.5',
      podIPs: [{ ip: '198.19.0.5' }],
      hostIP: '198.18.0.11',
      hostIPs: [{ ip: '198.18.0.11' }],
      startTime: t,
      conditions: expect.arrayContaining([{ type: 'Ready', status: 'True', lastTransitionTime: t }]),
    });
  });
  it("the labels a pod's endpoint must carry: its own plus namespace, orchestrator and service account", () => {
    expect(expectedEndpointLabels({ namespace: 'a', labels: { app: 'web' } })).toEqual({
      app: 'web',
      'projectcalico.org/namespace': 'a',
      'projectcalico.org/orchestrator': 'k8s',
      'projectcalico.org/serviceaccount': 'default',
    });
    expect(
      expectedEndpointLabels({ namespace: 'a', labels: {}, serviceAccount: 'robot' })[
        'projectcalico.org/serviceaccount'
      ],
    ).toBe('robot');
  });
});
