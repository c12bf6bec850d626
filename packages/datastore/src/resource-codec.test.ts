import type { Resource } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { goEncodeLikeSchema } from './go-struct-encoder.js';
import { decodeResource, encodeResource } from './resource-codec.js';

const GNP_KEY = '/calico/resources/v3/projectcalico.org/globalnetworkpolicies';

describe('resource codec', () => {
  it('writes the envelope and metadata in Go field order, without resourceVersion, maps sorted', () => {
    const pool = {
      spec: { natOutgoing: true, cidr: '198.19.0.0/16', blockSize: 26, vxlanMode: 'Never' },
      metadata: {
        labels: { zone: 'b', app: 'x' },
        creationTimestamp: '2026-01-02T03:04:05Z',
        resourceVersion: '42',
        uid: 'u-1',
        name: 'pool-1',
      },
      kind: 'IPPool',
      apiVersion: 'projectcalico.org/v3',
    } as unknown as Resource;
    expect(encodeResource(pool)).toBe(
      '{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"pool-1","uid":"u-1",' +
        '"creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"x","zone":"b"}},' +
        '"spec":{"cidr":"198.19.0.0/16","vxlanMode":"Never","natOutgoing":true,"blockSize":26}}',
    );
  });

  it('stores a policy name annotation and strips it on read', () => {
    const gnp = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: {
        name: 'allow-dns',
        uid: 'u',
        creationTimestamp: '2026-01-02T03:04:05Z',
        annotations: { note: 'x' },
      },
      spec: { tier: 'default', selector: 'a == "b" && has(c)', types: ['Ingress'] },
    } as unknown as Resource;
    const text = encodeResource(gnp);
    expect(text).toContain(
      '"annotations":{"note":"x","projectcalico.org/metadata":"{\\"name\\":\\"allow-dns\\"}"}',
    );
    expect(text).toContain('"selector":"a == \\"b\\" \\u0026\\u0026 has(c)"');
    const back = decodeResource(
      { key: `${GNP_KEY}/allow-dns`, value: text, modRevision: '7', createRevision: '7' },
      { kind: 'GlobalNetworkPolicy', name: 'allow-dns' },
    );
    expect(back.metadata).toEqual({
      name: 'allow-dns',
      uid: 'u',
      creationTimestamp: '2026-01-02T03:04:05Z',
      annotations: { note: 'x' },
      labels: { 'projectcalico.org/tier': 'default' },
      resourceVersion: '7',
    });
    expect(back.spec).toEqual({ tier: 'default', selector: 'a == "b" && has(c)', types: ['Ingress'] });
  });

  it('reads a pre-v3.32 default-tier policy key as the plain name', () => {
    const value = JSON.stringify({
      kind: 'GlobalNetworkPolicy',
      apiVersion: 'projectcalico.org/v3',
      metadata: { name: 'default.old', uid: 'u', creationTimestamp: '2020-01-01T00:00:00Z' },
      spec: { tier: 'default', selector: 'all()', types: ['Ingress'] },
    });
    const back = decodeResource(
      { key: `${GNP_KEY}/default.old`, value, modRevision: '3', createRevision: '3' },
      { kind: 'GlobalNetworkPolicy', name: 'default.old' },
    );
    expect(back.metadata.name).toBe('old');
  });

  it('applies read defaults and takes the namespace from the key', () => {
    const value =
      '{"kind":"NetworkSet","apiVersion":"projectcalico.org/v3","metadata":{"name":"s"},"spec":{"nets":["198.18.0.0/24"]}}';
    const back = decodeResource(
      {
        key: '/calico/resources/v3/projectcalico.org/networksets/ns1/s',
        value,
        modRevision: '9',
        createRevision: '2',
      },
      { kind: 'NetworkSet', name: 's', namespace: 'ns1' },
    );
    expect(back.metadata).toEqual({ name: 's', namespace: 'ns1', resourceVersion: '9' });
    const pool = decodeResource(
      {
        key: '/calico/resources/v3/projectcalico.org/ippools/p',
        value:
          '{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"p"},"spec":{"cidr":"198.19.0.0/16"}}',
        modRevision: '5',
        createRevision: '5',
      },
      { kind: 'IPPool', name: 'p' },
    );
    expect(pool.spec).toMatchObject({
      blockSize: 26,
      ipipMode: 'Never',
      vxlanMode: 'Never',
      nodeSelector: 'all()',
    });
  });

  it('rejects values that are not resources of the key kind', () => {
    const kv = (value: string) => ({
      key: '/calico/resources/v3/projectcalico.org/ippools/p',
      value,
      modRevision: '1',
      createRevision: '1',
    });
    const parts = { kind: 'IPPool' as const, name: 'p' };
    for (const v of [
      'not json',
      '[1]',
      '{"kind":"Tier","metadata":{"name":"p"},"spec":{}}',
      '{"metadata":7}',
    ]) {
      expect(() => decodeResource(kv(v), parts), v).toThrow(expect.objectContaining({ code: 'invalid' }));
    }
  });

  it('orders nested values by schema and sorts record keys', () => {
    const fakeSchema = {
      def: {
        type: 'object',
        shape: {
          b: {
            def: {
              type: 'optional',
              innerType: { def: { type: 'record', valueType: { def: { type: 'string' } } } },
            },
          },
          a: { def: { type: 'array', element: { def: { type: 'object', shape: { y: {}, x: {} } } } } },
        },
      },
    };
    expect(
      JSON.stringify(
        goEncodeLikeSchema({ a: [{ x: 1, y: 2, extra: 3 }], b: { z: '1', m: '2' } }, fakeSchema),
      ),
    ).toBe('{"b":{"m":"2","z":"1"},"a":[{"y":2,"x":1,"extra":3}]}');
  });
});
