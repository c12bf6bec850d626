import { describe, expect, it } from 'vitest';
import { isCniPluginError } from './errors.js';
import {
  containerIdOfHandle,
  hostVethName,
  interfacePrefix,
  ipamHandleId,
  legacyHandleId,
  splitWorkloadEndpointName,
  workloadEndpointName,
  workloadEndpointNamePrefix,
} from './naming.js';

describe('hostVethName', () => {
  // Expected suffixes computed independently (Python hashlib.sha1(...).hexdigest()[:11]).
  it.each([
    ['default', 'nginx', 'calic440f455693'],
    ['kube-system', 'coredns-5d78c9869d-abcde', 'cali4d5f75c480c'],
    ['default', '22-my-nginx-2523304718-7stgs', 'cali279796d25e7'],
  ])('k8s pod %s/%s → %s', (namespace, pod, want) => {
    const name = hostVethName({ orchestrator: 'k8s', namespace, pod, containerId: 'ignored' });
    expect(name).toBe(want);
    expect(name.length).toBe(15);
  });

  it('uses the first FELIX_INTERFACEPREFIX entry', () => {
    expect(interfacePrefix(undefined)).toBe('cali');
    expect(interfacePrefix('')).toBe('cali');
    expect(interfacePrefix('tap,cali')).toBe('tap');
    const name = hostVethName({
      orchestrator: 'k8s',
      namespace: 'ns1',
      pod: 'pod-a',
      containerId: 'x',
      prefix: 'tap',
    });
    expect(name).toBe('tap0b3c1e06ce5');
  });

  it('non-k8s: prefix + first 11 characters of the container ID', () => {
    expect(hostVethName({ orchestrator: 'cni', namespace: 'default', containerId: 'abcdef0123456789' })).toBe(
      'caliabcdef01234',
    );
    expect(hostVethName({ orchestrator: 'cni', namespace: 'default', containerId: 'short' })).toBe(
      'calishort',
    );
  });

  it('keeps the name within 15 bytes for a longer prefix, and rejects a prefix with no room', () => {
    const n = hostVethName({
      orchestrator: 'cni',
      namespace: 'default',
      containerId: 'abcdef0123456789',
      prefix: 'veth12',
    });
    expect(n).toBe('veth12abcdef012');
    expect(() =>
      hostVethName({
        orchestrator: 'cni',
        namespace: 'default',
        containerId: 'a',
        prefix: 'averylongprefix',
      }),
    ).toThrow(/no room/);
  });
});

describe('workloadEndpointName', () => {
  it('doubles dashes in every segment (upstream example)', () => {
    expect(
      workloadEndpointName({ node: 'ip-10-0-0-1', orchestrator: 'k8s', pod: 'web-1', endpoint: 'eth0' }),
    ).toBe('ip--10--0--0--1-k8s-web--1-eth0');
  });

  it('cni workloads use the container ID', () => {
    expect(
      workloadEndpointName({ node: 'node1', orchestrator: 'cni', containerId: 'abc-123', endpoint: 'eth0' }),
    ).toBe('node1-cni-abc--123-eth0');
  });

  it.each([
    [{ node: '', orchestrator: 'k8s' as const, pod: 'p', endpoint: 'eth0' }, /node must be set/],
    [{ node: 'n', orchestrator: 'k8s' as const, endpoint: 'eth0' }, /pod must be set/],
    [{ node: 'n', orchestrator: 'k8s' as const, pod: '-p', endpoint: 'eth0' }, /must not begin with "-"/],
    [
      { node: 'n-', orchestrator: 'k8s' as const, pod: 'p', endpoint: 'eth0' },
      /node "n-" must not end with "-"/,
    ],
    [{ node: 'n', orchestrator: 'cni' as const, endpoint: 'eth0' }, /containerID must be set/],
  ])('rejects %o', (ids, msg) => {
    try {
      workloadEndpointName(ids);
      expect.unreachable();
    } catch (e) {
      expect(isCniPluginError(e, 'invalid-config')).toBe(true);
      expect((e as Error).message).toMatch(msg);
    }
  });

  it('prefix and split are consistent with the full name', () => {
    const ids = { node: 'node-a', orchestrator: 'k8s' as const, pod: 'my-pod' };
    const full = workloadEndpointName({ ...ids, endpoint: 'eth0' });
    expect(full.startsWith(workloadEndpointNamePrefix(ids))).toBe(true);
    expect(workloadEndpointNamePrefix(ids)).toBe('node--a-k8s-my--pod-');
    expect(splitWorkloadEndpointName(full)).toEqual(['node-a', 'k8s', 'my-pod', 'eth0']);
  });
});

describe('IPAM handles', () => {
  it('is <network>.<containerID>', () => {
    expect(ipamHandleId('k8s-pod-network', 'abc123')).toBe('k8s-pod-network.abc123');
  });

  it('recognises only this network’s pod handles', () => {
    expect(containerIdOfHandle('k8s-pod-network.abc123', 'k8s-pod-network')).toBe('abc123');
    expect(containerIdOfHandle('k8s-pod-network.abc123\r', 'k8s-pod-network')).toBe('abc123');
    expect(containerIdOfHandle('other.abc123', 'k8s-pod-network')).toBeUndefined();
    expect(containerIdOfHandle('ipip-tunnel-addr-node1', 'k8s-pod-network')).toBeUndefined();
    expect(containerIdOfHandle('k8s-pod-network.default.mypod', 'k8s-pod-network')).toBeUndefined();
    expect(containerIdOfHandle('k8s-pod-network.', 'k8s-pod-network')).toBeUndefined();
  });

  it('legacy handles are <namespace>.<pod> for pods, the container ID otherwise', () => {
    expect(legacyHandleId({ orchestrator: 'k8s', namespace: 'ns', pod: 'p', containerId: 'c' })).toBe('ns.p');
    expect(legacyHandleId({ orchestrator: 'cni', namespace: 'default', containerId: 'c' })).toBe('c');
  });
});
