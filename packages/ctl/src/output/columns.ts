/**
 * The ps/wide table of each kind: upstream's headings (`calicoctl/calicoctl/resourcemgr/*.go`) and
 * what each cell shows, written as functions of the resource instead of Go templates. Cells print
 * the way Go's template printing would: unset strings empty, unset booleans `false`, unset
 * pointers `<nil>`, lists joined with commas.
 */
import type { Kind } from '@calico-ts/api';
import { goNumber, goValue, joinAndTruncate } from './go-values.js';

export type Obj = Record<string, unknown>;

export interface CellContext {
  /** The cluster's default AS number, shown for nodes without their own (`(64512)`). */
  globalASNumber: string;
}

export type Cell = (r: Obj, ctx: CellContext) => string;

export interface KindTable {
  ps: readonly string[];
  wide: readonly string[];
  cells: Readonly<Record<string, Cell>>;
}

function at(r: Obj, ...path: string[]): unknown {
  return atPath(r, path);
}

/** `at` with the path as an array: what the cell makers below call, once per row. */
function atPath(r: Obj, path: readonly string[]): unknown {
  let cur: unknown = r;
  for (let i = 0; i < path.length; i++) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Obj)[path[i]!];
  }
  return cur;
}

const str =
  (...path: string[]): Cell =>
  (r) => {
    const v = atPath(r, path);
    return v === undefined || v === null ? '' : goValue(v);
  };
const bool =
  (...path: string[]): Cell =>
  (r) =>
    atPath(r, path) === true ? 'true' : 'false';
/** A Go pointer field: `<nil>` when unset. */
const ptr =
  (...path: string[]): Cell =>
  (r) => {
    const v = atPath(r, path);
    return typeof v === 'number' ? goNumber(v) : goValue(v);
  };
const joined =
  (max: number, ...path: string[]): Cell =>
  (r) =>
    joinAndTruncate(atPath(r, path), ',', max);
/** A policy's tier: an unset one is the `default` tier. */
const tierOrDefault: Cell = (r) => {
  const v = at(r, 'spec', 'tier');
  return typeof v === 'string' && v !== '' ? v : 'default';
};
const modeOrNever =
  (...path: string[]): Cell =>
  (r) => {
    const v = atPath(r, path);
    return typeof v === 'string' && v !== '' ? v : 'Never';
  };
const setOrDash =
  (...path: string[]): Cell =>
  (r) => {
    const v = atPath(r, path);
    return v === undefined || v === null ? '-' : goValue(v);
  };
const count =
  (...fields: string[]): Cell =>
  (r) =>
    String(
      fields.reduce((n, f) => n + (Array.isArray(at(r, 'spec', f)) ? (at(r, 'spec', f) as []).length : 0), 0),
    );

/**
 * A Kubernetes LabelSelector as Go's template prints it: through the String() method the
 * Kubernetes types generate (`&LabelSelector{MatchLabels:map[string]string{role: db,},…}`).
 */
const labelSelector =
  (...path: string[]): Cell =>
  (r) => {
    const sel = atPath(r, path);
    const o = sel !== null && typeof sel === 'object' && !Array.isArray(sel) ? (sel as Obj) : {};
    const labels = (o.matchLabels ?? {}) as Record<string, unknown>;
    const exprs = Array.isArray(o.matchExpressions) ? (o.matchExpressions as Obj[]) : [];
    const labelText = Object.keys(labels)
      .sort()
      .map((k) => `${k}: ${goValue(labels[k])},`)
      .join('');
    const exprText = exprs
      .map(
        (e) =>
          `LabelSelectorRequirement{Key:${goValue(e.key ?? '')},Operator:${goValue(e.operator ?? '')},` +
          `Values:${goValue(Array.isArray(e.values) ? e.values : [])},},`,
      )
      .join('');
    return `&LabelSelector{MatchLabels:map[string]string{${labelText}},MatchExpressions:[]LabelSelectorRequirement{${exprText}},}`;
  };

const NAME: Cell = str('metadata', 'name');
const NAMESPACE: Cell = str('metadata', 'namespace');

export const KIND_TABLES: Record<Kind, KindTable> = {
  BGPConfiguration: {
    ps: ['NAME', 'LOGSEVERITY', 'MESHENABLED', 'ASNUMBER'],
    wide: ['NAME', 'LOGSEVERITY', 'MESHENABLED', 'ASNUMBER'],
    cells: {
      NAME,
      LOGSEVERITY: str('spec', 'logSeverityScreen'),
      MESHENABLED: setOrDash('spec', 'nodeToNodeMeshEnabled'),
      ASNUMBER: setOrDash('spec', 'asNumber'),
    },
  },
  BGPFilter: {
    ps: ['NAME', 'NUMEXPORT', 'NUMIMPORT'],
    wide: ['NAME', 'NUMEXPORT', 'NUMIMPORT'],
    cells: { NAME, NUMEXPORT: count('exportV4', 'exportV6'), NUMIMPORT: count('importV4', 'importV6') },
  },
  BGPPeer: {
    ps: ['NAME', 'PEERIP', 'NODE', 'ASN'],
    wide: ['NAME', 'PEERIP', 'NODE', 'ASN'],
    cells: {
      NAME,
      PEERIP: str('spec', 'peerIP'),
      NODE: (r) => {
        const node = at(r, 'spec', 'node');
        if (typeof node === 'string' && node !== '') return node;
        const sel = at(r, 'spec', 'nodeSelector');
        return typeof sel === 'string' && sel !== '' ? sel : '(global)';
      },
      ASN: (r) => {
        const v = at(r, 'spec', 'asNumber');
        return v === undefined || v === null ? '0' : goValue(v);
      },
    },
  },
  CalicoNodeStatus: {
    ps: ['NAME', 'NODE'],
    wide: ['NAME', 'NODE', 'CLASSES'],
    cells: { NAME, NODE: str('spec', 'node'), CLASSES: joined(0, 'spec', 'classes') },
  },
  ClusterInformation: {
    ps: ['NAME', 'CLUSTERGUID', 'CLUSTERTYPE', 'CALICOVERSION', 'DATASTOREREADY'],
    wide: ['NAME', 'CLUSTERGUID', 'CLUSTERTYPE', 'CALICOVERSION', 'DATASTOREREADY'],
    cells: {
      NAME,
      CLUSTERGUID: str('spec', 'clusterGUID'),
      CLUSTERTYPE: str('spec', 'clusterType'),
      CALICOVERSION: str('spec', 'calicoVersion'),
      DATASTOREREADY: ptr('spec', 'datastoreReady'),
    },
  },
  FelixConfiguration: { ps: ['NAME'], wide: ['NAME'], cells: { NAME } },
  GlobalNetworkPolicy: {
    ps: ['NAME', 'TIER'],
    wide: ['NAME', 'TIER', 'ORDER', 'SELECTOR'],
    cells: { NAME, TIER: tierOrDefault, ORDER: ptr('spec', 'order'), SELECTOR: str('spec', 'selector') },
  },
  GlobalNetworkSet: {
    ps: ['NAME'],
    wide: ['NAME', 'NETS'],
    cells: { NAME, NETS: joined(80, 'spec', 'nets') },
  },
  HostEndpoint: {
    ps: ['NAME', 'NODE'],
    wide: ['NAME', 'NODE', 'INTERFACE', 'IPS', 'PROFILES'],
    cells: {
      NAME,
      NODE: str('spec', 'node'),
      INTERFACE: str('spec', 'interfaceName'),
      IPS: joined(0, 'spec', 'expectedIPs'),
      PROFILES: joined(0, 'spec', 'profiles'),
    },
  },
  IPPool: {
    ps: ['NAME', 'CIDR', 'SELECTOR'],
    wide: ['NAME', 'CIDR', 'NAT', 'IPIPMODE', 'VXLANMODE', 'DISABLED', 'DISABLEBGPEXPORT', 'SELECTOR'],
    cells: {
      NAME,
      CIDR: str('spec', 'cidr'),
      NAT: bool('spec', 'natOutgoing'),
      IPIPMODE: modeOrNever('spec', 'ipipMode'),
      VXLANMODE: modeOrNever('spec', 'vxlanMode'),
      DISABLED: bool('spec', 'disabled'),
      DISABLEBGPEXPORT: bool('spec', 'disableBGPExport'),
      SELECTOR: str('spec', 'nodeSelector'),
    },
  },
  IPReservation: {
    ps: ['NAME'],
    wide: ['NAME', 'CIDRS'],
    cells: { NAME, CIDRS: joined(80, 'spec', 'reservedCIDRs') },
  },
  KubeControllersConfiguration: { ps: ['NAME'], wide: ['NAME'], cells: { NAME } },
  NetworkPolicy: {
    ps: ['NAME', 'TIER'],
    wide: ['NAME', 'TIER', 'ORDER', 'SELECTOR'],
    cells: {
      NAME,
      NAMESPACE,
      TIER: tierOrDefault,
      ORDER: ptr('spec', 'order'),
      SELECTOR: str('spec', 'selector'),
    },
  },
  NetworkSet: {
    ps: ['NAME'],
    wide: ['NAME', 'NETS'],
    cells: { NAME, NAMESPACE, NETS: joined(80, 'spec', 'nets') },
  },
  Node: {
    ps: ['NAME'],
    wide: ['NAME', 'ASN', 'IPV4', 'IPV6'],
    cells: {
      NAME,
      ASN: (r, ctx) => {
        const bgp = at(r, 'spec', 'bgp');
        if (bgp === undefined || bgp === null) return '';
        const asn = at(r, 'spec', 'bgp', 'asNumber');
        return asn !== undefined && asn !== null && asn !== 0 ? goValue(asn) : `(${ctx.globalASNumber})`;
      },
      IPV4: str('spec', 'bgp', 'ipv4Address'),
      IPV6: str('spec', 'bgp', 'ipv6Address'),
    },
  },
  Profile: {
    ps: ['NAME'],
    wide: ['NAME', 'LABELS'],
    cells: { NAME, LABELS: joined(0, 'spec', 'labelsToApply') },
  },
  // Staged policies print their tier as stored: empty when unset.
  StagedGlobalNetworkPolicy: {
    ps: ['NAME', 'TIER'],
    wide: ['NAME', 'TIER', 'ORDER', 'SELECTOR'],
    cells: {
      NAME,
      TIER: str('spec', 'tier'),
      ORDER: ptr('spec', 'order'),
      SELECTOR: str('spec', 'selector'),
    },
  },
  StagedKubernetesNetworkPolicy: {
    ps: ['NAME'],
    wide: ['NAME', 'PODSELECTOR'],
    cells: { NAME, NAMESPACE, PODSELECTOR: labelSelector('spec', 'podSelector') },
  },
  StagedNetworkPolicy: {
    ps: ['NAME', 'TIER'],
    wide: ['NAME', 'TIER', 'ORDER', 'SELECTOR'],
    cells: {
      NAME,
      NAMESPACE,
      TIER: str('spec', 'tier'),
      ORDER: ptr('spec', 'order'),
      SELECTOR: str('spec', 'selector'),
    },
  },
  Tier: {
    ps: ['NAME', 'ORDER'],
    wide: ['NAME', 'ORDER'],
    cells: { NAME, ORDER: ptr('spec', 'order') },
  },
  WorkloadEndpoint: {
    ps: ['WORKLOAD', 'NODE', 'NETWORKS', 'INTERFACE'],
    wide: ['NAME', 'WORKLOAD', 'NODE', 'NETWORKS', 'INTERFACE', 'PROFILES', 'NATS'],
    cells: {
      NAME,
      NAMESPACE,
      NODE: str('spec', 'node'),
      ORCHESTRATOR: str('spec', 'orchestrator'),
      WORKLOAD: (r) => {
        const w = at(r, 'spec', 'workload');
        return typeof w === 'string' && w !== '' ? w : str('spec', 'pod')(r, { globalASNumber: '' });
      },
      NETWORKS: joined(0, 'spec', 'ipNetworks'),
      NATS: (r) => {
        const nats = at(r, 'spec', 'ipNATs');
        if (!Array.isArray(nats)) return '';
        return nats
          .map(
            (n) =>
              `{${goValue(at(n as Obj, 'internalIP') ?? '')} ${goValue(at(n as Obj, 'externalIP') ?? '')}}`,
          )
          .join(',');
      },
      PROFILES: joined(0, 'spec', 'profiles'),
      INTERFACE: str('spec', 'interfaceName'),
    },
  },
};

/** Whether any heading of a table needs the cluster's AS number. */
export function needsASNumber(kind: Kind, headings: readonly string[]): boolean {
  return kind === 'Node' && headings.includes('ASN');
}
