import { describe, expect, it } from 'vitest';
import { podInterfaceName, workloadInterfacePrefix } from './interface-name.js';
import { workloadEndpointCollection } from './native-mapping.js';

// SHA-1("prod.web-1") = 91bef8fbcc9724cd51c09237ccca9f5a9c0f4d0b (sha1sum).
const HASH = '91bef8fbcc9';

const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web-1',
    namespace: 'prod',
    uid: 'u-1',
    labels: { app: 'web' },
    annotations: { 'cni.projectcalico.org/podIP': '198.19.1.5/32' },
  },
  spec: { nodeName: 'node-1', serviceAccountName: 'default', containers: [] },
  status: { phase: 'Running', podIPs: [{ ip: '198.19.1.5' }] },
};

describe('the host interface of a pod', () => {
  it('is the first prefix of the list + 11 hex of SHA-1("<namespace>.<pod>"), cali by default', () => {
    expect(podInterfaceName('prod', 'web-1')).toBe(`cali${HASH}`);
    expect(podInterfaceName('prod', 'web-1', '')).toBe(`cali${HASH}`);
    expect(podInterfaceName('prod', 'web-1', 'eni')).toBe(`eni${HASH}`);
    expect(podInterfaceName('prod', 'web-1', 'eni,cali')).toBe(`eni${HASH}`);
    expect(podInterfaceName('prod', 'web-1', 'tap, cali')).toBe(`tap${HASH}`);
    // A different pod, or the same name in another namespace, is another interface.
    expect(podInterfaceName('default', 'nginx', 'eni')).toBe('enic440f455693');
    expect(podInterfaceName('prod2', 'web-1', 'eni')).not.toBe(`eni${HASH}`);
  });

  it('with a prefix longer than 4, the digest is shortened to keep the name within 15 characters', () => {
    expect(podInterfaceName('prod', 'web-1', 'vethx')).toBe(`vethx${HASH.slice(0, 10)}`);
    expect(podInterfaceName('prod', 'web-1', 'abcdefgh')).toBe(`abcdefgh${HASH.slice(0, 7)}`);
  });

  it('takes the first entry of the list as the prefix', () => {
    expect(workloadInterfacePrefix(undefined)).toBe('cali');
    expect(workloadInterfacePrefix(' ')).toBe('cali');
    expect(workloadInterfacePrefix('eni')).toBe('eni');
    expect(workloadInterfacePrefix('veth,eni,cali')).toBe('veth');
  });
});

describe('a Pod as a WorkloadEndpoint', () => {
  const wep = (ctx?: { interfacePrefix?: string }) => {
    const kv = workloadEndpointCollection.toKV(pod, ctx);
    expect(kv?.key).toBe(
      '/calico/resources/v3/projectcalico.org/workloadendpoints/prod/node--1-k8s-web--1-eth0',
    );
    return (kv!.data as { spec: Record<string, unknown> }).spec;
  };

  it('is named on the host with the prefix its reader runs with', () => {
    expect(wep().interfaceName).toBe(`cali${HASH}`);
    expect(wep({}).interfaceName).toBe(`cali${HASH}`);
    expect(wep({ interfacePrefix: 'eni' }).interfaceName).toBe(`eni${HASH}`);
    expect(wep({ interfacePrefix: 'eni,cali' }).interfaceName).toBe(`eni${HASH}`);
  });

  it('keeps everything else the same whatever the prefix', () => {
    const { interfaceName: a, ...cali } = wep();
    const { interfaceName: b, ...eni } = wep({ interfacePrefix: 'eni' });
    expect(a).not.toBe(b);
    expect(eni).toEqual(cali);
    expect(cali).toMatchObject({ node: 'node-1', pod: 'web-1', ipNetworks: ['198.19.1.5/32'] });
  });
});
