/**
 * The pure decisions of start-up about resources: this node's IPv4 address, its Node object, the
 * default IP pool, the ClusterInformation, the tiers and default configurations upstream's
 * calico-node ensures. No I/O: the start-up sequence (startup.ts) reads, calls these, and writes.
 */
import type { ClusterInformation, FelixConfiguration, IPPool, Node, Tier } from '@calico-ts/api';
import { formatCidr, parseCidrOrIP } from '@calico-ts/api/net';
import { type AutodetectResult, type HostInterface, localCidr } from './autodetect.js';
import type { IPSetting, IPv6PoolSettings, NodeEnv, PoolSettings } from './env.js';
import { NodeError } from './errors.js';

/** The Calico release this calico-node speaks for (what calicoctl's version check compares). */
export const CALICO_VERSION = 'v3.32.1';
export const DEFAULT_IPV4_POOL_NAME = 'default-ipv4-ippool';
export const DEFAULT_IPV6_POOL_NAME = 'default-ipv6-ippool';

export interface AddressDecision {
  /** `a.b.c.d/nn`, or undefined for no IPv4 address. */
  readonly ipv4Address: string | undefined;
  /** What to tell the operator (kept value, no interface holds the address…). */
  readonly notes: readonly string[];
}

/**
 * This node's IPv4 address, as upstream's configureIPsAndSubnets decides it. `detect` runs the
 * autodetection method only when the setting asks for it.
 */
export function decideIPv4(
  setting: IPSetting,
  existing: string | undefined,
  detect: () => AutodetectResult,
  ifaces: readonly HostInterface[],
): AddressDecision {
  const d = decideIP(4, setting, existing, detect, ifaces);
  return { ipv4Address: d.address, notes: d.notes };
}

/**
 * This node's address of `family` (`IP` or `IP6`). IPv4 autodetects when unset and the Node has no
 * address yet; IPv6 (upstream's IP6 defaults to none) only when asked to (`IP6=autodetect`).
 */
export function decideIP(
  family: 4 | 6,
  setting: IPSetting,
  existing: string | undefined,
  detect: () => AutodetectResult,
  ifaces: readonly HostInterface[],
): { readonly address: string | undefined; readonly notes: readonly string[] } {
  const notes: string[] = [];
  const v = `IPv${family}`;
  const current = existing === '' ? undefined : existing;
  const autodetect =
    setting.kind === 'autodetect' || (family === 4 && setting.kind === 'unset' && current === undefined);
  if (autodetect) {
    const r = detect();
    if (r.ok) {
      notes.push(`using autodetected ${v} address ${r.cidr} on interface ${r.interface}`);
      return { address: r.cidr, notes };
    }
    if (current === undefined) {
      const [method, name] =
        family === 4 ? ['IP_AUTODETECTION_METHOD', 'IP'] : ['IP6_AUTODETECTION_METHOD', 'IP6'];
      throw new NodeError(
        'autodetect',
        `cannot autodetect an ${v} address (${r.reason}); choose another ${method} or set ${name}`,
      );
    }
    notes.push(`autodetection failed (${r.reason}); keeping the existing address ${current}`);
    return { address: current, notes };
  }
  if (setting.kind === 'none' || setting.kind === 'unset') {
    return { address: current, notes };
  }
  const cidr = localCidr(setting.value, ifaces);
  const parsed = parseCidrOrIP(cidr)!;
  if (!cidr.includes('/')) notes.push(`no interface holds ${setting.value}; using it as a /${parsed.prefix}`);
  const text = cidr.includes('/') ? cidr : `${setting.value}/${parsed.prefix}`;
  notes.push(`using ${v} address ${text} from the environment`);
  return { address: text, notes };
}

/**
 * The name of another Node already using `address`, if any (upstream's conflict check): compared
 * with the other Nodes' `ipv4Address`, or their `ipv6Address` for an IPv6 address.
 */
export function conflictingNode(
  nodeName: string,
  address: string | undefined,
  nodes: readonly Node[],
): string | undefined {
  const mine = parseCidrOrIP(address ?? '');
  if (mine === undefined) return undefined;
  const same = (other: string | undefined) => {
    const o = parseCidrOrIP(other ?? '');
    return o !== undefined && o.family === mine.family && o.address === mine.address;
  };
  return nodes.find(
    (n) =>
      n.metadata.name !== nodeName &&
      same(mine.family === 4 ? n.spec.bgp?.ipv4Address : n.spec.bgp?.ipv6Address),
  )?.metadata.name;
}

/**
 * The Node this calico-node registers: the existing one (other fields kept) with the address, AS
 * number and orchestrator reference set. `changed` tells whether a write is needed.
 */
export function desiredNode(
  env: Pick<NodeEnv, 'nodeName' | 'networkingBackend' | 'asNumber' | 'k8sNodeRef'>,
  existing: Node | undefined,
  ipv4Address: string | undefined,
  ipv6Address?: string,
): { node: Node; changed: boolean } {
  const base: Node = existing ?? {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Node',
    metadata: { name: env.nodeName },
    spec: {},
  };
  const spec = { ...base.spec };
  if (env.networkingBackend !== 'none') {
    const bgp = { ...(spec.bgp ?? {}) };
    if (ipv4Address !== undefined) bgp.ipv4Address = ipv4Address;
    else delete bgp.ipv4Address;
    if (ipv6Address !== undefined) bgp.ipv6Address = ipv6Address;
    else delete bgp.ipv6Address;
    if (env.asNumber !== undefined) bgp.asNumber = env.asNumber;
    if (Object.keys(bgp).length > 0) spec.bgp = bgp;
    else delete spec.bgp;
  }
  if (env.k8sNodeRef !== undefined) {
    spec.orchRefs = [{ nodeName: env.k8sNodeRef, orchestrator: 'k8s' }];
  }
  const node: Node = { ...base, spec };
  const changed = existing === undefined || JSON.stringify(existing.spec) !== JSON.stringify(spec);
  return { node, changed };
}

/** The default IPv4 pool upstream creates when no IPv4 pool exists; undefined when disabled. */
export function defaultIPv4Pool(pool: PoolSettings, existing: readonly IPPool[]): IPPool | undefined {
  return defaultPool(4, pool, existing, () => pool.cidr);
}

/**
 * The default IPv6 pool upstream creates when no IPv6 pool exists and IPv6 is on; without
 * CALICO_IPV6POOL_CIDR its CIDR is a random ULA /48 (`ula()`). Undefined when disabled.
 */
export function defaultIPv6Pool(
  pool: IPv6PoolSettings,
  existing: readonly IPPool[],
  ula: () => string = randomUlaPrefix,
): IPPool | undefined {
  return defaultPool(6, pool, existing, () => pool.cidr ?? ula());
}

/** A random unique local IPv6 /48 (RFC 4193: fd00::/8 and 40 random bits), upstream's GenerateIPv6ULAPrefix. */
export function randomUlaPrefix(random: (n: number) => Uint8Array = randomBytes): string {
  let v = 0xfdn;
  for (const byte of random(5)) v = (v << 8n) | BigInt(byte);
  const network = v << 80n;
  return formatCidr({ family: 6, address: network, prefix: 48, network });
}

function randomBytes(n: number): Uint8Array {
  return globalThis.crypto.getRandomValues(new Uint8Array(n));
}

function defaultPool(
  family: 4 | 6,
  pool: IPv6PoolSettings,
  existing: readonly IPPool[],
  cidr: () => string,
): IPPool | undefined {
  if (!pool.enabled) return undefined;
  if (existing.some((p) => parseCidrOrIP(p.spec.cidr)?.family === family)) return undefined;
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'IPPool',
    metadata: { name: family === 4 ? DEFAULT_IPV4_POOL_NAME : DEFAULT_IPV6_POOL_NAME },
    spec: {
      cidr: cidr(),
      natOutgoing: pool.natOutgoing,
      ipipMode: pool.ipipMode,
      vxlanMode: pool.vxlanMode,
      blockSize: pool.blockSize,
      ...(pool.nodeSelector !== '' ? { nodeSelector: pool.nodeSelector } : {}),
      ...(pool.disableBGPExport ? { disableBGPExport: true } : {}),
    },
  } as IPPool;
}

/** A new cluster GUID: the hex of a random UUID, as upstream writes it. */
export function newClusterGUID(random: () => string = () => globalThis.crypto.randomUUID()): string {
  return random().replaceAll('-', '');
}

/**
 * ClusterInformation `default` after upstream's ensureClusterInformation: version set, GUID and
 * datastoreReady filled when missing (an explicit false is kept), our cluster types appended to the
 * existing ones. `changed` tells whether a write is needed.
 */
export function desiredClusterInformation(
  existing: ClusterInformation | undefined,
  clusterType: string,
  guid: () => string,
  version: string = CALICO_VERSION,
): { info: ClusterInformation; changed: boolean } {
  if (existing === undefined) {
    return {
      info: {
        apiVersion: 'projectcalico.org/v3',
        kind: 'ClusterInformation',
        metadata: { name: 'default' },
        spec: {
          clusterGUID: guid(),
          ...(clusterType !== '' ? { clusterType } : {}),
          calicoVersion: version,
          datastoreReady: true,
        },
      } as ClusterInformation,
      changed: true,
    };
  }
  const spec = { ...(existing.spec ?? {}) } as NonNullable<ClusterInformation['spec']> & {
    clusterGUID?: string;
    clusterType?: string;
    calicoVersion?: string;
    datastoreReady?: boolean;
  };
  let changed = false;
  if (version !== '' && spec.calicoVersion !== version) {
    spec.calicoVersion = version;
    changed = true;
  }
  if (!spec.clusterGUID) {
    spec.clusterGUID = guid();
    changed = true;
  }
  if (spec.datastoreReady === undefined || spec.datastoreReady === null) {
    spec.datastoreReady = true;
    changed = true;
  }
  if (clusterType !== '') {
    if (!spec.clusterType) {
      spec.clusterType = clusterType;
      changed = true;
    } else {
      const all = spec.clusterType.split(',');
      for (const t of clusterType.split(',')) {
        if (!all.includes(t)) {
          all.push(t);
          changed = true;
        }
      }
      spec.clusterType = all.join(',');
    }
  }
  return { info: { ...existing, spec } as ClusterInformation, changed };
}

/** The tiers every client initialisation ensures (name, order, default action). */
export const DEFAULT_TIERS: readonly Tier[] = [
  { name: 'default', order: 1_000_000, defaultAction: 'Deny' },
  { name: 'kube-admin', order: 1_000, defaultAction: 'Pass' },
  { name: 'kube-baseline', order: 10_000_000, defaultAction: 'Pass' },
].map(
  (t) =>
    ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Tier',
      metadata: { name: t.name },
      spec: { order: t.order, defaultAction: t.defaultAction },
    }) as Tier,
);

/**
 * FelixConfiguration `default` as upstream's ensureDefaultConfig leaves it: reportingInterval 0 and
 * logSeverityScreen Info when unset. Undefined when nothing needs writing.
 */
export function desiredGlobalFelixConfig(
  existing: FelixConfiguration | undefined,
): FelixConfiguration | undefined {
  const spec = { ...(existing?.spec ?? {}) } as Record<string, unknown>;
  let changed = existing === undefined;
  if (spec.reportingInterval === undefined) {
    spec.reportingInterval = '0s';
    changed = true;
  }
  if (spec.logSeverityScreen === undefined || spec.logSeverityScreen === '') {
    spec.logSeverityScreen = 'Info';
    changed = true;
  }
  if (!changed) return undefined;
  return {
    ...(existing ?? {
      apiVersion: 'projectcalico.org/v3',
      kind: 'FelixConfiguration',
      metadata: { name: 'default' },
    }),
    spec,
  } as FelixConfiguration;
}

/**
 * FelixConfiguration `node.<name>` (etcd datastore only): defaultEndpointToHostAction Return when
 * unset, so workloads can reach their host. Undefined when nothing needs writing.
 */
export function desiredNodeFelixConfig(
  nodeName: string,
  existing: FelixConfiguration | undefined,
): FelixConfiguration | undefined {
  const spec = { ...(existing?.spec ?? {}) } as Record<string, unknown>;
  if (existing !== undefined && spec.defaultEndpointToHostAction) return undefined;
  spec.defaultEndpointToHostAction = 'Return';
  return {
    ...(existing ?? {
      apiVersion: 'projectcalico.org/v3',
      kind: 'FelixConfiguration',
      metadata: { name: `node.${nodeName}` },
    }),
    spec,
  } as FelixConfiguration;
}
