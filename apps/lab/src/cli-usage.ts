/**
 * The lab's usage texts: the overall one (`pnpm lab help`) and each command's (`lab COMMAND
 * --help`, `lab help COMMAND`). Text only; cli.ts parses, and its tests hold these texts.
 */
import { usage } from './cli-flags.js';
import { MAX_NODES } from './plan.js';

export const USAGE = `Usage: pnpm lab [--name NAME] [--state-dir DIR] <command>

A Kubernetes cluster with Calico in network namespaces on this host: one etcd, kube-apiserver on it
and calico-kube-controllers (the control plane), N nodes each running calico-node (Felix, BIRD),
pods wired by the calico CNI plugin. The Calico datastore is the Kubernetes API (default) or the
etcd (--datastore etcdv3). --mode policy-only: Calico enforces policy only, beside a routed pod
network it does not make (no BIRD, no Calico IPAM). Needs root.

Commands:
  up [--nodes 3] [--mode bgp|ipip|vxlan|policy-only] [--datastore kubernetes|etcdv3]
     [--topology flat|two-subnets] [--ip-family 4|6|dual] [--tls] [--typha] [--images]
     [--kubelet [--install manifest|etcd|helm|operator|operator-helm|none]
                [--helm-values eks|aks|FILE]]
                                          build the lab and wait until every node is ready
  down                                    remove everything the lab made (also after a crash)
  restart kube-apiserver                  stop the API server and start it again, as it ran
  status [-o table|json]                  control plane, nodes, processes, BGP sessions, pods
  ns create NAME [--labels k=v,...]       a Namespace and its default ServiceAccount
  pod create NS/NAME [--node nX] [--labels k=v,...] [--ports 80,http=8080,...]
             [--service-account SA] [--annotations k=v,...]
                                          a Pod bound to its node, then what kubelet does: CNI ADD,
                                          a TCP+UDP listener on the ports (default 80), pod status
  pod delete NS/NAME                      CNI DEL, listener stopped, Pod deleted, netns removed
  pod exec NS/NAME -- CMD [ARGS...]       run a command in the pod's network namespace
  calicoctl ARGS...                       calicoctl against the lab's datastore
  kubectl ARGS...                         kubectl against the lab's API server
  connectivity [--port 80] [--protocol tcp|udp] [--family 4|6] [-o table|json] [--timeout-ms 1500]
                                          pod × pod matrix of real connection attempts
  bench [--pods 6] [-o table|json]        pod create time, BGP route convergence, TCP connect
                                          times, with throw-away pods in namespace lab-bench
  help [COMMAND]                          this text, or one command's (also COMMAND --help, -h)

Global options: --name (default lab, or CALICO_LAB_NAME) picks the lab; --state-dir (default
/var/run/calico-lab/<name>, or CALICO_LAB_STATE_DIR) is where it keeps its state file and logs.
`;

const GLOBAL = 'Global options (before the command): --name NAME, --state-dir DIR. See `pnpm lab help`.\n';

/** Each command's own usage, printed by `lab COMMAND --help` / `-h` and `lab help COMMAND`. */
export const COMMAND_USAGE: Readonly<Record<string, string>> = {
  up: `Usage: pnpm lab up [--nodes N] [--mode bgp|ipip|vxlan|policy-only]
                   [--datastore kubernetes|etcdv3] [--topology flat|two-subnets]
                   [--ip-family 4|6|dual] [--tls] [--typha] [--images]
                   [--kubelet [--install manifest|etcd|helm|operator|operator-helm|none]
                              [--helm-values eks|aks|FILE]]

Builds the lab and waits until every node is ready: fabric bridge, etcd, kube-apiserver on it, one
v1 Node per lab node, calico-kube-controllers, then calico-node on each node.

  --nodes N        how many nodes, 1 to ${MAX_NODES} (default 3)
  --mode M         bgp: BIRD with a full mesh (default); ipip: the same with the pool in
                   ipipMode Always, pods' traffic in IPIP over tunl0 (needs the kernel's ipip
                   module: refused where \`ip link add type ipip\` fails); vxlan: VXLAN
                   tunnels, no BIRD;
                   policy-only: Calico polices only, as installed beside a cloud's CNI (EKS):
                   calico-node with CALICO_NETWORKING_BACKEND=none and FELIX_INTERFACEPREFIX=eni,
                   no BIRD, no pool, no Calico IPAM. Node nX gets the pod range 198.19.X.0/24
                   (its spec.podCIDR); the calico plugin with host-local IPAM on that range wires
                   the pods on eni… interfaces, and the fabric routes each range to its node, as a
                   cloud network would. Kubernetes datastore only.
  --datastore D    kubernetes: Calico's data in the API server as CRDs (default);
                   etcdv3: Calico's data under /calico/ in the lab's etcd (not with policy-only)
  --topology T     flat: every node on one fabric subnet, 198.18.0.0/24 (default);
                   two-subnets: the first half of the nodes on 198.18.0.0/24, the rest on
                   198.18.1.0/24 (198.18.1.(10+N)), the fabric namespace routing between them;
                   with --mode vxlan only, and the pool's VXLAN mode CrossSubnet: pods on nodes of
                   one subnet talk unencapsulated, across the router through vxlan.calico
  --ip-family F    4: IPv4 pods only (default); dual: every pod gets an IPv4 and an IPv6 address,
                   the fabric also carries fd00:18::/64 (br0 fd00:18::1, node nX fd00:18::(10+X)),
                   calico-node autodetects IP6 on eth0, the IPv6 pool is fd00:19::/64 (blocks of
                   /122), BIRD runs IPv6 sessions too (bgp) or VXLAN runs over vxlan-v6.calico
                   (vxlan); 6: IPv6 pods only (--mode bgp). Flat topology; not with ipip or
                   policy-only
  --tls            etcd over https, accepting only clients with a certificate from a CA made
                   at lab up (<state>/etcd-tls); kube-apiserver, calico-node, the CNI plugin
                   (etcd_ca_cert_file, etcd_cert_file, etcd_key_file), calicoctl and
                   kube-controllers present its client certificate (not with --images)
  --typha          run calico-typha beside etcd (port 5473, metrics on 9093) and point every
                   calico-node at it (FELIX_TYPHAADDR): Felix and BIRD get their updates from
                   Typha's one list and watch per source instead of their own (not with --images
                   or --tls)
  --images         run the container images (\`pnpm images\` builds them) with podman, as the
                   manifests run them: install-cni (cni image) into each node's CNI directories,
                   calico-node (node image) with the node's namespace as its host network and the
                   DaemonSet's mounts, calico-kube-controllers (kube-controllers image). Containers
                   are named calico-lab-<lab>-<node> and calico-lab-<lab>-kube-controllers; their
                   logs are where the programs' are, and \`podman logs NAME\`
  --kubelet        a real Kubernetes cluster: every node runs containerd, kubelet and kube-proxy
                   (nftables) in its namespace, with its own mount namespace and cgroup root;
                   kube-scheduler and kube-controller-manager join kube-apiserver. The images
                   (\`pnpm images\`) are imported into every node's containerd, and Calico is
                   installed by Kubernetes (--install); --mode bgp or vxlan only
  --install I      with --kubelet: manifest (default: kubectl apply -f deploy/manifests/calico.yaml
                   with the pool set to 198.19.0.0/16 and --mode's encapsulation); etcd (the same
                   with calico-etcd.yaml, etcd_endpoints the lab's etcd: the etcdv3 datastore);
                   helm (helm install calico-ts deploy/helm/calico-ts -n kube-system, the pool
                   set with --set); operator (kubectl create -f deploy/manifests/tigera-operator.yaml,
                   then custom-resources.yaml with the pool set to 198.19.0.0/16; waits for
                   tigerastatus calico Available); operator-helm (helm install calico
                   deploy/helm/tigera-operator -n tigera-operator --create-namespace, the same
                   Installation given with --set; waits the same way); none (no CNI: the Nodes
                   stay NotReady until you install one, e.g. \`pnpm lab kubectl apply -f <state>/cluster/calico.yaml\`)
  --helm-values V  with --install operator-helm: the chart's values instead of the lab's pool;
                   eks: upstream's Helm guide {installation: {kubernetesProvider: EKS}}, Calico for
                   policy only: the lab first gives every node a stand-in for the Amazon VPC CNI
                   (lab-eni: eni… interfaces, host-local on the Node's podCIDR) and routes the
                   ranges in the fabric; aks: the guide's AKS values (Calico CNI, VXLAN, BGP
                   Disabled) with the pool in 198.19.0.0/16, the Nodes labelled as AKS labels them;
                   FILE: your values (pools inside 198.18.0.0/15). Not with --mode
`,
  down: `Usage: pnpm lab down

Stops every process the lab recorded and removes its namespaces and state directory; also after
a crash or a failed \`lab up\`.
`,
  restart: `Usage: pnpm lab restart kube-apiserver

Stops the lab's kube-apiserver (SIGTERM, then SIGKILL after 5 s; or finds it already gone) and
starts it again with the same flags, then waits for /readyz. Its clients (kubelets, calico-node,
kube-controllers, the controller-manager) see it go away and come back, as in a control-plane
upgrade or crash.
`,
  status: `Usage: pnpm lab status [-o table|json]

The datastore, kube-apiserver and calico-kube-controllers (running, ready), each node's
calico-node and BIRD (running, ready, BGP role and sessions), namespaces and pods.
`,
  'ns create': `Usage: pnpm lab ns create NAME [--labels k=v,...]

Creates (or relabels) the Namespace NAME and its default ServiceAccount, as kube-controller-manager
would; calico-kube-controllers (etcd) or the Kubernetes datastore turn them into the Profiles
kns.NAME and ksa.NAME.default.

  --labels, -l k=v,...   the Namespace's labels (repeatable)
`,
  'pod create': `Usage: pnpm lab pod create NS/NAME [--node nX] [--labels k=v,...] [--ports 80,http=8080]
                              [--service-account SA] [--annotations k=v,...]

Creates the Pod bound to its node, then does what kubelet does: a network namespace, CNI ADD on
the node (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID, K8S_POD_UID), a listener
answering TCP and UDP on the ports, and the Pod's status (Running, podIP, hostIP). Returns once the
pod's WorkloadEndpoint carries its labels.

  --node nX                  the node (default: the one with the fewest pods)
  --labels, -l k=v,...       the Pod's labels (repeatable)
  --ports P,NAME=P,...       container ports (default 80); NAME=P names the TCP port, for
                             NetworkPolicies on named ports
  --service-account SA       spec.serviceAccountName (made in the namespace if missing)
  --annotations k=v,...      the Pod's annotations, e.g. cni.projectcalico.org/ipAddrs=["198.19.9.9"]
                             (a comma inside [], {} or quotes belongs to the value)
`,
  'pod delete': `Usage: pnpm lab pod delete NS/NAME

Stops the pod's listener, runs CNI DEL on its node, deletes the Pod and removes its namespace.
`,
  'pod exec': `Usage: pnpm lab pod exec NS/NAME -- CMD [ARGS...]

Runs CMD inside the pod's network namespace (everything after -- is the command's).
`,
  calicoctl: `Usage: pnpm lab calicoctl ARGS...

Runs calicoctl against the lab's datastore (its calicoctl.cfg is added unless ARGS name -c).
Everything after \`calicoctl\` is calicoctl's: \`pnpm lab calicoctl help\` shows calicoctl's own help.
`,
  kubectl: `Usage: pnpm lab kubectl ARGS...

Runs the machine's kubectl (or CALICO_LAB_KUBECTL_BIN) in the etcd namespace with the lab's
admin kubeconfig. Everything after \`kubectl\` is kubectl's: \`pnpm lab kubectl help\` shows
kubectl's own help.
`,
  connectivity: `Usage: pnpm lab connectivity [--port 80] [--protocol tcp|udp] [--family 4|6] [-o table|json]
                             [--timeout-ms 1500]

Every pod tries every other pod's listener from its own network namespace; a cell is reachable
only when the destination itself answered. Each address family the lab's pods have is tried (one
matrix each), or only the one --family names; in JSON each cell carries its \`family\`.
`,
  bench: `Usage: pnpm lab bench [--pods 6] [-o table|json]

Pod create time, BGP route convergence and TCP connect times, with throw-away pods in the
namespace lab-bench.
`,
};

/** One command's usage, or the overall one; an unknown topic is a usage error. */
export function usageText(topic?: string): string {
  if (topic === undefined) return USAGE;
  const text = COMMAND_USAGE[topic] ?? COMMAND_USAGE[topic.replace(/^namespace /, 'ns ')];
  if (text === undefined) {
    if (topic === 'pod' || topic === 'ns' || topic === 'namespace')
      return Object.entries(COMMAND_USAGE)
        .filter(([k]) => k.startsWith(topic === 'pod' ? 'pod ' : 'ns '))
        .map(([, v]) => v)
        .join('\n')
        .concat(`\n${GLOBAL}`);
    return usage(`help: no command "${topic}"`);
  }
  return `${text}\n${GLOBAL}`;
}
