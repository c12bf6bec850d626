/**
 * The Installation reconciler's calculation: `render(installation, facts)` → every object
 * calico-system should hold, and the IP pools to create (pure; apply.ts does the I/O).
 *
 *   Namespace calico-system (privileged pod security, as upstream)
 *   ServiceAccounts, ClusterRoles, ClusterRoleBindings: calico-node, calico-cni-plugin,
 *     calico-kube-controllers (the manifest's rules), calico-typha (render-typha.ts)
 *   ConfigMap cni-config (`config`: the CNI network configuration install-cni writes)
 *   the Felix ↔ Typha certificates (certs.ts: ConfigMap tigera-ca-bundle, Secrets typha-certs
 *     and node-certs), mounted in calico-node and Typha with upstream's FELIX_TYPHA* / TYPHA_* TLS env
 *   DaemonSet calico-node (install-cni, calico-node, cni-refresh: the manifest's containers)
 *   Deployment + Service + PDB calico-typha, Deployment + PDB calico-kube-controllers
 *   IPPools from spec.calicoNetwork.ipPools (projectcalico.org/v3)
 *   with an APIServer resource, calico-apiserver (render-apiserver.ts)
 *
 * What the Installation changes in the manifest's calico-node: the images (`registry`,
 * `imagePath`, `imagePrefix`, `imagePullSecrets`), CALICO_NETWORKING_BACKEND (bird with BGP,
 * else vxlan when a pool uses VXLAN, else none; none with another CNI), CLUSTER_TYPE
 * (`k8s,operator[,<provider>][,bgp]`), the MTU
 * (CNI_MTU, FELIX_IPINIPMTU, FELIX_VXLANMTU, FELIX_WIREGUARDMTU), IP_AUTODETECTION_METHOD (IP=none
 * when there is no IPv4 pool and no method), Typha
 * (FELIX_TYPHAK8SSERVICENAME / FELIX_TYPHAK8SNAMESPACE), NO_DEFAULT_POOLS=true in place of the
 * CALICO_IPV4POOL_* variables (the operator makes the pools), and, without BGP, the BIRD checks
 * of the probes. A pod-template annotation carries a hash of the CNI configuration, so a change
 * to it rolls the DaemonSet as a change of env does. What the provider and a CNI other than
 * Calico's change (no CNI pieces at all: Calico polices only; the interface prefix; affinities;
 * labels) is render-platform.ts.
 */
import { createHash } from 'node:crypto';
import type { CalicoBase } from './base.js';
import { NODE_SECRET, TYPHA_CN } from './certs.js';
import { componentImage } from './images.js';
import type { ResolvedInstallation, ResolvedPool } from './installation.js';
import { CALICO_NAMESPACE, clone, type KubeObject, markManaged } from './kube-object.js';
import { policyOnly } from './provider.js';
import { type ApiServerFacts, renderApiServer } from './render-apiserver.js';
import {
  clusterType,
  cniBinDir,
  namespaceLabels,
  nodeAffinity,
  platformNodeEnv,
  platformTyphaEnv,
  typhaNodeAffinity,
} from './render-platform.js';
import { CA_BUNDLE_DIR, CA_BUNDLE_FILE, CERTS_HASH_ANNOTATION, renderTypha } from './render-typha.js';

/** What the render needs to know about the cluster. */
export interface ClusterFacts {
  readonly nodeCount: number;
  /** The Installation's uid, for the ownerReferences; absent in a dry render. */
  readonly installationUid?: string;
  /** The Felix ↔ Typha certificate objects (certs.ts) and their hash. */
  readonly certificates: { readonly objects: readonly KubeObject[]; readonly hash: string };
  /**
   * With an APIServer resource: calico-apiserver's serving certificate Secret and what its render
   * needs (render-apiserver.ts); absent, calico-apiserver is not part of the render.
   */
  readonly apiServer?: Omit<ApiServerFacts, 'nodeCount'> & { readonly secret: KubeObject };
}

/** A projectcalico.org/v3 IPPool to create when it does not exist. */
export interface PoolResource {
  readonly apiVersion: 'projectcalico.org/v3';
  readonly kind: 'IPPool';
  readonly metadata: { name: string; labels: Record<string, string> };
  readonly spec: Record<string, unknown>;
}

export interface Rendered {
  readonly objects: readonly KubeObject[];
  readonly pools: readonly PoolResource[];
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { configMapKeyRef?: { name: string; key: string }; [k: string]: unknown };
}

interface Container {
  name: string;
  image?: string;
  env?: EnvVar[];
  livenessProbe?: { exec?: { command: string[] } };
  readinessProbe?: { exec?: { command: string[] } };
  [k: string]: unknown;
}

interface PodSpec {
  initContainers?: Container[];
  containers: Container[];
  imagePullSecrets?: { name: string }[];
  [k: string]: unknown;
}

type Workload = KubeObject & {
  spec: { template: { metadata?: { labels?: Record<string, string>; [k: string]: unknown }; spec: PodSpec } };
};

export const CNI_CONFIGMAP = 'cni-config';
export const CNI_CONFIG_HASH_ANNOTATION = 'hash.operator.tigera.io/cni-config';

export function networkingBackend(cfg: ResolvedInstallation): 'bird' | 'vxlan' | 'none' {
  if (policyOnly(cfg.platform)) return 'none';
  if (cfg.bgp) return 'bird';
  return cfg.pools.some((p) => p.encapsulation.startsWith('VXLAN')) ? 'vxlan' : 'none';
}

/** The CNI network configuration: the manifest's, without portmap when hostPorts is Disabled. */
export function cniConfig(base: CalicoBase, cfg: ResolvedInstallation): string {
  if (cfg.hostPorts) return base.cniNetworkConfig;
  // The manifest's text carries install-cni's __CNI_MTU__ placeholder unquoted: not JSON until
  // filled in, so the plugin is taken out as text.
  const m = /,\s*\{\s*"type":\s*"portmap"[^}]*\{[^}]*\}\s*\}/.exec(base.cniNetworkConfig);
  if (!m) throw new Error('the CNI configuration has no portmap plugin to remove for hostPorts: Disabled');
  return base.cniNetworkConfig.replace(m[0], '');
}

function setEnv(c: Container, name: string, value: string): void {
  if (!c.env) c.env = [];
  const env = c.env;
  const i = env.findIndex((e) => e.name === name);
  if (i >= 0) env[i] = { name, value };
  else env.push({ name, value });
}

/** The manifest's calico-config references made the Installation's values. */
function replaceConfigRefs(c: Container, cfg: ResolvedInstallation): void {
  const mtu = String(cfg.mtu ?? 0);
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.configMapKeyRef;
    if (ref?.name !== 'calico-config') continue;
    if (ref.key === 'cni_network_config') {
      e.valueFrom = { configMapKeyRef: { name: CNI_CONFIGMAP, key: 'config' } };
      continue;
    }
    delete e.valueFrom;
    if (ref.key === 'veth_mtu') e.value = mtu;
    else if (ref.key === 'calico_backend') e.value = networkingBackend(cfg);
    else
      throw new Error(
        `the manifest's ${c.name} reads calico-config key ${ref.key}, which the render does not know`,
      );
  }
}

interface Volume {
  name: string;
  [k: string]: unknown;
}

/** calico-node's client certificate and the CA bundle: volumes, mounts and Felix's Typha TLS env. */
function nodeTls(pod: PodSpec, node: Container): void {
  const volumes = (pod.volumes as Volume[] | undefined) ?? [];
  pod.volumes = [
    ...volumes,
    { name: 'tigera-ca-bundle', configMap: { name: 'tigera-ca-bundle' } },
    { name: NODE_SECRET, secret: { secretName: NODE_SECRET } },
  ];
  const mounts = (node.volumeMounts as Volume[] | undefined) ?? [];
  node.volumeMounts = [
    ...mounts,
    { name: 'tigera-ca-bundle', mountPath: CA_BUNDLE_DIR, readOnly: true },
    { name: NODE_SECRET, mountPath: `/${NODE_SECRET}`, readOnly: true },
  ];
  setEnv(node, 'FELIX_TYPHACAFILE', CA_BUNDLE_FILE);
  setEnv(node, 'FELIX_TYPHACERTFILE', `/${NODE_SECRET}/tls.crt`);
  setEnv(node, 'FELIX_TYPHAKEYFILE', `/${NODE_SECRET}/tls.key`);
  setEnv(node, 'FELIX_TYPHACN', TYPHA_CN);
}

/** The manifest's CNI containers and volumes: install-cni, cni-refresh, the host's CNI directories. */
const CNI_CONTAINERS = ['install-cni', 'cni-refresh'];
const CNI_VOLUMES = ['cni-bin-dir', 'cni-net-dir'];

/** Another CNI wires the pods: the manifest's CNI containers and volumes go (upstream renders none). */
function dropCni(pod: PodSpec): void {
  pod.initContainers = (pod.initContainers ?? []).filter((c) => !CNI_CONTAINERS.includes(c.name));
  if (pod.initContainers.length === 0) delete pod.initContainers;
  pod.containers = pod.containers.filter((c) => !CNI_CONTAINERS.includes(c.name));
  pod.volumes = ((pod.volumes as Volume[] | undefined) ?? []).filter((v) => !CNI_VOLUMES.includes(v.name));
  for (const c of pod.containers) {
    const mounts = c.volumeMounts as Volume[] | undefined;
    if (mounts) c.volumeMounts = mounts.filter((m) => !CNI_VOLUMES.includes(m.name));
  }
}

/** The host directory install-cni writes the plugins to (GKE's differs). */
function setCniBinDir(pod: PodSpec, cfg: ResolvedInstallation): void {
  const v = ((pod.volumes as Volume[] | undefined) ?? []).find((x) => x.name === 'cni-bin-dir') as
    | (Volume & { hostPath?: { path: string } })
    | undefined;
  if (!v?.hostPath) throw new Error('the manifest calico-node DaemonSet has no cni-bin-dir hostPath volume');
  v.hostPath.path = cniBinDir(cfg);
}

function renderNode(
  base: CalicoBase,
  cfg: ResolvedInstallation,
  cni: string | undefined,
  certsHash: string,
): Workload {
  const ds = clone(base.nodeDaemonSet) as Workload;
  ds.metadata.namespace = CALICO_NAMESPACE;
  const pod = ds.spec.template.spec;
  if (cni === undefined) dropCni(pod);
  else setCniBinDir(pod, cfg);
  if (cfg.imagePullSecrets.length > 0) pod.imagePullSecrets = cfg.imagePullSecrets.map((name) => ({ name }));
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    replaceConfigRefs(c, cfg);
    if (c.name === 'install-cni' || c.name === 'cni-refresh') c.image = componentImage(cfg, 'cni');
  }
  const node = pod.containers.find((c) => c.name === 'calico-node');
  if (!node) throw new Error('the manifest calico-node DaemonSet has no calico-node container');
  node.image = componentImage(cfg, 'node');
  node.env = (node.env ?? []).filter((e) => !e.name.startsWith('CALICO_IPV4POOL_'));
  setEnv(node, 'NO_DEFAULT_POOLS', 'true');
  setEnv(node, 'CLUSTER_TYPE', clusterType(cfg));
  if (cfg.autodetectionV4 !== undefined) setEnv(node, 'IP_AUTODETECTION_METHOD', cfg.autodetectionV4);
  else {
    // No IPv4 pool and no method given: the node needs no address of Calico's (upstream's IP=none).
    setEnv(node, 'IP', 'none');
    node.env = node.env.filter((e) => e.name !== 'IP_AUTODETECTION_METHOD');
  }
  setEnv(node, 'FELIX_TYPHAK8SSERVICENAME', 'calico-typha');
  setEnv(node, 'FELIX_TYPHAK8SNAMESPACE', CALICO_NAMESPACE);
  for (const [name, value] of platformNodeEnv(cfg)) setEnv(node, name, value);
  const affinity = nodeAffinity(cfg);
  if (affinity) pod.affinity = affinity;
  nodeTls(pod, node);
  if (!cfg.bgp) {
    for (const probe of [node.livenessProbe, node.readinessProbe]) {
      if (probe?.exec) probe.exec.command = probe.exec.command.filter((a) => !a.startsWith('-bird'));
    }
  }
  if (!ds.spec.template.metadata) ds.spec.template.metadata = {};
  const meta = ds.spec.template.metadata;
  meta.annotations = {
    ...((meta.annotations as Record<string, string> | undefined) ?? {}),
    ...(cni !== undefined
      ? { [CNI_CONFIG_HASH_ANNOTATION]: createHash('sha1').update(cni).digest('hex') }
      : {}),
    [CERTS_HASH_ANNOTATION]: certsHash,
  };
  return ds;
}

function renderKubeControllers(base: CalicoBase, cfg: ResolvedInstallation): Workload {
  const dep = clone(base.kubeControllers) as Workload;
  dep.metadata.namespace = CALICO_NAMESPACE;
  const meta = dep.spec.template.metadata;
  if (meta && 'namespace' in meta) meta.namespace = CALICO_NAMESPACE;
  const pod = dep.spec.template.spec;
  if (cfg.imagePullSecrets.length > 0) pod.imagePullSecrets = cfg.imagePullSecrets.map((name) => ({ name }));
  for (const c of pod.containers) c.image = componentImage(cfg, 'kube-controllers');
  return dep;
}

/** An Installation pool as the projectcalico.org/v3 IPPool upstream's operator creates. */
export function poolResource(p: ResolvedPool): PoolResource {
  const ipip =
    p.encapsulation === 'IPIP' ? 'Always' : p.encapsulation === 'IPIPCrossSubnet' ? 'CrossSubnet' : 'Never';
  const vxlan =
    p.encapsulation === 'VXLAN' ? 'Always' : p.encapsulation === 'VXLANCrossSubnet' ? 'CrossSubnet' : 'Never';
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'IPPool',
    metadata: { name: p.name, labels: { 'app.kubernetes.io/managed-by': 'tigera-operator' } },
    spec: {
      cidr: p.cidr,
      ipipMode: ipip,
      vxlanMode: vxlan,
      natOutgoing: p.natOutgoing,
      blockSize: p.blockSize,
      nodeSelector: p.nodeSelector,
      ...(p.disableBGPExport ? { disableBGPExport: true } : {}),
      ...(p.disableNewAllocations ? { disabled: true } : {}),
      allowedUses: [...p.allowedUses],
    },
  };
}

/**
 * calico-typha for the platform (render-platform.ts): kept off the nodes it cannot run on (beside
 * its anti-affinity), and naming endpoints with the CNI's interface prefix.
 */
function withTyphaPlatform(objs: KubeObject[], cfg: ResolvedInstallation): KubeObject[] {
  const nodeAffinity = typhaNodeAffinity(cfg);
  for (const o of objs) {
    if (o.kind !== 'Deployment' || o.metadata.name !== 'calico-typha') continue;
    const pod = (o as Workload).spec.template.spec;
    if (nodeAffinity)
      pod.affinity = { nodeAffinity, ...((pod.affinity as Record<string, unknown> | undefined) ?? {}) };
    for (const [name, value] of platformTyphaEnv(cfg)) setEnv(pod.containers[0]!, name, value);
  }
  return objs;
}

export function render(base: CalicoBase, cfg: ResolvedInstallation, facts: ClusterFacts): Rendered {
  const ns = CALICO_NAMESPACE;
  // With another CNI, Calico installs no CNI configuration (policy only).
  const cni = policyOnly(cfg.platform) ? undefined : cniConfig(base, cfg);
  const namespaced = (o: KubeObject): KubeObject => {
    const c = clone(o);
    c.metadata.namespace = ns;
    return c;
  };
  const bindings = base.clusterRoleBindings.map((b) => {
    const c = clone(b) as KubeObject & { subjects?: { namespace?: string }[] };
    for (const s of c.subjects ?? []) if (s.namespace !== undefined) s.namespace = ns;
    return c;
  });
  const nodeRole = base.clusterRoles.find((r) => r.metadata.name === 'calico-node')!;
  const objects: KubeObject[] = [
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: ns,
        labels: {
          name: ns,
          'pod-security.kubernetes.io/enforce': 'privileged',
          'pod-security.kubernetes.io/enforce-version': 'latest',
          ...namespaceLabels(cfg),
        },
      },
    },
    ...base.serviceAccounts.map(namespaced),
    ...base.clusterRoles.map(clone),
    ...bindings,
    ...(cni !== undefined
      ? [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: CNI_CONFIGMAP, namespace: ns },
            data: { config: cni },
          },
        ]
      : []),
    ...facts.certificates.objects.map(clone),
    ...withTyphaPlatform(renderTypha(cfg, facts.nodeCount, nodeRole, facts.certificates.hash), cfg),
    renderNode(base, cfg, cni, facts.certificates.hash),
    renderKubeControllers(base, cfg),
    namespaced(base.kubeControllersPdb),
    ...(facts.apiServer
      ? [
          clone(facts.apiServer.secret),
          ...renderApiServer(cfg, { ...facts.apiServer, nodeCount: facts.nodeCount }),
        ]
      : []),
  ];
  return {
    objects: objects.map((o) => markManaged(o, facts.installationUid)),
    pools: cfg.pools.map(poolResource),
  };
}
