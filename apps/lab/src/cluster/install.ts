/**
 * Calico onto a `--kubelet` lab the way users install it: the manifest edited where upstream's
 * install guide tells a user to edit it (pure: `labManifest`), then `kubectl apply -f` (I/O:
 * `installCalico`), then waiting as the guide does: `kubectl get daemonset calico-node` until
 * DESIRED = CURRENT = READY, the kube-controllers Deployment available, every Node Ready.
 *
 * The edits, and why: the pool's CIDR (`CALICO_IPV4POOL_CIDR`) is the lab's pod range, as the guide
 * says to set it when the cluster's pod CIDR is not 192.168.0.0/16; the encapsulation follows
 * `--mode` (these kernels have no `ipip` module, so the manifest's IPIP Always could carry nothing:
 * bgp is unencapsulated on the one fabric subnet, vxlan is `CALICO_IPV4POOL_VXLAN: Always`).
 * Nothing else changes: images, RBAC, probes, mounts and the in-cluster configuration are the
 * manifest's own.
 *
 * With the operator (`labCustomResources`), the same edit where the operator's guide has it: the
 * Installation's pool CIDR (`spec.calicoNetwork.ipPools[0].cidr`), and with `--mode vxlan` its
 * encapsulation `VXLAN`; upstream's `VXLANCrossSubnet` stays with `--mode bgp` (the lab's nodes
 * share one subnet, so BIRD carries the routes unencapsulated). With the operator's chart
 * (`labOperatorHelmValues`), the same Installation given as `--set` values.
 */
import { parseAllDocuments } from 'yaml';
import { LabError } from '../errors.js';
import type { LabMode } from '../plan.js';
import { CLUSTER_CIDR } from './plan.js';

interface EnvVar {
  name: string;
  value?: string;
}

/**
 * The manifest with the lab's pool and encapsulation in the calico-node container's environment,
 * and, for calico-etcd.yaml, the lab's etcd in the `calico-config` ConfigMap's `etcd_endpoints`
 * (the one value the etcd guide has a user fill in).
 */
export function labManifest(text: string, mode: LabMode, etcdEndpoints?: string): string {
  const want: Record<string, string> = {
    CALICO_IPV4POOL_CIDR: CLUSTER_CIDR,
    CALICO_IPV4POOL_IPIP: 'Never',
    CALICO_IPV4POOL_VXLAN: mode === 'vxlan' ? 'Always' : 'Never',
  };
  const docs = parseAllDocuments(text);
  let found = false;
  let endpointsSet = false;
  for (const doc of docs) {
    const head = doc.toJS() as {
      kind?: string;
      metadata?: { name?: string };
      data?: Record<string, string>;
    } | null;
    if (etcdEndpoints && head?.kind === 'ConfigMap' && head.metadata?.name === 'calico-config' && head.data) {
      if ('etcd_endpoints' in head.data) {
        doc.setIn(['data', 'etcd_endpoints'], etcdEndpoints);
        endpointsSet = true;
      }
    }
    const obj = doc.toJS() as {
      kind?: string;
      metadata?: { name?: string };
      spec?: { template?: { spec?: { containers?: { name: string; env?: EnvVar[] }[] } } };
    } | null;
    if (obj?.kind !== 'DaemonSet' || obj.metadata?.name !== 'calico-node') continue;
    const containers = obj.spec?.template?.spec?.containers ?? [];
    const i = containers.findIndex((c) => c.name === 'calico-node');
    if (i < 0) break;
    const env = containers[i]!.env ?? [];
    for (const [name, value] of Object.entries(want)) {
      const j = env.findIndex((e) => e.name === name);
      const path = ['spec', 'template', 'spec', 'containers', i, 'env'];
      if (j >= 0) doc.setIn([...path, j, 'value'], value);
      else doc.addIn(path, doc.createNode({ name, value }));
    }
    found = true;
  }
  if (!found)
    throw new LabError(
      'setup',
      'the manifest has no calico-node DaemonSet with a calico-node container to set the pool in',
    );
  if (etcdEndpoints && !endpointsSet)
    throw new LabError(
      'setup',
      "the manifest has no calico-config ConfigMap with etcd_endpoints to point at the lab's etcd",
    );
  return docs.map((d) => d.toString({ lineWidth: 0 })).join('');
}

/**
 * deploy/manifests/custom-resources.yaml with the lab's pool: the Installation's first pool's
 * `cidr`, and `encapsulation: VXLAN` with `--mode vxlan`. Nothing else changes.
 */
export function labCustomResources(text: string, mode: LabMode): string {
  const docs = parseAllDocuments(text);
  const doc = docs.find((d) => (d.toJS() as { kind?: string } | null)?.kind === 'Installation');
  const pools = doc?.getIn(['spec', 'calicoNetwork', 'ipPools']);
  if (!doc || !pools)
    throw new LabError(
      'setup',
      'the custom resources have no Installation with spec.calicoNetwork.ipPools to set the pool in',
    );
  doc.setIn(['spec', 'calicoNetwork', 'ipPools', 0, 'cidr'], CLUSTER_CIDR);
  if (mode === 'vxlan') doc.setIn(['spec', 'calicoNetwork', 'ipPools', 0, 'encapsulation'], 'VXLAN');
  return docs.map((d) => d.toString({ lineWidth: 0 })).join('');
}

/** Each TigeraStatus' Available condition ("True", "False", "Unknown"), from `kubectl get tigerastatus -o json`. */
export function tigeraAvailability(list: {
  items?: { metadata?: { name?: string }; status?: { conditions?: { type: string; status: string }[] } }[];
}): Map<string, string> {
  const m = new Map<string, string>();
  for (const t of list.items ?? []) {
    m.set(
      t.metadata?.name ?? '?',
      t.status?.conditions?.find((c) => c.type === 'Available')?.status ?? 'Unknown',
    );
  }
  return m;
}

/** What `kubectl get daemonset calico-node` shows, from its status. */
export interface DaemonSetCounts {
  readonly desired: number;
  readonly current: number;
  readonly ready: number;
  readonly upToDate: number;
}

export function daemonSetCounts(ds: {
  status?: {
    desiredNumberScheduled?: number;
    currentNumberScheduled?: number;
    numberReady?: number;
    updatedNumberScheduled?: number;
  };
}): DaemonSetCounts {
  const s = ds.status ?? {};
  return {
    desired: s.desiredNumberScheduled ?? 0,
    current: s.currentNumberScheduled ?? 0,
    ready: s.numberReady ?? 0,
    upToDate: s.updatedNumberScheduled ?? 0,
  };
}

/** Node name → Ready condition status ("True", "False", "Unknown"), from `kubectl get nodes -o json`. */
export function nodeReadiness(list: {
  items?: { metadata?: { name?: string }; status?: { conditions?: { type: string; status: string }[] } }[];
}): Map<string, string> {
  const m = new Map<string, string>();
  for (const n of list.items ?? []) {
    const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
    m.set(n.metadata?.name ?? '?', ready);
  }
  return m;
}

/**
 * `helm install` values for the chart (deploy/helm/calico-ts) that match what `labManifest` sets:
 * the lab's pool and the encapsulation `--mode` asks for.
 */
export function labHelmValues(mode: LabMode): string[] {
  return [
    `ipv4Pool.cidr=${CLUSTER_CIDR}`,
    `ipv4Pool.encapsulation=${mode === 'vxlan' ? 'VXLAN' : 'None'}`,
    'ipv4Pool.encapsulationMode=Always',
  ];
}

/**
 * `helm install` values for the operator's chart (deploy/helm/tigera-operator) that give the
 * Installation `labCustomResources` writes: its one pool, field by field
 * (`installation.calicoNetwork.ipPools[0].cidr=198.19.0.0/16`, …). Helm replaces a list given
 * with `--set`, so every field of the pool is set, not only the CIDR.
 */
export function labOperatorHelmValues(customResources: string, mode: LabMode): string[] {
  const objs = parseAllDocuments(labCustomResources(customResources, mode)).map(
    (d) => d.toJS() as { kind?: string; spec?: Record<string, unknown> } | null,
  );
  const spec = objs.find((o) => o?.kind === 'Installation')?.spec ?? {};
  const network = (spec.calicoNetwork ?? {}) as { ipPools?: Record<string, unknown>[] };
  const pools = network.ipPools ?? [];
  const only = (o: object, key: string) => Object.keys(o).length === 1 && key in o;
  if (!only(spec, 'calicoNetwork') || !only(network, 'ipPools') || pools.length !== 1)
    throw new LabError(
      'setup',
      "the custom resources' Installation holds more than spec.calicoNetwork.ipPools with one pool; " +
        'the lab sets only that pool on the chart',
    );
  return Object.entries(pools[0]!).map(([k, v]) => {
    if (typeof v === 'object' || /[,={}[\]]/.test(String(v)))
      throw new LabError('setup', `the pool's ${k} (${JSON.stringify(v)}) cannot be given with helm --set`);
    return `installation.calicoNetwork.ipPools[0].${k}=${v}`;
  });
}
