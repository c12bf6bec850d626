import type { ClusterInformation, IPPool, Node } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import type { AutodetectResult, HostInterface } from './autodetect.js';
import { parsePool6Settings, parsePoolSettings } from './env.js';
import { isNodeError } from './errors.js';
import {
  CALICO_VERSION,
  conflictingNode,
  decideIP,
  decideIPv4,
  defaultIPv4Pool,
  defaultIPv6Pool,
  desiredClusterInformation,
  desiredGlobalFelixConfig,
  desiredNode,
  desiredNodeFelixConfig,
  randomUlaPrefix,
} from './node-resource.js';

const IFACES: HostInterface[] = [{ name: 'eth0', index: 2, cidrs: ['198.18.0.11/24'] }];
const found: AutodetectResult = { ok: true, cidr: '198.18.0.11/24', interface: 'eth0' };
const notFound: AutodetectResult = {
  ok: false,
  reason: 'no valid IPv4 addresses found on the host interfaces',
};
const never = (): AutodetectResult => {
  throw new Error('autodetection must not run');
};

const node = (name: string, ipv4Address?: string): Node => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Node',
  metadata: { name, resourceVersion: '7' },
  spec: ipv4Address ? { bgp: { ipv4Address } } : {},
});

describe('decideIPv4', () => {
  it('autodetects when asked, or when nothing is set and the Node has no address', () => {
    expect(decideIPv4({ kind: 'autodetect' }, '198.18.0.99/24', () => found, IFACES).ipv4Address).toBe(
      '198.18.0.11/24',
    );
    expect(decideIPv4({ kind: 'unset' }, undefined, () => found, IFACES).ipv4Address).toBe('198.18.0.11/24');
  });
  it('keeps the existing address when IP is unset or none, without autodetecting', () => {
    expect(decideIPv4({ kind: 'unset' }, '198.18.0.99/24', never, IFACES).ipv4Address).toBe('198.18.0.99/24');
    expect(decideIPv4({ kind: 'none' }, '198.18.0.99/24', never, IFACES).ipv4Address).toBe('198.18.0.99/24');
    expect(decideIPv4({ kind: 'none' }, undefined, never, IFACES).ipv4Address).toBeUndefined();
  });
  it('keeps the existing address when autodetection fails, and fails when there is none', () => {
    const kept = decideIPv4({ kind: 'autodetect' }, '198.18.0.99/24', () => notFound, IFACES);
    expect(kept.ipv4Address).toBe('198.18.0.99/24');
    expect(kept.notes.join()).toMatch(/keeping the existing address/);
    try {
      decideIPv4({ kind: 'autodetect' }, undefined, () => notFound, IFACES);
      throw new Error('expected a failure');
    } catch (e) {
      expect(isNodeError(e, 'autodetect')).toBe(true);
      expect((e as Error).message).toMatch(/cannot autodetect an IPv4 address \(no valid IPv4 addresses/);
    }
  });
  it("completes an explicit address with its interface's prefix, else a /32", () => {
    expect(decideIPv4({ kind: 'address', value: '198.18.0.11' }, undefined, never, IFACES).ipv4Address).toBe(
      '198.18.0.11/24',
    );
    expect(decideIPv4({ kind: 'address', value: '198.18.5.5' }, undefined, never, IFACES).ipv4Address).toBe(
      '198.18.5.5/32',
    );
    expect(
      decideIPv4({ kind: 'address', value: '198.18.5.5/20' }, undefined, never, IFACES).ipv4Address,
    ).toBe('198.18.5.5/20');
  });
});

describe('Node', () => {
  const env = { nodeName: 'n1', networkingBackend: 'bird' as const };
  it('a new Node gets the address, AS number and orchestrator reference', () => {
    const { node: n, changed } = desiredNode(
      { ...env, asNumber: 64513, k8sNodeRef: 'n1' },
      undefined,
      '198.18.0.11/24',
    );
    expect(changed).toBe(true);
    expect(n).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: {
        bgp: { ipv4Address: '198.18.0.11/24', asNumber: 64513 },
        orchRefs: [{ nodeName: 'n1', orchestrator: 'k8s' }],
      },
    });
  });
  it('an unchanged Node needs no write; other fields are kept', () => {
    const existing: Node = {
      ...node('n1', '198.18.0.11/24'),
      spec: { bgp: { ipv4Address: '198.18.0.11/24' }, ipv4VXLANTunnelAddr: '198.19.0.1' },
    };
    expect(desiredNode(env, existing, '198.18.0.11/24')).toEqual({ node: existing, changed: false });
    const moved = desiredNode(env, existing, '198.18.0.12/24');
    expect(moved.changed).toBe(true);
    expect(moved.node.spec).toEqual({
      bgp: { ipv4Address: '198.18.0.12/24' },
      ipv4VXLANTunnelAddr: '198.19.0.1',
    });
    expect(moved.node.metadata.resourceVersion).toBe('7');
  });
  it('with networking none the BGP spec is left alone', () => {
    expect(
      desiredNode({ nodeName: 'n1', networkingBackend: 'none' }, undefined, undefined).node.spec,
    ).toEqual({});
  });
  it('an address another Node holds is a conflict; the same Node is not', () => {
    const nodes = [node('n1', '198.18.0.11/24'), node('n2', '198.18.0.12/24')];
    expect(conflictingNode('n3', '198.18.0.12/16', nodes)).toBe('n2');
    expect(conflictingNode('n1', '198.18.0.11/24', nodes)).toBeUndefined();
    expect(conflictingNode('n3', '198.18.0.13/24', nodes)).toBeUndefined();
  });
});

describe('default IPv4 pool', () => {
  const pool = (cidr: string): IPPool =>
    ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr },
    }) as IPPool;
  it('is made from the CALICO_IPV4POOL_* settings when no IPv4 pool exists', () => {
    const p = defaultIPv4Pool(
      parsePoolSettings({
        CALICO_IPV4POOL_CIDR: '198.19.0.0/16',
        CALICO_IPV4POOL_VXLAN: 'Always',
        CALICO_IPV4POOL_NAT_OUTGOING: 'false',
      }),
      [pool('fd00::/64')],
    );
    expect(p).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'default-ipv4-ippool' },
      spec: {
        cidr: '198.19.0.0/16',
        natOutgoing: false,
        ipipMode: 'Never',
        vxlanMode: 'Always',
        blockSize: 26,
      },
    });
  });
  it('is not made when an IPv4 pool exists or pools are disabled', () => {
    expect(defaultIPv4Pool(parsePoolSettings({}), [pool('10.0.0.0/16')])).toBeUndefined();
    expect(defaultIPv4Pool(parsePoolSettings({ NO_DEFAULT_POOLS: 'true' }), [])).toBeUndefined();
  });
});

describe('ClusterInformation', () => {
  const guid = () => 'b7d4a1c0f3e24a6b9d1e2f3a4b5c6d7e';
  it('is created with a GUID, the cluster type, our version and datastoreReady', () => {
    expect(desiredClusterInformation(undefined, 'k8s,bgp', guid)).toEqual({
      changed: true,
      info: {
        apiVersion: 'projectcalico.org/v3',
        kind: 'ClusterInformation',
        metadata: { name: 'default' },
        spec: {
          clusterGUID: guid(),
          clusterType: 'k8s,bgp',
          calicoVersion: CALICO_VERSION,
          datastoreReady: true,
        },
      },
    });
  });
  it('keeps the GUID and an explicit datastoreReady false, and appends new cluster types', () => {
    const existing = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'ClusterInformation',
      metadata: { name: 'default', resourceVersion: '3' },
      spec: { clusterGUID: 'abc', clusterType: 'k8s,bgp', calicoVersion: 'v3.31.0', datastoreReady: false },
    } as ClusterInformation;
    const { info, changed } = desiredClusterInformation(existing, 'k8s,kubeadm', guid);
    expect(changed).toBe(true);
    expect(info.spec).toEqual({
      clusterGUID: 'abc',
      clusterType: 'k8s,bgp,kubeadm',
      calicoVersion: CALICO_VERSION,
      datastoreReady: false,
    });
    expect(desiredClusterInformation(info, 'bgp', guid).changed).toBe(false);
  });
});

describe('default Felix configurations', () => {
  it('global: reportingInterval 0s and logSeverityScreen Info when unset', () => {
    expect(desiredGlobalFelixConfig(undefined)?.spec).toEqual({
      reportingInterval: '0s',
      logSeverityScreen: 'Info',
    });
    const set = desiredGlobalFelixConfig(undefined)!;
    expect(desiredGlobalFelixConfig(set)).toBeUndefined();
  });
  it('per node: defaultEndpointToHostAction Return unless set', () => {
    expect(desiredNodeFelixConfig('n1', undefined)).toMatchObject({
      metadata: { name: 'node.n1' },
      spec: { defaultEndpointToHostAction: 'Return' },
    });
    expect(desiredNodeFelixConfig('n1', desiredNodeFelixConfig('n1', undefined))).toBeUndefined();
  });
});

describe('IPv6 decisions', () => {
  const detect6 = (): AutodetectResult => ({ ok: true, cidr: 'fd00:18::11/64', interface: 'eth0' });
  const never = (): AutodetectResult => {
    throw new Error('must not autodetect');
  };
  it('IP6 unset keeps what the Node has and never autodetects; autodetect does', () => {
    expect(decideIP(6, { kind: 'unset' }, undefined, never, []).address).toBeUndefined();
    expect(decideIP(6, { kind: 'unset' }, 'fd00:18::12/64', never, []).address).toBe('fd00:18::12/64');
    expect(decideIP(6, { kind: 'autodetect' }, undefined, detect6, []).address).toBe('fd00:18::11/64');
    expect(decideIP(6, { kind: 'address', value: 'fd00:18::13' }, undefined, never, []).address).toBe(
      'fd00:18::13/128',
    );
  });
  it('a failed IPv6 autodetection names IP6_AUTODETECTION_METHOD', () => {
    const fail = (): AutodetectResult => ({ ok: false, reason: 'nothing' });
    expect(() => decideIP(6, { kind: 'autodetect' }, undefined, fail, [])).toThrow(
      'cannot autodetect an IPv6 address (nothing); choose another IP6_AUTODETECTION_METHOD or set IP6',
    );
  });
  it('the Node carries spec.bgp.ipv6Address beside ipv4Address', () => {
    const env = { nodeName: 'n1', networkingBackend: 'bird' as const };
    const { node } = desiredNode(env, undefined, '198.18.0.11/24', 'fd00:18::11/64');
    expect(node.spec.bgp).toEqual({ ipv4Address: '198.18.0.11/24', ipv6Address: 'fd00:18::11/64' });
  });
  it("conflicts compare IPv6 addresses with the other Nodes' ipv6Address", () => {
    const other = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: 'n2' },
      spec: { bgp: { ipv4Address: '198.18.0.12/24', ipv6Address: 'fd00:18:0::11/64' } },
    } as Node;
    expect(conflictingNode('n1', 'fd00:18::11/64', [other])).toBe('n2');
    expect(conflictingNode('n1', 'fd00:18::12/64', [other])).toBeUndefined();
  });
  it('the default IPv6 pool: made when none exists, named default-ipv6-ippool, ULA when no CIDR', () => {
    const pool = defaultIPv6Pool(parsePool6Settings({}), [], () => 'fd12:3456:789a::/48');
    expect(pool?.metadata.name).toBe('default-ipv6-ippool');
    expect(pool?.spec).toMatchObject({
      cidr: 'fd12:3456:789a::/48',
      blockSize: 122,
      natOutgoing: false,
      ipipMode: 'Never',
      vxlanMode: 'Never',
    });
    expect(defaultIPv6Pool(parsePool6Settings({}), [pool!])).toBeUndefined();
    expect(defaultIPv6Pool(parsePool6Settings({ FELIX_IPV6SUPPORT: 'false' }), [])).toBeUndefined();
    const v4 = defaultIPv4Pool(parsePoolSettings({}), [])!;
    expect(defaultIPv6Pool(parsePool6Settings({}), [v4], () => 'fd00:1::/48')?.spec.cidr).toBe('fd00:1::/48');
  });
  it('randomUlaPrefix is fd00::/8 with 40 random bits, a /48', () => {
    expect(randomUlaPrefix(() => Uint8Array.from([0x12, 0x34, 0x56, 0x00, 0x9a]))).toBe('fd12:3456:9a::/48');
    expect(randomUlaPrefix()).toMatch(/^fd[0-9a-f]{2}:[0-9a-f]{1,4}:[0-9a-f]{1,4}::\/48$/);
  });
});
