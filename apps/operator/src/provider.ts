/**
 * The platform an Installation names: `kubernetesProvider`, `cni.type`, `cni.ipam.type`, and what
 * upstream's operator defaults from them (pure; `pkg/controller/installation` fillDefaults and
 * validateCustomResource, `pkg/controller/ippool` fillDefaults):
 *
 *   kubernetesProvider ─► cni.type    EKS → AmazonVPC, GKE → GKE, AKS → AzureVNET, else Calico
 *   cni.type           ─► ipam.type   AmazonVPC → AmazonVPC, GKE → HostLocal, AzureVNET →
 *                                     AzureVNET, Calico → Calico
 *   cni.type, provider ─► bgp         Calico CNI: Enabled (EKS: Disabled, VXLAN there); another
 *                                     CNI: Disabled (Calico polices only, the CNI routes)
 *   ipam.type, provider ─► the pool   Calico IPAM only: 192.168.0.0/16 (EKS: 172.16.0.0/16 VXLAN,
 *                                     a range apart from the VPC's); another IPAM: none
 *
 * A non-Calico CNI is accepted only with its own provider (or none) and its own IPAM, as upstream
 * checks. Providers whose upstream rendering differs in what this build does not implement
 * (OpenShift's directories and SecurityContextConstraints, Docker Enterprise's cluster-admin binding
 * and CNI nodename handling) are refused with the reason, never installed as a plain cluster.
 */

export const PROVIDERS = [
  '',
  'EKS',
  'GKE',
  'AKS',
  'OpenShift',
  'DockerEnterprise',
  'RKE2',
  'TKG',
  'Kind',
] as const;
export type Provider = (typeof PROVIDERS)[number];
export const CNI_TYPES = ['Calico', 'GKE', 'AmazonVPC', 'AzureVNET'] as const;
export type CniType = (typeof CNI_TYPES)[number];
export const IPAM_TYPES = ['Calico', 'HostLocal', 'AmazonVPC', 'AzureVNET'] as const;
export type IpamType = (typeof IPAM_TYPES)[number];

/** What this build does not render of a provider upstream's operator supports. */
const NOT_IMPLEMENTED: Partial<Record<Provider, string>> = {
  OpenShift:
    'its CNI directories, SecurityContextConstraints and cluster network configuration are not implemented',
  DockerEnterprise:
    "its cluster-admin binding for calico-node, the CNI plugin's optional nodename file and the br- interface skip are not implemented",
};

/** The providers this build accepts, for messages. */
export const SUPPORTED_PROVIDERS: readonly Provider[] = PROVIDERS.filter(
  (p) => p !== '' && NOT_IMPLEMENTED[p] === undefined,
);

type OtherCni = Exclude<CniType, 'Calico'>;

/** The one provider (besides none) each other CNI runs on, and the IPAM it brings. */
const OTHER_CNI: Record<OtherCni, { readonly provider: Provider; readonly ipam: IpamType }> = {
  AmazonVPC: { provider: 'EKS', ipam: 'AmazonVPC' },
  GKE: { provider: 'GKE', ipam: 'HostLocal' },
  AzureVNET: { provider: 'AKS', ipam: 'AzureVNET' },
};

/** The provider, CNI and IPAM, every default filled in. */
export interface Platform {
  readonly provider: Provider;
  readonly cni: CniType;
  readonly ipam: IpamType;
}

export type Fail = (path: string, message: string) => void;

export function defaultCni(provider: Provider): CniType {
  if (provider === 'EKS') return 'AmazonVPC';
  if (provider === 'GKE') return 'GKE';
  if (provider === 'AKS') return 'AzureVNET';
  return 'Calico';
}

export function defaultIpam(cni: CniType): IpamType {
  return cni === 'Calico' ? 'Calico' : OTHER_CNI[cni].ipam;
}

/** Calico polices only: another CNI wires and addresses the pods. */
export const policyOnly = (p: Platform): boolean => p.cni !== 'Calico';

/** The platform checked and defaulted; each problem goes to `fail` with the field it is about. */
export function resolvePlatform(
  fail: Fail,
  provider: Provider,
  cniType: CniType | undefined,
  ipamType: IpamType | undefined,
): Platform {
  const why = NOT_IMPLEMENTED[provider];
  if (why !== undefined)
    fail(
      'spec.kubernetesProvider',
      `${provider} is not supported by this build yet (${why}); leave it unset or use one of ${SUPPORTED_PROVIDERS.join(', ')}`,
    );
  const cni = cniType ?? defaultCni(provider);
  const ipam = ipamType ?? defaultIpam(cni);
  if (cni === 'Calico') {
    if (ipam === 'HostLocal')
      fail(
        'spec.cni.ipam.type',
        "HostLocal with the Calico CNI (addresses from each Node's podCIDR) is not supported by this build yet; use Calico",
      );
    else if (ipam !== 'Calico')
      fail(
        'spec.cni.ipam.type',
        `${ipam} is not compatible with spec.cni.type Calico; use Calico or HostLocal`,
      );
  } else {
    const other = OTHER_CNI[cni];
    if (provider !== '' && provider !== other.provider)
      fail(
        'spec.kubernetesProvider',
        `${provider} is not compatible with spec.cni.type ${cni}; it runs on ${other.provider} (or with no provider set)`,
      );
    if (ipam !== other.ipam)
      fail('spec.cni.ipam.type', `${ipam} is not compatible with spec.cni.type ${cni}; use ${other.ipam}`);
  }
  return { provider, cni, ipam };
}

/** `calicoNetwork.bgp` when unset. */
export function defaultBgp(p: Platform): boolean {
  return p.cni === 'Calico' && p.provider !== 'EKS';
}

/** The pools when `calicoNetwork.ipPools` is unset (as given, before each pool's own defaults). */
export function defaultPools(p: Platform): Record<string, unknown>[] {
  if (p.ipam !== 'Calico') return [];
  if (p.provider === 'EKS') return [{ cidr: '172.16.0.0/16', encapsulation: 'VXLAN' }];
  return [{ cidr: '192.168.0.0/16' }];
}

/**
 * calico-node's IP_AUTODETECTION_METHOD when `nodeAddressAutodetectionV4` is unset: only with an
 * IPv4 pool (without one the node needs no address of Calico's: IP=none), then can-reach=8.8.8.8 on
 * EKS (its nodes have several interfaces; the one with the default route), first-found elsewhere.
 */
export function defaultAutodetectionV4(p: Platform, hasIpv4Pool: boolean): string | undefined {
  if (!hasIpv4Pool) return undefined;
  return p.provider === 'EKS' ? 'can-reach=8.8.8.8' : 'first-found';
}
