/**
 * The lab's layout, decided before anything is made (pure): names of namespaces and interfaces,
 * addresses, directories and the environment each calico-node runs with.
 *
 *   <lab>-fabric netns:  br0 198.18.0.1/24 ─┬─ etcd ══ eth0 198.18.0.2/24   <lab>-etcd netns (etcd)
 *                                           ├─ n1   ══ eth0 198.18.0.11/24  node netns n1 (calico-node)
 *                                           └─ nN   ══ eth0 198.18.0.(10+N)/24
 *   node netns: default via 198.18.0.1 (so proxy ARP on cali* answers), ip_forward=1
 *   pods: 198.19.0.0/16 (pool), one netns per pod, wired by the CNI plugin on its node
 *
 * `--topology two-subnets`: the fabric namespace is also a router between two subnets, br0
 * 198.18.0.1/24 (etcd, the first half of the nodes) and br1 198.18.1.1/24 (the rest, 198.18.1.(10+N));
 * each node's default route is its own subnet's gateway, and the VXLAN pool is CrossSubnet: pods on
 * nodes of one subnet talk unencapsulated, across the router through vxlan.calico.
 *
 * `--tls`: etcd serves https and accepts only clients with a certificate from the lab's CA (made at
 * `lab up` in <state>/etcd-tls); kube-apiserver, calico-node, the CNI plugin, calicoctl,
 * kube-controllers and the lab's own clients present the client certificate, as upstream's
 * `etcd_key_file`/`etcd_cert_file`/`etcd_ca_cert_file` and ETCD_*_FILE settings name them.
 *
 * `--mode ipip` is bgp with the pool in `ipipMode: Always` (upstream's manifests' default): Felix
 * makes tunl0 from the kernel's `ipip` module and BIRD routes the other nodes' blocks over it. The
 * lab refuses the mode on a kernel without that module (`checkKernelIpip`).
 *
 * `--mode policy-only` (upstream's EKS shape: Calico polices, another CNI networks): each node has
 * its own pod range 198.19.<i>.0/24 (the v1 Node's spec.podCIDR), the calico plugin with host-local
 * IPAM on that range names the pods' host interfaces `eni…` as the Amazon VPC CNI does, and the
 * fabric namespace routes each range to its node, as a cloud's network would. calico-node runs with
 * CALICO_NETWORKING_BACKEND=none and FELIX_INTERFACEPREFIX=eni: no BIRD, no pool, no IPAM blocks.
 *
 * The etcd namespace also runs the cluster's control plane: kube-apiserver on that etcd (its objects
 * under /registry, as a cluster's own etcd holds them), serving https://198.18.0.2:6443 to the
 * nodes, and calico-kube-controllers. On the Kubernetes datastore (the default) the Calico kinds are
 * CRDs and calico-node, the CNI plugin and calicoctl use the admin kubeconfig in the state directory;
 * on etcd (`--datastore etcdv3`) the Calico data stays under /calico/ in the same etcd and the CNI
 * plugin and kube-controllers read Kubernetes through that kubeconfig.
 *
 * `--ip-family dual` (bgp or vxlan): the fabric also carries IPv6, br0 fd00:18::1/64 and node nX
 * fd00:18::(10+X)/64 (the same digits as its IPv4 address), each node's IPv6 default route via
 * fd00:18::1; calico-node autodetects IP6 on eth0 and makes the IPv6 pool fd00:19::/64 (blocks of
 * /122; in vxlan mode vxlanMode Always, carried by vxlan-v6.calico), and the CNI assigns every pod
 * an address of each family. `--ip-family 6` (bgp): the pods get IPv6 only (no IPv4 pool, IP=none);
 * the fabric keeps its IPv4 addresses for the control plane. The default, `4`, is IPv4 only.
 *
 * Nothing is connected to the host's own namespace: only lab namespaces reach etcd or each other.
 * The default lab is named `lab` and its nodes' namespaces are `n1`…; another name prefixes them
 * (`<name>-n1`) so two labs never share a namespace.
 */
import { join } from 'node:path';
import { type ClusterInstall, type ClusterPlan, planCluster } from './cluster/cluster-plan.js';
import { LabError } from './errors.js';

export type LabMode = 'bgp' | 'ipip' | 'vxlan' | 'policy-only';
export const LAB_MODES: readonly LabMode[] = ['bgp', 'ipip', 'vxlan', 'policy-only'];

/** Whether calico-node runs BIRD in this mode (bgp, and ipip, whose routes BIRD spreads). */
export function usesBird(mode: LabMode): boolean {
  return mode === 'bgp' || mode === 'ipip';
}
/**
 * policy-only: the host-side interface prefix of the pods' CNI (the Amazon VPC CNI's, as in the
 * EKS guide), which Felix polices.
 */
export const POLICY_ONLY_INTERFACE_PREFIX = 'eni';
/** Upstream's DATASTORE_TYPE values. */
export type LabDatastore = 'etcdv3' | 'kubernetes';
export const LAB_DATASTORES: readonly LabDatastore[] = ['etcdv3', 'kubernetes'];
export const DEFAULT_DATASTORE: LabDatastore = 'kubernetes';
export const DEFAULT_LAB_NAME = 'lab';
export const DEFAULT_STATE_ROOT = '/var/run/calico-lab';
export const MAX_NODES = 50;

export const FABRIC_SUBNET = '198.18.0.0/24';
export const FABRIC_GATEWAY = '198.18.0.1';
export const ETCD_IP = '198.18.0.2';
export const POD_POOL = '198.19.0.0/16';
export const BRIDGE = 'br0';

/** `--ip-family`: the pods' address families. */
export type LabIPFamily = '4' | '6' | 'dual';
export const LAB_IP_FAMILIES: readonly LabIPFamily[] = ['4', '6', 'dual'];

/** The fabric's IPv6 subnet, gateway (on br0) and the IPv6 pod pool. */
export const FABRIC_SUBNET6 = 'fd00:18::/64';
export const FABRIC_GATEWAY6 = 'fd00:18::1';
export const POD_POOL6 = 'fd00:19::/64';

/** The address families a lab's pods have: [4], [6] or [4, 6]. */
export function labFamilies(plan: Pick<LabPlan, 'ipFamily'>): readonly (4 | 6)[] {
  const f = plan.ipFamily ?? '4';
  return f === 'dual' ? [4, 6] : f === '6' ? [6] : [4];
}

export type LabTopology = 'flat' | 'two-subnets';
export const LAB_TOPOLOGIES: readonly LabTopology[] = ['flat', 'two-subnets'];

/** A fabric subnet: its bridge in the fabric namespace, and the gateway address on it. */
export interface FabricSubnet {
  readonly bridge: string;
  readonly gateway: string;
  /** The third octet of its 198.18.X.0/24. */
  readonly octet: number;
}
/** The subnets of each topology; the first holds etcd and the API server. */
export function fabricSubnets(topology: LabTopology = 'flat'): readonly FabricSubnet[] {
  const first = { bridge: BRIDGE, gateway: FABRIC_GATEWAY, octet: 0 };
  return topology === 'two-subnets' ? [first, { bridge: 'br1', gateway: '198.18.1.1', octet: 1 }] : [first];
}
export const API_SERVER_PORT = 6443;

export interface NodePlan {
  /** Calico Node name. */
  readonly name: string;
  readonly netns: string;
  readonly ip: string;
  /** The node's IPv6 fabric address (labs with IPv6 pods). */
  readonly ip6?: string;
  /** The veth end in the fabric namespace (the node's end is `eth0`). */
  readonly fabricIf: string;
  /** The fabric subnet the node is on (absent in labs made before topologies: br0). */
  readonly subnet?: FabricSubnet;
  readonly dir: string;
  readonly libDir: string;
  readonly runDir: string;
  readonly birdDir: string;
  readonly cniConfDir: string;
  readonly log: string;
  /** policy-only: this node's pod range (the v1 Node's spec.podCIDR), routed to it by the fabric. */
  readonly podCidr?: string;
}

/** The lab's Kubernetes control plane: the API server and kube-controllers (both datastores). */
export interface KubePlan {
  /** `https://198.18.0.2:6443`: in the etcd namespace, reached over the fabric. */
  readonly apiServerUrl: string;
  /** Certificates, keys and the API server's log. */
  readonly dir: string;
  /** The admin kubeconfig every lab client uses (calico-node, CNI, calicoctl, `lab kubectl`). */
  readonly kubeconfig: string;
  readonly log: string;
  /** Where kube-apiserver keeps its objects in the lab's etcd (`--etcd-prefix`). */
  readonly etcdPrefix: string;
  /** calico-kube-controllers' log and the status file its `-r`/`-l` probes read. */
  readonly controllersLog: string;
  readonly controllersStatusFile: string;
}

/** `--tls`: the lab's etcd CA, its serving certificate and the one client certificate. */
export interface EtcdTlsPlan {
  readonly dir: string;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
}

/**
 * `lab up --images`: calico-node, install-cni and kube-controllers run from these images with
 * podman (containers.ts) instead of as the built programs.
 */
export interface LabImages {
  readonly node: string;
  readonly cni: string;
  readonly kubeControllers: string;
}

export interface LabPlan {
  readonly name: string;
  readonly mode: LabMode;
  readonly datastore: LabDatastore;
  /** Absent in labs made before topologies: flat. */
  readonly topology?: LabTopology;
  /** `--ip-family`; absent in labs made before it: IPv4 only. */
  readonly ipFamily?: LabIPFamily;
  /** `--tls`: etcd over https with client-certificate authentication only. */
  readonly etcdTls?: EtcdTlsPlan;
  /** Set when the lab runs the container images (`--images`). */
  readonly images?: LabImages;
  /** `--typha`: calico-typha in the etcd namespace, followed by every calico-node. */
  readonly typha?: TyphaPlan;
  /** `--kubelet`: a real cluster (kubelet, containerd, kube-proxy per node) that installs Calico. */
  readonly cluster?: ClusterPlan;
  readonly kube: KubePlan;
  readonly stateDir: string;
  readonly fabricNetns: string;
  readonly etcdNetns: string;
  readonly etcdUrl: string;
  readonly etcdDataDir: string;
  readonly cniBinDir: string;
  readonly calicoctlConfig: string;
  readonly nodes: readonly NodePlan[];
}

/** calico-typha in the lab (`--typha`): where it listens, its metrics, its log. */
export interface TyphaPlan {
  /** `host:port` calico-node's FELIX_TYPHAADDR names. */
  readonly addr: string;
  readonly metricsPort: number;
  readonly log: string;
}

/** Upstream's Typha port, and its Prometheus metrics port. */
export const TYPHA_PORT = 5473;
export const TYPHA_METRICS_PORT = 9093;

const NAME_RE = /^[a-z][a-z0-9-]{0,15}$/;

export function checkLabName(name: string): string {
  if (!NAME_RE.test(name)) {
    throw new LabError(
      'usage',
      `lab name "${name}" must start with a letter and hold at most 16 lower-case letters, digits or dashes`,
    );
  }
  return name;
}

export function nodeNetnsPrefix(labName: string): string {
  return labName === DEFAULT_LAB_NAME ? '' : `${labName}-`;
}

export function stateDirOf(labName: string, stateRoot = DEFAULT_STATE_ROOT): string {
  return join(stateRoot, labName);
}

export function planLab(opts: {
  name: string;
  nodes: number;
  mode: LabMode;
  datastore?: LabDatastore;
  topology?: LabTopology;
  ipFamily?: LabIPFamily;
  tls?: boolean;
  typha?: boolean;
  stateDir: string;
  images?: LabImages;
  /** `--kubelet` with its `--install`. */
  kubelet?: ClusterInstall;
  /** `--helm-values` (with `--install operator-helm`). */
  helmValues?: string;
}): LabPlan {
  checkLabName(opts.name);
  if (!Number.isInteger(opts.nodes) || opts.nodes < 1 || opts.nodes > MAX_NODES) {
    throw new LabError('usage', `--nodes must be a whole number from 1 to ${MAX_NODES}`);
  }
  const datastore = opts.datastore ?? DEFAULT_DATASTORE;
  if (opts.mode === 'policy-only' && datastore !== 'kubernetes') {
    throw new LabError(
      'usage',
      '--mode policy-only runs on the Kubernetes datastore, as upstream installs Calico beside ' +
        'another CNI; leave out --datastore etcdv3',
    );
  }
  const topology = opts.topology ?? 'flat';
  checkTopology(topology, opts.mode, opts.nodes);
  const ipFamily = opts.ipFamily ?? '4';
  checkIPFamily(ipFamily, opts.mode, topology);
  const v6 = ipFamily !== '4';
  const subnets = fabricSubnets(topology);
  const prefix = nodeNetnsPrefix(opts.name);
  const nodes: NodePlan[] = [];
  for (let i = 1; i <= opts.nodes; i++) {
    const name = `n${i}`;
    const dir = join(opts.stateDir, 'nodes', name);
    // Two subnets: the first half of the nodes (rounded up) on the first.
    const subnet = subnets[i <= Math.ceil(opts.nodes / subnets.length) ? 0 : 1]!;
    nodes.push({
      name,
      netns: `${prefix}${name}`,
      ip: `198.18.${subnet.octet}.${10 + i}`,
      ...(v6 ? { ip6: `fd00:18::${10 + i}` } : {}),
      fabricIf: name,
      subnet,
      dir,
      libDir: join(dir, 'lib'),
      runDir: join(dir, 'run'),
      birdDir: join(dir, 'bird'),
      cniConfDir: join(dir, 'net.d'),
      log: join(dir, 'calico-node.log'),
      ...(opts.mode === 'policy-only' ? { podCidr: `198.19.${i}.0/24` } : {}),
    });
  }
  const kubeDir = join(opts.stateDir, 'kube');
  const tlsDir = join(opts.stateDir, 'etcd-tls');
  const etcdTls: EtcdTlsPlan | undefined = opts.tls
    ? {
        dir: tlsDir,
        caFile: join(tlsDir, 'ca.pem'),
        certFile: join(tlsDir, 'client.pem'),
        keyFile: join(tlsDir, 'client-key.pem'),
        serverCertFile: join(tlsDir, 'server.pem'),
        serverKeyFile: join(tlsDir, 'server-key.pem'),
      }
    : undefined;
  return {
    name: opts.name,
    mode: opts.mode,
    datastore,
    topology,
    ...(ipFamily !== '4' ? { ipFamily } : {}),
    ...(etcdTls ? { etcdTls } : {}),
    ...(opts.images ? { images: opts.images } : {}),
    ...(opts.typha
      ? {
          typha: {
            addr: `${ETCD_IP}:${TYPHA_PORT}`,
            metricsPort: TYPHA_METRICS_PORT,
            log: join(opts.stateDir, 'typha.log'),
          },
        }
      : {}),
    ...(opts.kubelet ? { cluster: planCluster(opts.stateDir, opts.kubelet, opts.helmValues) } : {}),
    kube: {
      apiServerUrl: `https://${ETCD_IP}:${API_SERVER_PORT}`,
      dir: kubeDir,
      kubeconfig: join(opts.stateDir, 'kubeconfig'),
      log: join(kubeDir, 'kube-apiserver.log'),
      etcdPrefix: '/registry',
      controllersLog: join(opts.stateDir, 'kube-controllers.log'),
      controllersStatusFile: join(opts.stateDir, 'kube-controllers', 'status.json'),
    },
    stateDir: opts.stateDir,
    fabricNetns: `${opts.name}-fabric`,
    etcdNetns: `${opts.name}-etcd`,
    etcdUrl: `${etcdTls ? 'https' : 'http'}://${ETCD_IP}:2379`,
    etcdDataDir: join(opts.stateDir, 'etcd'),
    cniBinDir: join(opts.stateDir, 'cni-bin'),
    calicoctlConfig: join(opts.stateDir, 'calicoctl.cfg'),
    nodes,
  };
}

/**
 * Two subnets need two nodes, and an encapsulation that crosses the router: VXLAN (CrossSubnet).
 * BGP would need the router as a peer (or multihop sessions), which the lab does not run; policy
 * only has its own cloud routes on one subnet.
 */
function checkTopology(topology: LabTopology, mode: LabMode, nodes: number): void {
  if (topology === 'flat') return;
  if (mode !== 'vxlan')
    throw new LabError(
      'usage',
      `--topology two-subnets runs with --mode vxlan (a CrossSubnet pool): the router between the ` +
        `subnets is no BGP peer, so --mode ${mode} would leave the pods of one subnet unreachable ` +
        'from the other',
    );
  if (nodes < 2) throw new LabError('usage', '--topology two-subnets needs at least 2 nodes, one per subnet');
}

/**
 * IPv6 pods need a mode that carries IPv6: bgp (BIRD's IPv6 sessions) or, dual stack, vxlan
 * (vxlan-v6.calico). IPIP cannot carry IPv6; policy-only's pods come from host-local on IPv4
 * ranges; two subnets would need an IPv6 router in the fabric, which the lab does not make.
 */
function checkIPFamily(family: LabIPFamily, mode: LabMode, topology: LabTopology): void {
  if (family === '4') return;
  if (mode === 'bgp' || (mode === 'vxlan' && family === 'dual')) {
    if (topology !== 'flat')
      throw new LabError(
        'usage',
        `--ip-family ${family} runs on the flat topology only; leave out --topology`,
      );
    return;
  }
  throw new LabError(
    'usage',
    family === '6'
      ? `--ip-family 6 runs with --mode bgp, got --mode ${mode}`
      : `--ip-family dual runs with --mode bgp or vxlan, got --mode ${mode}` +
          (mode === 'ipip' ? ' (IPIP cannot carry IPv6)' : ''),
  );
}

/** The lab's Kubernetes control plane, or a clear error for a lab made before it had one. */
export function kubePlanOf(plan: LabPlan, what: string): KubePlan {
  if (!plan.kube?.controllersStatusFile) {
    throw new LabError(
      'state',
      `${what} needs the lab's Kubernetes API server; the lab "${plan.name}" was made by an older lab ` +
        'without one (`pnpm lab down`, then `pnpm lab up`)',
    );
  }
  return plan.kube;
}

/** A pod's network namespace name. */
export function podNetns(labName: string, namespace: string, pod: string): string {
  return `${labName}-pod-${namespace}-${pod}`;
}
