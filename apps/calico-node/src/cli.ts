/**
 * calico-node's command line, parsed (pure). Flags are Go-style as upstream's: one or two dashes,
 * `-flag=value` or `-flag value`.
 *
 *   calico-node                     start-up, then Felix and (bird backend) BIRD, until SIGTERM
 *   calico-node -startup            start-up only, then exit
 *   calico-node -felix [-config-file F]   Felix alone (no start-up, no BIRD), until SIGTERM
 *   calico-node -felix-ready …      health checks (see probes.ts); -threshold-time=30s
 *   calico-node -v | -version       print the version
 */
import { NodeError } from './errors.js';
import { PROBE_NAMES, type ProbeName } from './probes.js';

export type Command =
  | { readonly kind: 'run' }
  | { readonly kind: 'startup' }
  | { readonly kind: 'felix'; readonly configFile?: string }
  | { readonly kind: 'probe'; readonly probes: readonly ProbeName[]; readonly thresholdMs: number }
  | { readonly kind: 'version' }
  | { readonly kind: 'help' };

export const USAGE = `Usage: calico-node [flags]

With no flags: register this node, ensure the cluster's defaults, then run Felix and, with
CALICO_NETWORKING_BACKEND=bird (the default), BIRD and its configuration, until SIGTERM.

Flags:
  -startup              run the start-up steps only, then exit
  -felix                run Felix alone (no start-up steps, no BIRD) until SIGTERM
  -config-file FILE     with -felix: Felix's config file (default /etc/calico/felix.cfg)
  -felix-ready          check Felix's readiness (GET /readiness on FELIX_HEALTHPORT)
  -felix-live           check Felix's liveness
  -bird-ready           check that BIRD's BGP sessions are Established
  -bird-live            check that BIRD answers on its control socket
  -bird6-ready          as -bird-ready for bird6
  -bird6-live           as -bird-live for bird6
  -threshold-time DUR   how long after start-up every BGP peer must be up for -bird-ready (30s)
  -v, -version          print the version and exit
  -h, -help             print this help and exit

Environment: NODENAME, CALICO_NETWORKING_BACKEND, CLUSTER_TYPE, IP, IP_AUTODETECTION_METHOD, AS,
CALICO_IPV4POOL_CIDR|_IPIP|_VXLAN|_BLOCK_SIZE|_NAT_OUTGOING, NO_DEFAULT_POOLS, ETCD_ENDPOINTS,
ETCD_CA_CERT_FILE, ETCD_CERT_FILE, ETCD_KEY_FILE, DATASTORE_TYPE, FELIX_*; and for several nodes
on one host CALICO_VAR_LIB_DIR, CALICO_VAR_RUN_DIR, CALICO_BIRD_CONFIG_DIR.
`;

const UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go's time.ParseDuration, in milliseconds (`30s`, `1m30s`, `500ms`, `1.5h`). */
export function parseGoDuration(text: string): number {
  if (text === '0') return 0;
  const re = /([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  while (pos < text.length) {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (!m) throw new NodeError('usage', `invalid duration "${text}"`);
    total += Number(m[1]) * UNITS[m[2]!]!;
    pos = re.lastIndex;
  }
  if (text === '') throw new NodeError('usage', 'invalid duration ""');
  return total;
}

export function parseArgs(argv: readonly string[]): Command {
  const probes: ProbeName[] = [];
  let thresholdMs = 30_000;
  let startup = false;
  let felix = false;
  let configFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i]!;
    if (!raw.startsWith('-')) throw new NodeError('usage', `unexpected argument "${raw}"`);
    const body = raw.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    const inline = eq >= 0 ? body.slice(eq + 1) : undefined;
    if (name === 'h' || name === 'help') return { kind: 'help' };
    if (name === 'v' || name === 'version') return { kind: 'version' };
    if (name === 'startup') startup = true;
    else if (name === 'felix') felix = true;
    else if (name === 'config-file' || name === 'c') {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new NodeError('usage', `-${name} needs a file name`);
      configFile = v;
    } else if ((PROBE_NAMES as readonly string[]).includes(name)) {
      if (inline === undefined || inline === 'true') probes.push(name as ProbeName);
      else if (inline !== 'false') throw new NodeError('usage', `-${name} takes no value`);
    } else if (name === 'threshold-time') {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new NodeError('usage', '-threshold-time needs a duration, e.g. 30s');
      thresholdMs = parseGoDuration(v);
    } else {
      throw new NodeError('usage', `flag provided but not defined: -${name}`);
    }
  }
  if (probes.length > 0) {
    if (startup) throw new NodeError('usage', '-startup cannot be combined with health checks');
    if (felix) throw new NodeError('usage', '-felix cannot be combined with health checks');
    return { kind: 'probe', probes, thresholdMs };
  }
  if (felix) {
    if (startup) throw new NodeError('usage', '-felix cannot be combined with -startup');
    return configFile !== undefined ? { kind: 'felix', configFile } : { kind: 'felix' };
  }
  if (configFile !== undefined) throw new NodeError('usage', '-config-file is for -felix');
  return startup ? { kind: 'startup' } : { kind: 'run' };
}
