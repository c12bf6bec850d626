import { describe, expect, it } from 'vitest';
import { resolveInstallation } from './installation.js';

const resolve = (spec: unknown, name = 'default') => resolveInstallation({ metadata: { name }, spec });
const errors = (spec: unknown) => {
  const r = resolve(spec);
  return r.ok ? [] : r.errors;
};

describe('resolveInstallation', () => {
  it('fills upstream defaults for an empty spec', () => {
    const r = resolve({});
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config).toMatchObject({
      bgp: true,
      registry: '',
      hostPorts: true,
      autodetectionV4: 'first-found',
    });
    expect(r.config.mtu).toBeUndefined();
    expect(r.config.pools).toEqual([
      {
        name: 'default-ipv4-ippool',
        cidr: '192.168.0.0/16',
        ipv6: false,
        blockSize: 26,
        encapsulation: 'IPIP',
        natOutgoing: true,
        nodeSelector: 'all()',
        disableBGPExport: false,
        disableNewAllocations: false,
        allowedUses: ['Workload', 'Tunnel'],
      },
    ]);
  });

  it('defaults the encapsulation to VXLAN when BGP is disabled', () => {
    const r = resolve({ calicoNetwork: { bgp: 'Disabled', ipPools: [{ cidr: '198.19.0.0/16' }] } });
    expect(r.ok && r.config.pools[0]!.encapsulation).toBe('VXLAN');
  });

  it('refuses an unknown encapsulation, naming the field and the values that work', () => {
    expect(errors({ calicoNetwork: { ipPools: [{ cidr: '198.19.0.0/16', encapsulation: 'GRE' }] } })).toEqual(
      [
        'spec.calicoNetwork.ipPools[0].encapsulation: "GRE" is not one of IPIP, IPIPCrossSubnet, VXLAN, VXLANCrossSubnet, None',
      ],
    );
  });

  it('refuses combinations upstream refuses', () => {
    expect(
      errors({
        calicoNetwork: { bgp: 'Disabled', ipPools: [{ cidr: '198.19.0.0/16', encapsulation: 'IPIP' }] },
      }),
    ).toEqual([
      'spec.calicoNetwork.ipPools[0].encapsulation: IPIP encapsulation requires that BGP is enabled',
    ]);
    expect(
      errors({
        calicoNetwork: { bgp: 'Disabled', ipPools: [{ cidr: '198.19.0.0/16', encapsulation: 'None' }] },
      }),
    ).toEqual([
      'spec.calicoNetwork.ipPools[0].encapsulation: Unencapsulated IP pools require that BGP is enabled',
    ]);
    expect(errors({ calicoNetwork: { ipPools: [{ cidr: '198.19.0.0/16', blockSize: 12 }] } })).toEqual([
      'spec.calicoNetwork.ipPools[0].blockSize: 12 is not an integer in 20–32',
    ]);
    expect(errors({ calicoNetwork: { ipPools: [{ cidr: '198.19.0.0/24', blockSize: 22 }] } })).toEqual([
      'spec.calicoNetwork.ipPools[0].blockSize: 22 is larger than the pool 198.19.0.0/24; it must be at least /24',
    ]);
    expect(errors({ calicoNetwork: { ipPools: [{ cidr: '198.19.0.1/16' }] } })).toEqual([
      'spec.calicoNetwork.ipPools[0].cidr: 198.19.0.1/16 has host bits set; use the network address',
    ]);
    expect(errors({ calicoNetwork: { ipPools: [{ cidr: 'banana' }] } })).toEqual([
      'spec.calicoNetwork.ipPools[0].cidr: "banana" is not a CIDR',
    ]);
    expect(errors({ calicoNetwork: { mtu: 9 } })).toEqual([
      'spec.calicoNetwork.mtu: 9 is not an integer in 576–65535',
    ]);
  });

  it('fails closed on what this build does not implement', () => {
    expect(errors({ calicoNetwork: { linuxDataplane: 'BPF' } })).toEqual([
      'spec.calicoNetwork.linuxDataplane: BPF is not part of this build; Iptables and Nftables both run the nftables dataplane',
    ]);
    expect(errors({ cni: { type: 'AmazonVPC' } })[0]).toMatch(/^spec.cni.type: AmazonVPC .* not supported/);
    expect(errors({ kubernetesProvider: 'EKS' })[0]).toMatch(
      /^spec.kubernetesProvider: EKS is not supported/,
    );
    expect(errors({ variant: 'TigeraSecureEnterprise' })[0]).toMatch(/not part of this build; use Calico/);
    expect(errors({ calicoNetwork: { ipPools: [{ cidr: 'fd00:1::/64', encapsulation: 'VXLAN' }] } })).toEqual(
      ['spec.calicoNetwork.ipPools: IPv6 pools are not supported by this build yet'],
    );
    expect(errors({ calicoNetwork: { linuxDataplane: 'Nftables' } })).toEqual([]);
  });

  it('acts on the Installation named default only', () => {
    const r = resolve({}, 'other');
    expect(r.ok ? [] : r.errors).toEqual([
      'metadata.name: the operator acts on the Installation named default, not other',
    ]);
  });

  it('maps nodeAddressAutodetectionV4 to IP_AUTODETECTION_METHOD', () => {
    const r = resolve({ calicoNetwork: { nodeAddressAutodetectionV4: { interface: 'eth.*' } } });
    expect(r.ok && r.config.autodetectionV4).toBe('interface=eth.*');
    const k = resolve({ calicoNetwork: { nodeAddressAutodetectionV4: { kubernetes: 'NodeInternalIP' } } });
    expect(k.ok && k.config.autodetectionV4).toBe('kubernetes-internal-ip');
  });
});
