import { describe, expect, it } from 'vitest';
import { parseResourceKey, RESOURCE_ROOT, resourceKey, resourcePrefix } from './resource-keys.js';

describe('resource keys', () => {
  it('lays out cluster-scoped and namespaced kinds as upstream does', () => {
    expect(resourceKey('IPPool', 'pool-1')).toBe('/calico/resources/v3/projectcalico.org/ippools/pool-1');
    expect(resourceKey('GlobalNetworkPolicy', 'allow-dns')).toBe(
      '/calico/resources/v3/projectcalico.org/globalnetworkpolicies/allow-dns',
    );
    expect(resourceKey('NetworkPolicy', 'web', 'prod')).toBe(
      '/calico/resources/v3/projectcalico.org/networkpolicies/prod/web',
    );
    expect(resourceKey('WorkloadEndpoint', 'node1-k8s-pod-eth0', 'default')).toBe(
      '/calico/resources/v3/projectcalico.org/workloadendpoints/default/node1-k8s-pod-eth0',
    );
    expect(resourcePrefix('NetworkPolicy')).toBe(`${RESOURCE_ROOT}networkpolicies/`);
    expect(resourcePrefix('NetworkPolicy', 'prod')).toBe(`${RESOURCE_ROOT}networkpolicies/prod/`);
    expect(resourcePrefix('IPPool')).toBe(`${RESOURCE_ROOT}ippools/`);
    expect(resourceKey('StagedNetworkPolicy', 'allow', 'prod')).toBe(
      `${RESOURCE_ROOT}stagednetworkpolicies/prod/allow`,
    );
    expect(resourceKey('StagedGlobalNetworkPolicy', 'deny')).toBe(
      `${RESOURCE_ROOT}stagedglobalnetworkpolicies/deny`,
    );
    expect(resourceKey('StagedKubernetesNetworkPolicy', 'db', 'prod')).toBe(
      `${RESOURCE_ROOT}stagedkubernetesnetworkpolicies/prod/db`,
    );
    expect(resourceKey('CalicoNodeStatus', 'n1')).toBe(`${RESOURCE_ROOT}caliconodestatuses/n1`);
  });

  it('parses keys back, rejecting anything else', () => {
    expect(parseResourceKey(`${RESOURCE_ROOT}ippools/pool-1`)).toEqual({ kind: 'IPPool', name: 'pool-1' });
    expect(parseResourceKey(`${RESOURCE_ROOT}stagedkubernetesnetworkpolicies/ns/x`)).toEqual({
      kind: 'StagedKubernetesNetworkPolicy',
      namespace: 'ns',
      name: 'x',
    });
    expect(parseResourceKey(`${RESOURCE_ROOT}caliconodestatuses/n1`)).toEqual({
      kind: 'CalicoNodeStatus',
      name: 'n1',
    });
    expect(parseResourceKey(`${RESOURCE_ROOT}networksets/ns1/set-a`)).toEqual({
      kind: 'NetworkSet',
      namespace: 'ns1',
      name: 'set-a',
    });
    for (const bad of [
      `${RESOURCE_ROOT}ippools/a/b`,
      `${RESOURCE_ROOT}networkpolicies/onlyname`,
      `${RESOURCE_ROOT}ippools/`,
      `${RESOURCE_ROOT}stagednetworkpolicies/only-name`,
      `${RESOURCE_ROOT}stagedglobalnetworkpolicies/ns/x`,
      `${RESOURCE_ROOT}nosuchkinds/x`,
      '/calico/ipam/v2/handle/h',
      '/calico/resources/v3/projectcalico.org/',
    ]) {
      expect(parseResourceKey(bad), bad).toBeUndefined();
    }
  });

  it('refuses names and namespaces that would break the layout', () => {
    expect(() => resourceKey('IPPool', 'a/b')).toThrow(expect.objectContaining({ code: 'invalid' }));
    expect(() => resourceKey('IPPool', '')).toThrow(expect.objectContaining({ code: 'invalid' }));
    expect(() => resourceKey('NetworkPolicy', 'web')).toThrow(expect.objectContaining({ code: 'invalid' }));
    expect(() => resourceKey('IPPool', 'p', 'ns')).toThrow(expect.objectContaining({ code: 'invalid' }));
    expect(() => resourcePrefix('IPPool', 'ns')).toThrow(expect.objectContaining({ code: 'invalid' }));
    expect(() => resourceKey('Nope' as never, 'x')).toThrow(expect.objectContaining({ code: 'invalid' }));
  });
});
