/**
 * The pure decisions of start-up about resources: this node's IPv4 address, its Node object, the
 * default IP pool, the ClusterInformation, the tiers and default configurations upstream's
 * calico-node ensures. No I/O: the start-up sequence (startup.ts) reads, calls these, and writes.
 */
import type { ClusterInformation, FelixConfiguration, IPPool, Node, Tier } from '@calico-ts/api';
import { parseCidrOrIP } from '@calico-ts/api/net';
import { type AutodetectResult, type HostInterface, localCidr } from './autodetect.js';
import type { IPSetting, NodeEnv, PoolSettings } from './env.js';
import { NodeError } from './errors.js';

/** The Calico release this calico-node speaks for (what calicoctl's version check compares). */
export const CALICO_VERSION = 'v3.32.1';
export const DEFAULT_IPV4_POOL_NAME = 'default-ipv4-ippool';

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
  const notes: string[] = [];
  const current = existing === '' ? undefined : existing;
  if (setting.kind === 'autodetect' || (setting.kind === 'unset' && current === undefined)) {
    const r = detect();
    if (r.ok) {
      notes.push(`using autodetected IPv4 address ${r.cidr} on interface ${r.interface}`);
      return { ipv4Address: r.cidr, notes };
    }
    if (current === undefined) {
      throw new NodeError(
        'autodetect',
        `cannot autodetect an IPv4 address (${r.reason}); choose another IP_AUTODETECTION_METHOD or set IP`,
      );
    }
    notes.push(`autodetection failed (${r.reason}); keeping the existing address ${current}`);
    return { ipv4Address: current, notes };
  }
  if (setting.kind === 'none' || setting.kind === 'unset') {
    return { ipv4Address: current, notes };
  }
  const cidr = localCidr(setting.value, ifaces);
  if (!cidr.includes('/')) notes.push(`no interface holds ${setting.value}; using it as a /32`);
  const parsed = parseCidrOrIP(cidr)!;
  const text = cidr.includes('/') ? cidr : `${setting.value}/${parsed.prefix}`;
  notes.push(`using IPv4 address ${text} from the environment`);
  return { ipv4Address: text, notes };
}

const addressOf = (cidr: string | undefined) => (cidr === undefined ? undefined : cidr.split('/')[0]);

/** The name of another Node already using `ipv4Address`, if any (upstream's conflict check). */
export function conflictingNode(
  nodeName: string,
  ipv4Address: string | undefined,
  nodes: readonly Node[],
): string | undefined {
  const mine = addressOf(ipv4Address);
  if (mine === undefined) return undefined;
  return nodes.find((n) => n.metadata.name !== nodeName && addressOf(n.spec.bgp?.ipv4Address) === mine)
    ?.metadata.name;
}

/**
 * The Node this calico-node registers: the existing one (other fields kept) with the address, AS
 * number and orchestrator reference set. `changed` tells whether a write is needed.
 */
export function desiredNode(
  env: Pick<NodeEnv, 'nodeName' | 'networkingBackend' | 'asNumber' | 'k8sNodeRef'>,
  existing: Node | undefined,
  ipv4Address: string | undefined,
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
  if (!pool.enabled) return undefined;
  if (existing.some((p) => parseCidrOrIP(p.spec.cidr)?.family === 4)) return undefined;
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'IPPool',
    metadata: { name: DEFAULT_IPV4_POOL_NAME },
    spec: {
      cidr: pool.cidr,
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
