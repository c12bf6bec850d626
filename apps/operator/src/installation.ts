/**
 * The `operator.tigera.io/v1` Installation as the operator reads it: upstream's field names
 * (`api/v1/installation_types.go`), checked and defaulted here (pure: the object in, a resolved
 * configuration or the list of what is wrong out).
 *
 * Fail closed: a value of a field the operator acts on that this build does not implement
 * (`linuxDataplane: BPF`, `kubernetesProvider: OpenShift`, `cni.ipam.type: HostLocal` with the
 * Calico CNI, `variant: TigeraSecureEnterprise`) is refused with a message naming the field, never
 * installed as if it were something else. Defaults are upstream's: the CNI and IPAM from the
 * provider (provider.ts: EKS → AmazonVPC, GKE → GKE with HostLocal, AKS → AzureVNET, else Calico);
 * with Calico IPAM one IPv4 pool `default-ipv4-ippool` 192.168.0.0/16 (EKS: 172.16.0.0/16 VXLAN),
 * block size 26, IPIP with the Calico CNI (VXLAN when BGP is disabled), None with another CNI,
 * NAT outgoing, `all()`; BGP Enabled with the Calico CNI (EKS: Disabled), Disabled with another.
 */

import {
  CNI_TYPES,
  type CniType,
  defaultAutodetectionV4,
  defaultBgp,
  defaultPools,
  IPAM_TYPES,
  type IpamType,
  type Platform,
  PROVIDERS,
  type Provider,
  policyOnly,
  resolvePlatform,
} from './provider.js';

export { CNI_TYPES, IPAM_TYPES, PROVIDERS };

export type Encapsulation = 'IPIP' | 'IPIPCrossSubnet' | 'VXLAN' | 'VXLANCrossSubnet' | 'None';
export const ENCAPSULATIONS: readonly Encapsulation[] = [
  'IPIP',
  'IPIPCrossSubnet',
  'VXLAN',
  'VXLANCrossSubnet',
  'None',
];
export const LINUX_DATAPLANES = ['Iptables', 'BPF', 'VPP', 'Nftables'];
export const ALLOWED_USES = ['Workload', 'Tunnel', 'LoadBalancer'];

/** One pool of `spec.calicoNetwork.ipPools`, defaulted. */
export interface ResolvedPool {
  readonly name: string;
  readonly cidr: string;
  readonly ipv6: boolean;
  readonly blockSize: number;
  readonly encapsulation: Encapsulation;
  readonly natOutgoing: boolean;
  readonly nodeSelector: string;
  readonly disableBGPExport: boolean;
  readonly disableNewAllocations: boolean;
  readonly allowedUses: readonly string[];
}

/** What the render reads from an Installation, every default filled in. */
export interface ResolvedInstallation {
  /** Ends with `/` unless empty (then images are named as `pnpm images` tags them). */
  readonly registry: string;
  readonly imagePath: string;
  readonly imagePrefix: string;
  readonly imagePullSecrets: readonly string[];
  /** The provider, CNI and IPAM (provider.ts). */
  readonly platform: Platform;
  readonly bgp: boolean;
  /** Absent: worked out on each node from its interfaces. */
  readonly mtu?: number;
  readonly pools: readonly ResolvedPool[];
  /** calico-node's IP_AUTODETECTION_METHOD; absent: the node has no address of Calico's (IP=none). */
  readonly autodetectionV4?: string;
  /** `calicoNetwork.hostPorts`: the CNI configuration's portmap plugin (Calico CNI only). */
  readonly hostPorts: boolean;
  /** `azure.policyMode` (AKS): Default labels calico-system `control-plane: "true"`, Manual does not. */
  readonly azurePolicyMode: 'Default' | 'Manual';
}

export type InstallationResult =
  | { readonly ok: true; readonly config: ResolvedInstallation }
  | { readonly ok: false; readonly errors: readonly string[] };

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `a.b.c/len` → [address bytes, prefix length, is IPv6], or undefined when it is not a CIDR. */
export function parseCidr(text: string): { bytes: number[]; prefix: number; ipv6: boolean } | undefined {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text.trim());
  if (!m) return undefined;
  const prefix = Number(m[2]);
  const addr = m[1]!;
  if (addr.includes(':')) {
    const halves = addr.split('::');
    if (halves.length > 2) return undefined;
    const part = (s: string) => (s === '' ? [] : s.split(':'));
    const head = part(halves[0]!);
    const tail = halves.length === 2 ? part(halves[1]!) : [];
    const fill = 8 - head.length - tail.length;
    if (fill < 0 || (halves.length === 1 && fill !== 0)) return undefined;
    const groups = [...head, ...Array<string>(halves.length === 2 ? fill : 0).fill('0'), ...tail];
    if (!groups.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g)) || prefix > 128) return undefined;
    const bytes = groups.flatMap((g) => [Number.parseInt(g, 16) >> 8, Number.parseInt(g, 16) & 255]);
    return { bytes, prefix, ipv6: true };
  }
  const parts = addr.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  if (prefix > 32) return undefined;
  return { bytes: parts.map(Number), prefix, ipv6: false };
}

function hostBitsSet(bytes: number[], prefix: number): boolean {
  return bytes.some((b, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return (b & (0xff >> keep)) !== 0;
  });
}

class Checker {
  readonly errors: string[] = [];
  fail(path: string, msg: string): void {
    this.errors.push(`${path}: ${msg}`);
  }
  oneOf(path: string, v: unknown, allowed: readonly string[], dflt: string): string {
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'string' || !allowed.includes(v)) {
      this.fail(
        path,
        `${JSON.stringify(v)} is not one of ${allowed.map((a) => (a === '' ? '""' : a)).join(', ')}`,
      );
      return dflt;
    }
    return v;
  }
  str(path: string, v: unknown, dflt: string): string {
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'string') {
      this.fail(path, `must be a string, got ${JSON.stringify(v)}`);
      return dflt;
    }
    return v;
  }
  bool(path: string, v: unknown, dflt: boolean): boolean {
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'boolean') {
      this.fail(path, `must be true or false, got ${JSON.stringify(v)}`);
      return dflt;
    }
    return v;
  }
  obj(path: string, v: unknown): Obj {
    if (v === undefined || v === null) return {};
    if (!isObj(v)) {
      this.fail(path, 'must be an object');
      return {};
    }
    return v;
  }
}

/** Refusals of values this build does not implement: each says what is wrong and what works. */
function refuseUnsupported(c: Checker, spec: Obj, network: Obj): void {
  const variant = c.oneOf('spec.variant', spec.variant, ['Calico', 'TigeraSecureEnterprise'], 'Calico');
  if (variant !== 'Calico') c.fail('spec.variant', `${variant} is not part of this build; use Calico`);
  const dp = c.oneOf(
    'spec.calicoNetwork.linuxDataplane',
    network.linuxDataplane,
    LINUX_DATAPLANES,
    'Iptables',
  );
  if (dp === 'BPF' || dp === 'VPP')
    c.fail(
      'spec.calicoNetwork.linuxDataplane',
      `${dp} is not part of this build; Iptables and Nftables both run the nftables dataplane`,
    );
}

/** `kubernetesProvider`, `cni.type` and `cni.ipam.type`, checked and defaulted (provider.ts). */
function platformOf(c: Checker, spec: Obj): Platform {
  const provider = c.oneOf('spec.kubernetesProvider', spec.kubernetesProvider, PROVIDERS, '') as Provider;
  const cni = c.obj('spec.cni', spec.cni);
  // Unset, or not one of the values (already reported): the provider's default.
  const given = <T extends string>(path: string, v: unknown, allowed: readonly T[]): T | undefined => {
    if (v === undefined || v === null) return undefined;
    c.oneOf(path, v, allowed, '');
    return allowed.includes(v as T) ? (v as T) : undefined;
  };
  return resolvePlatform(
    (path, msg) => c.fail(path, msg),
    provider,
    given<CniType>('spec.cni.type', cni.type, CNI_TYPES),
    given<IpamType>('spec.cni.ipam.type', c.obj('spec.cni.ipam', cni.ipam).type, IPAM_TYPES),
  );
}

function resolvePool(
  c: Checker,
  path: string,
  raw: unknown,
  bgp: boolean,
  calicoCni: boolean,
): ResolvedPool | undefined {
  const p = c.obj(path, raw);
  const cidrText = c.str(`${path}.cidr`, p.cidr, '');
  if (cidrText === '') {
    c.fail(`${path}.cidr`, 'is required');
    return undefined;
  }
  const cidr = parseCidr(cidrText);
  if (!cidr) {
    c.fail(`${path}.cidr`, `${JSON.stringify(cidrText)} is not a CIDR`);
    return undefined;
  }
  if (hostBitsSet(cidr.bytes, cidr.prefix))
    c.fail(`${path}.cidr`, `${cidrText} has host bits set; use the network address`);
  const dfltEncap: Encapsulation = cidr.ipv6 || !calicoCni ? 'None' : bgp ? 'IPIP' : 'VXLAN';
  const encapsulation = c.oneOf(
    `${path}.encapsulation`,
    p.encapsulation,
    ENCAPSULATIONS,
    dfltEncap,
  ) as Encapsulation;
  if (!calicoCni) {
    // Another CNI routes the pods: a pool only says which addresses are Calico's to police.
    if (encapsulation !== 'None')
      c.fail(
        `${path}.encapsulation`,
        `${encapsulation} is invalid when using a non-Calico CNI, should be None`,
      );
  } else if (encapsulation.startsWith('IPIP') && !bgp)
    c.fail(`${path}.encapsulation`, 'IPIP encapsulation requires that BGP is enabled');
  else if (encapsulation === 'None' && !bgp)
    c.fail(`${path}.encapsulation`, 'Unencapsulated IP pools require that BGP is enabled');
  if (encapsulation.startsWith('IPIP') && cidr.ipv6)
    c.fail(`${path}.encapsulation`, 'IPIP encapsulation is not supported on an IPv6 pool');
  let blockSize = cidr.ipv6 ? 122 : 26;
  if (p.blockSize !== undefined && p.blockSize !== null) {
    const b = p.blockSize;
    const [lo, hi] = cidr.ipv6 ? [116, 128] : [20, 32];
    if (typeof b !== 'number' || !Number.isInteger(b) || b < lo || b > hi)
      c.fail(`${path}.blockSize`, `${JSON.stringify(b)} is not an integer in ${lo}–${hi}`);
    else if (b < cidr.prefix)
      c.fail(
        `${path}.blockSize`,
        `${b} is larger than the pool ${cidrText}; it must be at least /${cidr.prefix}`,
      );
    else blockSize = b;
  }
  const nat = c.oneOf(`${path}.natOutgoing`, p.natOutgoing, ['Enabled', 'Disabled'], 'Enabled');
  const nodeSelector = c.str(`${path}.nodeSelector`, p.nodeSelector, 'all()') || 'all()';
  if (!calicoCni && nodeSelector !== 'all()')
    c.fail(`${path}.nodeSelector`, `${nodeSelector} should be all() when using a non-Calico CNI`);
  const uses = Array.isArray(p.allowedUses) ? p.allowedUses : ['Workload', 'Tunnel'];
  uses.forEach((u, i) => void c.oneOf(`${path}.allowedUses[${i}]`, u, ALLOWED_USES, 'Workload'));
  c.oneOf(`${path}.assignmentMode`, p.assignmentMode, ['Automatic', 'Manual'], 'Automatic');
  return {
    name: c.str(`${path}.name`, p.name, cidr.ipv6 ? 'default-ipv6-ippool' : 'default-ipv4-ippool'),
    cidr: cidrText.trim(),
    ipv6: cidr.ipv6,
    blockSize,
    encapsulation,
    natOutgoing: nat === 'Enabled',
    nodeSelector,
    disableBGPExport: c.bool(`${path}.disableBGPExport`, p.disableBGPExport, false),
    disableNewAllocations: c.bool(`${path}.disableNewAllocations`, p.disableNewAllocations, false),
    allowedUses: uses.filter((u): u is string => typeof u === 'string'),
  };
}

/**
 * calico-node's IP_AUTODETECTION_METHOD from `nodeAddressAutodetectionV4` (upstream's mapping);
 * undefined when no method is set.
 */
function autodetection(c: Checker, raw: unknown): string | undefined {
  const path = 'spec.calicoNetwork.nodeAddressAutodetectionV4';
  const a = c.obj(path, raw);
  const methods: string[] = [];
  if (a.firstFound === true) methods.push('first-found');
  if (a.kubernetes !== undefined) {
    c.oneOf(`${path}.kubernetes`, a.kubernetes, ['NodeInternalIP'], 'NodeInternalIP');
    methods.push('kubernetes-internal-ip');
  }
  if (typeof a.interface === 'string' && a.interface) methods.push(`interface=${a.interface}`);
  if (typeof a.skipInterface === 'string' && a.skipInterface)
    methods.push(`skip-interface=${a.skipInterface}`);
  if (typeof a.canReach === 'string' && a.canReach) methods.push(`can-reach=${a.canReach}`);
  if (Array.isArray(a.cidrs) && a.cidrs.length > 0) methods.push(`cidr=${a.cidrs.join(',')}`);
  if (methods.length > 1) c.fail(path, `set one method, got ${methods.length}`);
  return methods[0];
}

/** The Installation's spec checked and defaulted; every problem is reported at once. */
export function resolveInstallation(installation: unknown): InstallationResult {
  const c = new Checker();
  const inst = c.obj('Installation', installation);
  const name = (inst.metadata as Obj | undefined)?.name;
  if (name !== 'default')
    c.fail('metadata.name', `the operator acts on the Installation named default, not ${String(name)}`);
  const spec = c.obj('spec', inst.spec);
  const network = c.obj('spec.calicoNetwork', spec.calicoNetwork);
  refuseUnsupported(c, spec, network);
  const platform = platformOf(c, spec);
  const calicoCni = !policyOnly(platform);
  const bgp =
    c.oneOf(
      'spec.calicoNetwork.bgp',
      network.bgp,
      ['Enabled', 'Disabled'],
      defaultBgp(platform) ? 'Enabled' : 'Disabled',
    ) === 'Enabled';
  if (bgp && !calicoCni)
    c.fail('spec.calicoNetwork.bgp', `BGP is not supported when using a non-Calico CNI (${platform.cni})`);
  let mtu: number | undefined;
  if (network.mtu !== undefined && network.mtu !== null) {
    const m = network.mtu;
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 576 || m > 65535)
      c.fail('spec.calicoNetwork.mtu', `${JSON.stringify(m)} is not an integer in 576–65535`);
    else mtu = m;
  }
  const rawPools = network.ipPools === undefined || network.ipPools === null ? undefined : network.ipPools;
  if (rawPools !== undefined && !Array.isArray(rawPools))
    c.fail('spec.calicoNetwork.ipPools', 'must be a list');
  const list = Array.isArray(rawPools) ? rawPools : rawPools === undefined ? defaultPools(platform) : [];
  const pools = list
    .map((p, i) => resolvePool(c, `spec.calicoNetwork.ipPools[${i}]`, p, bgp, calicoCni))
    .filter((p): p is ResolvedPool => p !== undefined);
  const names = pools.map((p) => p.name);
  for (const n of new Set(names.filter((n, i) => names.indexOf(n) !== i)))
    c.fail('spec.calicoNetwork.ipPools', `two pools are named ${n}`);
  if (pools.filter((p) => !p.ipv6).length > 1 || pools.filter((p) => p.ipv6).length > 1)
    c.fail('spec.calicoNetwork.ipPools', 'at most one IPv4 and one IPv6 pool');
  if (pools.some((p) => p.ipv6))
    c.fail('spec.calicoNetwork.ipPools', 'IPv6 pools are not supported by this build yet');
  let registry = c.str('spec.registry', spec.registry, '');
  if (registry !== '' && !registry.endsWith('/')) registry += '/';
  const secrets = Array.isArray(spec.imagePullSecrets) ? spec.imagePullSecrets : [];
  const autodetectionV4 =
    autodetection(c, network.nodeAddressAutodetectionV4) ??
    defaultAutodetectionV4(
      platform,
      pools.some((p) => !p.ipv6),
    );
  const hostPorts =
    c.oneOf(
      'spec.calicoNetwork.hostPorts',
      network.hostPorts,
      ['Enabled', 'Disabled'],
      calicoCni ? 'Enabled' : 'Disabled',
    ) === 'Enabled';
  if (hostPorts && !calicoCni)
    c.fail('spec.calicoNetwork.hostPorts', 'Enabled is supported only with the Calico CNI');
  const azure = c.obj('spec.azure', spec.azure);
  const azurePolicyMode = c.oneOf(
    'spec.azure.policyMode',
    azure.policyMode,
    ['Default', 'Manual'],
    'Default',
  ) as 'Default' | 'Manual';
  if (c.errors.length > 0) return { ok: false, errors: c.errors };
  return {
    ok: true,
    config: {
      registry,
      imagePath: c.str('spec.imagePath', spec.imagePath, ''),
      imagePrefix: c.str('spec.imagePrefix', spec.imagePrefix, ''),
      imagePullSecrets: secrets
        .map((s) => (isObj(s) && typeof s.name === 'string' ? s.name : ''))
        .filter((s) => s !== ''),
      platform,
      bgp,
      ...(mtu !== undefined ? { mtu } : {}),
      pools,
      ...(autodetectionV4 !== undefined ? { autodetectionV4 } : {}),
      hostPorts,
      azurePolicyMode,
    },
  };
}
