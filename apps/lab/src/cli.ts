/**
 * `pnpm lab <command>`: the command line, parsed (pure). Every mistake is a `LabError('usage')`
 * whose message says what is accepted.
 *
 *   argv ──► global flags (--name, --state-dir) ──► help asked? ──► usage text (cli-usage.ts)
 *                                                      │ no
 *                                                      ▼
 *            COMMANDS: command name ──► its parser: flags by a table (cli-flags.ts `scan`),
 *                                       checks, one LabCommand
 */

import {
  asksHelp,
  type FlagKind,
  int,
  noPositionals,
  type Output,
  one,
  output,
  scan,
  usage,
} from './cli-flags.js';
import { COMMAND_USAGE, usageText } from './cli-usage.js';
import { CLUSTER_INSTALLS, type ClusterInstall } from './cluster/plan.js';
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

export type { Output } from './cli-flags.js';
export { COMMAND_USAGE, USAGE, usageText } from './cli-usage.js';

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
      /** `--helm-values eks|aks|FILE` with `--install operator-helm` (a FILE as given). */
      readonly helmValues?: string;
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

/** A ServiceAccount name: a DNS subdomain (lower-case, digits, dashes and dots, ≤ 253). */
function checkServiceAccount(name: string): string {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name) || name.length > 253)
    usage(`--service-account "${name}" must be lower-case letters, digits, dashes and dots`);
  return name;
}

type CommandParser = (args: readonly string[]) => LabCommand;

const UP_FLAGS: Readonly<Record<string, FlagKind>> = {
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
  '--helm-values': 'value',
};

function parseUp(args: readonly string[]): LabCommand {
  const { flags, positionals } = scan(args, UP_FLAGS, 'up');
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
    usage('--typha does not take --tls yet: Typha would need certificates of its own and etcd client ones');
  const install = one(flags, '--install');
  if (install !== undefined && !flags.has('--kubelet'))
    usage('--install picks how a --kubelet cluster gets Calico; add --kubelet');
  if (install !== undefined && !(CLUSTER_INSTALLS as readonly string[]).includes(install))
    usage(`--install must be ${CLUSTER_INSTALLS.join(', ')}, got "${install}"`);
  if (flags.has('--kubelet')) checkKubelet(flags, mode);
  const helmValues = helmValuesOf(flags, install);
  return {
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
    ...(helmValues !== undefined ? { helmValues } : {}),
  };
}

/** `--helm-values eks|aks|FILE`: only with `--install operator-helm`; the values decide the network. */
function helmValuesOf(flags: Map<string, string[]>, install: string | undefined): string | undefined {
  const v = one(flags, '--helm-values');
  if (v === undefined) return undefined;
  if (install !== 'operator-helm')
    usage('--helm-values gives the operator chart its values; use it with --kubelet --install operator-helm');
  if (flags.has('--mode'))
    usage('--helm-values: the values decide the network (pool, encapsulation, BGP, CNI); leave out --mode');
  if (v === '') usage('--helm-values takes eks, aks or a values file');
  return v;
}

/** `up --kubelet`: the flags it does not take yet, and the modes it runs. */
function checkKubelet(flags: Map<string, string[]>, mode: string): void {
  const clash = ['--images', '--typha', '--tls', '--topology', '--ip-family'].filter((f) => flags.has(f));
  if (clash.length > 0)
    usage(
      `--kubelet installs Calico from its manifest and runs its images itself; ${clash.join(', ')} ` +
        'not with it yet',
    );
  if (mode !== 'bgp' && mode !== 'vxlan') usage(`--kubelet runs --mode bgp or vxlan, got --mode ${mode}`);
  if (flags.has('--datastore'))
    usage(
      '--kubelet: the datastore is what --install puts in place (manifest, helm: kubernetes; ' +
        'etcd: etcdv3); leave out --datastore',
    );
}

function parseRestart(args: readonly string[]): LabCommand {
  const { positionals } = scan(args, {}, 'restart');
  const component = positionals[0];
  if (positionals.length !== 1 || !(RESTARTABLE as readonly string[]).includes(component!))
    usage(
      `restart takes one of: ${RESTARTABLE.join(', ')}${component ? `, got "${positionals.join(' ')}"` : ''}`,
    );
  return { kind: 'restart', component: component as RestartableComponent };
}

function parseBench(args: readonly string[]): LabCommand {
  const { flags, positionals } = scan(
    args,
    { '--pods': 'value', '-o': 'value', '--output': 'value' },
    'bench',
  );
  noPositionals('bench', positionals);
  return { kind: 'bench', pods: int(one(flags, '--pods') ?? '6', '--pods', 2, 100), output: output(flags) };
}

function parseStatus(args: readonly string[]): LabCommand {
  const { flags, positionals } = scan(args, { '-o': 'value', '--output': 'value' }, 'status');
  noPositionals('status', positionals);
  return { kind: 'status', output: output(flags) };
}

function labels(flags: Map<string, string[]>): Record<string, string> {
  return parseLabels([...(flags.get('--labels') ?? []), ...(flags.get('-l') ?? [])]);
}

function parseNs(args: readonly string[]): LabCommand {
  const [sub, ...more] = args;
  if (sub !== 'create') usage('ns: the only subcommand is create (pnpm lab ns create NAME --labels k=v)');
  const { flags, positionals } = scan(more, { '--labels': 'list', '-l': 'list' }, 'ns create');
  if (positionals.length !== 1) usage('ns create needs exactly one NAME');
  return {
    kind: 'ns-create',
    namespace: checkKubeName('namespace', positionals[0]!),
    labels: labels(flags),
  };
}

const POD_CREATE_FLAGS: Readonly<Record<string, FlagKind>> = {
  '--node': 'value',
  '--labels': 'list',
  '-l': 'list',
  '--ports': 'list',
  '--service-account': 'value',
  '--annotations': 'list',
};

function parsePodCreate(args: readonly string[]): LabCommand {
  const { flags, positionals } = scan(args, POD_CREATE_FLAGS, 'pod create');
  if (positionals.length !== 1) usage('pod create needs exactly one NAMESPACE/NAME');
  const ref = parsePodRef(positionals[0]!);
  const ports = parsePorts(flags.get('--ports') ?? ['80']);
  if (ports.length === 0) usage('--ports: give at least one port');
  const node = one(flags, '--node');
  const sa = one(flags, '--service-account');
  return {
    kind: 'pod-create',
    ...ref,
    ...(node !== undefined ? { node } : {}),
    labels: labels(flags),
    annotations: parseAnnotations(flags.get('--annotations') ?? []),
    ...(sa !== undefined ? { serviceAccount: checkServiceAccount(sa) } : {}),
    ports,
  };
}

function parsePodDelete(args: readonly string[]): LabCommand {
  const { positionals } = scan(args, {}, 'pod delete');
  if (positionals.length !== 1) usage('pod delete needs exactly one NAMESPACE/NAME');
  return { kind: 'pod-delete', ...parsePodRef(positionals[0]!) };
}

function parsePodExec(args: readonly string[]): LabCommand {
  const { positionals, rest: cmdArgs } = scan(args, {}, 'pod exec');
  if (positionals.length !== 1 || !cmdArgs || cmdArgs.length === 0) {
    usage('pod exec needs NAMESPACE/NAME -- COMMAND [ARGS...]');
  }
  return { kind: 'pod-exec', ...parsePodRef(positionals[0]!), argv: cmdArgs! };
}

/** `pod <sub>`: each subcommand and its parser. */
const POD_COMMANDS = new Map<string, CommandParser>([
  ['create', parsePodCreate],
  ['delete', parsePodDelete],
  ['exec', parsePodExec],
]);

function parsePod(args: readonly string[]): LabCommand {
  const [sub, ...more] = args;
  const parser = sub === undefined ? undefined : POD_COMMANDS.get(sub);
  return parser ? parser(more) : usage('pod: subcommands are create, delete and exec');
}

const CONNECTIVITY_FLAGS: Readonly<Record<string, FlagKind>> = {
  '--port': 'value',
  '--protocol': 'value',
  '-o': 'value',
  '--output': 'value',
  '--timeout-ms': 'value',
  '--family': 'value',
};

function parseConnectivity(args: readonly string[]): LabCommand {
  const { flags, positionals } = scan(args, CONNECTIVITY_FLAGS, 'connectivity');
  const family = one(flags, '--family');
  if (family !== undefined && family !== '4' && family !== '6')
    usage(`--family must be 4 or 6, got "${family}"`);
  noPositionals('connectivity', positionals);
  const protocol = (one(flags, '--protocol') ?? 'tcp').toLowerCase();
  if (protocol !== 'tcp' && protocol !== 'udp') usage(`--protocol must be tcp or udp, got "${protocol}"`);
  return {
    kind: 'connectivity',
    port: int(one(flags, '--port') ?? '80', '--port', 1, 65535),
    protocol: protocol as Protocol,
    output: output(flags),
    timeoutMs: int(one(flags, '--timeout-ms') ?? '1500', '--timeout-ms', 50, 60_000),
    ...(family !== undefined ? { families: [Number(family) as 4 | 6] } : {}),
  };
}

/** Every command: its name on the command line and its parser (which gets the arguments after it). */
const COMMANDS = new Map<string, CommandParser>([
  ['up', parseUp],
  [
    'down',
    (args) => {
      const { positionals } = scan(args, {}, 'down');
      noPositionals('down', positionals);
      return { kind: 'down' };
    },
  ],
  ['restart', parseRestart],
  ['bench', parseBench],
  ['status', parseStatus],
  ['ns', parseNs],
  ['namespace', parseNs],
  ['pod', parsePod],
  ['calicoctl', (args) => ({ kind: 'calicoctl', argv: args })],
  ['kubectl', (args) => ({ kind: 'kubectl', argv: args })],
  ['connectivity', parseConnectivity],
]);

/** `--name` and `--state-dir` before the command (else the environment's), and where the command starts. */
function globalOptions(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): { name: string; stateDir: string | undefined; next: number } {
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
  return { name, stateDir, next: i };
}

/**
 * The help a command line asks for (`{ topic }`, no topic: the overall usage), or undefined when it
 * asks for none. `lab X --help`: calicoctl and kubectl only when it comes first (the rest is theirs).
 */
function helpAsked(cmd: string | undefined, rest: readonly string[]): { topic?: string } | undefined {
  if (cmd === 'calicoctl' || cmd === 'kubectl') {
    if (rest.length === 0 || rest[0] === '-h' || rest[0] === '--help') return { topic: cmd };
  } else if (cmd === 'pod' || cmd === 'ns' || cmd === 'namespace') {
    const group = cmd === 'pod' ? 'pod' : 'ns';
    const sub = rest[0];
    if (sub === undefined || sub === '-h' || sub === '--help') return { topic: group };
    if (asksHelp(rest.slice(1)) && `${group} ${sub}` in COMMAND_USAGE) return { topic: `${group} ${sub}` };
  } else if (cmd !== undefined && cmd in COMMAND_USAGE && asksHelp(rest)) {
    return { topic: cmd };
  }
  if (cmd === undefined || cmd === '--help' || cmd === '-h') return {};
  if (cmd === 'help') return rest.length > 0 ? { topic: rest.join(' ') } : {};
  return undefined;
}

export function parseLabArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): LabArgs {
  const { name, stateDir, next } = globalOptions(argv, env);
  const [cmd, ...rest] = argv.slice(next);
  const done = (command: LabCommand): LabArgs => ({ name, ...(stateDir ? { stateDir } : {}), command });
  const help = helpAsked(cmd, rest);
  if (help) {
    usageText(help.topic); // an unknown topic is an error now, not when printing
    return done({ kind: 'help', ...(help.topic !== undefined ? { topic: help.topic } : {}) });
  }
  const parser = COMMANDS.get(cmd!);
  return parser ? done(parser(rest)) : usage(`unknown command "${cmd}"`);
}
