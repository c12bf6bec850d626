/**
 * `pnpm lab <command>`: the command line, parsed (pure). Every mistake is a `LabError('usage')`
 * whose message says what is accepted.
 */

import { CLUSTER_INSTALLS, type ClusterInstall } from './cluster/plan.js';
import { LabError } from './errors.js';
import {
  checkKubeName,
  type PodPort,
  parseAnnotations,
  parseLabels,
  parsePodRef,
  parsePorts,
} from './k8s-model.js';
import {
  checkLabName,
  DEFAULT_DATASTORE,
  DEFAULT_LAB_NAME,
  LAB_DATASTORES,
  LAB_IP_FAMILIES,
  LAB_MODES,
  LAB_TOPOLOGIES,
  type LabDatastore,
  type LabIPFamily,
  type LabMode,
  type LabTopology,
  MAX_NODES,
} from './plan.js';

export type Output = 'table' | 'json';
/** What `lab restart` restarts: the control plane's servers, as an operator would restart them. */
export const RESTARTABLE = ['kube-apiserver'] as const;
export type RestartableComponent = (typeof RESTARTABLE)[number];
export type Protocol = 'tcp' | 'udp';

export type LabCommand =
  | {
      readonly kind: 'up';
      readonly nodes: number;
      readonly mode: LabMode;
      readonly datastore: LabDatastore;
      readonly topology: LabTopology;
      /** `--ip-family`: the pods' address families (default 4). */
      readonly ipFamily: LabIPFamily;
      /** etcd with client-certificate authentication only. */
      readonly tls?: true;
      /** Run calico-node, install-cni and kube-controllers from their images with podman. */
      readonly images?: true;
      /** calico-typha in front of the datastore; every node's Felix and BIRD follow it. */
      readonly typha?: true;
      /** `--kubelet`: a real cluster (kubelet, containerd, kube-proxy) that installs Calico by `--install`. */
      readonly kubelet?: ClusterInstall;
    }
  | { readonly kind: 'down' }
  | { readonly kind: 'restart'; readonly component: RestartableComponent }
  | { readonly kind: 'status'; readonly output: Output }
  | { readonly kind: 'ns-create'; readonly namespace: string; readonly labels: Record<string, string> }
  | {
      readonly kind: 'pod-create';
      readonly namespace: string;
      readonly name: string;
      readonly node?: string;
      readonly labels: Record<string, string>;
      readonly annotations: Record<string, string>;
      readonly serviceAccount?: string;
      readonly ports: readonly PodPort[];
    }
  | { readonly kind: 'pod-delete'; readonly namespace: string; readonly name: string }
  | {
      readonly kind: 'pod-exec';
      readonly namespace: string;
      readonly name: string;
      readonly argv: readonly string[];
    }
  | { readonly kind: 'calicoctl'; readonly argv: readonly string[] }
  | { readonly kind: 'kubectl'; readonly argv: readonly string[] }
  | {
      readonly kind: 'connectivity';
      readonly port: number;
      readonly protocol: Protocol;
      readonly output: Output;
      readonly timeoutMs: number;
      /** `--family`: the one family to try; absent: every family the lab's pods have. */
      readonly families?: readonly (4 | 6)[];
    }
  | { readonly kind: 'bench'; readonly pods: number; readonly output: Output }
  /** The overall usage, or one command's (`topic`, e.g. `pod create`). */
  | { readonly kind: 'help'; readonly topic?: string };

export interface LabArgs {
  /** Lab name (--name, else CALICO_LAB_NAME, else `lab`). */
  readonly name: string;
  /** --state-dir, else CALICO_LAB_STATE_DIR; undefined = /var/run/calico-lab/<name>. */
  readonly stateDir?: string;
  readonly command: LabCommand;
}

export const USAGE = `Usage: pnpm lab [--name NAME] [--state-dir DIR] <command>

A Kubernetes cluster with Calico in network namespaces on this host: one etcd, kube-apiserver on it
and calico-kube-controllers (the control plane), N nodes each running calico-node (Felix, BIRD),
pods wired by the calico CNI plugin. The Calico datastore is the Kubernetes API (default) or the
etcd (--datastore etcdv3). --mode policy-only: Calico enforces policy only, beside a routed pod
network it does not make (no BIRD, no Calico IPAM). Needs root.

Commands:
  up [--nodes 3] [--mode bgp|ipip|vxlan|policy-only] [--datastore kubernetes|etcdv3]
     [--topology flat|two-subnets] [--ip-family 4|6|dual] [--tls] [--typha] [--images]
     [--kubelet [--install manifest|etcd|helm|none]]
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
                   [--kubelet [--install manifest|etcd|helm|none]]

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
                   set with --set); none (no CNI: the Nodes stay NotReady until you install one,
                   e.g. \`pnpm lab kubectl apply -f <state>/cluster/calico.yaml\`)
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

/** True when `-h` or `--help` comes before any `--`. */
function asksHelp(args: readonly string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '-h' || a === '--help') return true;
  }
  return false;
}

const usage = (message: string): never => {
  throw new LabError('usage', `${message}\nRun \`pnpm lab help\` for the commands.`);
};

/** Splits flags from positionals; `--` ends flags (the rest is returned as `rest`). A `switch` takes no value. */
function scan(
  args: readonly string[],
  known: Readonly<Record<string, 'value' | 'list' | 'switch'>>,
  command: string,
): { flags: Map<string, string[]>; positionals: string[]; rest: string[] | undefined } {
  const flags = new Map<string, string[]>();
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return { flags, positionals, rest: args.slice(i + 1) };
    if (a.startsWith('-') && a !== '-') {
      const eq = a.indexOf('=');
      const name = eq >= 0 ? a.slice(0, eq) : a;
      if (!(name in known)) {
        const accepted = Object.keys(known);
        usage(
          `${command}: unknown flag ${name}` +
            (accepted.length > 0 ? ` (accepted: ${accepted.join(', ')})` : ' (it takes no flags)'),
        );
      }
      if (known[name] === 'switch') {
        if (eq >= 0) usage(`${command}: ${name} takes no value`);
        flags.set(name, [...(flags.get(name) ?? []), 'true']);
        continue;
      }
      const value = eq >= 0 ? a.slice(eq + 1) : args[++i];
      if (value === undefined) usage(`${command}: ${name} needs a value`);
      const list = flags.get(name) ?? [];
      list.push(value!);
      flags.set(name, list);
    } else {
      positionals.push(a);
    }
  }
  return { flags, positionals, rest: undefined };
}

function one(flags: Map<string, string[]>, name: string): string | undefined {
  const v = flags.get(name);
  if (v && v.length > 1) usage(`${name} given more than once`);
  return v?.[0];
}

function int(text: string, what: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    usage(`${what} must be a whole number from ${min} to ${max}, got "${text}"`);
  }
  return Number(text);
}

function output(flags: Map<string, string[]>): Output {
  const o = one(flags, '-o') ?? one(flags, '--output') ?? 'table';
  if (o !== 'table' && o !== 'json') usage(`-o must be table or json, got "${o}"`);
  return o as Output;
}

/** A ServiceAccount name: a DNS subdomain (lower-case, digits, dashes and dots, ≤ 253). */
function checkServiceAccount(name: string): string {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name) || name.length > 253)
    usage(`--service-account "${name}" must be lower-case letters, digits, dashes and dots`);
  return name;
}

function noPositionals(command: string, p: readonly string[]): void {
  if (p.length > 0) usage(`${command}: unexpected argument "${p[0]}"`);
}

export function parseLabArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): LabArgs {
  let name = env.CALICO_LAB_NAME || DEFAULT_LAB_NAME;
  let stateDir = env.CALICO_LAB_STATE_DIR || undefined;
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const flag = eq >= 0 ? a.slice(0, eq) : a;
    if (flag !== '--name' && flag !== '--state-dir') break;
    const value = eq >= 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') usage(`${flag} needs a value`);
    if (flag === '--name') name = value!;
    else stateDir = value;
  }
  checkLabName(name);
  const [cmd, ...rest] = argv.slice(i);
  const done = (command: LabCommand): LabArgs => ({ name, ...(stateDir ? { stateDir } : {}), command });
  const help = (topic?: string): LabArgs => {
    usageText(topic); // an unknown topic is an error now, not when printing
    return done({ kind: 'help', ...(topic !== undefined ? { topic } : {}) });
  };
  // `lab X --help`: calicoctl and kubectl only when it comes first (the rest is theirs).
  if (cmd === 'calicoctl' || cmd === 'kubectl') {
    if (rest.length === 0 || rest[0] === '-h' || rest[0] === '--help') return help(cmd);
  } else if (cmd === 'pod' || cmd === 'ns' || cmd === 'namespace') {
    const sub = rest[0];
    if (sub === undefined || sub === '-h' || sub === '--help') return help(cmd === 'pod' ? 'pod' : 'ns');
    if (asksHelp(rest.slice(1)) && `${cmd === 'pod' ? 'pod' : 'ns'} ${sub}` in COMMAND_USAGE)
      return help(`${cmd === 'pod' ? 'pod' : 'ns'} ${sub}`);
  } else if (cmd !== undefined && cmd in COMMAND_USAGE && asksHelp(rest)) {
    return help(cmd);
  }
  switch (cmd) {
    case undefined:
    case '--help':
    case '-h':
      return help();
    case 'help':
      return help(rest.length > 0 ? rest.join(' ') : undefined);
    case 'up': {
      const { flags, positionals } = scan(
        rest,
        {
          '--nodes': 'value',
          '--mode': 'value',
          '--datastore': 'value',
          '--topology': 'value',
          '--ip-family': 'value',
          '--tls': 'switch',
          '--typha': 'switch',
          '--images': 'switch',
          '--kubelet': 'switch',
          '--install': 'value',
        },
        'up',
      );
      noPositionals('up', positionals);
      const mode = one(flags, '--mode') ?? 'bgp';
      if (!(LAB_MODES as readonly string[]).includes(mode))
        usage(`--mode must be bgp, ipip, vxlan or policy-only, got "${mode}"`);
      const datastore = one(flags, '--datastore') ?? DEFAULT_DATASTORE;
      if (!(LAB_DATASTORES as readonly string[]).includes(datastore))
        usage(`--datastore must be etcdv3 or kubernetes, got "${datastore}"`);
      if (mode === 'policy-only' && datastore !== 'kubernetes')
        usage(
          '--mode policy-only runs on the Kubernetes datastore, as upstream installs Calico beside ' +
            'another CNI; leave out --datastore etcdv3',
        );
      const nodes = int(one(flags, '--nodes') ?? '3', '--nodes', 1, MAX_NODES);
      const topology = one(flags, '--topology') ?? 'flat';
      if (!(LAB_TOPOLOGIES as readonly string[]).includes(topology))
        usage(`--topology must be flat or two-subnets, got "${topology}"`);
      const ipFamily = one(flags, '--ip-family') ?? '4';
      if (!(LAB_IP_FAMILIES as readonly string[]).includes(ipFamily))
        usage(`--ip-family must be 4, 6 or dual, got "${ipFamily}"`);
      if (flags.has('--tls') && flags.has('--images'))
        usage('--tls runs the built programs: the containers of --images are not given the certificates yet');
      if (flags.has('--typha') && flags.has('--images'))
        usage('--typha runs the built calico-typha: there is no typha image yet; leave out --images');
      if (flags.has('--typha') && flags.has('--tls'))
        usage(
          '--typha does not take --tls yet: Typha would need certificates of its own and etcd client ones',
        );
      const install = one(flags, '--install');
      if (install !== undefined && !flags.has('--kubelet'))
        usage('--install picks how a --kubelet cluster gets Calico; add --kubelet');
      if (install !== undefined && !(CLUSTER_INSTALLS as readonly string[]).includes(install))
        usage(`--install must be ${CLUSTER_INSTALLS.join(', ')}, got "${install}"`);
      if (flags.has('--kubelet')) {
        const clash = ['--images', '--typha', '--tls', '--topology', '--ip-family'].filter((f) =>
          flags.has(f),
        );
        if (clash.length > 0)
          usage(
            `--kubelet installs Calico from its manifest and runs its images itself; ${clash.join(', ')} ` +
              'not with it yet',
          );
        if (mode !== 'bgp' && mode !== 'vxlan')
          usage(`--kubelet runs --mode bgp or vxlan, got --mode ${mode}`);
        if (flags.has('--datastore'))
          usage(
            '--kubelet: the datastore is what --install puts in place (manifest, helm: kubernetes; ' +
              'etcd: etcdv3); leave out --datastore',
          );
      }
      return done({
        kind: 'up',
        nodes,
        mode: mode as LabMode,
        datastore: (install === 'etcd' ? 'etcdv3' : datastore) as LabDatastore,
        topology: topology as LabTopology,
        ipFamily: ipFamily as LabIPFamily,
        ...(flags.has('--tls') ? { tls: true as const } : {}),
        ...(flags.has('--images') ? { images: true as const } : {}),
        ...(flags.has('--typha') ? { typha: true as const } : {}),
        ...(flags.has('--kubelet') ? { kubelet: (install ?? 'manifest') as ClusterInstall } : {}),
      });
    }
    case 'down': {
      const { positionals } = scan(rest, {}, cmd);
      noPositionals(cmd, positionals);
      return done({ kind: cmd });
    }
    case 'restart': {
      const { positionals } = scan(rest, {}, cmd);
      const component = positionals[0];
      if (positionals.length !== 1 || !(RESTARTABLE as readonly string[]).includes(component!))
        usage(
          `restart takes one of: ${RESTARTABLE.join(', ')}${component ? `, got "${positionals.join(' ')}"` : ''}`,
        );
      return done({ kind: 'restart', component: component as RestartableComponent });
    }
    case 'bench': {
      const { flags, positionals } = scan(
        rest,
        { '--pods': 'value', '-o': 'value', '--output': 'value' },
        'bench',
      );
      noPositionals('bench', positionals);
      return done({
        kind: 'bench',
        pods: int(one(flags, '--pods') ?? '6', '--pods', 2, 100),
        output: output(flags),
      });
    }
    case 'status': {
      const { flags, positionals } = scan(rest, { '-o': 'value', '--output': 'value' }, 'status');
      noPositionals('status', positionals);
      return done({ kind: 'status', output: output(flags) });
    }
    case 'ns':
    case 'namespace': {
      const [sub, ...more] = rest;
      if (sub !== 'create') usage('ns: the only subcommand is create (pnpm lab ns create NAME --labels k=v)');
      const { flags, positionals } = scan(more, { '--labels': 'list', '-l': 'list' }, 'ns create');
      if (positionals.length !== 1) usage('ns create needs exactly one NAME');
      return done({
        kind: 'ns-create',
        namespace: checkKubeName('namespace', positionals[0]!),
        labels: parseLabels([...(flags.get('--labels') ?? []), ...(flags.get('-l') ?? [])]),
      });
    }
    case 'pod': {
      const [sub, ...more] = rest;
      if (sub === 'create') {
        const { flags, positionals } = scan(
          more,
          {
            '--node': 'value',
            '--labels': 'list',
            '-l': 'list',
            '--ports': 'list',
            '--service-account': 'value',
            '--annotations': 'list',
          },
          'pod create',
        );
        if (positionals.length !== 1) usage('pod create needs exactly one NAMESPACE/NAME');
        const ref = parsePodRef(positionals[0]!);
        const ports = parsePorts(flags.get('--ports') ?? ['80']);
        if (ports.length === 0) usage('--ports: give at least one port');
        const node = one(flags, '--node');
        const sa = one(flags, '--service-account');
        return done({
          kind: 'pod-create',
          ...ref,
          ...(node !== undefined ? { node } : {}),
          labels: parseLabels([...(flags.get('--labels') ?? []), ...(flags.get('-l') ?? [])]),
          annotations: parseAnnotations(flags.get('--annotations') ?? []),
          ...(sa !== undefined ? { serviceAccount: checkServiceAccount(sa) } : {}),
          ports,
        });
      }
      if (sub === 'delete') {
        const { positionals } = scan(more, {}, 'pod delete');
        if (positionals.length !== 1) usage('pod delete needs exactly one NAMESPACE/NAME');
        return done({ kind: 'pod-delete', ...parsePodRef(positionals[0]!) });
      }
      if (sub === 'exec') {
        const { positionals, rest: cmdArgs } = scan(more, {}, 'pod exec');
        if (positionals.length !== 1 || !cmdArgs || cmdArgs.length === 0) {
          usage('pod exec needs NAMESPACE/NAME -- COMMAND [ARGS...]');
        }
        return done({ kind: 'pod-exec', ...parsePodRef(positionals[0]!), argv: cmdArgs! });
      }
      return usage('pod: subcommands are create, delete and exec');
    }
    case 'calicoctl':
    case 'kubectl':
      return done({ kind: cmd, argv: rest });
    case 'connectivity': {
      const { flags, positionals } = scan(
        rest,
        {
          '--port': 'value',
          '--protocol': 'value',
          '-o': 'value',
          '--output': 'value',
          '--timeout-ms': 'value',
          '--family': 'value',
        },
        'connectivity',
      );
      const family = one(flags, '--family');
      if (family !== undefined && family !== '4' && family !== '6')
        usage(`--family must be 4 or 6, got "${family}"`);
      noPositionals('connectivity', positionals);
      const protocol = (one(flags, '--protocol') ?? 'tcp').toLowerCase();
      if (protocol !== 'tcp' && protocol !== 'udp') usage(`--protocol must be tcp or udp, got "${protocol}"`);
      return done({
        kind: 'connectivity',
        port: int(one(flags, '--port') ?? '80', '--port', 1, 65535),
        protocol: protocol as Protocol,
        output: output(flags),
        timeoutMs: int(one(flags, '--timeout-ms') ?? '1500', '--timeout-ms', 50, 60_000),
        ...(family !== undefined ? { families: [Number(family) as 4 | 6] } : {}),
      });
    }
    default:
      return usage(`unknown command "${cmd}"`);
  }
}
