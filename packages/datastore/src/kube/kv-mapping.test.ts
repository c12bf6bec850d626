/** Calico keys and values ⇄ Kubernetes objects, in upstream's stored shape. */
import { describe, expect, it } from 'vitest';
import { goJson, parseJsonExact } from '../go-json.js';
import { upstreamBlockJson } from '../testing/upstream-records.js';
import { cidrToName, collectionsForPrefix, locateKey, METADATA_ANNOTATION, restPath } from './kv-mapping.js';

/** A mapped record as the etcd text it stands for. */
const asText = (r: { key: string; data: object } | undefined) => r && { key: r.key, value: goJson(r.data) };

describe('keys', () => {
  it('locate every kind of record and its REST path', () => {
    const cases: [string, string][] = [
      [
        '/calico/resources/v3/projectcalico.org/ippools/default-ipv4-ippool',
        '/apis/crd.projectcalico.org/v1/ippools/default-ipv4-ippool',
      ],
      [
        '/calico/resources/v3/projectcalico.org/networkpolicies/prod/allow',
        '/apis/crd.projectcalico.org/v1/namespaces/prod/networkpolicies/allow',
      ],
      [
        '/calico/ipam/v2/assignment/ipv4/block/198.19.0.64-26',
        '/apis/crd.projectcalico.org/v1/ipamblocks/198-19-0-64-26',
      ],
      [
        '/calico/ipam/v2/assignment/ipv6/block/fd00:c6:13::-122',
        '/apis/crd.projectcalico.org/v1/ipamblocks/fd00-c6-13---122',
      ],
      [
        '/calico/ipam/v2/host/node-1/ipv4/block/198.19.0.64-26',
        '/apis/crd.projectcalico.org/v1/blockaffinities/node-1-198-19-0-64-26',
      ],
      [
        '/calico/ipam/v2/handle/k8s-pod-network.ABC123',
        '/apis/crd.projectcalico.org/v1/ipamhandles/k8s-pod-network.abc123',
      ],
      ['/calico/ipam/v2/config', '/apis/crd.projectcalico.org/v1/ipamconfigs/default'],
      [
        '/calico/resources/v3/projectcalico.org/stagednetworkpolicies/prod/allow',
        '/apis/crd.projectcalico.org/v1/namespaces/prod/stagednetworkpolicies/allow',
      ],
      [
        '/calico/resources/v3/projectcalico.org/stagedglobalnetworkpolicies/deny',
        '/apis/crd.projectcalico.org/v1/stagedglobalnetworkpolicies/deny',
      ],
      [
        '/calico/resources/v3/projectcalico.org/stagedkubernetesnetworkpolicies/prod/db',
        '/apis/crd.projectcalico.org/v1/namespaces/prod/stagedkubernetesnetworkpolicies/db',
      ],
      [
        '/calico/resources/v3/projectcalico.org/caliconodestatuses/n1',
        '/apis/crd.projectcalico.org/v1/caliconodestatuses/n1',
      ],
    ];
    for (const [key, path] of cases) {
      const loc = locateKey(key);
      expect(restPath(loc.collection, loc.namespace, loc.name), key).toBe(path);
    }
  });

  it('refuse keys with no place in Kubernetes, and names Kubernetes cannot hold', () => {
    expect(() => locateKey('/calico/felix/v2/no-region/host/n1/status')).toThrowError(
      expect.objectContaining({ code: 'unsupported' }),
    );
    const loc = locateKey('/calico/resources/v3/projectcalico.org/ippools/Upper');
    expect(() =>
      loc.collection.toObject('/calico/resources/v3/projectcalico.org/ippools/Upper', '{}'),
    ).toThrowError(
      expect.objectContaining({
        code: 'invalid',
        message: expect.stringContaining('lower-case DNS subdomains'),
      }),
    );
  });

  it('find the collections a prefix reaches', () => {
    const reach = (p: string) =>
      collectionsForPrefix(p).map((t) =>
        `${t.collection.base}/${t.collection.plural}${t.namespace ? `@${t.namespace}` : ''}`.replace(
          /^\/apis?\//,
          '',
        ),
      );
    expect(reach('/calico/resources/v3/projectcalico.org/networkpolicies/prod/')).toEqual([
      'crd.projectcalico.org/v1/networkpolicies@prod',
      'networking.k8s.io/v1/networkpolicies@prod',
    ]);
    expect(reach('/calico/resources/v3/projectcalico.org/profiles/')).toEqual([
      'v1/namespaces',
      'v1/serviceaccounts',
    ]);
    expect(reach('/calico/resources/v3/projectcalico.org/workloadendpoints/prod/')).toEqual(['v1/pods@prod']);
    expect(reach('/calico/ipam/v2/host/node-1/')).toEqual(['crd.projectcalico.org/v1/blockaffinities']);
    expect(reach('/calico/ipam/v2/').map((p) => p.split('/').pop())).toEqual([
      'ipamblocks',
      'blockaffinities',
      'blockaffinities',
      'ipamhandles',
      'ipamconfigs',
    ]);
    expect(reach('/calico/nothing/')).toEqual([]);
  });

  it('names CIDRs as upstream', () => {
    expect(cidrToName('10.0.0.0/26')).toBe('10-0-0-0-26');
  });
});

describe('values', () => {
  it('keep a resource through a round trip, its v3 metadata in the annotation', () => {
    const key = '/calico/resources/v3/projectcalico.org/networkpolicies/prod/allow';
    const value = goJson({
      kind: 'NetworkPolicy',
      apiVersion: 'projectcalico.org/v3',
      metadata: {
        name: 'allow',
        namespace: 'prod',
        uid: '0b0c3a4e-1111-2222-3333-444455556666',
        creationTimestamp: '2026-11-26T10:00:00Z',
        labels: { 'projectcalico.org/tier': 'default' },
        annotations: { [METADATA_ANNOTATION]: '{"name":"allow"}', owner: 'team-a' },
      },
      spec: { tier: 'default', selector: "app == 'web'", types: ['Ingress'] },
    });
    const { collection } = locateKey(key);
    const obj = collection.toObject(key, value);
    expect(obj).toEqual({
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'NetworkPolicy',
      metadata: {
        name: 'allow',
        namespace: 'prod',
        labels: { 'projectcalico.org/tier': 'default' },
        annotations: {
          owner: 'team-a',
          [METADATA_ANNOTATION]:
            '{"name":"allow","uid":"0b0c3a4e-1111-2222-3333-444455556666","creationTimestamp":"2026-11-26T10:00:00Z"}',
        },
      },
      spec: { tier: 'default', selector: "app == 'web'", types: ['Ingress'] },
    });
    const back = collection.toKV({
      ...obj,
      metadata: { ...(obj.metadata as object), resourceVersion: '42', uid: 'k8s-uid' },
    });
    expect(back?.key).toBe(key);
    expect(parseJsonExact(goJson(back!.data))).toEqual(parseJsonExact(value));
  });

  it('keep a staged policy as a policy (name in the annotation) and a staged Kubernetes policy as it is', () => {
    const snpKey = '/calico/resources/v3/projectcalico.org/stagednetworkpolicies/prod/allow';
    const snp = goJson({
      kind: 'StagedNetworkPolicy',
      apiVersion: 'projectcalico.org/v3',
      metadata: {
        name: 'allow',
        namespace: 'prod',
        uid: '0b0c3a4e-1111-2222-3333-444455556666',
        creationTimestamp: '2026-11-26T10:00:00Z',
        labels: { 'projectcalico.org/tier': 'default' },
        annotations: { [METADATA_ANNOTATION]: '{"name":"allow"}' },
      },
      spec: { stagedAction: 'Set', selector: "app == 'web'", types: ['Ingress'] },
    });
    const snpObj = locateKey(snpKey).collection.toObject(snpKey, snp);
    expect(snpObj.kind).toBe('StagedNetworkPolicy');
    expect(
      (snpObj.metadata as { annotations: Record<string, string> }).annotations[METADATA_ANNOTATION],
    ).toBe(
      '{"name":"allow","uid":"0b0c3a4e-1111-2222-3333-444455556666","creationTimestamp":"2026-11-26T10:00:00Z"}',
    );
    const snpBack = locateKey(snpKey).collection.toKV(snpObj);
    expect(parseJsonExact(goJson(snpBack!.data))).toEqual(parseJsonExact(snp));

    const sknpKey = '/calico/resources/v3/projectcalico.org/stagedkubernetesnetworkpolicies/prod/db';
    const sknp = goJson({
      kind: 'StagedKubernetesNetworkPolicy',
      apiVersion: 'projectcalico.org/v3',
      metadata: { name: 'db', namespace: 'prod', uid: 'u-1', creationTimestamp: '2026-11-26T10:00:00Z' },
      spec: { podSelector: { matchLabels: { role: 'db' } }, policyTypes: ['Ingress'] },
    });
    const sknpObj = locateKey(sknpKey).collection.toObject(sknpKey, sknp);
    expect(sknpObj).toEqual({
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'StagedKubernetesNetworkPolicy',
      metadata: {
        name: 'db',
        namespace: 'prod',
        annotations: { [METADATA_ANNOTATION]: '{"uid":"u-1","creationTimestamp":"2026-11-26T10:00:00Z"}' },
      },
      spec: { podSelector: { matchLabels: { role: 'db' } }, policyTypes: ['Ingress'] },
    });
    const sknpBack = locateKey(sknpKey).collection.toKV(sknpObj);
    expect(parseJsonExact(goJson(sknpBack!.data))).toEqual(parseJsonExact(sknp));
  });

  it('turn an upstream block into the CRD shape and back, byte for byte, sequence numbers exact', () => {
    const key = '/calico/ipam/v2/assignment/ipv4/block/198.19.4.0-26';
    const raw = upstreamBlockJson('198.19.4.0/26', 'node-1');
    const { collection } = locateKey(key);
    const obj = collection.toObject(key, raw) as { spec: Record<string, unknown> };
    expect(obj.spec.affinityClaimTime).toBe('2026-01-02T03:04:05Z');
    expect(obj.spec.sequenceNumber).toBe(1767323045123456789n);
    expect(obj.spec.strictAffinity).toBe(false);
    expect((obj.spec.attributes as unknown[])[0]).toEqual({
      handle_id: 'k8s-pod-network.abc',
      secondary: {
        namespace: 'default',
        node: 'node-1',
        pod: 'web-1',
        timestamp: '2026-01-02 03:04:05.123 +0000 UTC',
      },
    });
    const text = goJson(obj);
    const back = collection.toKV(parseJsonExact(text) as Record<string, unknown>);
    expect(asText(back)).toEqual({ key, value: raw });
  });

  it('store affinities with deleted as a string, handles lower-cased with their ID, the config renamed', () => {
    const aKey = '/calico/ipam/v2/host/node-1/ipv4/block/198.19.0.64-26';
    const a = locateKey(aKey).collection;
    const aObj = a.toObject(aKey, '{"state":"pending","deleted":false}');
    expect(aObj.spec).toEqual({ state: 'pending', node: 'node-1', cidr: '198.19.0.64/26', deleted: 'false' });
    expect(asText(a.toKV(aObj))).toEqual({ key: aKey, value: '{"state":"pending","deleted":false}' });

    const hKey = '/calico/ipam/v2/handle/k8s-pod-network.ABC';
    const h = locateKey(hKey).collection;
    const hObj = h.toObject(hKey, '{"block":{"198.19.0.64/26":1},"deleted":false}');
    expect(hObj).toMatchObject({
      metadata: { name: 'k8s-pod-network.abc' },
      spec: { handleID: 'k8s-pod-network.ABC' },
    });
    expect(asText(h.toKV(hObj))).toEqual({
      key: hKey,
      value: '{"block":{"198.19.0.64/26":1},"deleted":false}',
    });

    const cKey = '/calico/ipam/v2/config';
    const c = locateKey(cKey).collection;
    const cObj = c.toObject(
      cKey,
      '{"strict_affinity":true,"auto_allocate_blocks":true,"maxBlocksPerHost":4}',
    );
    expect(cObj.spec).toEqual({ strictAffinity: true, autoAllocateBlocks: true, maxBlocksPerHost: 4 });
    expect(goJson(c.toKV(cObj)!.data)).toBe(
      '{"strict_affinity":true,"auto_allocate_blocks":true,"maxBlocksPerHost":4}',
    );
  });
});
