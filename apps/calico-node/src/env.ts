/**
 * calico-node's environment, as upstream's DaemonSet sets it, parsed into one typed value. Pure:
 * the environment and the host name are passed in. Every unusable value is a `NodeError('config')`
 * naming the variable, so the process stops before it writes anything.
 *
 * Variables (upstream names and defaults):
 *   NODENAME | HOSTNAME | host name       this node's name (trimmed, lower-cased)
 *   CALICO_NETWORKING_BACKEND             bird (default) | vxlan | none
 *   CLUSTER_TYPE                          comma list recorded in ClusterInformation
 *   IP                                    "" | autodetect | none | <IPv4>[/<prefix>]
 *   IP_AUTODETECTION_METHOD               first-found (default) | can-reach=<addr> | interface=<re>,…
 *                                         | skip-interface=<re>,… | cidr=<cidr>,…
 *   IP6                                   "" | autodetect | none | <IPv6>[/<prefix>]; only autodetect
 *                                         looks for one (unset keeps what the Node has)
 *   IP6_AUTODETECTION_METHOD              the methods of IP_AUTODETECTION_METHOD, for IPv6
 *   AS                                    this node's AS number (plain or asdot)
 *   CALICO_K8S_NODE_REF                   the Kubernetes node name, recorded in spec.orchRefs
 *   CALICO_IPV4POOL_CIDR|_IPIP|_VXLAN|_BLOCK_SIZE|_NAT_OUTGOING|_NODE_SELECTOR|_DISABLE_BGP_EXPORT
 *   CALICO_IPV6POOL_CIDR|_VXLAN|_BLOCK_SIZE|_NAT_OUTGOING|_NODE_SELECTOR|_DISABLE_BGP_EXPORT
 *                                         the IPv6 pool, made only with FELIX_IPV6SUPPORT not false;
 *                                         no CIDR: a random ULA /48 (fdXX:…::/48), as upstream
 *   FELIX_IPV6SUPPORT                     false: no IPv6 pool (also read by Felix itself)
 *   NO_DEFAULT_POOLS                      true: create no pool
 *   DISABLE_NODE_IP_CHECK                 true: do not refuse an address another Node has
 * calico-ts additions, so several nodes can share one host (the lab):
 *   CALICO_VAR_LIB_DIR (/var/lib/calico), CALICO_VAR_RUN_DIR (/var/run/calico),
 *   CALICO_BIRD_CONFIG_DIR (/etc/calico/confd/config), CALICO_BIRD_BIN (/usr/sbin/bird).
 * calico-ts addition for the CNI plugin:
 *   CALICO_CNI_SERVICE_SOCKET             where the plugin service listens (<run dir>/cni-plugin.sock);
 *                                         `none`: do not run it (the plugin then works on its own)
 */

import { validateSelector } from '@calico-ts/api';
import { parseCidr, parseCidrOrIP, parseIP } from '@calico-ts/api/net';
import { NodeError } from './errors.js';

export type Env = Readonly<Record<string, string | undefined>>;

export type NetworkingBackend = 'bird' | 'vxlan' | 'none';
export const NETWORKING_BACKENDS: readonly NetworkingBackend[] = ['bird', 'vxlan', 'none'];

/** What `IP` asks for. `unset` autodetects only when the Node has no address yet. */
export type IPSetting =
  | { readonly kind: 'unset' }
  | { readonly kind: 'autodetect' }
  | { readonly kind: 'none' }
  /** An address, with or without a prefix length (`10.0.0.5`, `10.0.0.5/24`, `fd00::5/64`). */
  | { readonly kind: 'address'; readonly value: string };

export type AutodetectMethod =
  | { readonly kind: 'first-found' }
  | { readonly kind: 'can-reach'; readonly destination: string }
  | { readonly kind: 'interface'; readonly patterns: readonly string[] }
  | { readonly kind: 'skip-interface'; readonly patterns: readonly string[] }
  | { readonly kind: 'cidr'; readonly cidrs: readonly string[] };

export type EncapMode = 'Never' | 'Always' | 'CrossSubnet';

export interface PoolSettings {
  /** False with NO_DEFAULT_POOLS=true or CALICO_IPV4POOL_CIDR=none. */
  readonly enabled: boolean;
  readonly cidr: string;
  readonly ipipMode: EncapMode;
  readonly vxlanMode: EncapMode;
  readonly blockSize: number;
  readonly natOutgoing: boolean;
  readonly nodeSelector: string;
  readonly disableBGPExport: boolean;
}

/** The default IPv6 pool's settings; `cidr` absent: a random ULA /48 is chosen when it is made. */
export interface IPv6PoolSettings extends Omit<PoolSettings, 'cidr'> {
  readonly cidr?: string;
}

export interface NodeEnv {
  readonly nodeName: string;
  readonly networkingBackend: NetworkingBackend;
  readonly clusterType: string;
  readonly ip: IPSetting;
  readonly autodetectionMethod: AutodetectMethod;
  readonly asNumber?: number;
  readonly k8sNodeRef?: string;
  readonly pool: PoolSettings;
  /** `IP6`: this node's IPv6 address (spec.bgp.ipv6Address). */
  readonly ip6: IPSetting;
  readonly ip6AutodetectionMethod: AutodetectMethod;
  readonly pool6: IPv6PoolSettings;
  /** FELIX_IPV6SUPPORT (default true). */
  readonly ipv6Support: boolean;
  readonly disableNodeIPCheck: boolean;
  readonly varLibDir: string;
  readonly varRunDir: string;
  readonly birdConfigDir: string;
  readonly birdPath: string;
  /** The CNI plugin service's socket; undefined when it is not to run. */
  readonly cniServiceSocket?: string;
}

export const DEFAULT_IPV4_POOL_CIDR = '192.168.0.0/16';
export const DEFAULT_IPV4_BLOCK_SIZE = 26;
export const DEFAULT_IPV6_BLOCK_SIZE = 122;
export const DEFAULT_VAR_LIB_DIR = '/var/lib/calico';
export const DEFAULT_VAR_RUN_DIR = '/var/run/calico';
export const DEFAULT_BIRD_CONFIG_DIR = '/etc/calico/confd/config';

const fail = (message: string): never => {
  throw new NodeError('config', message);
};

/** Upstream's node name: NODENAME, else HOSTNAME, else the host name; trimmed and lower-cased. */
export function determineNodeName(env: Env, hostname: string): string {
  const raw = env.NODENAME?.trim() || env.HOSTNAME?.trim() || hostname.trim();
  return raw.toLowerCase();
}

/** `true`/`false` as upstream's evaluateENVBool reads them: set and not a false spelling = true. */
export function envBool(env: Env, name: string, dflt: boolean): boolean {
  const v = env[name];
  if (v === undefined) return dflt;
  return !['false', '0', 'no', 'n', 'f'].includes(v.toLowerCase());
}

/** `IP` (family 4) or `IP6` (family 6). */
export function parseIPSetting(value: string | undefined, family: 4 | 6 = 4): IPSetting {
  const v = (value ?? '').trim();
  if (v === '') return { kind: 'unset' };
  if (v === 'autodetect') return { kind: 'autodetect' };
  if (v === 'none') return { kind: 'none' };
  const c = parseCidrOrIP(v);
  if (c === undefined || c.family !== family) {
    const name = family === 4 ? 'IP' : 'IP6';
    fail(
      `${name}="${v}" is not a valid IPv${family} address; use an address, an address/prefix, autodetect or none`,
    );
  }
  return { kind: 'address', value: v };
}

const SPLIT_LIST = /\s*,\s*/;

/** `IP_AUTODETECTION_METHOD`, or the variable named by `name` (`IP6_AUTODETECTION_METHOD`). */
export function parseAutodetectionMethod(
  value: string | undefined,
  name = 'IP_AUTODETECTION_METHOD',
): AutodetectMethod {
  const v = (value ?? '').trim();
  if (v === '' || v === 'first-found') return { kind: 'first-found' };
  const after = (prefix: string) => v.slice(prefix.length);
  if (v.startsWith('can-reach=')) {
    const dest = after('can-reach=');
    if (parseIP(dest) === undefined && !/^[a-zA-Z0-9.-]+$/.test(dest)) {
      fail(`${name} can-reach needs an address or host name, got "${dest}"`);
    }
    return { kind: 'can-reach', destination: dest };
  }
  for (const kind of ['interface', 'skip-interface'] as const) {
    if (v.startsWith(`${kind}=`)) {
      const patterns = after(`${kind}=`).split(SPLIT_LIST);
      for (const p of patterns) {
        try {
          new RegExp(p);
        } catch {
          fail(`${name} ${kind}: "${p}" is not a valid regular expression`);
        }
      }
      return { kind, patterns };
    }
  }
  if (v.startsWith('cidr=')) {
    const cidrs = after('cidr=').split(SPLIT_LIST);
    for (const c of cidrs) {
      if (parseCidr(c) === undefined) fail(`${name} cidr: "${c}" is not a valid CIDR`);
    }
    return { kind: 'cidr', cidrs };
  }
  if (v === 'kubernetes-internal-ip') {
    return fail(`${name} kubernetes-internal-ip needs the Kubernetes API, which is not supported`);
  }
  return fail(
    `${name}="${v}" is not a known method; use first-found, can-reach=<address>, ` +
      'interface=<regex>, skip-interface=<regex> or cidr=<cidr>',
  );
}

/** AS number from `AS`: plain (0…4294967295) or asdot (`a.b`, each 0…65535). */
export function parseASNumber(value: string): number {
  const m = /^([0-9]+)(?:\.([0-9]+))?$/.exec(value.trim());
  if (m) {
    const hi = Number(m[1]);
    if (m[2] === undefined && hi <= 4294967295) return hi;
    const lo = Number(m[2]);
    if (m[2] !== undefined && hi <= 65535 && lo <= 65535) return hi * 65536 + lo;
  }
  return fail(`AS="${value}" is not a valid AS number`);
}

export function parseEncapMode(name: string, value: string | undefined): EncapMode {
  switch ((value ?? '').toLowerCase()) {
    case '':
    case 'off':
    case 'never':
      return 'Never';
    case 'crosssubnet':
    case 'cross-subnet':
      return 'CrossSubnet';
    case 'always':
      return 'Always';
    default:
      return fail(`${name}="${value}" is not a valid mode; use Always, CrossSubnet or Never`);
  }
}

export function parsePoolSettings(env: Env): PoolSettings {
  const cidrEnv = env.CALICO_IPV4POOL_CIDR ?? '';
  const noDefault = (env.NO_DEFAULT_POOLS ?? '').toLowerCase() === 'true';
  if (noDefault && (cidrEnv !== '' || (env.CALICO_IPV6POOL_CIDR ?? '') !== '')) {
    fail('NO_DEFAULT_POOLS=true cannot be combined with CALICO_IPV4POOL_CIDR or CALICO_IPV6POOL_CIDR');
  }
  const common = poolCommon(env, 4, !noDefault && cidrEnv !== 'none');
  return { ...common, cidr: common.cidr ?? DEFAULT_IPV4_POOL_CIDR };
}

/**
 * The default IPv6 pool (CALICO_IPV6POOL_*): made only when FELIX_IPV6SUPPORT is not false, as
 * upstream's. IPIP cannot carry IPv6, so CALICO_IPV6POOL_IPIP other than Never is an error; NAT
 * outgoing defaults to false and the block size to 122.
 */
export function parsePool6Settings(env: Env): IPv6PoolSettings {
  const noDefault = (env.NO_DEFAULT_POOLS ?? '').toLowerCase() === 'true';
  const enabled =
    !noDefault && envBool(env, 'FELIX_IPV6SUPPORT', true) && (env.CALICO_IPV6POOL_CIDR ?? '') !== 'none';
  return poolCommon(env, 6, enabled);
}

/** The default pools' variables, spelled out (the manifests' tests find what is read by name). */
const POOL_ENV = {
  4: {
    cidr: 'CALICO_IPV4POOL_CIDR',
    ipip: 'CALICO_IPV4POOL_IPIP',
    vxlan: 'CALICO_IPV4POOL_VXLAN',
    blockSize: 'CALICO_IPV4POOL_BLOCK_SIZE',
    natOutgoing: 'CALICO_IPV4POOL_NAT_OUTGOING',
    nodeSelector: 'CALICO_IPV4POOL_NODE_SELECTOR',
    disableBgpExport: 'CALICO_IPV4POOL_DISABLE_BGP_EXPORT',
  },
  6: {
    cidr: 'CALICO_IPV6POOL_CIDR',
    ipip: 'CALICO_IPV6POOL_IPIP',
    vxlan: 'CALICO_IPV6POOL_VXLAN',
    blockSize: 'CALICO_IPV6POOL_BLOCK_SIZE',
    natOutgoing: 'CALICO_IPV6POOL_NAT_OUTGOING',
    nodeSelector: 'CALICO_IPV6POOL_NODE_SELECTOR',
    disableBgpExport: 'CALICO_IPV6POOL_DISABLE_BGP_EXPORT',
  },
} as const;

function poolCommon(env: Env, family: 4 | 6, enabled: boolean): IPv6PoolSettings {
  const n = POOL_ENV[family];
  const [minBlock, maxBlock] = family === 4 ? [20, 32] : [116, 128];
  const blockText = env[n.blockSize] ?? '';
  let blockSize = family === 4 ? DEFAULT_IPV4_BLOCK_SIZE : DEFAULT_IPV6_BLOCK_SIZE;
  if (blockText !== '') {
    if (!/^[0-9]+$/.test(blockText)) fail(`${n.blockSize}="${blockText}" is not a number`);
    blockSize = Number(blockText);
  }
  if (enabled && (blockSize < minBlock || blockSize > maxBlock)) {
    fail(
      `${n.blockSize}=${blockSize} is out of range; IPv${family} block sizes are ${minBlock} to ${maxBlock}`,
    );
  }
  const nodeSelector = env[n.nodeSelector] ?? '';
  if (enabled && nodeSelector !== '') {
    const problem = validateSelector(nodeSelector);
    if (problem !== undefined) fail(`${n.nodeSelector}="${nodeSelector}": ${problem}`);
  }
  const cidrEnv = env[n.cidr] ?? '';
  let cidr: string | undefined;
  if (enabled && cidrEnv !== '') {
    const c = parseCidr(cidrEnv);
    if (c === undefined || c.family !== family)
      fail(`${n.cidr}="${cidrEnv}" is not a valid IPv${family} CIDR`);
    if (c !== undefined && c.prefix > blockSize) {
      fail(`${n.cidr}="${cidrEnv}" is smaller than one block (/${blockSize}); set ${n.blockSize}`);
    }
    cidr = cidrEnv;
  }
  const ipipMode = enabled ? parseEncapMode(n.ipip, env[n.ipip]) : 'Never';
  const vxlanMode = enabled ? parseEncapMode(n.vxlan, env[n.vxlan]) : 'Never';
  if (family === 6 && ipipMode !== 'Never') {
    fail(`${n.ipip}=${env[n.ipip]}: IPIP cannot carry IPv6; use ${n.vxlan} or Never`);
  }
  if (ipipMode !== 'Never' && vxlanMode !== 'Never') {
    fail(`${n.ipip} and ${n.vxlan} cannot both be enabled`);
  }
  return {
    enabled,
    ...(cidr !== undefined ? { cidr } : {}),
    ipipMode,
    vxlanMode,
    blockSize,
    natOutgoing: envBool(env, n.natOutgoing, family === 4),
    nodeSelector,
    disableBGPExport: envBool(env, n.disableBgpExport, false),
  };
}

export function parseNodeEnv(env: Env, hostname: string): NodeEnv {
  const nodeName = determineNodeName(env, hostname);
  if (nodeName === '') fail("cannot tell this node's name: set NODENAME");
  const backend = (env.CALICO_NETWORKING_BACKEND ?? '').trim() || 'bird';
  if (!(NETWORKING_BACKENDS as readonly string[]).includes(backend)) {
    fail(`CALICO_NETWORKING_BACKEND="${backend}" is not supported; use bird, vxlan or none`);
  }
  const asText = (env.AS ?? '').trim();
  const k8sRef = (env.CALICO_K8S_NODE_REF ?? '').trim();
  return {
    nodeName,
    networkingBackend: backend as NetworkingBackend,
    clusterType: (env.CLUSTER_TYPE ?? '').trim(),
    ip: parseIPSetting(env.IP),
    autodetectionMethod: parseAutodetectionMethod(env.IP_AUTODETECTION_METHOD),
    ...(asText !== '' ? { asNumber: parseASNumber(asText) } : {}),
    ...(k8sRef !== '' ? { k8sNodeRef: k8sRef } : {}),
    pool: parsePoolSettings(env),
    ip6: parseIPSetting(env.IP6, 6),
    ip6AutodetectionMethod: parseAutodetectionMethod(
      env.IP6_AUTODETECTION_METHOD,
      'IP6_AUTODETECTION_METHOD',
    ),
    pool6: parsePool6Settings(env),
    ipv6Support: envBool(env, 'FELIX_IPV6SUPPORT', true),
    disableNodeIPCheck: (env.DISABLE_NODE_IP_CHECK ?? '') === 'true',
    varLibDir: env.CALICO_VAR_LIB_DIR || DEFAULT_VAR_LIB_DIR,
    varRunDir: env.CALICO_VAR_RUN_DIR || DEFAULT_VAR_RUN_DIR,
    birdConfigDir: env.CALICO_BIRD_CONFIG_DIR || DEFAULT_BIRD_CONFIG_DIR,
    birdPath: env.CALICO_BIRD_BIN || '/usr/sbin/bird',
    ...cniServiceSocket(env),
  };
}

function cniServiceSocket(env: Env): { cniServiceSocket?: string } {
  const v = (env.CALICO_CNI_SERVICE_SOCKET ?? '').trim();
  if (v === 'none') return {};
  if (v === '')
    return { cniServiceSocket: `${env.CALICO_VAR_RUN_DIR || DEFAULT_VAR_RUN_DIR}/cni-plugin.sock` };
  if (!v.startsWith('/')) fail(`CALICO_CNI_SERVICE_SOCKET="${v}" must be an absolute path or none`);
  return { cniServiceSocket: v };
}
