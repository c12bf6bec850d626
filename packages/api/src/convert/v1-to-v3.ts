/**
 * Calico v2.x resources (`apiVersion: v1`, kinds `ipPool`, `policy`, `profile`, `hostEndpoint`,
 * `workloadEndpoint`, `node`, `bgpPeer`, `tier`) → projectcalico.org/v3, as `calicoctl convert`
 * did up to v3.31 (`libcalico-go/lib/upgrade/converters/*.go`: v1 API → v1 backend → v3 API).
 *
 * Accepted shapes: one document, a YAML/JSON list of documents, or a `<kind>List` document with
 * `items`. Unknown fields are refused (upstream read v1 documents strictly). The output is not
 * validated or defaulted beyond what the upstream converters set; run `validateResource` on it.
 */
import { ApiError } from '../errors.js';
import {
  type Cidr,
  formatCidr,
  formatIP,
  type IPAddress,
  parseCidr,
  parseCidrOrIP,
  parseIP,
} from '../net/cidr.js';
import type {
  BGPPeer,
  GlobalNetworkPolicy,
  HostEndpoint,
  IPPool,
  Node,
  Profile,
  Resource,
  Tier,
  WorkloadEndpoint,
} from '../resources/index.js';
import {
  FieldPath,
  isObj,
  type Obj,
  optBool,
  optList,
  optNumber,
  optString,
  optStringList,
  optStringMap,
  readObj,
  reqString,
} from './fields.js';
import {
  cidrToName,
  convertName,
  convertNameNoDots,
  convertNodeName,
  formatCidrAsWritten,
  ipToName,
  workloadEndpointName,
} from './names.js';
import {
  convertV1Protocol,
  convertV1Rules,
  convertV1Selector,
  newRuleNotes,
  type RuleNotes,
} from './v1-rules.js';

const API_V3 = 'projectcalico.org/v3' as const;

export const V1_KINDS = [
  'ipPool',
  'policy',
  'profile',
  'hostEndpoint',
  'workloadEndpoint',
  'node',
  'bgpPeer',
  'tier',
] as const;
export type V1Kind = (typeof V1_KINDS)[number];

function isV1Kind(k: string): k is V1Kind {
  return (V1_KINDS as readonly string[]).includes(k);
}

/** The v1 kind a `<kind>List` names, if it names one. */
function listItemKind(k: string): V1Kind | undefined {
  if (!k.endsWith('List')) return undefined;
  const item = k.slice(0, -'List'.length);
  return isV1Kind(item) ? item : undefined;
}

/**
 * True for a Calico v1 document (`apiVersion: v1` and one of the v1 kinds, spelled exactly as v1
 * spelled them, so Kubernetes' own `v1` kinds such as `Node` or `List` are not mistaken for one),
 * a `<kind>List` of them, or a non-empty list whose every element is one.
 */
export function isV1Document(doc: unknown): boolean {
  if (Array.isArray(doc)) return doc.length > 0 && doc.every(isV1Document);
  if (!isObj(doc) || doc.apiVersion !== 'v1' || typeof doc.kind !== 'string') return false;
  return isV1Kind(doc.kind) || listItemKind(doc.kind) !== undefined;
}

export interface V1ConversionResult {
  resources: Resource[];
  /** One line per converted resource, plus lines about anything renamed or rewritten on the way. */
  notes: string[];
}

interface Converted {
  resource: Resource;
  /** How the v1 object was identified, e.g. its CIDR or name. */
  from: string;
  notes: string[];
}

type KindConverter = (doc: Obj, at: FieldPath) => Converted;

/** Convert a v1 document (or list of them) to v3 resources. Throws `ApiError('conversion-failed')`. */
export function convertV1ToV3(doc: unknown): V1ConversionResult {
  const out: V1ConversionResult = { resources: [], notes: [] };
  if (Array.isArray(doc)) {
    if (doc.length === 0)
      throw new ApiError('conversion-failed', 'cannot convert an empty list of v1 documents');
    doc.forEach((d, i) => {
      convertOne(d, `[${i}]`, undefined, out);
    });
  } else {
    convertOne(doc, '', undefined, out);
  }
  return out;
}

function convertOne(
  doc: unknown,
  path: string,
  impliedKind: V1Kind | undefined,
  out: V1ConversionResult,
): void {
  const where = path ? ` (${path})` : '';
  if (!isObj(doc)) {
    throw new ApiError('conversion-failed', `cannot convert${where}: a v1 document must be a map`);
  }
  const kind = doc.kind ?? impliedKind;
  const apiVersion = doc.apiVersion ?? (impliedKind ? 'v1' : undefined);
  if (apiVersion !== 'v1' || typeof kind !== 'string') {
    throw new ApiError(
      'conversion-failed',
      `cannot convert${where}: not a Calico v1 document (want apiVersion: v1 and kind one of ${V1_KINDS.join(', ')}; got apiVersion ${JSON.stringify(apiVersion)}, kind ${JSON.stringify(kind)})`,
    );
  }
  if (impliedKind && kind !== impliedKind) {
    throw new FieldPath(`v1 ${impliedKind}List`, `${path}.kind`).error(
      `item of a ${impliedKind}List must be kind ${impliedKind}`,
    );
  }
  const itemKind = listItemKind(kind);
  if (itemKind && !impliedKind) {
    const at = new FieldPath(`v1 ${kind}`, path);
    const list = readObj(doc, at, ['apiVersion', 'kind', 'metadata', 'items'], false);
    const items = optList(list, 'items', at) ?? [];
    items.forEach((item, i) => {
      convertOne(item, `${path ? `${path}.` : ''}items[${i}]`, itemKind, out);
    });
    return;
  }
  if (!isV1Kind(kind)) {
    throw new FieldPath('v1 document', path ? `${path}.kind` : 'kind').error(
      `conversion of kind ${JSON.stringify(kind)} is not supported (v1 kinds: ${V1_KINDS.join(', ')})`,
    );
  }
  const at = new FieldPath(`v1 ${kind}`, path);
  readObj(doc, at, ['apiVersion', 'kind', 'metadata', 'spec'], false);
  const c = CONVERTERS[kind as V1Kind](doc, at);
  const md = c.resource.metadata;
  const v3Name = md.namespace ? `${md.namespace}/${md.name}` : md.name;
  out.resources.push(c.resource);
  out.notes.push(`converted v1 ${kind} ${c.from} to ${API_V3} ${c.resource.kind} ${v3Name}`, ...c.notes);
}

const CONVERTERS: Record<V1Kind, KindConverter> = {
  ipPool: convertIPPool,
  policy: convertPolicy,
  profile: convertProfile,
  hostEndpoint: convertHostEndpoint,
  workloadEndpoint: convertWorkloadEndpoint,
  node: convertNode,
  bgpPeer: convertBGPPeer,
  tier: convertTier,
};

// ---------------------------------------------------------------------------------------------
// Shared readers

function readCidr(o: Obj, key: string, at: FieldPath): Cidr {
  const text = reqString(o, key, at);
  const c = parseCidr(text);
  if (!c) throw at.child(key).error(`${JSON.stringify(text)} is not a CIDR such as 192.168.0.0/16`);
  return c;
}

function readIP(v: unknown, at: FieldPath): IPAddress {
  if (typeof v !== 'string') throw at.error(`must be an IP address, got ${JSON.stringify(v)}`);
  const ip = parseIP(v);
  if (!ip) throw at.error(`${JSON.stringify(v)} is not an IP address`);
  return ip;
}

/** `numorstring.ASNumber`: a number, its decimal text, or AS-dot `high.low`. */
function readASNumber(o: Obj, key: string, at: FieldPath): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  const bad = (): never => {
    throw at.child(key).error(`must be an AS number (0-4294967295 or AS-dot a.b), got ${JSON.stringify(v)}`);
  };
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= 4294967295 ? v : bad();
  if (typeof v !== 'string') return bad();
  if (/^[0-9]+$/.test(v)) {
    const n = Number(v);
    return n <= 4294967295 ? n : bad();
  }
  const dot = /^([0-9]+)\.([0-9]+)$/.exec(v);
  if (!dot) return bad();
  const hi = Number(dot[1]);
  const lo = Number(dot[2]);
  if (hi > 65535 || lo > 65535) return bad();
  return hi * 65536 + lo;
}

/** Profile names: the v1 k8s namespace profile prefix `k8s_ns.` became `kns.`. */
function convertProfileName(name: string): string {
  if (name.startsWith('k8s_ns.')) return convertName(`kns.${name.slice('k8s_ns.'.length)}`);
  return convertName(name);
}

function readProfiles(o: Obj, at: FieldPath): string[] | undefined {
  const list = optStringList(o, 'profiles', at);
  return list?.length ? list.map(convertProfileName) : undefined;
}

interface EndpointPort {
  name: string;
  protocol: string | number;
  port: number;
}

function readEndpointPorts(o: Obj, at: FieldPath): EndpointPort[] | undefined {
  const list = optList(o, 'ports', at);
  if (!list || list.length === 0) return undefined;
  return list.map((p, i) => {
    const pat = at.child('ports').child(i);
    const po = readObj(p, pat, ['name', 'protocol', 'port'], false);
    const name = reqString(po, 'name', pat);
    if (po.protocol === undefined || po.protocol === null) throw pat.child('protocol').error('is required');
    const protocol = convertV1Protocol(po.protocol, pat.child('protocol'));
    const port = optNumber(po, 'port', pat);
    if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw pat.child('port').error(`must be a port number 1-65535, got ${JSON.stringify(po.port)}`);
    }
    return { name, protocol, port };
  });
}

function renamedNote(what: string, from: string, to: string): string[] {
  return from === to
    ? []
    : [`  ${what} ${JSON.stringify(from)} is not a valid v3 name; renamed to ${JSON.stringify(to)}`];
}

function ruleNotes(notes: RuleNotes): string[] {
  const out: string[] = [];
  if (notes.tags.size) {
    const tags = [...notes.tags].sort().map((t) => `${t} == ''`);
    out.push(
      `  tags became label selectors: ${tags.join(', ')} (the profiles that held those tags now apply them as labels)`,
    );
  }
  if (notes.k8sNamespaceLabel)
    out.push('  selector label calico/k8s_ns renamed to projectcalico.org/namespace');
  return out;
}

// ---------------------------------------------------------------------------------------------
// ipPool → IPPool

function convertIPPool(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['cidr'], false);
  const cidr = readCidr(md, 'cidr', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['ipip', 'nat-outgoing', 'disabled', 'assignmentMode']);

  let ipipMode: 'Never' | 'Always' | 'CrossSubnet' = 'Never';
  if (spec.ipip !== undefined && spec.ipip !== null) {
    const iat = sat.child('ipip');
    const ipip = readObj(spec.ipip, iat, ['enabled', 'mode']);
    const mode = (optString(ipip, 'mode', iat) ?? '').toLowerCase();
    if (mode !== '' && mode !== 'always' && mode !== 'cross-subnet') {
      throw iat.child('mode').error(`must be always or cross-subnet, got ${JSON.stringify(ipip.mode)}`);
    }
    if (optBool(ipip, 'enabled', iat)) ipipMode = mode === 'cross-subnet' ? 'CrossSubnet' : 'Always';
  }
  const assignmentMode = optString(spec, 'assignmentMode', sat) ?? 'Automatic';
  if (assignmentMode !== 'Automatic' && assignmentMode !== 'Manual') {
    throw sat
      .child('assignmentMode')
      .error(`must be Automatic or Manual, got ${JSON.stringify(assignmentMode)}`);
  }

  const pool: IPPool = {
    apiVersion: API_V3,
    kind: 'IPPool',
    metadata: { name: cidrToName(cidr) },
    spec: {
      cidr: formatCidrAsWritten(cidr),
      vxlanMode: 'Never',
      ipipMode,
      ...(optBool(spec, 'nat-outgoing', sat) ? { natOutgoing: true } : {}),
      ...(optBool(spec, 'disabled', sat) ? { disabled: true } : {}),
      blockSize: cidr.family === 4 ? 26 : 122,
      nodeSelector: 'all()',
      allowedUses: ['Workload', 'Tunnel'],
      assignmentMode,
    },
  };
  return { resource: pool, from: formatCidrAsWritten(cidr), notes: [] };
}

// ---------------------------------------------------------------------------------------------
// policy → GlobalNetworkPolicy

function convertPolicy(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name', 'tier', 'annotations'], false);
  const name = reqString(md, 'name', mat);
  const tierIn = optString(md, 'tier', mat) ?? '';
  const annotations = optStringMap(md, 'annotations', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, [
    'order',
    'ingress',
    'egress',
    'selector',
    'doNotTrack',
    'preDNAT',
    'types',
  ]);

  const notes = newRuleNotes();
  const ingress = convertV1Rules(spec, 'ingress', sat, notes);
  const egress = convertV1Rules(spec, 'egress', sat, notes);
  const doNotTrack = optBool(spec, 'doNotTrack', sat) ?? false;
  const preDNAT = optBool(spec, 'preDNAT', sat) ?? false;

  // The v1 client filled in empty types from the rules present: no egress rules ⇒ [Ingress]
  // (even with no ingress rules), egress only ⇒ [Egress], both ⇒ [Ingress, Egress].
  const typesIn = optStringList(spec, 'types', sat) ?? [];
  let types: ('Ingress' | 'Egress')[];
  if (typesIn.length === 0) {
    if (!egress) types = ['Ingress'];
    else if (!ingress) types = ['Egress'];
    else types = ['Ingress', 'Egress'];
  } else {
    types = typesIn.map((t, i) => {
      const l = t.toLowerCase();
      if (l === 'ingress') return 'Ingress';
      if (l === 'egress') return 'Egress';
      throw sat
        .child('types')
        .child(i)
        .error(`must be ingress or egress, got ${JSON.stringify(t)}`);
    });
  }

  const tier = convertNameNoDots(tierIn) || 'default';
  const v3Name = `${tier}.${convertNameNoDots(name)}`;
  const selector = convertV1Selector(optString(spec, 'selector', sat) ?? '', notes);
  const order = optNumber(spec, 'order', sat);

  const gnp: GlobalNetworkPolicy = {
    apiVersion: API_V3,
    kind: 'GlobalNetworkPolicy',
    metadata: {
      name: v3Name,
      labels: { 'projectcalico.org/tier': tier },
      ...(annotations && Object.keys(annotations).length ? { annotations } : {}),
    },
    spec: {
      tier,
      ...(order !== undefined ? { order } : {}),
      ...(ingress ? { ingress } : {}),
      ...(egress ? { egress } : {}),
      ...(selector ? { selector } : {}),
      types,
      ...(doNotTrack ? { doNotTrack } : {}),
      ...(preDNAT ? { preDNAT } : {}),
      // DoNotTrack and PreDNAT policy always applied to forwarded traffic in v1.
      ...(doNotTrack || preDNAT ? { applyOnForward: true } : {}),
    },
  };
  const noteLines = [
    ...renamedNote('policy name', name, convertNameNoDots(name)),
    ...(tierIn ? renamedNote('tier name', tierIn, tier) : []),
    ...ruleNotes(notes),
  ];
  return { resource: gnp, from: tierIn ? `${tierIn}/${name}` : name, notes: noteLines };
}

// ---------------------------------------------------------------------------------------------
// profile → Profile

function convertProfile(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name', 'tags', 'labels'], false);
  const name = reqString(md, 'name', mat);
  const tags = optStringList(md, 'tags', mat) ?? [];
  const labels = optStringMap(md, 'labels', mat) ?? {};
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['ingress', 'egress']);

  const notes = newRuleNotes();
  const ingress = convertV1Rules(spec, 'ingress', sat, notes);
  const egress = convertV1Rules(spec, 'egress', sat, notes);

  // Tags and labels merge into labelsToApply: each tag becomes a label with an empty value.
  const labelsToApply: Record<string, string> = { ...labels };
  tags.forEach((t, i) => {
    if (Object.hasOwn(labelsToApply, t)) {
      const clash = Object.hasOwn(labels, t) ? `label ${t}=${JSON.stringify(labels[t])}` : 'an earlier tag';
      throw mat
        .child('tags')
        .child(i)
        .error(
          `tag ${JSON.stringify(t)} has the same name as ${clash}; change the label key before converting`,
        );
    }
    labelsToApply[t] = '';
  });

  const v3Name = convertProfileName(name);
  const profile: Profile = {
    apiVersion: API_V3,
    kind: 'Profile',
    metadata: { name: v3Name },
    spec: {
      ...(ingress ? { ingress } : {}),
      ...(egress ? { egress } : {}),
      ...(Object.keys(labelsToApply).length ? { labelsToApply } : {}),
    },
  };
  const noteLines = [...ruleNotes(notes)];
  if (tags.length) noteLines.unshift(`  tags ${tags.join(', ')} became labelsToApply with empty values`);
  const expected = name.startsWith('k8s_ns.') ? `kns.${name.slice('k8s_ns.'.length)}` : name;
  noteLines.unshift(...renamedNote('profile name', expected, v3Name));
  return { resource: profile, from: name, notes: noteLines };
}

// ---------------------------------------------------------------------------------------------
// hostEndpoint → HostEndpoint

function convertHostEndpoint(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name', 'node', 'labels'], false);
  const name = reqString(md, 'name', mat);
  const nodeIn = reqString(md, 'node', mat);
  const labels = optStringMap(md, 'labels', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['interfaceName', 'expectedIPs', 'profiles', 'ports']);

  const v4: string[] = [];
  const v6: string[] = [];
  (optList(spec, 'expectedIPs', sat) ?? []).forEach((v, i) => {
    const ip = readIP(v, sat.child('expectedIPs').child(i));
    (ip.family === 4 ? v4 : v6).push(formatIP(ip));
  });
  const expectedIPs = [...v4, ...v6];
  const interfaceName = optString(spec, 'interfaceName', sat);
  const profiles = readProfiles(spec, sat);
  const ports = readEndpointPorts(spec, sat);

  const node = convertNodeName(nodeIn);
  const v3Name = convertName(`${node}.${name}`);
  const hep: HostEndpoint = {
    apiVersion: API_V3,
    kind: 'HostEndpoint',
    metadata: { name: v3Name, ...(labels && Object.keys(labels).length ? { labels } : {}) },
    spec: {
      node,
      ...(interfaceName ? { interfaceName } : {}),
      ...(expectedIPs.length ? { expectedIPs } : {}),
      ...(profiles ? { profiles } : {}),
      ...(ports ? { ports } : {}),
    },
  };
  return {
    resource: hep,
    from: `${nodeIn}/${name}`,
    notes: renamedNote('host endpoint name', `${node}.${name}`, v3Name),
  };
}

// ---------------------------------------------------------------------------------------------
// workloadEndpoint → WorkloadEndpoint

/** Go's `net.ParseMAC` forms for 6-byte addresses, printed lower-case with colons. */
function readMAC(v: string, at: FieldPath): string {
  let hex: string[] | undefined;
  if (/^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$/.test(v) && v.includes(':') !== v.includes('-')) {
    hex = v.split(/[:-]/);
  } else if (/^[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){2}$/.test(v)) {
    hex = v.split('.').flatMap((g) => [g.slice(0, 2), g.slice(2)]);
  }
  if (!hex) throw at.error(`${JSON.stringify(v)} is not a MAC address such as 0a:58:0a:f4:00:07`);
  return hex.map((h) => h.toLowerCase()).join(':');
}

function convertWorkloadEndpoint(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(
    doc.metadata,
    mat,
    ['name', 'workload', 'orchestrator', 'node', 'activeInstanceID', 'labels'],
    false,
  );
  const endpointIn = reqString(md, 'name', mat);
  const workloadIn = reqString(md, 'workload', mat);
  const orchestratorIn = reqString(md, 'orchestrator', mat);
  const nodeIn = reqString(md, 'node', mat);
  const activeInstanceID = optString(md, 'activeInstanceID', mat) ?? '';
  const labelsIn = optStringMap(md, 'labels', mat) ?? {};
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, [
    'ipNetworks',
    'ipNATs',
    'ipv4Gateway',
    'ipv6Gateway',
    'profiles',
    'interfaceName',
    'mac',
    'ports',
  ]);

  // The v1 namespace label was calico/k8s_ns.
  const labels: Record<string, string> = { ...labelsIn };
  if (Object.hasOwn(labels, 'calico/k8s_ns')) {
    labels['projectcalico.org/namespace'] = labels['calico/k8s_ns']!;
    delete labels['calico/k8s_ns'];
  }

  let namespace = 'default';
  let pod = '';
  let containerID = '';
  let workload = '';
  switch (orchestratorIn) {
    case 'k8s': {
      const dot = workloadIn.indexOf('.');
      if (dot < 0) {
        throw mat
          .child('workload')
          .error(
            `malformed k8s workload ID ${JSON.stringify(workloadIn)} (want <namespace>.<pod>): the workload was not added by the Calico CNI plugin and cannot be converted`,
          );
      }
      namespace = workloadIn.slice(0, dot);
      pod = workloadIn.slice(dot + 1);
      containerID = activeInstanceID;
      break;
    }
    case 'cni':
      containerID = workloadIn;
      break;
    case 'libnetwork':
      workload = 'libnetwork';
      break;
    default:
      workload = convertName(workloadIn);
  }

  const nets4: string[] = [];
  const nets6: string[] = [];
  (optList(spec, 'ipNetworks', sat) ?? []).forEach((v, i) => {
    const nat = sat.child('ipNetworks').child(i);
    if (typeof v !== 'string') throw nat.error(`must be a CIDR string, got ${JSON.stringify(v)}`);
    const c = parseCidrOrIP(v);
    if (!c) throw nat.error(`${JSON.stringify(v)} is not a CIDR`);
    (c.family === 4 ? nets4 : nets6).push(formatCidr(c));
  });
  const nat4: { internalIP: string; externalIP: string }[] = [];
  const nat6: { internalIP: string; externalIP: string }[] = [];
  (optList(spec, 'ipNATs', sat) ?? []).forEach((v, i) => {
    const nat = sat.child('ipNATs').child(i);
    const n = readObj(v, nat, ['internalIP', 'externalIP'], false);
    const internal = readIP(n.internalIP, nat.child('internalIP'));
    const external = readIP(n.externalIP, nat.child('externalIP'));
    (internal.family === 4 ? nat4 : nat6).push({
      internalIP: formatIP(internal),
      externalIP: formatIP(external),
    });
  });
  const gw = (key: string): string | undefined => {
    const text = optString(spec, key, sat);
    return text === undefined ? undefined : formatIP(readIP(text, sat.child(key)));
  };
  const ipv4Gateway = gw('ipv4Gateway');
  const ipv6Gateway = gw('ipv6Gateway');
  const macText = optString(spec, 'mac', sat);
  const mac = macText === undefined ? undefined : readMAC(macText, sat.child('mac'));
  const interfaceName = optString(spec, 'interfaceName', sat);
  const profiles = readProfiles(spec, sat);
  const ports = readEndpointPorts(spec, sat);

  const orchestrator = convertName(orchestratorIn);
  const node = convertNodeName(nodeIn);
  const endpoint = convertName(endpointIn);
  const named = workloadEndpointName({ node, orchestrator, endpoint, workload, pod, containerID });
  if ('field' in named) {
    const source: Record<string, string> = {
      node: 'metadata.node',
      orchestrator: 'metadata.orchestrator',
      endpoint: 'metadata.name',
      pod: 'metadata.workload',
      containerID: orchestratorIn === 'cni' ? 'metadata.workload' : 'metadata.activeInstanceID',
      workload: 'metadata.workload',
    };
    throw new FieldPath(at.doc, at.path ? `${at.path}.${source[named.field]}` : source[named.field]!).error(
      `the v3 ${named.field} ${named.reason} to form the WorkloadEndpoint name`,
    );
  }
  const ipNetworks = [...nets4, ...nets6];
  const ipNATs = [...nat4, ...nat6];
  const wep: WorkloadEndpoint = {
    apiVersion: API_V3,
    kind: 'WorkloadEndpoint',
    metadata: { name: named.name, namespace, ...(Object.keys(labels).length ? { labels } : {}) },
    spec: {
      orchestrator,
      ...(workload ? { workload } : {}),
      node,
      ...(containerID ? { containerID } : {}),
      ...(pod ? { pod } : {}),
      endpoint,
      ...(ipNetworks.length ? { ipNetworks } : {}),
      ...(ipNATs.length ? { ipNATs } : {}),
      ...(ipv4Gateway ? { ipv4Gateway } : {}),
      ...(ipv6Gateway ? { ipv6Gateway } : {}),
      ...(profiles ? { profiles } : {}),
      ...(interfaceName ? { interfaceName } : {}),
      ...(mac ? { mac } : {}),
      ...(ports ? { ports } : {}),
    },
  };
  return { resource: wep, from: `${nodeIn}/${orchestratorIn}/${workloadIn}/${endpointIn}`, notes: [] };
}

// ---------------------------------------------------------------------------------------------
// node → Node

function convertNode(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name'], false);
  const name = reqString(md, 'name', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['bgp', 'orchRefs']);

  let bgp: { asNumber?: number; ipv4Address?: string; ipv6Address?: string } | undefined;
  if (spec.bgp !== undefined && spec.bgp !== null) {
    const bat = sat.child('bgp');
    const b = readObj(spec.bgp, bat, ['asNumber', 'ipv4Address', 'ipv6Address']);
    const addr = (key: string, family: 4 | 6): string | undefined => {
      const text = optString(b, key, bat);
      if (text === undefined || text === '') return undefined;
      const c = parseCidrOrIP(text);
      if (!c || c.family !== family)
        throw bat.child(key).error(`${JSON.stringify(text)} is not an IPv${family} address/prefix`);
      // The address is kept as written, with its prefix (a bare address gets a full-length one).
      return formatCidrAsWritten(c);
    };
    const ipv4Address = addr('ipv4Address', 4);
    const ipv6Address = addr('ipv6Address', 6);
    if (!ipv4Address && !ipv6Address) throw bat.error('needs ipv4Address or ipv6Address');
    const asNumber = readASNumber(b, 'asNumber', bat);
    bgp = {
      ...(asNumber !== undefined ? { asNumber } : {}),
      ...(ipv4Address ? { ipv4Address } : {}),
      ...(ipv6Address ? { ipv6Address } : {}),
    };
  }
  const orchRefs = (optList(spec, 'orchRefs', sat) ?? []).map((r, i) => {
    const rat = sat.child('orchRefs').child(i);
    const ro = readObj(r, rat, ['nodeName', 'orchestrator'], false);
    const nodeName = optString(ro, 'nodeName', rat);
    return { ...(nodeName ? { nodeName } : {}), orchestrator: reqString(ro, 'orchestrator', rat) };
  });

  const v3Name = convertNodeName(name);
  if (!v3Name)
    throw mat.child('name').error(`${JSON.stringify(name)} has no characters usable in a v3 node name`);
  const node: Node = {
    apiVersion: API_V3,
    kind: 'Node',
    metadata: { name: v3Name },
    spec: { ...(bgp ? { bgp } : {}), ...(orchRefs.length ? { orchRefs } : {}) },
  };
  return { resource: node, from: name, notes: renamedNote('node name', name, v3Name) };
}

// ---------------------------------------------------------------------------------------------
// bgpPeer → BGPPeer

function convertBGPPeer(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['scope', 'node', 'peerIP'], false);
  const scope = reqString(md, 'scope', mat).toLowerCase();
  const nodeIn = optString(md, 'node', mat) ?? '';
  if (md.peerIP === undefined || md.peerIP === null || md.peerIP === '')
    throw mat.child('peerIP').error('is required');
  const peerIP = readIP(md.peerIP, mat.child('peerIP'));
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['asNumber']);
  const asNumber = readASNumber(spec, 'asNumber', sat);

  let name: string;
  let node: string | undefined;
  if (scope === 'global') {
    if (nodeIn) throw mat.child('node').error('must not be set for a global-scope peer');
    name = ipToName(peerIP);
  } else if (scope === 'node') {
    if (!nodeIn) throw mat.child('node').error('is required for a node-scope peer');
    node = convertNodeName(nodeIn);
    name = `${node}.${ipToName(peerIP)}`;
  } else {
    throw mat.child('scope').error(`must be global or node, got ${JSON.stringify(md.scope)}`);
  }
  const peer: BGPPeer = {
    apiVersion: API_V3,
    kind: 'BGPPeer',
    metadata: { name },
    spec: {
      ...(node ? { node } : {}),
      peerIP: formatIP(peerIP),
      ...(asNumber ? { asNumber } : {}),
    },
  };
  return { resource: peer, from: node ? `${nodeIn}/${formatIP(peerIP)}` : formatIP(peerIP), notes: [] };
}

// ---------------------------------------------------------------------------------------------
// tier → Tier

function convertTier(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name'], false);
  const name = reqString(md, 'name', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['order']);
  const order = optNumber(spec, 'order', sat);
  const v3Name = convertName(name);
  const tier: Tier = {
    apiVersion: API_V3,
    kind: 'Tier',
    metadata: { name: v3Name },
    spec: { ...(order !== undefined ? { order } : {}) },
  };
  return { resource: tier, from: name, notes: renamedNote('tier name', name, v3Name) };
}
