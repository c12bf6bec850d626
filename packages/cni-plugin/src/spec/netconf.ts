/**
 * The network configuration on stdin: parsing and validation (pure).
 *
 * Errors: stdin that is empty or not a JSON object ⇒ code 6; a `cniVersion` we do not speak (or a
 * command that version does not have) ⇒ code 1; a known field of the wrong type or value ⇒ code 7
 * with the field's path in the message. Unknown fields are ignored, as upstream does. The parsed
 * object is kept (`raw`) and the original bytes are what a delegated IPAM plugin receives.
 *
 * Field names and defaults are upstream Calico's (`cni-plugin/pkg/types/types.go`).
 */
import { CniPluginError } from '../errors.js';
import {
  asArray,
  asBool,
  asObject,
  asString,
  asStringList,
  asUint,
  type CniResult,
  decodeResult,
  describe,
  invalid,
} from './result.js';
import { type CniCommand, type CniVersion, negotiateVersion, requireCommandInVersion } from './versions.js';

export interface IpamConf {
  type: string;
  /** `assign_ipv4`, a string "true"/"false" upstream (booleans accepted too); default true. */
  assignIpv4: boolean;
  /** `assign_ipv6`; default false. */
  assignIpv6: boolean;
  /** Pools by CIDR or name. */
  ipv4Pools: string[];
  ipv6Pools: string[];
  /** host-local style `routes` (their destinations replace the default routes in the pod). */
  routes: { dst: string }[];
}

export interface GcAttachment {
  containerID: string;
  ifname: string;
}

/**
 * Where the Kubernetes API is, for reading the pod and its namespace (upstream `NewK8sClient`):
 * `kubernetes.kubeconfig` (else the KUBECONFIG variable, else the in-cluster service account), with
 * the server replaced by `kubernetes.k8s_api_root` or `policy.k8s_api_root`, and the credentials by
 * `policy.k8s_auth_token`, `k8s_client_certificate`, `k8s_client_key`, `k8s_certificate_authority`.
 */
export interface KubeApiConf {
  kubeconfig?: string;
  /** `kubernetes.k8s_api_root`, else `policy.k8s_api_root` without an `/api/...` suffix. */
  apiRoot?: string;
  authToken?: string;
  clientCertificate?: string;
  clientKey?: string;
  certificateAuthority?: string;
}

export type LogLevel = 'debug' | 'info' | 'warning' | 'error';

export interface NetConf {
  /** The parsed JSON object, unchanged. */
  raw: Record<string, unknown>;
  cniVersion: CniVersion;
  name: string;
  type?: string;
  ipam?: IpamConf;
  datastoreType?: 'etcdv3' | 'kubernetes';
  nodename?: string;
  nodenameFile?: string;
  nodenameFileOptional: boolean;
  hostname?: string;
  /** 0 = take `/var/lib/calico/mtu` if present, else the kernel default. */
  mtu: number;
  requireMtuFile: boolean;
  /** veth TX/RX queues; at least 1. */
  numQueues: number;
  logLevel: LogLevel;
  logFilePath?: string;
  /** `policy.type`: `k8s` ⇒ WorkloadEndpoint profiles from the namespace; otherwise the network name. */
  policyType: string;
  includeDefaultRoutes: boolean;
  allowIpForwarding: boolean;
  featureControl: { ipAddrsNoIpam: boolean; floatingIps: boolean };
  kubeApi: KubeApiConf;
  ipamLockFile?: string;
  prevResult?: CniResult;
  /** GC only: attachments that are still valid (`cni.dev/valid-attachments`). */
  validAttachments?: GcAttachment[];
}

/** Spec: a network name starts with an alphanumeric, then alphanumerics, `_`, `.` or `-`. */
const NETWORK_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** Reads stdin text as a JSON object; empty or malformed text ⇒ code 6. */
export function decodeConfigObject(stdin: string): Record<string, unknown> {
  if (stdin.trim() === '') {
    throw new CniPluginError('decode-failed', 'no network config on stdin', {
      details: 'the network configuration must be passed as a JSON object on standard input',
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(stdin);
  } catch (e) {
    throw new CniPluginError(
      'decode-failed',
      `network config on stdin is not valid JSON: ${(e as Error).message}`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CniPluginError('decode-failed', `network config must be a JSON object, not ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

/**
 * The `cniVersion` a VERSION request carries (1.1: `{"cniVersion": ...}` on stdin); undefined when
 * stdin is empty or says nothing usable. VERSION never fails on its input.
 */
export function versionRequestVersion(stdin: string): string | undefined {
  if (stdin.trim() === '') return undefined;
  try {
    const v = JSON.parse(stdin) as unknown;
    if (
      typeof v === 'object' &&
      v !== null &&
      typeof (v as { cniVersion?: unknown }).cniVersion === 'string'
    ) {
      return (v as { cniVersion: string }).cniVersion;
    }
  } catch {
    // ignored: VERSION answers regardless
  }
  return undefined;
}

export function parseNetConf(stdin: string, command: CniCommand): NetConf {
  const raw = decodeConfigObject(stdin);
  return netConfFromObject(raw, command);
}

export function netConfFromObject(raw: Record<string, unknown>, command: CniCommand): NetConf {
  const cniVersion = negotiateVersion(raw.cniVersion, raw.cniVersions);
  requireCommandInVersion(cniVersion, command);

  const str = (key: string): string | undefined => {
    const v = raw[key];
    if (v === undefined || v === null) return undefined;
    return asString(v, key);
  };
  const bool = (key: string, obj: Record<string, unknown> = raw, prefix = ''): boolean => {
    const v = obj[key];
    if (v === undefined || v === null) return false;
    return asBool(v, prefix + key);
  };
  const uint = (key: string): number => {
    const v = raw[key];
    if (v === undefined || v === null) return 0;
    return asUint(v, key);
  };

  if (raw.name === undefined || raw.name === null || raw.name === '') {
    throw invalid('name', 'missing (every network config needs a name)');
  }
  const name = asString(raw.name, 'name');
  if (!NETWORK_NAME.test(name)) {
    throw invalid(
      'name',
      `"${name}" has invalid characters: a network name starts with a letter or digit, followed by letters, digits, "_", "." or "-"`,
    );
  }

  const conf: NetConf = {
    raw,
    cniVersion,
    name,
    nodenameFileOptional: bool('nodename_file_optional'),
    mtu: uint('mtu'),
    requireMtuFile: bool('require_mtu_file'),
    numQueues: Math.max(1, uint('num_queues')),
    logLevel: parseLogLevel(raw.log_level),
    policyType: '',
    includeDefaultRoutes: bool('include_default_routes'),
    allowIpForwarding: false,
    featureControl: { ipAddrsNoIpam: false, floatingIps: false },
    kubeApi: {},
  };
  if (conf.mtu !== 0 && (conf.mtu < 68 || conf.mtu > 65535)) {
    throw invalid('mtu', `must be 0 (automatic) or between 68 and 65535, not ${conf.mtu}`);
  }
  if (conf.numQueues > 1024) throw invalid('num_queues', `must be at most 1024, not ${conf.numQueues}`);

  const type = str('type');
  if (type !== undefined) conf.type = type;
  for (const [key, field] of [
    ['nodename', 'nodename'],
    ['nodename_file', 'nodenameFile'],
    ['hostname', 'hostname'],
    ['log_file_path', 'logFilePath'],
    ['ipam_lock_file', 'ipamLockFile'],
  ] as const) {
    const v = str(key);
    if (v !== undefined && v !== '') conf[field] = v;
  }
  for (const key of [
    'etcd_endpoints',
    'etcd_discovery_srv',
    'etcd_key_file',
    'etcd_cert_file',
    'etcd_ca_cert_file',
    // The plugin service's socket (read before this parse by the executable; see service/).
    'service_socket',
  ]) {
    str(key);
  }

  const ds = str('datastore_type');
  if (ds !== undefined && ds !== '') {
    if (ds !== 'etcdv3' && ds !== 'kubernetes') {
      throw invalid('datastore_type', `must be "etcdv3" or "kubernetes", not "${ds}"`);
    }
    conf.datastoreType = ds;
  }

  let kubeApiRoot: string | undefined;
  if (raw.kubernetes !== undefined && raw.kubernetes !== null) {
    const k = asObject(raw.kubernetes, 'kubernetes');
    const text = (key: string) =>
      k[key] === undefined || k[key] === null ? undefined : asString(k[key], `kubernetes.${key}`);
    const kubeconfig = text('kubeconfig');
    if (kubeconfig) conf.kubeApi.kubeconfig = kubeconfig;
    kubeApiRoot = text('k8s_api_root') || undefined;
  }
  if (raw.policy !== undefined && raw.policy !== null) {
    const p = asObject(raw.policy, 'policy');
    if (p.type !== undefined && p.type !== null) conf.policyType = asString(p.type, 'policy.type');
    const text = (key: string) =>
      p[key] === undefined || p[key] === null ? undefined : asString(p[key], `policy.${key}`) || undefined;
    // Earlier configs gave the full URL of the v1 API; upstream keeps what comes before "/api/".
    const policyApiRoot = text('k8s_api_root')?.split('/api/')[0];
    for (const [key, field] of [
      ['k8s_auth_token', 'authToken'],
      ['k8s_client_certificate', 'clientCertificate'],
      ['k8s_client_key', 'clientKey'],
      ['k8s_certificate_authority', 'certificateAuthority'],
    ] as const) {
      const v = text(key);
      if (v !== undefined) conf.kubeApi[field] = v;
    }
    kubeApiRoot ??= policyApiRoot;
  }
  if (kubeApiRoot) conf.kubeApi.apiRoot = kubeApiRoot;
  if (raw.container_settings !== undefined && raw.container_settings !== null) {
    const c = asObject(raw.container_settings, 'container_settings');
    conf.allowIpForwarding = bool('allow_ip_forwarding', c, 'container_settings.');
  }
  if (raw.feature_control !== undefined && raw.feature_control !== null) {
    const f = asObject(raw.feature_control, 'feature_control');
    conf.featureControl = {
      ipAddrsNoIpam: bool('ip_addrs_no_ipam', f, 'feature_control.'),
      floatingIps: bool('floating_ips', f, 'feature_control.'),
    };
  }
  if (raw.ipam !== undefined && raw.ipam !== null) conf.ipam = parseIpam(raw.ipam);

  if (raw.prevResult !== undefined && raw.prevResult !== null) {
    conf.prevResult = decodeResult(raw.prevResult, cniVersion, 'prevResult');
  }
  if (command === 'GC') conf.validAttachments = parseAttachments(raw);
  return conf;
}

function parseLogLevel(v: unknown): LogLevel {
  if (v === undefined || v === null || v === '') return 'info';
  const s = asString(v, 'log_level').toLowerCase();
  switch (s) {
    case 'debug':
    case 'trace':
      return 'debug';
    case 'warn':
    case 'warning':
      return 'warning';
    case 'error':
    case 'fatal':
    case 'panic':
      return 'error';
    default:
      // Upstream logs at info for any other value; so do we.
      return 'info';
  }
}

function parseFlag(v: unknown, path: string, dflt: boolean): boolean {
  if (v === undefined || v === null || v === '') return dflt;
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw invalid(path, `must be "true" or "false", not ${describe(v)}`);
}

export function parseIpam(v: unknown): IpamConf {
  const o = asObject(v, 'ipam');
  if (o.type === undefined || o.type === null || o.type === '') {
    throw invalid('ipam.type', 'missing (name of the IPAM plugin, e.g. "calico-ipam")');
  }
  const type = asString(o.type, 'ipam.type');
  if (type.includes('/')) throw invalid('ipam.type', `must be a plugin name, not a path: "${type}"`);
  const pools = (key: string): string[] =>
    o[key] === undefined || o[key] === null ? [] : asStringList(o[key], `ipam.${key}`);
  const routes: { dst: string }[] = [];
  if (o.routes !== undefined && o.routes !== null) {
    asArray(o.routes, 'ipam.routes').forEach((r, i) => {
      const ro = asObject(r, `ipam.routes[${i}]`);
      if (ro.dst === undefined) return;
      routes.push({ dst: asString(ro.dst, `ipam.routes[${i}].dst`) });
    });
  }
  const out: IpamConf = {
    type,
    assignIpv4: parseFlag(o.assign_ipv4, 'ipam.assign_ipv4', true),
    assignIpv6: parseFlag(o.assign_ipv6, 'ipam.assign_ipv6', false),
    ipv4Pools: pools('ipv4_pools'),
    ipv6Pools: pools('ipv6_pools'),
    routes,
  };
  return out;
}

function parseAttachments(raw: Record<string, unknown>): GcAttachment[] {
  // libcni sends both names (the spec's earlier draft used `cni.dev/attachments`).
  const key =
    raw['cni.dev/valid-attachments'] !== undefined ? 'cni.dev/valid-attachments' : 'cni.dev/attachments';
  const v = raw[key];
  if (v === undefined || v === null) {
    throw invalid(
      'cni.dev/valid-attachments',
      'missing: GC needs the list of attachments that are still valid',
    );
  }
  return asArray(v, key).map((a, i) => {
    const o = asObject(a, `${key}[${i}]`);
    return {
      containerID: asString(o.containerID, `${key}[${i}].containerID`),
      ifname: o.ifname === undefined || o.ifname === null ? '' : asString(o.ifname, `${key}[${i}].ifname`),
    };
  });
}
