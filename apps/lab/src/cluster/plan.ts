/**
 * `lab up --kubelet`: a real Kubernetes cluster in the lab's namespaces (pure: names, paths, the
 * configuration files and arguments of every component; cluster/*.ts that do I/O use these).
 *
 *   etcd netns:  etcd ─ kube-apiserver ─ kube-controller-manager ─ kube-scheduler
 *   node netns:  containerd ─ kubelet ─ kube-proxy (nftables), in the node's own mount namespace
 *                and cgroup root; Calico comes from `kubectl apply` (or helm) like any cluster's
 *
 * Each node's mount namespace keeps what a host owns to itself: a directory of the node's is bound
 * over every path a kubelet, containerd or the manifests' hostPath volumes write
 * (`NODE_HOST_PATHS`), so three nodes on one machine never see each other's CNI config, pod logs,
 * kubelet state or pod network namespaces, and the machine's own `/etc/cni/net.d` is never written.
 *
 * cgroups (v1, hybrid, on these machines): each node has a cgroup root of its own in every v1
 * hierarchy (`/calico-lab-<lab>-<node>`, kubelet's `cgroupRoot`); containerd, kubelet and
 * kube-proxy run in its `system` child, so every process the node starts, containerd's shims and
 * the containers included, is inside that root, and `lab down` finds them all there.
 */
import { join } from 'node:path';
import type { LabPlan, NodePlan } from '../plan.js';
import type { ClusterPlan } from './cluster-plan.js';

export { CLUSTER_INSTALLS, type ClusterInstall, type ClusterPlan, planCluster } from './cluster-plan.js';

/** The services' range (kube-apiserver's, see @calico-ts/datastore/testing) and the `kubernetes` Service. */
export const SERVICE_CIDR = '198.18.128.0/24';
export const KUBERNETES_SERVICE_IP = '198.18.128.1';
/** The pods' range: the lab's pool (plan.ts POD_POOL), and kube-controller-manager's --cluster-cidr. */
export const CLUSTER_CIDR = '198.19.0.0/16';

/** The images every node's containerd imports: Calico's and the workloads' (images/ builds them). */
export const CLUSTER_IMAGES = [
  'node',
  'cni',
  'kube-controllers',
  'typha',
  'operator',
  'apiserver',
  'ctl',
  'pause',
  'httpd',
] as const;
export type ClusterImage = (typeof CLUSTER_IMAGES)[number];

/**
 * The paths on a node that belong to the node, each bound to a directory of its own: the CNI
 * directories and Calico's (the DaemonSet's hostPaths), kubelet's state and pod logs, containerd's
 * state (its shims' sockets go under /run/containerd), and the pod network namespaces containerd
 * makes under /run/netns (the machine's /run/netns holds the lab's own).
 */
export const NODE_HOST_PATHS = [
  '/etc/cni/net.d',
  '/opt/cni/bin',
  '/var/lib/calico',
  '/run/calico',
  '/var/log/calico',
  '/var/lib/kubelet',
  '/var/log/pods',
  '/var/log/containers',
  '/run/containerd',
  '/run/netns',
] as const;

/** Where one node's cluster pieces live. */
export interface ClusterNodePaths {
  readonly dir: string;
  /** The file the node's mount namespace is bound to (`nsenter --mount=`). */
  readonly mntns: string;
  /** kubelet's cgroupRoot; the same path in every v1 hierarchy. */
  readonly cgroupRoot: string;
  /** The node's directory for each of NODE_HOST_PATHS. */
  readonly hostPaths: readonly { readonly target: string; readonly source: string }[];
  readonly containerdRoot: string;
  readonly containerdState: string;
  readonly containerdConfig: string;
  readonly containerdSock: string;
  readonly containerdLog: string;
  readonly kubeletConfig: string;
  readonly kubeletKubeconfig: string;
  readonly kubeletLog: string;
  readonly kubeProxyConfig: string;
  readonly kubeProxyKubeconfig: string;
  readonly kubeProxyLog: string;
}

export function clusterNodePaths(plan: LabPlan, cluster: ClusterPlan, node: NodePlan): ClusterNodePaths {
  const dir = join(node.dir, 'k8s');
  const hostDir = join(dir, 'host');
  return {
    dir,
    mntns: join(cluster.mntnsDir, node.name),
    cgroupRoot: `/calico-lab-${plan.name}-${node.name}`,
    hostPaths: NODE_HOST_PATHS.map((target) => ({
      target,
      source: join(hostDir, target.slice(1).replaceAll('/', '-')),
    })),
    containerdRoot: join(dir, 'containerd', 'root'),
    containerdState: join(dir, 'containerd', 'state'),
    containerdConfig: join(dir, 'containerd.toml'),
    containerdSock: join(dir, 'containerd.sock'),
    containerdLog: join(dir, 'containerd.log'),
    kubeletConfig: join(dir, 'kubelet.yaml'),
    kubeletKubeconfig: join(dir, 'kubelet.kubeconfig'),
    kubeletLog: join(dir, 'kubelet.log'),
    kubeProxyConfig: join(dir, 'kube-proxy.yaml'),
    kubeProxyKubeconfig: join(dir, 'kube-proxy.kubeconfig'),
    kubeProxyLog: join(dir, 'kube-proxy.log'),
  };
}

/** Image names as containerd's CRI looks them up: `calico-ts/node:v0.1.0` is `docker.io/calico-ts/node:v0.1.0`. */
export function criImageName(ref: string): string {
  const first = ref.split('/')[0]!;
  const hasRegistry =
    ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return hasRegistry ? ref : `docker.io/${ref.includes('/') ? ref : `library/${ref}`}`;
}

const toml = (s: string) => JSON.stringify(s);

/**
 * containerd's configuration (version 2, containerd 1.6 and 1.7): its root, state and sockets in the
 * node's directory; the CRI with the locally built pause image, runc with cgroupfs, CNI from the
 * node's /opt/cni/bin and /etc/cni/net.d, and `restrict_oom_score_adj` (these machines deny raising
 * a process's oom_score_adj, which runc does for every sandbox otherwise).
 */
export function containerdConfigText(p: ClusterNodePaths, pauseImage: string): string {
  return `# calico-lab: containerd of one lab node (written by lab up --kubelet)
version = 2
root = ${toml(p.containerdRoot)}
state = ${toml(p.containerdState)}
oom_score = 0

[grpc]
  address = ${toml(p.containerdSock)}

[ttrpc]
  address = ${toml(`${p.containerdSock}.ttrpc`)}

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = ${toml(join(p.containerdRoot, 'opt'))}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${toml(pauseImage)}
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
    max_conf_num = 1
`;
}

/** A kubeconfig naming certificate files (the control plane's and the nodes' components). */
export function componentKubeconfig(o: {
  server: string;
  caFile: string;
  certFile: string;
  keyFile: string;
  user: string;
}): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: ${o.server}
    certificate-authority: ${o.caFile}
users:
- name: ${o.user}
  user:
    client-certificate: ${o.certFile}
    client-key: ${o.keyFile}
contexts:
- name: lab
  context:
    cluster: lab
    user: ${o.user}
current-context: lab
`;
}

/**
 * kubelet's configuration for a lab node. What these machines need, each for a reason found
 * running it (docs/kubelet-lab.md):
 * - `failCgroupV1: false`: cgroup v1 (hybrid); kubelet 1.35+ refuses v1 otherwise.
 * - `cgroupDriver: cgroupfs`: no systemd; containerd 1.6 has no CRI RuntimeConfig call to ask.
 * - `cgroupRoot`: a root of the node's own, so three kubelets never share kubepods.
 * - `failSwapOn: false`: kubelet does not start where swap may be on.
 * - eviction and image GC thresholds near the disk's end: the images cannot be pulled again (no
 *   registry), and the host's disk use is not the node's doing.
 * - `address: 0.0.0.0`, x509 client authentication with the cluster CA and AlwaysAllow: the API
 *   server reaches kubelet for `kubectl logs/exec` with its client certificate.
 */
export function kubeletConfigText(o: {
  paths: ClusterNodePaths;
  caFile: string;
  resolvConf: string;
}): string {
  const p = o.paths;
  return `# calico-lab: kubelet of one lab node (written by lab up --kubelet)
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: ${p.cgroupRoot}
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
containerRuntimeEndpoint: unix://${p.containerdSock}
address: 0.0.0.0
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: ${o.caFile}
authorization:
  mode: AlwaysAllow
failSwapOn: false
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
clusterDomain: cluster.local
resolvConf: ${o.resolvConf}
maxPods: 110
registerNode: true
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
fileCheckFrequency: 10s
volumeStatsAggPeriod: 0s
shutdownGracePeriod: 0s
containerLogMaxSize: 10Mi
containerLogMaxFiles: 2
`;
}

export function kubeletArgs(p: ClusterNodePaths, node: NodePlan): string[] {
  return [
    `--config=${p.kubeletConfig}`,
    `--kubeconfig=${p.kubeletKubeconfig}`,
    `--hostname-override=${node.name}`,
    `--node-ip=${node.ip}`,
    '--v=1',
  ];
}

/**
 * kube-proxy in nftables mode. Conntrack sizes are the machine's, not a namespace's: zero leaves
 * them as they are (a netns cannot set nf_conntrack_max).
 */
export function kubeProxyConfigText(p: ClusterNodePaths, node: NodePlan): string {
  return `# calico-lab: kube-proxy of one lab node (written by lab up --kubelet)
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: ${p.kubeProxyKubeconfig}
hostnameOverride: ${node.name}
clusterCIDR: ${CLUSTER_CIDR}
bindAddress: 0.0.0.0
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`;
}

/** The control plane's components beside kube-apiserver, each with its own client certificate. */
export function controllerManagerArgs(o: { kubeconfig: string; kubeDir: string; log?: string }): string[] {
  const p = (f: string) => join(o.kubeDir, f);
  return [
    `--kubeconfig=${o.kubeconfig}`,
    `--authentication-kubeconfig=${o.kubeconfig}`,
    `--authorization-kubeconfig=${o.kubeconfig}`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    '--secure-port=10257',
    `--service-account-private-key-file=${p('sa-key.pem')}`,
    `--root-ca-file=${p('ca.pem')}`,
    `--cluster-signing-cert-file=${p('ca.pem')}`,
    `--cluster-signing-key-file=${p('ca-key.pem')}`,
    '--use-service-account-credentials=true',
    '--allocate-node-cidrs=true',
    `--cluster-cidr=${CLUSTER_CIDR}`,
    '--node-cidr-mask-size=24',
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--controllers=*,bootstrapsigner,tokencleaner',
    '--v=1',
  ];
}

export function schedulerArgs(kubeconfig: string): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    '--secure-port=10259',
    '--v=1',
  ];
}

/** kube-apiserver's flags on top of the lab's for a cluster with kubelets. */
export function apiServerClusterArgs(kubeDir: string): string[] {
  return [
    // kubectl logs/exec/port-forward: to each node's InternalIP (there is no DNS for its name),
    // presenting the admin certificate, which kubelet's x509 authentication accepts.
    '--kubelet-preferred-address-types=InternalIP',
    `--kubelet-client-certificate=${join(kubeDir, 'admin.pem')}`,
    `--kubelet-client-key=${join(kubeDir, 'admin-key.pem')}`,
    '--enable-admission-plugins=NodeRestriction',
  ];
}

/** Client certificates the cluster's components present: file stem and subject. */
export function componentSubjects(plan: LabPlan): { stem: string; subject: string; user: string }[] {
  return [
    {
      stem: 'kube-controller-manager',
      subject: '/CN=system:kube-controller-manager',
      user: 'system:kube-controller-manager',
    },
    { stem: 'kube-scheduler', subject: '/CN=system:kube-scheduler', user: 'system:kube-scheduler' },
    { stem: 'kube-proxy', subject: '/CN=system:kube-proxy', user: 'system:kube-proxy' },
    ...plan.nodes.map((n) => ({
      stem: `kubelet-${n.name}`,
      subject: `/O=system:nodes/CN=system:node:${n.name}`,
      user: `system:node:${n.name}`,
    })),
  ];
}
