/**
 * `pnpm lab <command>`: the command line, parsed (pure). Every mistake is a `LabError('usage')`
 * whose message says what is accepted.
 */
import { LabError } from './errors.js';
import { checkKubeName, parseLabels, parsePodRef } from './k8s-model.js';
import {
  checkLabName,
  DEFAULT_LAB_NAME,
  LAB_DATASTORES,
  LAB_MODES,
  type LabDatastore,
  type LabMode,
  MAX_NODES,
} from './plan.js';

export type Output = 'table' | 'json';
export type Protocol = 'tcp' | 'udp';

export type LabCommand =
  | {
      readonly kind: 'up';
      readonly nodes: number;
      readonly mode: LabMode;
      readonly datastore: LabDatastore;
    }
  | { readonly kind: 'down' }
  | { readonly kind: 'status'; readonly output: Output }
  | { readonly kind: 'ns-create'; readonly namespace: string; readonly labels: Record<string, string> }
  | {
      readonly kind: 'pod-create';
      readonly namespace: string;
      readonly name: string;
      readonly node?: string;
      readonly labels: Record<string, string>;
      readonly ports: readonly number[];
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
    }
  | { readonly kind: 'bench'; readonly pods: number; readonly output: Output }
  | { readonly kind: 'help' };

export interface LabArgs {
  /** Lab name (--name, else CALICO_LAB_NAME, else `lab`). */
  readonly name: string;
  /** --state-dir, else CALICO_LAB_STATE_DIR; undefined = /var/run/calico-lab/<name>. */
  readonly stateDir?: string;
  readonly command: LabCommand;
}

export const USAGE = `Usage: pnpm lab [--name NAME] [--state-dir DIR] <command>

A Calico cluster in network namespaces on this host: one etcd (and, with --datastore kubernetes, a
kube-apiserver on it), N nodes each running calico-node (Felix, BIRD), pods wired by the calico CNI
plugin. Needs root.

Commands:
  up [--nodes 3] [--mode bgp|vxlan] [--datastore etcdv3|kubernetes]
                                          build the lab and wait until every node is ready
  down                                    remove everything the lab made (also after a crash)
  status [-o table|json]                  nodes, processes, BGP sessions, pods
  ns create NAME [--labels k=v,...]       a namespace: its Profiles, as kube-controllers writes them
                                          (kubernetes: the Namespace and its default ServiceAccount)
  pod create NS/NAME [--node nX] [--labels k=v,...] [--ports 80,...]
                                          a pod: netns (kubernetes: the Pod), CNI ADD on its node,
                                          endpoint labels, and a TCP+UDP listener on the ports
                                          (default 80)
  pod delete NS/NAME                      CNI DEL, listener stopped, netns removed (and the Pod)
  pod exec NS/NAME -- CMD [ARGS...]       run a command in the pod's network namespace
  calicoctl ARGS...                       calicoctl against the lab's datastore
  kubectl ARGS...                         kubectl against the lab's API server (--datastore kubernetes)
  connectivity [--port 80] [--protocol tcp|udp] [-o table|json] [--timeout-ms 1500]
                                          pod × pod matrix of real connection attempts
  bench [--pods 6] [-o table|json]        pod create time, BGP route convergence, TCP connect
                                          times, with throw-away pods in namespace lab-bench

Global options: --name (default lab, or CALICO_LAB_NAME) picks the lab; --state-dir (default
/var/run/calico-lab/<name>, or CALICO_LAB_STATE_DIR) is where it keeps its state file and logs.
`;

const usage = (message: string): never => {
  throw new LabError('usage', `${message}\nRun \`pnpm lab help\` for the commands.`);
};

/** Splits flags from positionals; `--` ends flags (the rest is returned as `rest`). */
function scan(
  args: readonly string[],
  known: Readonly<Record<string, 'value' | 'list'>>,
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
  switch (cmd) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      return done({ kind: 'help' });
    case 'up': {
      const { flags, positionals } = scan(
        rest,
        { '--nodes': 'value', '--mode': 'value', '--datastore': 'value' },
        'up',
      );
      noPositionals('up', positionals);
      const mode = one(flags, '--mode') ?? 'bgp';
      if (!(LAB_MODES as readonly string[]).includes(mode))
        usage(`--mode must be bgp or vxlan, got "${mode}"`);
      const datastore = one(flags, '--datastore') ?? 'etcdv3';
      if (!(LAB_DATASTORES as readonly string[]).includes(datastore))
        usage(`--datastore must be etcdv3 or kubernetes, got "${datastore}"`);
      const nodes = int(one(flags, '--nodes') ?? '3', '--nodes', 1, MAX_NODES);
      return done({ kind: 'up', nodes, mode: mode as LabMode, datastore: datastore as LabDatastore });
    }
    case 'down': {
      const { positionals } = scan(rest, {}, cmd);
      noPositionals(cmd, positionals);
      return done({ kind: cmd });
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
          { '--node': 'value', '--labels': 'list', '-l': 'list', '--ports': 'list' },
          'pod create',
        );
        if (positionals.length !== 1) usage('pod create needs exactly one NAMESPACE/NAME');
        const ref = parsePodRef(positionals[0]!);
        const ports = (flags.get('--ports') ?? ['80'])
          .flatMap((p) => p.split(','))
          .filter((p) => p !== '')
          .map((p) => int(p, '--ports', 1, 65535));
        const node = one(flags, '--node');
        return done({
          kind: 'pod-create',
          ...ref,
          ...(node !== undefined ? { node } : {}),
          labels: parseLabels([...(flags.get('--labels') ?? []), ...(flags.get('-l') ?? [])]),
          ports: [...new Set(ports)],
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
        },
        'connectivity',
      );
      noPositionals('connectivity', positionals);
      const protocol = (one(flags, '--protocol') ?? 'tcp').toLowerCase();
      if (protocol !== 'tcp' && protocol !== 'udp') usage(`--protocol must be tcp or udp, got "${protocol}"`);
      return done({
        kind: 'connectivity',
        port: int(one(flags, '--port') ?? '80', '--port', 1, 65535),
        protocol: protocol as Protocol,
        output: output(flags),
        timeoutMs: int(one(flags, '--timeout-ms') ?? '1500', '--timeout-ms', 50, 60_000),
      });
    }
    default:
      return usage(`unknown command "${cmd}"`);
  }
}
