/**
 * Calico resources that the Kubernetes datastore derives from Kubernetes' own objects, as
 * upstream's does (`libcalico-go/lib/backend/k8s/resources/node.go`, `conversion/`):
 *
 *   Node ⇄ v1 Node                the Calico fields live in `projectcalico.org/*` annotations;
 *                                 labels are the Kubernetes ones plus Calico's own (kept in the
 *                                 `projectcalico.org/labels` annotation); writes merge into the
 *                                 Node, which Kubernetes creates and deletes
 *   WorkloadEndpoint ⇄ v1 Pod     labels, service account, named ports and node from the Pod; the
 *                                 addresses and container ID from the `cni.projectcalico.org/*`
 *                                 annotations the CNI plugin writes (a write sets them, a delete
 *                                 clears them); the host interface from the interface prefix the
 *                                 store was given (`MappingContext`)
 *   Profile ← v1 Namespace        `kns.<ns>`: allow all, `pcns.` labels       (read-only)
 *   Profile ← v1 ServiceAccount   `ksa.<ns>.<sa>`: `pcsa.` labels              (read-only)
 *   NetworkPolicy ← networking.k8s.io/v1 NetworkPolicy   `knp.default.<name>`  (read-only)
 *   /kubernetes/<plural>/… ← Services, EndpointSlices, Pods, Nodes as they are     (read-only)
 *
 * Pure calculation: no I/O.
 */

import type { K8sNetworkPolicy } from '@calico-ts/api';
import { convertK8sNetworkPolicyPartial } from '@calico-ts/api/internal';
import { formatCidr, parseCidrOrIP } from '@calico-ts/api/net';
import { DatastoreError } from '../errors.js';
import { parseJsonExact } from '../go-json.js';
import { podInterfaceName } from './interface-name.js';
import { KUBERNETES_OBJECT_ROOT } from './object-keys.js';

type Obj = Record<string, unknown>;

const RESOURCE_ROOT = '/calico/resources/v3/projectcalico.org/';
const NODE_PREFIX = `${RESOURCE_ROOT}nodes/`;
const WEP_PREFIX = `${RESOURCE_ROOT}workloadendpoints/`;
const PROFILE_PREFIX = `${RESOURCE_ROOT}profiles/`;
const NP_PREFIX = `${RESOURCE_ROOT}networkpolicies/`;

export const KNP_PREFIX = 'knp.default.';

/**
 * What a conversion takes from the process that reads: the interface prefix list as Felix's
 * InterfacePrefix / FELIX_INTERFACEPREFIX gives it (`cali`, `eni`, `eni,cali`). Upstream reads
 * FELIX_INTERFACEPREFIX from the environment inside the conversion; here it is passed in.
 */
export interface MappingContext {
  readonly interfacePrefix?: string;
}

/** What a write to a derived resource does to the Kubernetes object behind it. */
export type WriteMode = 'replace' | 'merge' | 'readonly';

export interface NativeCollection {
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** REST base of the API group: `/api/v1`, `/apis/networking.k8s.io/v1`. */
  readonly base: string;
  readonly keyPrefix: string;
  readonly write: WriteMode;
  /** Why a write is refused, for `readonly` collections. */
  readonly readonlyReason?: string;
  locate(key: string): { readonly name: string; readonly namespace?: string } | undefined;
  toKV(obj: Obj, ctx?: MappingContext): { readonly key: string; readonly data: object } | undefined;
  toObject(key: string, value: string): Obj;
  /** The Kubernetes object with a Calico value written into it (`merge` collections). */
  merge?(current: Obj, key: string, value: string): Obj;
  /** The Kubernetes object with the Calico data taken out (delete of a `merge` collection). */
  clear?(current: Obj): Obj;
}

function meta(o: Obj): Obj {
  return (o.metadata ?? {}) as Obj;
}

function annotationsOf(o: Obj): Record<string, string> {
  return { ...((meta(o).annotations as Record<string, string> | undefined) ?? {}) };
}

function parseValue(value: string, key: string): Obj {
  let o: unknown;
  try {
    o = parseJsonExact(value);
  } catch (e) {
    throw new DatastoreError('invalid', `value for ${key} is not JSON: ${(e as Error).message}`);
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) {
    throw new DatastoreError('invalid', `value for ${key} is not a JSON object`);
  }
  return o as Obj;
}

function jsonMap(text: string | undefined): Record<string, string> {
  if (!text) return {};
  try {
    const m = JSON.parse(text) as unknown;
    return m && typeof m === 'object' && !Array.isArray(m) ? (m as Record<string, string>) : {};
  } catch {
    return {};
  }
}

function setOrDelete(m: Record<string, string>, k: string, v: unknown): void {
  if (v === undefined || v === null || v === '') delete m[k];
  else m[k] = String(v);
}

// ---- Node ⇄ v1 Node -------------------------------------------------------------------------------

const A = {
  ipv4: 'projectcalico.org/IPv4Address',
  ipv6: 'projectcalico.org/IPv6Address',
  asn: 'projectcalico.org/ASNumber',
  rrCID: 'projectcalico.org/RouteReflectorClusterID',
  ipip: 'projectcalico.org/IPv4IPIPTunnelAddr',
  vxlan4: 'projectcalico.org/IPv4VXLANTunnelAddr',
  vxlanMac: 'projectcalico.org/VXLANTunnelMACAddr',
  vxlan6: 'projectcalico.org/IPv6VXLANTunnelAddr',
  vxlanMac6: 'projectcalico.org/VXLANTunnelMACAddrV6',
  wg4: 'projectcalico.org/IPv4WireguardInterfaceAddr',
  wg6: 'projectcalico.org/IPv6WireguardInterfaceAddr',
  wgKey: 'projectcalico.org/WireguardPublicKey',
  wgKey6: 'projectcalico.org/WireguardPublicKeyV6',
  labels: 'projectcalico.org/labels',
  annotations: 'projectcalico.org/annotations',
  kubeLabels: 'projectcalico.org/kube-labels',
} as const;

export const nodeCollection: NativeCollection = {
  plural: 'nodes',
  kind: 'Node',
  namespaced: false,
  base: '/api/v1',
  keyPrefix: NODE_PREFIX,
  write: 'merge',
  locate(key) {
    if (!key.startsWith(NODE_PREFIX)) return undefined;
    const name = key.slice(NODE_PREFIX.length);
    return name === '' || name.includes('/') ? undefined : { name };
  },
  toKV(node) {
    const m = meta(node);
    const name = String(m.name);
    const a = annotationsOf(node);
    const k8sLabels = (m.labels as Record<string, string> | undefined) ?? {};
    const labels = { ...jsonMap(a[A.labels]), ...k8sLabels };
    const annotations: Record<string, string> = { ...jsonMap(a[A.annotations]) };
    annotations[A.kubeLabels] = JSON.stringify(k8sLabels);
    const bgp: Obj = {};
    if (a[A.ipv4]) bgp.ipv4Address = a[A.ipv4];
    if (a[A.ipv6]) bgp.ipv6Address = a[A.ipv6];
    if (a[A.asn]) {
      const n = Number(a[A.asn]);
      bgp.asNumber = Number.isInteger(n) ? n : a[A.asn];
    }
    if (a[A.ipip]) bgp.ipv4IPIPTunnelAddr = a[A.ipip];
    if (a[A.rrCID]) bgp.routeReflectorClusterID = a[A.rrCID];
    const spec: Obj = {};
    if (Object.keys(bgp).length > 0) spec.bgp = bgp;
    if (a[A.vxlan4]) spec.ipv4VXLANTunnelAddr = a[A.vxlan4];
    if (a[A.vxlanMac]) spec.vxlanTunnelMACAddr = a[A.vxlanMac];
    if (a[A.vxlan6]) spec.ipv6VXLANTunnelAddr = a[A.vxlan6];
    if (a[A.vxlanMac6]) spec.vxlanTunnelMACAddrV6 = a[A.vxlanMac6];
    spec.orchRefs = [{ nodeName: name, orchestrator: 'k8s' }];
    const wg: Obj = {};
    if (a[A.wg4]) wg.interfaceIPv4Address = a[A.wg4];
    if (a[A.wg6]) wg.interfaceIPv6Address = a[A.wg6];
    if (Object.keys(wg).length > 0) spec.wireguard = wg;
    const addresses: Obj[] = [];
    if (a[A.ipv4]) addresses.push({ address: a[A.ipv4], type: 'CalicoNodeIP' });
    if (a[A.ipv6]) addresses.push({ address: a[A.ipv6], type: 'CalicoNodeIP' });
    const status = (node.status ?? {}) as { addresses?: { type?: string; address?: string }[] };
    for (const addr of status.addresses ?? []) {
      if (addr.type === 'InternalIP') addresses.push({ address: addr.address, type: 'InternalIP' });
      if (addr.type === 'ExternalIP') addresses.push({ address: addr.address, type: 'ExternalIP' });
    }
    if (addresses.length > 0) spec.addresses = addresses;
    const nodeStatus: Obj = {};
    if (a[A.wgKey]) nodeStatus.wireguardPublicKey = a[A.wgKey];
    if (a[A.wgKey6]) nodeStatus.wireguardPublicKeyV6 = a[A.wgKey6];
    const podCIDRs = ((node.spec as Obj | undefined)?.podCIDRs as string[] | undefined) ?? [];
    if (podCIDRs.length > 0) nodeStatus.podCIDRs = podCIDRs;
    const out: Obj = {
      kind: 'Node',
      apiVersion: 'projectcalico.org/v3',
      metadata: {
        name,
        uid: m.uid,
        creationTimestamp: m.creationTimestamp,
        ...(Object.keys(labels).length > 0 ? { labels } : {}),
        annotations,
      },
      spec,
    };
    if (Object.keys(nodeStatus).length > 0) out.status = nodeStatus;
    return { key: `${NODE_PREFIX}${name}`, data: out };
  },
  toObject(key) {
    throw new DatastoreError(
      'unsupported',
      `${key}: a Node cannot be created in the Kubernetes datastore; it is the Kubernetes Node of that name (kubelet registers it)`,
    );
  },
  merge(current, key, value) {
    const calico = parseValue(value, key);
    const cm = (calico.metadata ?? {}) as Obj;
    const spec = (calico.spec ?? {}) as Obj;
    const bgp = (spec.bgp ?? {}) as Obj;
    const wg = (spec.wireguard ?? {}) as Obj;
    const status = (calico.status ?? {}) as Obj;
    const a = annotationsOf(current);
    // Calico's own labels: the ones that are not inherited from the Kubernetes Node.
    const calicoAnnotations = { ...((cm.annotations as Record<string, string> | undefined) ?? {}) };
    const inherited = jsonMap(calicoAnnotations[A.kubeLabels]);
    delete calicoAnnotations[A.kubeLabels];
    const ownLabels: Record<string, string> = {};
    for (const [k, v] of Object.entries((cm.labels as Record<string, string> | undefined) ?? {})) {
      if (!(k in inherited)) ownLabels[k] = v;
    }
    setOrDelete(a, A.labels, Object.keys(ownLabels).length > 0 ? JSON.stringify(ownLabels) : undefined);
    setOrDelete(
      a,
      A.annotations,
      Object.keys(calicoAnnotations).length > 0 ? JSON.stringify(calicoAnnotations) : undefined,
    );
    setOrDelete(a, A.ipv4, bgp.ipv4Address);
    setOrDelete(a, A.ipv6, bgp.ipv6Address);
    setOrDelete(a, A.asn, bgp.asNumber);
    setOrDelete(a, A.ipip, bgp.ipv4IPIPTunnelAddr);
    setOrDelete(a, A.rrCID, bgp.routeReflectorClusterID);
    setOrDelete(a, A.vxlan4, spec.ipv4VXLANTunnelAddr);
    setOrDelete(a, A.vxlanMac, spec.vxlanTunnelMACAddr);
    setOrDelete(a, A.vxlan6, spec.ipv6VXLANTunnelAddr);
    setOrDelete(a, A.vxlanMac6, spec.vxlanTunnelMACAddrV6);
    setOrDelete(a, A.wg4, wg.interfaceIPv4Address);
    setOrDelete(a, A.wg6, wg.interfaceIPv6Address);
    setOrDelete(a, A.wgKey, status.wireguardPublicKey);
    setOrDelete(a, A.wgKey6, status.wireguardPublicKeyV6);
    return { ...current, metadata: { ...meta(current), annotations: a } };
  },
};

// ---- WorkloadEndpoint ⇄ v1 Pod ---------------------------------------------------------------------

export const POD_IP_ANNOTATION = 'cni.projectcalico.org/podIP';
export const POD_IPS_ANNOTATION = 'cni.projectcalico.org/podIPs';
export const CONTAINER_ID_ANNOTATION = 'cni.projectcalico.org/containerID';
const FLOATING_IPS_ANNOTATION = 'cni.projectcalico.org/floatingIPs';

function escapeSegment(s: string): string {
  return s.replaceAll('-', '--');
}

/** `<node>-k8s-<pod>-<endpoint>`, each segment's dashes doubled (upstream's WEP name). */
export function podWorkloadEndpointName(node: string, pod: string, endpoint = 'eth0'): string {
  return [node, 'k8s', pod, endpoint].map(escapeSegment).join('-');
}

/** The segments of a WEP name (`--` is a literal dash). */
export function splitWepName(name: string): string[] {
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    if (c !== '-') cur += c;
    else if (name[i + 1] === '-') {
      cur += '-';
      i++;
    } else {
      parts.push(cur);
      cur = '';
    }
  }
  parts.push(cur);
  return parts;
}

function podIPs(pod: Obj): string[] {
  const a = annotationsOf(pod);
  const fromAnnotation = (a[POD_IPS_ANNOTATION] ?? a[POD_IP_ANNOTATION] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const texts =
    fromAnnotation.length > 0
      ? fromAnnotation
      : (((pod.status as Obj | undefined)?.podIPs as { ip?: string }[] | undefined) ?? []).map(
          (p) => p.ip ?? '',
        );
  const out: string[] = [];
  for (const t of texts) {
    const c = parseCidrOrIP(t);
    if (!c) continue;
    out.push(formatCidr({ ...c, prefix: c.family === 4 ? 32 : 128 }));
  }
  return out;
}

export const workloadEndpointCollection: NativeCollection = {
  plural: 'pods',
  kind: 'Pod',
  namespaced: true,
  base: '/api/v1',
  keyPrefix: WEP_PREFIX,
  write: 'merge',
  locate(key) {
    if (!key.startsWith(WEP_PREFIX)) return undefined;
    const [namespace, name, ...rest] = key.slice(WEP_PREFIX.length).split('/');
    if (!namespace || !name || rest.length > 0) return undefined;
    const segs = splitWepName(name);
    if (segs.length !== 4 || segs[1] !== 'k8s' || !segs[2]) return undefined;
    return { namespace, name: segs[2] };
  },
  toKV(pod, ctx) {
    const m = meta(pod);
    const spec = (pod.spec ?? {}) as Obj;
    const phase = (pod.status as Obj | undefined)?.phase;
    const node = spec.nodeName as string | undefined;
    if (!node || spec.hostNetwork === true || phase === 'Succeeded' || phase === 'Failed') return undefined;
    const ips = podIPs(pod);
    if (ips.length === 0) return undefined;
    const namespace = String(m.namespace);
    const podName = String(m.name);
    const name = podWorkloadEndpointName(node, podName);
    const sa = (spec.serviceAccountName as string | undefined) ?? 'default';
    const labels: Record<string, string> = {
      ...((m.labels as Record<string, string> | undefined) ?? {}),
      'projectcalico.org/namespace': namespace,
      'projectcalico.org/orchestrator': 'k8s',
    };
    if (sa.length < 63) labels['projectcalico.org/serviceaccount'] = sa;
    const ports: Obj[] = [];
    for (const c of (spec.containers as Obj[] | undefined) ?? []) {
      for (const p of (c.ports as Obj[] | undefined) ?? []) {
        if (!p.name && !p.hostPort) continue;
        ports.push({
          name: p.name ?? '',
          protocol: p.protocol ?? 'TCP',
          port: p.containerPort,
          hostPort: p.hostPort ?? 0,
          hostIP: p.hostIP ?? '',
        });
      }
    }
    const a = annotationsOf(pod);
    const wspec: Obj = {
      orchestrator: 'k8s',
      node,
      pod: podName,
      endpoint: 'eth0',
      serviceAccountName: sa,
      ipNetworks: ips,
      profiles: [`kns.${namespace}`, `ksa.${namespace}.${sa}`],
      interfaceName: podInterfaceName(namespace, podName, ctx?.interfacePrefix),
    };
    if (a[CONTAINER_ID_ANNOTATION]) wspec.containerID = a[CONTAINER_ID_ANNOTATION];
    if (ports.length > 0) wspec.ports = ports;
    const floating = a[FLOATING_IPS_ANNOTATION];
    if (floating) {
      try {
        const ext = JSON.parse(floating) as string[];
        if (Array.isArray(ext) && ips[0]) {
          wspec.ipNATs = ext.map((externalIP) => ({ internalIP: ips[0]!.split('/')[0], externalIP }));
        }
      } catch {
        // not JSON: ignored, as upstream logs and ignores it
      }
    }
    const out: Obj = {
      kind: 'WorkloadEndpoint',
      apiVersion: 'projectcalico.org/v3',
      metadata: {
        name,
        namespace,
        uid: m.uid,
        creationTimestamp: m.creationTimestamp,
        labels,
      },
      spec: wspec,
    };
    return { key: `${WEP_PREFIX}${namespace}/${name}`, data: out };
  },
  toObject(key) {
    throw new DatastoreError(
      'unsupported',
      `${key}: a WorkloadEndpoint in the Kubernetes datastore is its Pod, which must exist first`,
    );
  },
  merge(current, key, value) {
    const wep = parseValue(value, key);
    const spec = (wep.spec ?? {}) as Obj;
    const nets = ((spec.ipNetworks as string[] | undefined) ?? []).map((n) => n.split('/')[0]!);
    const a = annotationsOf(current);
    setOrDelete(a, POD_IP_ANNOTATION, nets[0] ? `${nets[0]}/${nets[0].includes(':') ? 128 : 32}` : undefined);
    setOrDelete(
      a,
      POD_IPS_ANNOTATION,
      nets.length > 0 ? nets.map((n) => `${n}/${n.includes(':') ? 128 : 32}`).join(',') : undefined,
    );
    setOrDelete(a, CONTAINER_ID_ANNOTATION, spec.containerID);
    return { ...current, metadata: { ...meta(current), annotations: a } };
  },
  clear(current) {
    const a = annotationsOf(current);
    delete a[POD_IP_ANNOTATION];
    delete a[POD_IPS_ANNOTATION];
    delete a[CONTAINER_ID_ANNOTATION];
    return { ...current, metadata: { ...meta(current), annotations: a } };
  },
};

// ---- Profiles ← Namespaces and ServiceAccounts --------------------------------------------------------

const READONLY_PROFILE =
  'profiles are derived from Namespaces (kns.*) and ServiceAccounts (ksa.*) in the Kubernetes datastore; change those instead';

/** Labels re-keyed with a prefix, plus `<prefix>projectcalico.org/name`. */
function prefixed(labels: Record<string, string> | undefined, prefix: string, name: string) {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels ?? {})) out[`${prefix}${k}`] = v;
  out[`${prefix}projectcalico.org/name`] = name;
  return out;
}

export const namespaceProfileCollection: NativeCollection = {
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
  base: '/api/v1',
  keyPrefix: PROFILE_PREFIX,
  write: 'readonly',
  readonlyReason: READONLY_PROFILE,
  locate(key) {
    if (!key.startsWith(`${PROFILE_PREFIX}kns.`)) return undefined;
    const ns = key.slice(`${PROFILE_PREFIX}kns.`.length);
    return ns && !ns.includes('/') ? { name: ns } : undefined;
  },
  toKV(ns) {
    const m = meta(ns);
    const name = String(m.name);
    const out = {
      kind: 'Profile',
      apiVersion: 'projectcalico.org/v3',
      metadata: { name: `kns.${name}`, uid: m.uid, creationTimestamp: m.creationTimestamp },
      spec: {
        ingress: [{ action: 'Allow' }],
        egress: [{ action: 'Allow' }],
        labelsToApply: prefixed(m.labels as Record<string, string>, 'pcns.', name),
      },
    };
    return { key: `${PROFILE_PREFIX}kns.${name}`, data: out };
  },
  toObject(key) {
    throw new DatastoreError('unsupported', `${key}: ${READONLY_PROFILE}`);
  },
};

export const serviceAccountProfileCollection: NativeCollection = {
  plural: 'serviceaccounts',
  kind: 'ServiceAccount',
  namespaced: true,
  base: '/api/v1',
  keyPrefix: PROFILE_PREFIX,
  write: 'readonly',
  readonlyReason: READONLY_PROFILE,
  locate(key) {
    if (!key.startsWith(`${PROFILE_PREFIX}ksa.`)) return undefined;
    const rest = key.slice(`${PROFILE_PREFIX}ksa.`.length);
    const dot = rest.indexOf('.');
    if (dot <= 0 || rest.includes('/')) return undefined;
    return { namespace: rest.slice(0, dot), name: rest.slice(dot + 1) };
  },
  toKV(sa) {
    const m = meta(sa);
    const name = String(m.name);
    const ns = String(m.namespace);
    const out = {
      kind: 'Profile',
      apiVersion: 'projectcalico.org/v3',
      metadata: { name: `ksa.${ns}.${name}`, uid: m.uid, creationTimestamp: m.creationTimestamp },
      spec: { labelsToApply: prefixed(m.labels as Record<string, string>, 'pcsa.', name) },
    };
    return { key: `${PROFILE_PREFIX}ksa.${ns}.${name}`, data: out };
  },
  toObject(key) {
    throw new DatastoreError('unsupported', `${key}: ${READONLY_PROFILE}`);
  },
};

// ---- NetworkPolicy ← networking.k8s.io/v1 NetworkPolicy -----------------------------------------------

const READONLY_KNP =
  'knp.default.* policies are Kubernetes NetworkPolicies seen through Calico; change the Kubernetes NetworkPolicy instead';

export const kubeNetworkPolicyCollection: NativeCollection = {
  plural: 'networkpolicies',
  kind: 'NetworkPolicy',
  namespaced: true,
  base: '/apis/networking.k8s.io/v1',
  keyPrefix: NP_PREFIX,
  write: 'readonly',
  readonlyReason: READONLY_KNP,
  locate(key) {
    if (!key.startsWith(NP_PREFIX)) return undefined;
    const [namespace, name, ...rest] = key.slice(NP_PREFIX.length).split('/');
    if (!namespace || !name?.startsWith(KNP_PREFIX) || rest.length > 0) return undefined;
    return { namespace, name: name.slice(KNP_PREFIX.length) };
  },
  toKV(np) {
    // A policy that does not convert is still listed, with what converted; the rest fails closed
    // in the conversion (see @calico-ts/api convertK8sNetworkPolicyPartial).
    const { policy } = convertK8sNetworkPolicyPartial(np as unknown as K8sNetworkPolicy);
    const name = policy.metadata.name;
    const namespace = policy.metadata.namespace;
    return { key: `${NP_PREFIX}${namespace}/${name}`, data: policy };
  },
  toObject(key) {
    throw new DatastoreError('unsupported', `${key}: ${READONLY_KNP}`);
  },
};

// ---- Kubernetes objects as they are: Services and EndpointSlices -------------------------------------

/**
 * Kubernetes objects read as they are (`/kubernetes/<plural>/<namespace>/<name>` → the object's
 * JSON), for what policy resolves through them (`services` matches). Read-only.
 */
function kubeObjectCollection(
  plural: string,
  kind: string,
  base: string,
  namespaced = true,
): NativeCollection {
  const keyPrefix = `${KUBERNETES_OBJECT_ROOT}${plural}/`;
  const reason = `${kind}s are read from Kubernetes, not written through Calico`;
  return {
    plural,
    kind,
    namespaced,
    base,
    keyPrefix,
    write: 'readonly',
    readonlyReason: reason,
    locate(key) {
      if (!key.startsWith(keyPrefix)) return undefined;
      const parts = key.slice(keyPrefix.length).split('/');
      if (parts.some((p) => p === '')) return undefined;
      if (!namespaced) return parts.length === 1 ? { name: parts[0]! } : undefined;
      return parts.length === 2 ? { namespace: parts[0]!, name: parts[1]! } : undefined;
    },
    toKV(obj) {
      const m = meta(obj);
      const where = namespaced ? `${String(m.namespace)}/${String(m.name)}` : String(m.name);
      return { key: `${keyPrefix}${where}`, data: { kind, ...obj } };
    },
    toObject(key) {
      throw new DatastoreError('unsupported', `${key}: ${reason}`);
    },
  };
}

export const NATIVE_COLLECTIONS: readonly NativeCollection[] = [
  nodeCollection,
  workloadEndpointCollection,
  namespaceProfileCollection,
  serviceAccountProfileCollection,
  kubeNetworkPolicyCollection,
  kubeObjectCollection('services', 'Service', '/api/v1'),
  kubeObjectCollection('endpointslices', 'EndpointSlice', '/apis/discovery.k8s.io/v1'),
  kubeObjectCollection('pods', 'Pod', '/api/v1'),
  kubeObjectCollection('nodes', 'Node', '/api/v1', false),
];
