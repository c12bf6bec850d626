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
    expect(errors({ kubernetesProvider: 'OpenShift' })).toEqual([
      'spec.kubernetesProvider: OpenShift is not supported by this build yet (its CNI directories, SecurityContextConstraints and cluster network configuration are not implemented); leave it unset or use one of EKS, GKE, AKS, RKE2, TKG, Kind',
    ]);
    expect(errors({ kubernetesProvider: 'DockerEnterprise' })[0]).toMatch(
      /^spec.kubernetesProvider: DockerEnterprise is not supported by this build yet \(its cluster-admin binding/,
    );
    expect(errors({ cni: { type: 'Calico', ipam: { type: 'HostLocal' } } })).toEqual([
      "spec.cni.ipam.type: HostLocal with the Calico CNI (addresses from each Node's podCIDR) is not supported by this build yet; use Calico",
    ]);
    expect(errors({ variant: 'TigeraSecureEnterprise' })[0]).toMatch(/not part of this build; use Calico/);
    expect(errors({ calicoNetwork: { ipPools: [{ cidr: 'fd00:1::/64', encapsulation: 'VXLAN' }] } })).toEqual(
      ['spec.calicoNetwork.ipPools: IPv6 pools are not supported by this build yet'],
    );
    expect(errors({ calicoNetwork: { linuxDataplane: 'Nftables' } })).toEqual([]);
  });

  it('refuses a provider or a CNI value that is not upstream’s, naming the field', () => {
    expect(errors({ kubernetesProvider: 'Heroku' })).toEqual([
      'spec.kubernetesProvider: "Heroku" is not one of "", EKS, GKE, AKS, OpenShift, DockerEnterprise, RKE2, TKG, Kind',
    ]);
    expect(errors({ cni: { type: 'Flannel' } })).toEqual([
      'spec.cni.type: "Flannel" is not one of Calico, GKE, AmazonVPC, AzureVNET',
    ]);
  });

  it('EKS: the Amazon VPC CNI and its IPAM, no pool, BGP Disabled, no node address (policy only)', () => {
    const r = resolve({ kubernetesProvider: 'EKS' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.platform).toEqual({ provider: 'EKS', cni: 'AmazonVPC', ipam: 'AmazonVPC' });
    expect(r.config.pools).toEqual([]);
    expect(r.config.bgp).toBe(false);
    expect(r.config.hostPorts).toBe(false);
    expect(r.config.autodetectionV4).toBeUndefined();
    // cni.type AmazonVPC with no provider is the same platform, as upstream allows.
    const bare = resolve({ cni: { type: 'AmazonVPC' } });
    expect(bare.ok && bare.config.platform).toEqual({ provider: '', cni: 'AmazonVPC', ipam: 'AmazonVPC' });
  });

  it('EKS with the Calico CNI: BGP Disabled and upstream’s 172.16.0.0/16 VXLAN pool, can-reach autodetection', () => {
    const r = resolve({ kubernetesProvider: 'EKS', cni: { type: 'Calico' } });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.platform).toEqual({ provider: 'EKS', cni: 'Calico', ipam: 'Calico' });
    expect(r.config.bgp).toBe(false);
    expect(r.config.pools.map((p) => [p.name, p.cidr, p.encapsulation])).toEqual([
      ['default-ipv4-ippool', '172.16.0.0/16', 'VXLAN'],
    ]);
    expect(r.config.autodetectionV4).toBe('can-reach=8.8.8.8');
    expect(r.config.hostPorts).toBe(true);
  });

  it('AKS: the Azure CNI by default; the Helm guide’s values (Calico CNI, VXLAN, BGP Disabled) as given', () => {
    const azure = resolve({ kubernetesProvider: 'AKS' });
    expect(azure.ok && azure.config.platform).toEqual({
      provider: 'AKS',
      cni: 'AzureVNET',
      ipam: 'AzureVNET',
    });
    const r = resolve({
      kubernetesProvider: 'AKS',
      cni: { type: 'Calico' },
      calicoNetwork: { bgp: 'Disabled', ipPools: [{ cidr: '198.19.0.0/16', encapsulation: 'VXLAN' }] },
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.platform).toEqual({ provider: 'AKS', cni: 'Calico', ipam: 'Calico' });
    expect(r.config.bgp).toBe(false);
    expect(r.config.pools.map((p) => [p.cidr, p.encapsulation, p.blockSize, p.natOutgoing])).toEqual([
      ['198.19.0.0/16', 'VXLAN', 26, true],
    ]);
    expect(r.config.autodetectionV4).toBe('first-found');
    expect(r.config.azurePolicyMode).toBe('Default');
    // AKS with the Calico CNI and no bgp: upstream's default is Enabled there.
    const bgp = resolve({ kubernetesProvider: 'AKS', cni: { type: 'Calico' } });
    expect(bgp.ok && bgp.config.bgp).toBe(true);
  });

  it('GKE: the GKE CNI with HostLocal IPAM; RKE2, TKG and Kind as a plain cluster', () => {
    const r = resolve({ kubernetesProvider: 'GKE' });
    expect(r.ok && r.config.platform).toEqual({ provider: 'GKE', cni: 'GKE', ipam: 'HostLocal' });
    expect(r.ok && r.config.pools).toEqual([]);
    for (const provider of ['RKE2', 'TKG', 'Kind']) {
      const p = resolve({ kubernetesProvider: provider });
      expect(p.ok && p.config.platform, provider).toEqual({ provider, cni: 'Calico', ipam: 'Calico' });
      expect(p.ok && p.config.bgp, provider).toBe(true);
      expect(p.ok && p.config.pools.map((x) => x.cidr), provider).toEqual(['192.168.0.0/16']);
    }
  });

  it('refuses what upstream refuses beside another CNI', () => {
    expect(errors({ kubernetesProvider: 'AKS', cni: { type: 'AmazonVPC' } })).toEqual([
      'spec.kubernetesProvider: AKS is not compatible with spec.cni.type AmazonVPC; it runs on EKS (or with no provider set)',
    ]);
    expect(errors({ cni: { type: 'AmazonVPC', ipam: { type: 'Calico' } } })).toEqual([
      'spec.cni.ipam.type: Calico is not compatible with spec.cni.type AmazonVPC; use AmazonVPC',
    ]);
    expect(errors({ cni: { type: 'GKE', ipam: { type: 'AzureVNET' } } })).toEqual([
      'spec.cni.ipam.type: AzureVNET is not compatible with spec.cni.type GKE; use HostLocal',
    ]);
    expect(errors({ cni: { type: 'Calico', ipam: { type: 'AmazonVPC' } } })).toEqual([
      'spec.cni.ipam.type: AmazonVPC is not compatible with spec.cni.type Calico; use Calico or HostLocal',
    ]);
    expect(errors({ kubernetesProvider: 'EKS', calicoNetwork: { bgp: 'Enabled' } })).toEqual([
      'spec.calicoNetwork.bgp: BGP is not supported when using a non-Calico CNI (AmazonVPC)',
    ]);
    expect(errors({ kubernetesProvider: 'EKS', calicoNetwork: { hostPorts: 'Enabled' } })).toEqual([
      'spec.calicoNetwork.hostPorts: Enabled is supported only with the Calico CNI',
    ]);
    expect(
      errors({
        kubernetesProvider: 'EKS',
        calicoNetwork: { ipPools: [{ cidr: '198.19.0.0/16', encapsulation: 'VXLAN' }] },
      }),
    ).toEqual([
      'spec.calicoNetwork.ipPools[0].encapsulation: VXLAN is invalid when using a non-Calico CNI, should be None',
    ]);
    expect(
      errors({
        kubernetesProvider: 'EKS',
        calicoNetwork: { ipPools: [{ cidr: '198.19.0.0/16', nodeSelector: 'a == "b"' }] },
      }),
    ).toEqual([
      'spec.calicoNetwork.ipPools[0].nodeSelector: a == "b" should be all() when using a non-Calico CNI',
    ]);
    // A pool beside another CNI defaults to None (it routes nothing), with BGP off.
    const r = resolve({ kubernetesProvider: 'EKS', calicoNetwork: { ipPools: [{ cidr: '198.19.0.0/16' }] } });
    expect(r.ok && r.config.pools[0]!.encapsulation).toBe('None');
    expect(r.ok && r.config.autodetectionV4).toBe('can-reach=8.8.8.8');
    expect(errors({ azure: { policyMode: 'Sometimes' } })).toEqual([
      'spec.azure.policyMode: "Sometimes" is not one of Default, Manual',
    ]);
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
